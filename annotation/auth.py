"""Passwords and sign-in.

Passwords are hashed with scrypt (``hashlib.scrypt``, memory-hard, random 16-byte salt per user) and
never stored or logged in clear. Sign-in is throttled: after ``MAX_FAILURES`` failed attempts within
``WINDOW_S`` seconds a name is refused until the window has passed.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os

from storage import users
from storage.errors import IFJudgeError
from storage.db import Database

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
MAX_FAILURES = 5
WINDOW_S = 300.0


class SignInFailed(IFJudgeError):
    pass


def hash_password(password: str) -> str:
    if not password:
        raise IFJudgeError("the password must not be empty")
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=32)
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${b64(salt)}${b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
    except ValueError:
        return False
    if scheme != "scrypt":
        return False
    expected = base64.b64decode(digest)
    got = hashlib.scrypt(
        password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=len(expected)
    )
    return hmac.compare_digest(got, expected)


def add_user(db: Database, name: str, role: str, password: str) -> int:
    return users.add_user(db, name, role, hash_password(password))


def sign_in(db: Database, name: str, password: str) -> dict:
    """Return the user (id, name, role) or raise :class:`SignInFailed` with a message that does not
    reveal whether the name exists."""
    name = name.strip()
    if users.recent_failures(db, name, WINDOW_S) >= MAX_FAILURES:
        raise SignInFailed(
            f"too many failed sign-ins for this name; try again in {int(WINDOW_S // 60)} minutes"
        )
    user = users.get_user(db, name)
    ok = user is not None and verify_password(password, user["password_hash"])
    users.record_sign_in(db, name, ok)
    if not ok:
        raise SignInFailed("unknown user name or wrong password")
    return {k: user[k] for k in ("id", "name", "role")}
