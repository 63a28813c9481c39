"""Users and sign-in attempts (rows only; hashing and policy live in annotation.auth)."""
from __future__ import annotations

import time

from storage.db import Database, now_iso, write
from storage.errors import IFJudgeError, NotFound

ROLES = ("annotator", "lead", "expert")


class UserExists(IFJudgeError):
    pass


def add_user(db: Database, name: str, role: str, password_hash: str) -> int:
    if role not in ROLES:
        raise IFJudgeError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    if not name or name != name.strip():
        raise IFJudgeError("a user name must be non-empty and have no leading or trailing spaces")
    with write(db):
        if db.execute("SELECT 1 FROM users WHERE name = ?", [name]).fetchone() is not None:
            raise UserExists(f"a user named {name!r} already exists")
        cur = db.execute(
            "INSERT INTO users (name, role, password_hash, created_at) VALUES (?, ?, ?, ?)",
            [name, role, password_hash, now_iso()],
        )
    return cur.lastrowid




def get_user(db: Database, name: str) -> dict | None:
    row = db.execute("SELECT id, name, role, password_hash FROM users WHERE name = ?", [name]).fetchone()
    return dict(zip(("id", "name", "role", "password_hash"), row)) if row else None


def get_user_by_id(db: Database, user_id: int) -> dict:
    row = db.execute("SELECT id, name, role FROM users WHERE id = ?", [user_id]).fetchone()
    if row is None:
        raise NotFound(f"no user with id {user_id}")
    return dict(zip(("id", "name", "role"), row))


def users_by_name(db: Database, names: list[str]) -> list[dict]:
    out = []
    for n in names:
        u = get_user(db, n)
        if u is None:
            raise NotFound(f"no user named {n!r}; add it first with `ifjudge users add`")
        out.append({k: u[k] for k in ("id", "name", "role")})
    return out


def list_users(db: Database, role: str | None = None) -> list[dict]:
    sql, args = "SELECT id, name, role FROM users", []
    if role:
        sql, args = sql + " WHERE role = ?", [role]
    return [dict(zip(("id", "name", "role"), r)) for r in db.execute(sql + " ORDER BY name", args)]


def record_sign_in(db: Database, name: str, success: bool) -> None:
    with write(db):
        db.execute("INSERT INTO sign_in_attempts (name, at, success) VALUES (?, ?, ?)", [name, time.time(), int(success)])


def recent_failures(db: Database, name: str, window_s: float) -> int:
    """Failed attempts for ``name`` within the window, since its last success."""
    since = time.time() - window_s
    last_ok = db.execute(
        "SELECT MAX(at) FROM sign_in_attempts WHERE name = ? AND success = 1", [name]
    ).fetchone()[0] or 0
    return db.execute(
        "SELECT COUNT(*) FROM sign_in_attempts WHERE name = ? AND success = 0 AND at > ? AND at > ?",
        [name, since, last_ok],
    ).fetchone()[0]
