"""Evaluation jobs end to end: submitted from the CLI, run by a real `ifjudge worker` process,
killed mid-job (SIGKILL) and recovered; a job's eval run equals a foreground `ifjudge eval run`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from annotation.demo import load_demo
from evaluation import jobs as eval_jobs
from storage import projects
from storage import eval_runs, jobs
from storage.db import connect

ROOT = Path(__file__).resolve().parents[1]

# A worker whose BM25 retrieval reports progress, says so in a file, then waits to be killed: a
# job held mid-run on a condition, not on a guessed sleep.
HELD_WORKER = """
import sys, threading
from pathlib import Path
from evaluation.retrievers.bm25 import BM25Retriever
from cli.main import main

marker = Path(sys.argv[1])

def held(self, topics, documents, *, progress=None, **kw):
    progress(1, len(topics), "retrieving (held by the test)")
    marker.write_text("held")
    threading.Event().wait()

BM25Retriever.retrieve = held
raise SystemExit(main(sys.argv[2:]))
"""
HEARTBEAT, STALE = "0.2", "1.5"


def _env():
    return dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")


def _wait(condition, what: str, timeout: float = 60.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _held_worker(db_path: Path, marker: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HELD_WORKER, str(marker), "worker", "--db", str(db_path),
                             "--heartbeat", HEARTBEAT, "--stale", STALE, "--poll", "0.1"],
                            cwd=ROOT, env=_env(), stderr=subprocess.PIPE, text=True)


def _worker_once(db_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", "worker", "--db", str(db_path), "--once",
                           "--heartbeat", HEARTBEAT, "--stale", STALE], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=300)


def _kill_mid_job(db_path: Path, job_id: int, marker: Path) -> dict:
    """Start a held worker, wait until it runs the job and has reported progress, SIGKILL it."""
    marker.unlink(missing_ok=True)
    proc = _held_worker(db_path, marker)
    try:
        _wait(marker.exists, "the worker to reach the held retrieval")
        db = connect(db_path)
        job = jobs.get_job(db, job_id)
        assert job["state"] == "running" and job["done"] == 1 and job["message"] == "retrieving (held by the test)"
        assert job["worker_id"] and job["worker_id"].split(":")[1] == str(proc.pid)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL
    dead = jobs.get_job(db, job_id)
    assert dead["state"] == "running"  # it still claims to run: only its silence tells
    # wait (on the condition, not a guess) until its heartbeat is older than the stale limit
    _wait(lambda: time.time() - jobs.get_job(db, job_id)["heartbeat_at"] > float(STALE) + 0.1, "a stale heartbeat")
    return dead


def _submit(run_cli, db_path, *extra):
    code, out, err = run_cli("eval", "run", "--db", db_path, "--project", "demo", "--model", "bm25",
                             "--qrels-version", "original", "--background", "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def test_killed_worker_job_is_retried_and_equals_a_foreground_run(run_cli, demo, db_path, tmp_path):
    submitted = _submit(run_cli, db_path)
    assert submitted["created"] and submitted["state"] == "queued"
    job_id = submitted["job_id"]
    assert _submit(run_cli, db_path)["job_id"] == job_id  # the same evaluation again: the same job

    dead = _kill_mid_job(db_path, job_id, tmp_path / "held")
    assert dead["attempts"] == 1
    done = _worker_once(db_path)
    assert done.returncode == 0, done.stderr
    assert f"job {job_id}: queued" in done.stderr and f"job {job_id}: finished" in done.stderr

    db = connect(db_path)
    job = jobs.get_job(db, job_id)
    assert job["state"] == "finished" and job["attempts"] == 2 and job["error"] == ""
    assert job["done"] == job["total"] > 0 and len(job["result_ids"]) == 1
    background = eval_runs.load_eval_run(db, job["result_ids"][0])

    # the same evaluation in the foreground, on a fresh copy of the demo
    other = tmp_path / "foreground.db"
    load_demo(connect(other))
    code, out, err = run_cli("eval", "run", "--db", other, "--project", "demo", "--model", "bm25",
                             "--qrels-version", "original", "--json")
    assert code == 0, err
    foreground = eval_runs.load_eval_run(connect(other), json.loads(out)["eval_run_id"])
    assert background["metrics"] == foreground["metrics"] and background["metrics"]["nDCG@10"] > 0
    assert background["per_query"] == foreground["per_query"] and background["run"] == foreground["run"]
    assert (background["model"], background["template"], background["qrels_version"]) == \
        (foreground["model"], foreground["template"], foreground["qrels_version"])
    assert background["settings"]["retrieval_key"] == foreground["settings"]["retrieval_key"]

    code, out, _ = run_cli("jobs", "--db", db_path, "--json")
    [listed] = json.loads(out)
    assert listed["id"] == job_id and listed["state"] == "finished" and listed["eval_run_ids"] == job["result_ids"]


def test_a_job_killed_on_both_attempts_ends_failed_with_the_reason(run_cli, demo, db_path, tmp_path):
    job_id = _submit(run_cli, db_path)["job_id"]
    _kill_mid_job(db_path, job_id, tmp_path / "held")
    # the next held worker recovers the job (queued again), claims it (attempt 2) and is killed too
    second = _kill_mid_job(db_path, job_id, tmp_path / "held")
    assert second["attempts"] == 2
    swept = _worker_once(db_path)
    assert swept.returncode == 0 and f"job {job_id}: failed" in swept.stderr
    job = jobs.get_job(connect(db_path), job_id)
    assert job["state"] == "failed" and job["result_ids"] == [] and job["finished_at"] is not None
    assert "stopped answering" in job["error"] and "attempt 2 of 2; no attempt left" in job["error"]
    code, out, _ = run_cli("jobs", "--db", db_path)
    assert f"job {job_id}" in out and "failed" in out and "no attempt left" in out


def test_an_evaluation_error_fails_the_job_with_its_message(run_cli, demo, db_path, tmp_path):
    # what can be checked before queueing is refused at once: no job
    code, _, err = run_cli("eval", "run", "--db", db_path, "--project", "demo", "--model", "bm25",
                           "--variant", "nope", "--background")
    assert code == 2 and "no instance of variant 'nope'" in err
    assert jobs.list_jobs(connect(db_path)) == []
    # what only the worker finds (a model folder that holds no model) fails the job with its reason
    (tmp_path / "not-a-model").mkdir()
    job_id = _submit(run_cli, db_path, "--model", tmp_path / "not-a-model")["job_id"]
    assert eval_jobs.work(db_path, once=True) == 1
    job = jobs.get_job(connect(db_path), job_id)
    assert job["state"] == "failed" and job["attempts"] == 1 and job["error"]


def test_cancel_from_the_cli_stops_a_running_job_at_its_next_progress(run_cli, demo, db_path, monkeypatch):
    from evaluation.retrievers.bm25 import BM25Retriever

    job_id = _submit(run_cli, db_path)["job_id"]
    original = BM25Retriever.retrieve
    seen = []

    def cancelled_midway(self, topics, documents, *, progress=None, **kw):
        progress(0, len(topics), "first step")
        code, out, _ = run_cli("jobs", "cancel", str(job_id), "--db", db_path)
        seen.append(out)
        return original(self, topics, documents, progress=progress, **kw)

    monkeypatch.setattr(BM25Retriever, "retrieve", cancelled_midway)
    eval_jobs.work(db_path, once=True)
    job = jobs.get_job(connect(db_path), job_id)
    assert "is running: its worker stops at its next progress report" in seen[0]
    assert job["state"] == "cancelled" and job["result_ids"] == [] and "cancel requested by cli:" in job["error"]
    assert eval_runs.list_eval_runs(connect(db_path), job["project_id"]) == []
    code, out, _ = run_cli("jobs", "cancel", str(job_id), "--db", db_path)
    assert code == 0 and "already cancelled" in out


def test_a_worker_refused_by_the_server_waits_and_then_runs_the_job(run_cli, demo, db_path, monkeypatch):
    # PostgreSQL out of connections (max_connections) while the worker polls: it says so, waits
    # one poll interval and asks again, instead of ending and leaving the queue unserved
    from storage.postgres import DatabaseUnavailable

    job_id = _submit(run_cli, db_path)["job_id"]
    claim, refusals, said = jobs.claim, ["too many clients already"], []

    def refused_once(*args, **kwargs):
        if refusals:
            raise DatabaseUnavailable(refusals.pop())
        return claim(*args, **kwargs)

    monkeypatch.setattr(eval_jobs.store, "claim", refused_once)
    assert eval_jobs.work(db_path, once=True, poll=0.01, log=said.append) == 1
    assert said[0] == "waiting 0.01 s: too many clients already"
    assert jobs.get_job(connect(db_path), job_id)["state"] == "finished"


def test_background_submission_is_checked_before_it_is_queued(run_cli, demo, db_path):
    code, _, err = run_cli("eval", "run", "--db", db_path, "--project", "demo", "--model", "bm25",
                           "--qrels-version", "validatd", "--background")
    assert code == 2 and "no qrels version 'validatd'" in err and "original" in err
    code, out, _ = run_cli("jobs", "--db", db_path)
    assert out.strip() == "no job"
    code, out, _ = run_cli("eval", "run", "--db", db_path, "--project", "demo", "--model", "bm25", "--background")
    assert code == 0 and out.startswith("job 1 queued: bm25 / query_instruction / original (k=1000, mteb protocol)")
    code, out, _ = run_cli("eval", "run", "--db", db_path, "--project", "demo", "--model", "bm25", "--background")
    assert "job 1 (queued) already runs this evaluation" in out
    code, out, _ = run_cli("eval", "run", "--db", db_path, "--project", "demo", "--model", "bm25", "--k", "10",
                           "--background")
    assert out.startswith("job 2 queued")
    code, out, _ = run_cli("jobs", "cancel", "1", "--db", db_path)
    assert out.strip() == "job 1 cancelled"


def test_background_dense_job_keeps_its_encoder_options(run_cli, demo, db_path, tmp_path):
    """--device/--backend/--batch-size given with --background are stored with the job and the
    worker encodes with them (not silently with the defaults)."""
    from evaluation.retrievers.dense import DenseRetriever

    code, out, err = run_cli("eval", "run", "--db", db_path, "--project", "demo", "--model", "minilm",
                             "--backend", "onnx-int8", "--device", "cpu", "--batch-size", "8",
                             "--cache-dir", tmp_path / "emb", "--background", "--json")
    assert code == 0, err
    job = jobs.get_job(connect(db_path), json.loads(out)["job_id"])
    assert job["parameters"]["encoder"] == {"device": "cpu", "backend": "onnx-int8", "batch_size": 8, "fp16": True}
    model = eval_jobs._run_arguments(job["parameters"])["model"]
    assert isinstance(model, DenseRetriever) and model.backend == "onnx-int8" and model.batch_size == 8
    # the same evaluation with the default backend is another job
    code, out, _ = run_cli("eval", "run", "--db", db_path, "--project", "demo", "--model", "minilm",
                           "--cache-dir", tmp_path / "emb", "--background", "--json")
    assert json.loads(out)["created"] is True
    code, _, err = run_cli("eval", "run", "--db", db_path, "--project", "demo", "--model", "bm25",
                           "--backend", "onnx", "--background")
    assert code == 2 and "apply to dense models only" in err


# A worker whose BM25 retrieval keeps reporting progress (a long job), until the worker is stopped.
LONG_WORKER = """
import sys, time
from pathlib import Path
from evaluation.retrievers.bm25 import BM25Retriever
from cli.main import main

