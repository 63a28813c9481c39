"""Drafts: the answers an annotator has chosen on a screen but not submitted yet, one row per
(study, user, screen, question). They let a reload (or a browser restart) show the same choices
and reason text; submitting or skipping the screen clears them. The SQL is portable (plain
``INSERT ... ON CONFLICT ... DO UPDATE``, ``?`` placeholders).

>>> from storage.db import connect
>>> db = connect(":memory:")
>>> _ = db.execute("INSERT INTO users (id, name, role, password_hash, created_at) VALUES (1, 'a', 'annotator', '', '')")
>>> _ = db.execute("INSERT INTO projects (id, name, kind, created_at) VALUES (1, 'p', 'generic', '')")
>>> _ = db.execute("INSERT INTO studies (id, project_id, name, questions, settings, created_by, created_at)"
...                " VALUES (1, 1, 's', '[]', '{}', 'lead', '')")
>>> save(db, 1, 1, "i1", "validity", value="No")
>>> save(db, 1, 1, "i1", "validity", reason="repeats the query")
>>> load(db, 1, 1, "i1")
{'validity': {'value': 'No', 'reason': 'repeats the query'}}
>>> clear(db, 1, 1, "i1"); load(db, 1, 1, "i1")
{}
"""
from __future__ import annotations

import time

from storage.db import Database, user_lock, write

_KEEP = object()  # a column not given keeps its stored value


def save(
    db: Database, study_id: int, user_id: int, screen: str, question: str,
    *, value: str | None = _KEEP, reason: str = _KEEP, now: float | None = None,  # type: ignore[assignment]
) -> None:
    """Store the draft answer (``value``) and/or reason of one question of a screen; a column
    not given keeps what is stored (a new row starts with no answer and an empty reason)."""
    given = {k: v for k, v in (("value", value), ("reason", reason)) if v is not _KEEP}
    if not given:
        return
    cols = ["study_id", "user_id", "screen", "question", *given, "updated_at"]
    params = [study_id, user_id, screen, question, *given.values(), time.time() if now is None else now]
    sets = ", ".join(f"{c} = excluded.{c}" for c in [*given, "updated_at"])
    with write(db, lock=user_lock(user_id)):
        db.execute(
            f"INSERT INTO drafts ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
            f" ON CONFLICT (study_id, user_id, screen, question) DO UPDATE SET {sets}",
            params,
        )


def load(db: Database, study_id: int, user_id: int, screen: str) -> dict[str, dict]:
    """question id -> {"value", "reason"} of the user's draft on a screen ({} when there is none)."""
    rows = db.execute(
        "SELECT question, value, reason FROM drafts WHERE study_id = ? AND user_id = ? AND screen = ? ORDER BY question",
        [study_id, user_id, screen],
    ).fetchall()
    return {q: {"value": v, "reason": r} for q, v, r in rows}


def clear(db: Database, study_id: int, user_id: int, screen: str) -> None:
    """Forget the user's draft on a screen (after it is submitted or skipped)."""
    with write(db, lock=user_lock(user_id)):
        db.execute("DELETE FROM drafts WHERE study_id = ? AND user_id = ? AND screen = ?", [study_id, user_id, screen])
