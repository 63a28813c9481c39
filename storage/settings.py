"""Small server-wide values kept in the database (table ``settings``).

The one in use: ``demo_database``, the mark of a database the demo was loaded into while it was
empty (:func:`annotation.demo.demo_refusal`). Secrets never go here: the key that signs sign-in
cookies lives outside the database and its backups (:func:`accounts.session_tokens.load_key`).
Each lead's last used project and study (``last_project:<user id>``, ``last_study:<user id>``), so
that every page opens on them (also after a reload or on another app server).
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
    set_setting(db, f"last_{what}:{int(user_id)}", str(int(value_id)))