marker = Path(sys.argv[1])

def long(self, topics, documents, *, progress=None, **kw):
    n = 0
    while True:
        n += 1
        progress(n, 10**6, "retrieving (a long job)")
        marker.write_text(str(n))
        time.sleep(0.05)

BM25Retriever.retrieve = long
raise SystemExit(main(sys.argv[2:]))
"""


def test_a_stopped_worker_hands_its_running_job_back_to_the_queue(run_cli, demo, db_path, tmp_path):
    job_id = _submit(run_cli, db_path)["job_id"]
    marker = tmp_path / "long"
    proc = subprocess.Popen([sys.executable, "-c", LONG_WORKER, str(marker), "worker", "--db", str(db_path),
                             "--poll", "0.1"], cwd=ROOT, env=_env(), stderr=subprocess.PIPE, text=True)
    try:
        _wait(marker.exists, "the long job to start")
        assert jobs.get_job(connect(db_path), job_id)["state"] == "running"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "stopped after 1 job(s)" in err
    job = jobs.get_job(connect(db_path), job_id)
    assert job["state"] == "queued" and job["attempts"] == 0 and job["worker_id"] is None
    assert "was stopped; queued again" in job["error"]
    # a normal worker then runs it to the end
    assert _worker_once(db_path).returncode == 0
    job = jobs.get_job(connect(db_path), job_id)
    assert job["state"] == "finished" and job["attempts"] == 1 and job["error"] == ""


def test_serve_starts_a_worker_beside_the_app_and_stops_it_on_exit(demo, db_path, monkeypatch):
    import cli.serve_cmd as serve
    from cli.main import main

    job, _ = eval_jobs.submit_eval(demo[0], projects.get_project(demo[0], "demo"), created_by="lead", model="bm25", template="query")
    started = []
    real_start = serve.start_worker

    def start(*args, **kw):
        started.append(real_start(*args, **kw))
        return started[-1]

    class App:  # stands in for `streamlit run`: the worker runs the queued job meanwhile
        def __init__(self, cmd, env):
            assert "streamlit" in cmd and env["IFJUDGE_DB"] == str(db_path.resolve())

        def wait(self):
            _wait(lambda: jobs.get_job(connect(db_path), job["id"])["state"] == "finished", "the worker to run the job",
                  120)
            assert started[0].poll() is None
            return 0

        def poll(self):
            return 0

    monkeypatch.setattr(serve, "start_worker", start)
    monkeypatch.setattr(serve, "start_app", App)
    assert main(["serve", "--db", str(db_path)]) == 0
    assert started[0].poll() == 0  # stopped (SIGTERM, clean exit) when the app ended
    assert jobs.get_job(connect(db_path), job["id"])["result_ids"]


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_to_serve_stops_the_app_and_the_worker(demo, db_path, tmp_path):
    # `kill`, `systemctl stop`, `docker stop`: SIGTERM to `ifjudge serve` must not leave its
    # Streamlit server and evaluation worker running without it
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve = subprocess.Popen([sys.executable, "-m", "cli", "serve", "--db", str(db_path), "--port", str(port),
                              "--address", "127.0.0.1"], cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert "with an evaluation worker" in serve.stdout.readline()
        _wait(lambda: len(_children(serve.pid)) == 2, "the app and the worker to start", 60)
        children = _children(serve.pid)
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(30) == 128 + signal.SIGTERM
        _wait(lambda: not any(_alive(p) for p in children), "the app and the worker to end", 30)
    finally:
        if serve.poll() is None:
            serve.kill()
