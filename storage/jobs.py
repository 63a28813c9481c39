"""Jobs: work (an evaluation) recorded in the database and run by a worker process (table ``jobs``).

A job moves ``queued -> running -> finished | failed | cancelled``; a running job whose worker
stopped sending heartbeats goes back to ``queued`` (while it has attempts left) or to ``failed``
with the reason (:func:`recover_stale`). Every state change is one ``BEGIN IMMEDIATE``
transaction (:func:`storage.db.write`), so that

- two submissions of the same work (same ``dedupe_key``) while one is queued or running give
  one job (a partial unique index enforces it too);
- claiming a queued job is atomic: two workers never run the same job;
- a worker writes progress, results or failure only while it still owns the job (same
  ``worker_id``, state ``running``): a worker presumed dead that wakes up changes nothing.

Times are seconds since the epoch (``time.time()``), like ``assignments.claimed_at``.
"""
from __future__ import annotations

import json
import time
from collections.abc import Sequence

from storage.db import Database, write
from storage.errors import IFJudgeError, NotFound

STATES = ("queued", "running", "finished", "failed", "cancelled")
ACTIVE = ("queued", "running")
# the queue's clock (seconds): a running job's worker writes a heartbeat every HEARTBEAT_SECONDS; a job
# without one for STALE_SECONDS has lost its worker (recover_stale); an idle worker looks every POLL_SECONDS
HEARTBEAT_SECONDS = 2.0
STALE_SECONDS = 30.0
POLL_SECONDS = 2.0
_COLUMNS = ("id", "kind", "project_id", "parameters", "dedupe_key", "state", "done", "total", "message",
            "stage_started_at", "attempts", "max_attempts", "worker_id", "heartbeat_at", "cancel_requested",
            "error", "result_ids", "created_by", "created_at", "started_at", "updated_at", "finished_at")
_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM jobs"


def _row(row) -> dict:
    job = dict(zip(_COLUMNS, row))
    job["parameters"] = json.loads(job["parameters"])
    job["result_ids"] = json.loads(job["result_ids"])
    job["cancel_requested"] = bool(job["cancel_requested"])
    return job


def _now(now: float | None) -> float:
    return time.time() if now is None else now


def submit(
    db: Database,
    *,
    kind: str,
    project_id: int | None,
    parameters: dict,
    dedupe_key: str,
    created_by: str,
    max_attempts: int = 2,
    now: float | None = None,
) -> tuple[dict, bool]:
    """Queue a job, or return the queued or running job with the same ``dedupe_key``.

    Returns ``(job, created)``; ``created`` is False when an existing job was returned.
    """
    if max_attempts < 1:
        raise IFJudgeError(f"max_attempts must be >= 1, got {max_attempts}")
    t = _now(now)
    with write(db):
        row = db.execute(f"{_SELECT} WHERE dedupe_key = ? AND state IN ('queued', 'running') ORDER BY id LIMIT 1",
                         [dedupe_key]).fetchone()
        if row is not None:
            return _row(row), False
        cur = db.execute(
            "INSERT INTO jobs (kind, project_id, parameters, dedupe_key, state, max_attempts, created_by, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?)",
            [kind, project_id, json.dumps(parameters, sort_keys=True), dedupe_key, max_attempts, created_by, t, t],
        )
        job_id = cur.lastrowid
    return get_job(db, job_id), True


def get_job(db: Database, job_id: int) -> dict:
    row = db.execute(f"{_SELECT} WHERE id = ?", [job_id]).fetchone()
    if row is None:
        raise NotFound(f"no job with id {job_id}")
    return _row(row)


def list_jobs(
    db: Database,
    *,
    project_id: int | None = None,
    states: Sequence[str] | None = None,
    limit: int | None = None,
) -> list[dict]:
    """Jobs, newest first; optionally of one project and in some states."""
    where, params = [], []
    if project_id is not None:
        where.append("project_id = ?")
        params.append(project_id)
    if states:
        bad = [s for s in states if s not in STATES]
        if bad:
            raise IFJudgeError(f"unknown job state {bad[0]!r}; expected one of {', '.join(STATES)}")
        where.append(f"state IN ({', '.join('?' for _ in states)})")
        params.extend(states)
    sql = _SELECT + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY id DESC"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [_row(r) for r in db.execute(sql, params).fetchall()]


