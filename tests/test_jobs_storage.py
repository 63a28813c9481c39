"""storage.jobs: one job per evaluation, atomic claims across processes, cancel, and recovery of
jobs whose worker stopped sending heartbeats."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from storage import jobs
from storage.db import connect

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL

ROOT = Path(__file__).resolve().parents[1]


def _submit(db, key="k1", **kw):
    return jobs.submit(db, kind="eval", project_id=None, parameters={"model": "bm25", "key": key},
                       dedupe_key=key, created_by=kw.pop("by", "lead"), **kw)


def test_same_work_submitted_twice_is_one_job_until_it_ends(db_path):
    db = connect(db_path)
    first, created = _submit(db, by="lead")
    again, created_again = _submit(db, by="lead2")
    assert created and not created_again and again["id"] == first["id"] and again["created_by"] == "lead"
    other, created_other = _submit(db, key="k2")
    assert created_other and other["id"] != first["id"]
    # running: still the same job
    claimed = jobs.claim(db, "w1")
    assert claimed["id"] == first["id"] and _submit(db)[0]["id"] == first["id"]
    # once it has ended, the same work can be queued again
    assert jobs.finish(db, first["id"], "w1", [7])
    fresh, created_fresh = _submit(db)
    assert created_fresh and fresh["id"] not in (first["id"], other["id"])
    assert jobs.get_job(db, first["id"])["result_ids"] == [7]


def test_the_database_itself_refuses_two_active_jobs_with_one_key(db_path):
    import sqlite3

    import psycopg

    db = connect(db_path)
    _submit(db)
    with pytest.raises((sqlite3.IntegrityError, psycopg.errors.UniqueViolation)):
        db.execute("INSERT INTO jobs (kind, parameters, dedupe_key, state, created_by, created_at, updated_at)"
                   " VALUES ('eval', '{}', 'k1', 'running', 'x', 0, 0)")


CLAIMER = """
import json, sys
from storage import jobs
from storage.db import connect
db = connect(sys.argv[1])
got = []
while True:
    job = jobs.claim(db, sys.argv[2])
    if job is None:
        break
    got.append(job["id"])
print(json.dumps(got))
"""


def test_two_worker_processes_never_claim_the_same_job(db_path):
    db = connect(db_path)
    ids = [_submit(db, key=f"k{i}")[0]["id"] for i in range(60)]
    procs = [subprocess.Popen([sys.executable, "-c", CLAIMER, str(db_path), f"w{n}"], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True) for n in range(2)]
    got = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(got[0] + got[1]) == sorted(ids) and not set(got[0]) & set(got[1])
    rows = jobs.list_jobs(db)
    assert {j["state"] for j in rows} == {"running"} and all(j["attempts"] == 1 for j in rows)
    owner = {j["id"]: j["worker_id"] for j in rows}
    assert all(owner[i] == "w0" for i in got[0]) and all(owner[i] == "w1" for i in got[1])


def test_cancel_queued_at_once_running_through_its_worker_ended_untouched(db_path):
    db = connect(db_path)
    queued = _submit(db, key="a")[0]
    running = _submit(db, key="b")[0]
    done = _submit(db, key="c")[0]
    assert jobs.claim(db, "w")["id"] == queued["id"]  # oldest first; hand it back to set up the states
    assert jobs.release(db, queued["id"], "w", "test")
    assert jobs.get_job(db, queued["id"])["attempts"] == 0
    db.execute("UPDATE jobs SET state = 'running', worker_id = 'w' WHERE id IN (?, ?)", [running["id"], done["id"]])
    assert jobs.finish(db, done["id"], "w", [1])

    after = jobs.request_cancel(db, queued["id"], "lead")
    assert after["state"] == "cancelled" and "before it started" in after["error"]
    assert jobs.claim(db, "w2") is None  # nothing left to run

    after = jobs.request_cancel(db, running["id"], "lead")
    assert after["state"] == "running" and after["cancel_requested"]
    assert jobs.progress(db, running["id"], "w", 1, 4, "step") == {"owned": True, "cancel": True}
    assert jobs.cancelled(db, running["id"], "w", after["error"])
    assert jobs.get_job(db, running["id"])["state"] == "cancelled"

    assert jobs.request_cancel(db, done["id"], "lead")["state"] == "finished"


def test_progress_restarts_the_stage_clock_only_on_a_new_stage(db_path):
    db = connect(db_path)
    job = _submit(db)[0]
    jobs.claim(db, "w", now=100.0)
    jobs.progress(db, job["id"], "w", 0, 10, "encoding", now=101.0)
    jobs.progress(db, job["id"], "w", 5, 10, "encoding", now=105.0)
    j = jobs.get_job(db, job["id"])
    assert (j["done"], j["total"], j["message"], j["stage_started_at"], j["heartbeat_at"]) == (5, 10, "encoding", 101.0, 105.0)
    jobs.progress(db, job["id"], "w", 0, 3, "retrieving", now=106.0)
    assert jobs.get_job(db, job["id"])["stage_started_at"] == 106.0


def test_a_job_whose_worker_died_is_retried_once_then_failed_with_the_reason(db_path):
    db = connect(db_path)
    job = _submit(db)[0]
    jobs.claim(db, "w1", now=1000.0)
    assert jobs.recover_stale(db, timeout=30, now=1020.0) == []  # heartbeat 20 s old: alive
    jobs.heartbeat(db, job["id"], "w1", now=1025.0)
    assert jobs.recover_stale(db, timeout=30, now=1050.0) == []
    [back] = jobs.recover_stale(db, timeout=30, now=1056.0)
    assert back["state"] == "queued" and back["attempts"] == 1 and back["worker_id"] is None
    assert "w1 stopped answering" in back["error"] and "attempt 1 of 2" in back["error"]

    # the presumed-dead worker wakes up: it owns nothing any more
    assert jobs.progress(db, job["id"], "w1", 1, 2, "x")["owned"] is False
    assert not jobs.finish(db, job["id"], "w1", [1])

    again = jobs.claim(db, "w2", now=1060.0)
    assert again["id"] == job["id"] and again["attempts"] == 2 and again["state"] == "running"
    assert not jobs.finish(db, job["id"], "w1", [1]) and jobs.get_job(db, job["id"])["state"] == "running"
    [failed] = jobs.recover_stale(db, timeout=30, now=1100.0)
    assert failed["state"] == "failed" and "w2 stopped answering" in failed["error"]
    assert "no attempt left" in failed["error"] and failed["finished_at"] == 1100.0
    assert jobs.claim(db, "w3", now=1200.0) is None


def test_a_stale_job_whose_cancel_was_requested_ends_cancelled(db_path):
    db = connect(db_path)
    job = _submit(db)[0]
    jobs.claim(db, "w1", now=0.0)
    jobs.request_cancel(db, job["id"], "lead")
    [j] = jobs.recover_stale(db, timeout=30, now=100.0)
    assert j["state"] == "cancelled" and "cancelled" in j["error"]


def test_unknown_state_and_job_are_refused(db_path):
    from storage.errors import IFJudgeError, NotFound

    db = connect(db_path)
    with pytest.raises(IFJudgeError, match="unknown job state 'done'; expected one of queued"):
        jobs.list_jobs(db, states=["done"])
    with pytest.raises(NotFound, match="no job with id 5"):
        jobs.request_cancel(db, 5, "lead")
