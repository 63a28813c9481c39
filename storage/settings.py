"""Small server-wide values kept in the database (table ``settings``).

The one in use: the key that signs sign-in cookies when IFJudge runs on PostgreSQL, so that every
app server behind a load balancer accepts the cookies of the others (on SQLite the key lives in a
file beside the database, outside its backups).
"""
from __future__ import annotations

import secrets

from storage.db import Database, write

SESSION_KEY = "session_key"


def shared_secret(db: Database, name: str = SESSION_KEY, *, nbytes: int = 32) -> bytes:
    """The secret ``name``: created once (random), then the same for every process.

    Deleting its row signs everybody out.
    """
    row = db.execute("SELECT value FROM settings WHERE key = ?", [name]).fetchone()
    if row is None:
        with write(db):
            db.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                       [name, secrets.token_hex(nbytes)])
        row = db.execute("SELECT value FROM settings WHERE key = ?", [name]).fetchone()
    return bytes.fromhex(row[0])