def claim(db: Database, worker_id: str, *, kinds: Sequence[str] | None = None,
          now: float | None = None) -> dict | None:
    """Take the oldest queued job for ``worker_id`` (state ``running``, one more attempt), or None.

    Atomic: the read and the update are one ``BEGIN IMMEDIATE`` transaction, so a job is handed
    to one worker only.
    """
    t = _now(now)
    kind_sql = f" AND kind IN ({', '.join('?' for _ in kinds)})" if kinds else ""
    with write(db):
        row = db.execute(f"SELECT id FROM jobs WHERE state = 'queued'{kind_sql} ORDER BY id LIMIT 1",
                         list(kinds or [])).fetchone()
        if row is None:
            return None
        db.execute(
            "UPDATE jobs SET state = 'running', worker_id = ?, attempts = attempts + 1, heartbeat_at = ?,"
            " started_at = ?, updated_at = ?, done = 0, total = 0, message = 'starting', stage_started_at = ?"
            " WHERE id = ? AND state = 'queued'",
            [worker_id, t, t, t, t, row[0]],
        )
    return get_job(db, row[0])


def _owned(db, job_id: int, worker_id: str) -> tuple[bool, bool]:
    row = db.execute("SELECT state, worker_id, cancel_requested FROM jobs WHERE id = ?", [job_id]).fetchone()
    if row is None:
        return False, False
    return row[0] == "running" and row[1] == worker_id, bool(row[2])


def heartbeat(db: Database, job_id: int, worker_id: str, *, now: float | None = None) -> dict:
    """Record that ``worker_id`` is alive and still running ``job_id``.

    Returns ``{"owned": bool, "cancel": bool}``: whether the worker still owns the job, and whether
    a cancel was requested.
    """
    t = _now(now)
    with write(db):
        cur = db.execute("UPDATE jobs SET heartbeat_at = ? WHERE id = ? AND state = 'running' AND worker_id = ?",
                         [t, job_id, worker_id])
        owned, cancel = _owned(db, job_id, worker_id)
    return {"owned": cur.rowcount == 1 and owned, "cancel": cancel}


def progress(db: Database, job_id: int, worker_id: str, done: int, total: int, message: str, *,
             now: float | None = None) -> dict:
    """Record ``done`` of ``total`` for the current stage ``message`` (a new stage, a new
    message or total, restarts the clock the ETA is computed from); a heartbeat too.

    Returns ``{"owned": bool, "cancel": bool}`` like :func:`heartbeat`.
    """
    t = _now(now)
    with write(db):
        cur = db.execute(
            "UPDATE jobs SET stage_started_at = CASE WHEN message = ? AND total = ? THEN stage_started_at ELSE ? END,"
            " done = ?, total = ?, message = ?, heartbeat_at = ?, updated_at = ?"
            " WHERE id = ? AND state = 'running' AND worker_id = ?",
            [message, total, t, done, total, message, t, t, job_id, worker_id],
        )
        owned, cancel = _owned(db, job_id, worker_id)
    return {"owned": cur.rowcount == 1 and owned, "cancel": cancel}


def _end(db, job_id: int, worker_id: str, state: str, *, error: str = "", result_ids=None, now=None) -> bool:
    t = _now(now)
    with write(db):
        sets = "state = ?, error = ?, finished_at = ?, updated_at = ?, heartbeat_at = ?"
        params = [state, error, t, t, t]
        if result_ids is not None:
            sets += ", result_ids = ?, done = total"
            params.append(json.dumps(list(result_ids)))
        cur = db.execute(f"UPDATE jobs SET {sets} WHERE id = ? AND state = 'running' AND worker_id = ?",
                         [*params, job_id, worker_id])
    return cur.rowcount == 1


def finish(db: Database, job_id: int, worker_id: str, result_ids: Sequence[int], *,
           now: float | None = None) -> bool:
    """Mark the job finished with the ids of what it produced (eval run ids); False (nothing
    written) when ``worker_id`` no longer owns it."""
    return _end(db, job_id, worker_id, "finished", result_ids=result_ids, now=now)


