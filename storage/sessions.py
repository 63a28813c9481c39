"""Sign-in sessions kept on the server (table ``sessions``; rows only: tokens, keys and policy
live in :mod:`accounts.session_tokens`).

A row holds the SHA-256 digest of a session's random token (never the token), its user, when it
started and when it expires, and, once ended, when and why. Every page run reads the row of its
session, so ending a row (sign-out, a password change, a disabled or deleted user) signs that
session out everywhere at once.
"""
from __future__ import annotations

import time

from storage.db import Database, write

COLUMNS = ("id", "token_digest", "user_id", "created_at", "expires_at", "ended_at", "ended_why")


def start(db: Database, token_digest: str, user_id: int, *, expires_at: float, now: float | None = None) -> int:
    """Record a new session of ``user_id``; returns its id."""
    with write(db):
        cur = db.execute(
            "INSERT INTO sessions (token_digest, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)",
            [token_digest, int(user_id), time.time() if now is None else now, float(expires_at)],
        )
    return cur.lastrowid


def get(db: Database, token_digest: str) -> dict | None:
    """The session row with this digest, ended or not (None when there is none)."""
    row = db.execute(f"SELECT {', '.join(COLUMNS)} FROM sessions WHERE token_digest = ?", [token_digest]).fetchone()
    return dict(zip(COLUMNS, row)) if row else None


def end(db: Database, token_digest: str, why: str, *, now: float | None = None) -> bool:
    """End one session (True if it was open)."""
    with write(db):
        cur = db.execute("UPDATE sessions SET ended_at = ?, ended_why = ? WHERE token_digest = ? AND ended_at IS NULL",
                         [time.time() if now is None else now, why, token_digest])
    return cur.rowcount > 0


def end_all_in_transaction(db: Database, user_id: int, why: str, *, now: float | None = None) -> int:
    """End every open session of ``user_id``, inside the caller's write transaction (a password
    change, a disabled or deleted user, a changed role); returns how many were open."""
    cur = db.execute("UPDATE sessions SET ended_at = ?, ended_why = ? WHERE user_id = ? AND ended_at IS NULL",
                     [time.time() if now is None else now, why, int(user_id)])
    return cur.rowcount


def end_all(db: Database, user_id: int, why: str) -> int:
    """End every open session of ``user_id`` (``ifjudge users sign-out``)."""
    with write(db):
        return end_all_in_transaction(db, user_id, why)


def open_count(db: Database, user_id: int, *, now: float | None = None) -> int:
    """Sessions of ``user_id`` neither ended nor expired."""
    return db.execute("SELECT COUNT(*) FROM sessions WHERE user_id = ? AND ended_at IS NULL AND expires_at > ?",
                      [int(user_id), time.time() if now is None else now]).fetchone()[0]


def forget_old(db: Database, *, older_than_s: float = 30 * 86400, now: float | None = None) -> int:
    """Delete rows of sessions that ended or expired more than ``older_than_s`` ago."""
    cutoff = (time.time() if now is None else now) - older_than_s
    with write(db):
        cur = db.execute("DELETE FROM sessions WHERE COALESCE(ended_at, expires_at) < ?", [cutoff])
    return cur.rowcount
