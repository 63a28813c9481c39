"""Small server-wide values kept in the database (table ``settings``).

The one in use: ``demo_database``, the mark of a database the demo was loaded into while it was
empty (:func:`annotation.demo.demo_refusal`). Secrets never go here: the key that signs sign-in
cookies lives outside the database and its backups (:func:`annotation.session_tokens.load_key`).
"""
from __future__ import annotations

from storage.db import Database, write


def get_setting(db: Database, key: str) -> str | None:
    row = db.execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()
    return row[0] if row else None


def set_setting(db: Database, key: str, value: str) -> None:
    with write(db):
        db.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                   [key, value])
