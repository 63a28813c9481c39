"""A judge run as a job of ``ifjudge worker``: progress and ETA, cancel, and a worker killed with
SIGKILL mid-run whose job another worker finishes, sending again only the answers that were in
flight (the loopback server counts every request)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from annotation.demo import load_demo
from annotation.judges.runs import prepare_run
from evaluation.jobs import eta_seconds
from evaluation.judges.chat import ChatConfig
from evaluation.judges.jobs import submit_judge
from evaluation.judges.runs import JudgeSpec
from storage import jobs, judge_labels
from storage.db import connect
from tests.builders import make_project
from tests.fake_openai import FakeOpenAI, json_answer
from storage.projects import get_project

ROOT = Path(__file__).resolve().parents[1]


def worker(path, *extra) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.Popen([sys.executable, "-m", "cli", "worker", "--db", str(path), "--poll", "0.2",
                             "--heartbeat", "0.2", "--stale", "1.5", "--nice", "0", *extra],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_for(condition, timeout=60.0):
    end = time.time() + timeout
    while time.time() < end:
        if condition():
            return True
        time.sleep(0.05)
    raise AssertionError("timed out")


def slow_yes(body):
    time.sleep(0.03)
    return json_answer("Yes", {"Yes": 0.7, "No": 0.3})


def test_a_sigkilled_worker_s_job_is_finished_by_another_without_judging_twice(tmp_path):
    path = tmp_path / "w.db"
    db = connect(path)
    make_project(db, n_groups=50, per_group=4)  # 200 instances
    with FakeOpenAI(slow_yes) as server:
        cfg = ChatConfig(server.base_url, "judge-7b", concurrency=3)
        run = prepare_run(db, get_project(db, "p"), JudgeSpec("validity", chat=cfg), created_by="t")["run"]
        job, _ = submit_judge(db, run["id"], created_by="t", sending={"concurrency": 3})
        first = worker(path)
        try:
            wait_for(lambda: len(judge_labels.judged_keys(db, run["id"])) >= 60)
            running = jobs.get_job(db, job["id"])
            assert running["state"] == "running" and running["total"] == 200 and running["done"] >= 50
            assert eta_seconds(running) is not None
            first.send_signal(signal.SIGKILL)
            first.wait(10)
            stored_at_kill = len(judge_labels.judged_keys(db, run["id"]))
            answered_at_kill = sum(server.answered.values())
        finally:
            first.kill()
        second = worker(path)  # it takes the job back once its heartbeat is 1.5 s old
        try:
            wait_for(lambda: jobs.get_job(db, job["id"])["state"] != "running"
                     or jobs.get_job(db, job["id"])["worker_id"] is None, timeout=30)
            wait_for(lambda: jobs.get_job(db, job["id"])["state"] in ("finished", "failed"), timeout=120)
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(10)
    end = jobs.get_job(db, job["id"])
    assert end["state"] == "finished" and end["attempts"] == 2 and end["result_ids"] == [run["id"]]
    assert len(judge_labels.labels(db, run["id"])) == 200
    assert set(server.per_key) and len(server.per_key) == 200
    # only answers that were in flight when the worker died (at most the concurrency) went out twice
    twice = [k for k, n in server.answered.items() if n > 1]
    assert len(twice) <= 3 and max(server.answered.values()) <= 2
    assert answered_at_kill - stored_at_kill <= 3
    assert sum(server.answered.values()) == 200 + len(twice)


def test_cancel_stops_the_job_and_keeps_its_answers(tmp_path):
    path = tmp_path / "c.db"
    db = connect(path)
    load_demo(db)
    make_project(db, n_groups=40, per_group=4)
    with FakeOpenAI(slow_yes) as server:
        run = prepare_run(db, get_project(db, "p"), JudgeSpec("validity", chat=ChatConfig(server.base_url, "m", concurrency=1)),
                          created_by="t")["run"]
        job, _ = submit_judge(db, run["id"], created_by="t")
        w = worker(path)
        try:
            wait_for(lambda: len(judge_labels.judged_keys(db, run["id"])) >= 10)
            jobs.request_cancel(db, job["id"], "lead")
            wait_for(lambda: jobs.get_job(db, job["id"])["state"] == "cancelled")
        finally:
            w.send_signal(signal.SIGTERM)
            w.wait(10)
        kept = len(judge_labels.labels(db, run["id"]))
        assert 10 <= kept < 160 and server.requests == kept
