"""Passwords, sign-in and the accounts a lead runs.

Passwords are hashed with scrypt (``hashlib.scrypt``, memory-hard, random 16-byte salt per user) and
never stored or logged in clear.

Sign-in is throttled with a backoff, never a hard lock. Each attempt is first recorded as a failure,
in the same transaction that counts the earlier failures (:func:`storage.users.reserve_attempt`),
and only then is the password checked; a right password turns the record into a success. So
parallel attempts cannot all slip past the count, and at most :data:`MAX_FAILURES` passwords of a
name are checked before the backoff starts, even when the right one is among them (the failures
of the last :data:`WINDOW_S` seconds count, and the successes of the last :data:`BURST_S`):

* from one client address, after ``MAX_FAILURES`` (5) failures each further attempt waits
  ``BACKOFF_S * 2**(failures - MAX_FAILURES)`` seconds after the last failure (15 s, 30 s, 60 s ...
  at most :data:`MAX_BACKOFF_S`);
* from every address together, the same after :data:`MAX_FAILURES_NAME` (20) failures, at most
  :data:`MAX_BACKOFF_NAME_S`, so guesses spread over many addresses slow down too, while one
  attacker's address does not keep the owner of the name out;
* over every name, at most :data:`MAX_FAILURES_PER_MINUTE` failures a minute (what one server's
  CPU spends on scrypt stays bounded).

A refused attempt checks no password and is not counted. An unknown name costs the same scrypt
computation as a known one, so the time of an answer does not tell whether a name exists.
"""
from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import math
import os
import time

from storage import sessions, users
from storage.errors import IFJudgeError
from storage.db import Database

SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
MAX_FAILURES = 5
MAX_FAILURES_NAME = 20
MAX_FAILURES_PER_MINUTE = 120
BACKOFF_S = 15.0
MAX_BACKOFF_S = 900.0
MAX_BACKOFF_NAME_S = 300.0
WINDOW_S = 900.0
BURST_S = 60.0
MIN_PASSWORD = 8


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


@functools.lru_cache(maxsize=1)
def _decoy_hash() -> str:
    """A hash of a random password: checked for unknown names, so that they cost the same time."""
    return hash_password(base64.b64encode(os.urandom(12)).decode())


def add_user(db: Database, name: str, role: str, password: str) -> int:
    return users.add_user(db, name, role, hash_password(password))


def backoff(failures: int, free: int, *, base: float = BACKOFF_S, cap: float = MAX_BACKOFF_S) -> float:
    """Seconds to wait after the last failure once ``failures`` reached ``free``.

    >>> [backoff(n, 5) for n in (4, 5, 6, 7)], backoff(40, 5)
    ([0.0, 15.0, 30.0, 60.0], 900.0)
    """
    return 0.0 if failures < free else float(min(cap, base * 2 ** min(failures - free, 32)))


def wait_for(counts: dict, now: float) -> float:
    """Seconds an attempt must still wait, from the counts :func:`storage.users.reserve_attempt`
    reads (0: the password may be checked).

    >>> wait_for({"client": (5, 100.0), "name": (5, 100.0), "overall": []}, now=110.0)
    5.0
    >>> wait_for({"client": (2, 100.0), "name": (2, 100.0), "overall": []}, now=110.0)
    0.0
    """
    (n_client, last_client), (n_name, last_name) = counts["client"], counts["name"]
    waits = [last_client + backoff(n_client, MAX_FAILURES) - now,
             last_name + backoff(n_name, MAX_FAILURES_NAME, cap=MAX_BACKOFF_NAME_S) - now]
    overall = counts["overall"]
    if len(overall) >= MAX_FAILURES_PER_MINUTE:  # the oldest failure that keeps the minute full
        waits.append(overall[MAX_FAILURES_PER_MINUTE - 1] + 60.0 - now)
    return max(0.0, *waits)


def sign_in(db: Database, name: str, password: str, *, address: str = "") -> dict:
    """Return the user (id, name, role) or raise :class:`SignInFailed` with a message that does not
    reveal whether the name exists. ``address``: the client's address (the throttle's key beside
    the name)."""
    name = name.strip()
    now = time.time()
    attempt, wait = users.reserve_attempt(db, name, address or "", now=now, window_s=WINDOW_S, burst_s=BURST_S,
                                          wait_for=lambda counts: wait_for(counts, now))
    if attempt is None:
        raise SignInFailed(f"too many failed sign-ins; try again in {math.ceil(wait)} seconds")
    user = users.get_user(db, name)
    known = user is not None and bool(user["password_hash"])
    ok = verify_password(password, user["password_hash"] if known else _decoy_hash()) and known
    if not ok:
        raise SignInFailed("unknown user name or wrong password")
    users.mark_success(db, attempt)
    if user["disabled_at"]:
        raise SignInFailed("this account is disabled; ask a project lead")
    return {k: user[k] for k in ("id", "name", "role")}


def password_problem(password: str) -> str | None:
    """Why ``password`` cannot be a new password (None when it can).

    >>> password_problem("short"), password_problem("long enough")
    ('a password needs at least 8 characters (received 5)', None)
    """
    if len(password) < MIN_PASSWORD:
        return f"a password needs at least {MIN_PASSWORD} characters (received {len(password)})"
    return None


def change_password(db: Database, name: str, password: str) -> int:
    """Give ``name`` a new password; every session of that user ends at once (returns how many)."""
    problem = password_problem(password)
    if problem:
        raise IFJudgeError(problem)
    return users.set_password_hash(db, name, hash_password(password))


def set_disabled(db: Database, name: str, disabled: bool) -> int:
    """Disable ``name`` (no sign-in; every session ends, returns how many) or enable them again.
    The only lead who can sign in is never disabled."""
    return users.set_disabled(db, name, disabled)


def set_role(db: Database, name: str, role: str) -> int:
    """Give ``name`` another role; their sessions end, so they sign in again to their new pages."""
    return users.set_role(db, name, role)


def delete_user(db: Database, name: str) -> int:
    """Delete ``name``: no sign-in, never in a new study; their labels, adjudications and edits stay
    attributed to the name, which stays taken. Every session ends."""
    return users.delete_user(db, name)


def sign_out_everywhere(db: Database, name: str) -> int:
    """End every session of ``name`` (every browser signed in as them)."""
    user = users.get_user(db, name)
    if user is None or user["deleted_at"]:
        raise IFJudgeError(f"no user named {name!r}")
    return sessions.end_all(db, user["id"], "signed out by a lead")


KEEP_S = 30 * 86400


def forget_old(db: Database, *, older_than_s: float = KEEP_S) -> None:
    """Delete the records of sessions that ended or expired, and of sign-in attempts, older than
    ``older_than_s`` (30 days: a month of who signed in when; ``ifjudge serve`` does it at start)."""
    sessions.forget_old(db, older_than_s=older_than_s)
    users.forget_attempts(db, older_than_s=max(older_than_s, WINDOW_S))
