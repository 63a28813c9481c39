"""Users and sign-in attempts (rows only; hashing and policy live in accounts.auth)."""
from __future__ import annotations

import time

from storage import sessions
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




_FIELDS = ("id", "name", "role", "password_hash", "disabled_at", "deleted_at")


def get_user(db: Database, name: str) -> dict | None:
    """The user named ``name`` with its password hash and status (``disabled_at``, ``deleted_at``:
    None, or when), whatever the status; None when no user has that name."""
    row = db.execute(f"SELECT {', '.join(_FIELDS)} FROM users WHERE name = ?", [name]).fetchone()
    return dict(zip(_FIELDS, row)) if row else None


def get_user_by_id(db: Database, user_id: int) -> dict:
    row = db.execute("SELECT id, name, role FROM users WHERE id = ?", [user_id]).fetchone()
    if row is None:
        raise NotFound(f"no user with id {user_id}")
    return dict(zip(("id", "name", "role"), row))


def active_user_by_id(db: Database, user_id: int) -> dict | None:
    """The user (id, name, role) unless missing, disabled or deleted."""
    row = db.execute("SELECT id, name, role FROM users WHERE id = ? AND disabled_at IS NULL AND deleted_at IS NULL",
                     [user_id]).fetchone()
    return dict(zip(("id", "name", "role"), row)) if row else None


def users_by_name(db: Database, names: list[str]) -> list[dict]:
    """The users named ``names``, refusing a name that is unknown, disabled or deleted."""
    out = []
    for n in names:
        u = get_user(db, n)
        if u is None or u["deleted_at"]:
            raise NotFound(f"no user named {n!r}; add it first with `ifjudge users add`")
        if u["disabled_at"]:
            raise IFJudgeError(f"user {n!r} is disabled; enable it first with `ifjudge users enable {n}`")
        out.append({k: u[k] for k in ("id", "name", "role")})
    return out


def list_users(db: Database, role: str | None = None, *, active: bool = False,
               with_status: bool = False) -> list[dict]:
    """Users by name: every user that ever existed (their labels stay attributed to them), or with
    ``active`` only those who may sign in (the pickers of annotators). ``with_status`` adds
    ``status``: ``active``, ``disabled`` or ``deleted``."""
    sql, args, where = "SELECT id, name, role, disabled_at, deleted_at FROM users", [], []
    if role:
        where, args = ["role = ?"], [role]
    if active:
        where.append("disabled_at IS NULL AND deleted_at IS NULL")
    if where:
        sql += " WHERE " + " AND ".join(where)
    out = []
    for r in db.execute(sql + " ORDER BY name", args):
        u = dict(zip(("id", "name", "role"), r[:3]))
        if with_status:
            u["status"] = "deleted" if r[4] else "disabled" if r[3] else "active"
        out.append(u)
    return out


def _require(db: Database, name: str) -> dict:
    u = get_user(db, name)
    if u is None or u["deleted_at"]:
        raise NotFound(f"no user named {name!r}")
    return u


def _keep_a_lead(db: Database, u: dict, what: str) -> None:
    """Refuse to take the last lead who can sign in away (nobody could then run the project)."""
    if u["role"] == "lead" and not u["disabled_at"] and count_active(db, "lead") <= 1:
        raise IFJudgeError(f"{u['name']!r} is the only lead who can sign in; add or enable another lead before "
                           f"you {what} this one")


def set_password_hash(db: Database, name: str, password_hash: str) -> int:
    """Replace ``name``'s password hash and end every session of that user, in one transaction;
    returns how many sessions were open."""
    with write(db):
        u = _require(db, name)
        db.execute("UPDATE users SET password_hash = ? WHERE id = ?", [password_hash, u["id"]])
        return sessions.end_all_in_transaction(db, u["id"], "password changed")


def set_role(db: Database, name: str, role: str) -> int:
    """Give ``name`` another role; their sessions end (they sign in again to the new pages)."""
    if role not in ROLES:
        raise IFJudgeError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    with write(db):
        u = _require(db, name)
        if role != "lead":
            _keep_a_lead(db, u, "change the role of")
        db.execute("UPDATE users SET role = ? WHERE id = ?", [role, u["id"]])
        return sessions.end_all_in_transaction(db, u["id"], f"role changed to {role}")


