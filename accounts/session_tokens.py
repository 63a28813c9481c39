"""Sign-in sessions: a record on the server per sign-in, and the signed token of the cookie that
lets a browser find its record again after a reload (see docs/deployment.md, "Sessions and
cookies"). No Streamlit here.

A sign-in makes a random token (256 bits) and stores only its SHA-256 digest, with the user and
the expiry, in the table ``sessions`` (:mod:`storage.sessions`). The cookie holds
``<token>.<MAC>``, the MAC an HMAC-SHA256 over the token, the user id and the expiry under a key
kept outside the database (:func:`load_key`): a copy of the database or of a backup neither gives
a token (only digests) nor lets anyone make one (no key), and a row written into the table
without the key signs nobody in. A session is valid while its row is not ended, not expired, its
MAC matches and its user is neither disabled nor deleted; every page run checks that.

>>> from storage.db import connect
>>> from accounts import auth
>>> db = connect(":memory:")
>>> uid = auth.add_user(db, "ann", "annotator", "a-password")
>>> key = b"k" * 32
>>> cookie, digest = start_session(db, uid, key, ttl_s=60, now=1000.0)
>>> read_session(db, cookie, key, now=1030.0)["user"]["name"]
'ann'
>>> read_session(db, cookie, key, now=1061.0) is None  # expired
True
>>> read_session(db, cookie, b"x" * 32, now=1030.0) is None  # another key
True
>>> end_session(db, digest, "signed out")
True
>>> read_session(db, cookie, key, now=1030.0) is None  # a replay after sign-out
True
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import time
from pathlib import Path

from storage import sessions, users
from storage.errors import IFJudgeError

KEY_ENV = "IFJUDGE_SESSION_KEY"
KEY_FILE_ENV = "IFJUDGE_SESSION_KEY_FILE"
MIN_KEY_BYTES = 32


def digest(token: str) -> str:
    """The SHA-256 hex digest under which a session's token is stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def _mac(token: str, user_id: int, expires: float, key: bytes) -> str:
    return hmac.new(key, f"{token}.{int(user_id)}.{int(expires)}".encode(), hashlib.sha256).hexdigest()


def start_session(db, user_id: int, key: bytes, *, ttl_s: float, now: float | None = None) -> tuple[str, str]:
    """Record a new session of ``user_id`` lasting ``ttl_s`` seconds; returns the cookie value and
    the digest that names the session on the server."""
    now = time.time() if now is None else now
    token = secrets.token_urlsafe(32)
    expires = int(now + ttl_s)
    sessions.start(db, digest(token), user_id, expires_at=expires, now=now)
    return f"{token}.{_mac(token, user_id, expires, key)}", digest(token)


def read_session(db, value: str | None, key: bytes, *, now: float | None = None) -> dict | None:
    """``{"digest", "user", "expires_at"}`` of the valid session a cookie value names; None for a
    missing, malformed, forged, ended or expired one, or one of a disabled or deleted user."""
    token, _, mac = (value or "").rpartition(".")
    if not token or not mac:
        return None
    return check_session(db, digest(token), now=now, proof=lambda row: hmac.compare_digest(
        mac, _mac(token, row["user_id"], row["expires_at"], key)))


def check_session(db, session_digest: str | None, *, now: float | None = None, proof=None) -> dict | None:
    """The session named by its digest, as :func:`read_session` (``proof(row)``: an extra check of
    the row, the cookie's MAC when the digest came from a cookie)."""
    row = sessions.get(db, session_digest) if session_digest else None
    if row is None or row["ended_at"] is not None or row["expires_at"] <= (time.time() if now is None else now):
        return None
    if proof is not None and not proof(row):
        return None
    user = users.active_user_by_id(db, row["user_id"])
    if user is None:
        return None
    return {"digest": session_digest, "user": user, "expires_at": row["expires_at"]}


def end_session(db, session_digest: str, why: str) -> bool:
    """End one session (sign-out): its cookie is refused from then on, wherever it is replayed."""
    return sessions.end(db, session_digest, why)


def cookie_digest(value: str | None) -> str | None:
    """The digest of the session a cookie value names (its MAC not checked)."""
    token, _, mac = (value or "").rpartition(".")
    return digest(token) if token and mac else None


def default_key_path(target) -> Path:
    """Where the key lives when neither variable names it: beside a SQLite database
    (``<database>.session-key``, not in its backups), or for a PostgreSQL URL in the user's
    configuration folder (``$XDG_CONFIG_HOME/ifjudge/session-key``, default ``~/.config``)."""
    from storage.db import is_url

    if is_url(target):
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        return base / "ifjudge" / "session-key"
    return Path(str(target) + ".session-key")


def load_key(target, env=None) -> bytes:
    """The key that signs session cookies: ``IFJUDGE_SESSION_KEY`` (at least 32 characters), else
    the file ``IFJUDGE_SESSION_KEY_FILE``, else :func:`default_key_path`. A missing file is created
    with 32 random bytes, readable by its owner only; a file that others may read is refused.
    Changing the key ends every session at once (see docs/deployment.md, "Rotating the key")."""
    env = os.environ if env is None else env
    if env.get(KEY_ENV):
        key = env[KEY_ENV].encode()
        if len(key) < MIN_KEY_BYTES:
            raise IFJudgeError(f"{KEY_ENV} is {len(key)} characters long; give at least {MIN_KEY_BYTES} "
                               "random ones (e.g. the output of `openssl rand -hex 32`)")
        return key
    return secret_key(Path(env.get(KEY_FILE_ENV) or default_key_path(target)))


def secret_key(path: Path) -> bytes:
    """The key in the file ``path``, created there (owner-only, 32 random bytes) on first use."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise IFJudgeError(f"{path}: the session key file may be read by others (mode {stat.filemode(mode)}); "
                           f"make it owner-only: chmod 600 {path}")
    key = path.read_bytes()
    if len(key) < 16:
        raise IFJudgeError(f"{path}: the session key is {len(key)} bytes long; expected 32 random bytes "
                           "(delete the file and a new one is made)")
    return key
