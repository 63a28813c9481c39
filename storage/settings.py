"""Small server-wide values kept in the database (table ``settings``).

The key that signs sign-in cookies when IFJudge runs on PostgreSQL, so that every app server
behind a load balancer accepts the cookies of the others (on SQLite the key lives in a file
beside the database, outside its backups); and each lead's last used project and study, so that
every page opens on them (also after a reload or on another app server).
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


def remembered(db: Database, user_id: int, what: str) -> int | None:
    """The id of the ``what`` (``project`` or ``study``) the user last chose on a page, or None.

    >>> from storage.db import connect
    >>> db = connect(":memory:")
    >>> remembered(db, 1, "project"), remember(db, 1, "project", 7), remembered(db, 1, "project")
    (None, None, 7)
    """
    row = db.execute("SELECT value FROM settings WHERE key = ?", [f"last_{what}:{int(user_id)}"]).fetchone()
    return int(row[0]) if row and str(row[0]).isdigit() else None


def remember(db: Database, user_id: int, what: str, value_id: int) -> None:
    """Keep the ``what`` the user chose (written only when it changed: a page run reads, it does
    not write)."""
    if remembered(db, user_id, what) == int(value_id):
        return
    with write(db):
        db.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                   [f"last_{what}:{int(user_id)}", str(int(value_id))])