def fail(db: Database, job_id: int, worker_id: str, error: str, *, now: float | None = None) -> bool:
    """Mark the job failed with the reason; False when ``worker_id`` no longer owns it."""
    return _end(db, job_id, worker_id, "failed", error=error or "failed (no reason given)", now=now)


def cancelled(db: Database, job_id: int, worker_id: str, reason: str, *,
              now: float | None = None) -> bool:
    """The worker stopped the job on a cancel request; False when it no longer owns it."""
    return _end(db, job_id, worker_id, "cancelled", error=reason, now=now)


def release(db: Database, job_id: int, worker_id: str, reason: str, *, now: float | None = None) -> bool:
    """A worker that is being stopped hands its running job back to the queue; the attempt it
    had started does not count."""
    t = _now(now)
    with write(db):
        cur = db.execute(
            "UPDATE jobs SET state = 'queued', worker_id = NULL, heartbeat_at = NULL, attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END,"
            " error = ?, updated_at = ?, done = 0, total = 0, message = '' WHERE id = ? AND state = 'running'"
            " AND worker_id = ?",
            [reason, t, job_id, worker_id],
        )
    return cur.rowcount == 1


def request_cancel(db: Database, job_id: int, by: str, *, now: float | None = None) -> dict:
    """Cancel a job: a queued job is cancelled at once; a running one is flagged and its worker
    stops at its next progress report. A finished, failed or cancelled job is left as it is.

    Returns the job after the change.
    """
    t = _now(now)
    with write(db):
        row = db.execute("SELECT state FROM jobs WHERE id = ?", [job_id]).fetchone()
        if row is None:
            raise NotFound(f"no job with id {job_id}")
        if row[0] == "queued":
            db.execute("UPDATE jobs SET state = 'cancelled', cancel_requested = 1, error = ?, finished_at = ?,"
                       " updated_at = ? WHERE id = ?", [f"cancelled by {by} before it started", t, t, job_id])
        elif row[0] == "running":
            db.execute("UPDATE jobs SET cancel_requested = 1, error = ?, updated_at = ? WHERE id = ?",
                       [f"cancel requested by {by}", t, job_id])
    return get_job(db, job_id)


def recover_stale(db: Database, *, timeout: float, now: float | None = None) -> list[dict]:
    """Running jobs whose worker sent no heartbeat for ``timeout`` seconds: the worker died.

    Each goes back to ``queued`` while ``attempts < max_attempts`` (the reason is kept in
    ``error``), else to ``failed`` with the reason; a job whose cancel was requested becomes
    ``cancelled``. Returns the jobs changed, as they are now.
    """
    t = _now(now)
    changed = []
    with write(db):
        rows = db.execute(
            "SELECT id, worker_id, heartbeat_at, attempts, max_attempts, cancel_requested FROM jobs"
            " WHERE state = 'running' AND (heartbeat_at IS NULL OR heartbeat_at < ?)",
            [t - timeout],
        ).fetchall()
        for job_id, worker, beat, attempts, max_attempts, cancel in rows:
            silent = f"worker {worker} stopped answering (no heartbeat for {t - (beat or 0):.0f} s, limit {timeout:g} s)"
            if cancel:
                db.execute("UPDATE jobs SET state = 'cancelled', error = ?, finished_at = ?, updated_at = ?"
                           " WHERE id = ?", [f"cancelled; {silent}", t, t, job_id])
            elif attempts < max_attempts:
                db.execute("UPDATE jobs SET state = 'queued', worker_id = NULL, heartbeat_at = NULL, error = ?,"
                           " updated_at = ? WHERE id = ?",
                           [f"{silent} during attempt {attempts} of {max_attempts}; queued again", t, job_id])
            else:
                db.execute("UPDATE jobs SET state = 'failed', error = ?, finished_at = ?, updated_at = ? WHERE id = ?",
                           [f"{silent} during attempt {attempts} of {max_attempts}; no attempt left", t, t, job_id])
            changed.append(job_id)
    return [get_job(db, j) for j in changed]