def set_disabled(db: Database, name: str, disabled: bool) -> int:
    """Disable ``name`` (no sign-in, every session ended) or enable them again."""
    with write(db):
        u = _require(db, name)
        if disabled:
            _keep_a_lead(db, u, "disable")
        db.execute("UPDATE users SET disabled_at = ? WHERE id = ?", [now_iso() if disabled else None, u["id"]])
        return sessions.end_all_in_transaction(db, u["id"], "disabled") if disabled else 0


def delete_user(db: Database, name: str) -> int:
    """Delete ``name``: the row stays (as ``deleted``, its password hash removed) so that the
    labels, adjudications and narrative edits made under this name stay attributed to it; the
    name cannot sign in or be added to a study, and stays taken. Every session ends."""
    with write(db):
        u = _require(db, name)
        _keep_a_lead(db, u, "delete")
        db.execute("UPDATE users SET deleted_at = ?, password_hash = '' WHERE id = ?", [now_iso(), u["id"]])
        return sessions.end_all_in_transaction(db, u["id"], "deleted")


def count_active(db: Database, role: str | None = None) -> int:
    sql = "SELECT COUNT(*) FROM users WHERE disabled_at IS NULL AND deleted_at IS NULL"
    return db.execute(sql + (" AND role = ?" if role else ""), [role] if role else []).fetchone()[0]


def count_users(db: Database) -> int:
    """Every user row, whatever its status."""
    return db.execute("SELECT COUNT(*) FROM users").fetchone()[0]


def reserve_attempt(db: Database, name: str, address: str, *, now: float, window_s: float, burst_s: float,
                    wait_for) -> tuple[int | None, float]:
    """Record a sign-in attempt of ``name`` from ``address`` as failed, before its password is
    checked, in one transaction with the counts that decide whether it may be checked at all, so
    that parallel attempts cannot all pass the throttle.

    ``wait_for(counts)`` gets ``{"client": (attempts, last), "name": (attempts, last),
    "overall": [times]}``: the attempts of the name from that address and from any address that
    count (the failures of the last ``window_s`` seconds and the successes of the last ``burst_s``,
    so that a burst holding the right password is bounded too), with the time of the last one, and
    the times of every failure of the last minute, newest first; it returns the seconds still to
    wait (0: go).
    Returns ``(attempt id, 0)`` when the password may be checked, ``(None, wait)`` otherwise
    (a refused attempt is not recorded). :func:`mark_success` turns the row into a success.
    """
    with write(db):
        counted = "((success = 0 AND at > ?) OR (success = 1 AND at > ?))"
        since = [now - window_s, now - burst_s]
        client = db.execute(f"SELECT COUNT(*), MAX(at) FROM sign_in_attempts WHERE name = ? AND address = ? AND {counted}",
                            [name, address, *since]).fetchone()
        by_name = db.execute(f"SELECT COUNT(*), MAX(at) FROM sign_in_attempts WHERE name = ? AND {counted}",
                             [name, *since]).fetchone()
        overall = [r[0] for r in db.execute(
            "SELECT at FROM sign_in_attempts WHERE success = 0 AND at > ? ORDER BY at DESC LIMIT 1000", [now - 60.0])]
        wait = float(wait_for({"client": (client[0], client[1] or 0.0), "name": (by_name[0], by_name[1] or 0.0),
                               "overall": overall}))
        if wait > 0:
            return None, wait
        cur = db.execute("INSERT INTO sign_in_attempts (name, at, success, address) VALUES (?, ?, 0, ?)",
                         [name, now, address])
    return cur.lastrowid, 0.0


def mark_success(db: Database, attempt_id: int) -> None:
    """The attempt's password was right: it is a success, not a failure."""
    with write(db):
        db.execute("UPDATE sign_in_attempts SET success = 1 WHERE id = ?", [attempt_id])


def forget_attempts(db: Database, *, older_than_s: float, now: float | None = None) -> int:
    """Delete sign-in attempts older than ``older_than_s`` seconds."""
    with write(db):
        cur = db.execute("DELETE FROM sign_in_attempts WHERE at < ?", [(time.time() if now is None else now) - older_than_s])
    return cur.rowcount
