"""``ifjudge serve``: run the Streamlit app on a database, with one evaluation worker beside it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cli.options import add_db

APP = Path(__file__).resolve().parents[1] / "ui" / "entry.py"  # runs app.py; see ui/entry.py
ROOT = Path(__file__).resolve().parents[1]
WORKER_STOP_SECONDS = 10


def register(sub) -> None:
    p = sub.add_parser("serve", help="serve the web app (and an evaluation worker)")
    add_db(p)
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--address", default="localhost")
    p.add_argument("--demo", action="store_true", help="load the demo project on first start and print its sign-ins")
    p.add_argument("--no-worker", action="store_true",
                   help="do not start an evaluation worker (run `ifjudge worker` elsewhere on the same database)")
    p.set_defaults(func=run)


def worker_command(db: str | os.PathLike, *options: str) -> list[str]:
    """The command line of a worker process on ``db`` (``ifjudge worker``)."""
    return [sys.executable, "-m", "cli", "worker", "--db", str(db), *options]


def start_worker(db: str | os.PathLike, env: dict, *options: str, **popen) -> subprocess.Popen:
    """Start ``ifjudge worker --db DB [options]`` as a child process (run from the project root)."""
    env = dict(env, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    return subprocess.Popen(worker_command(db, *options), cwd=ROOT, env=env, **popen)


def stop_worker(proc: subprocess.Popen, timeout: float = WORKER_STOP_SECONDS) -> None:
    """SIGTERM (a running job goes back to the queue at its next progress report), then SIGKILL
    after ``timeout`` seconds (the job is then recovered by the next worker's heartbeat check)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run(args) -> int:
    from storage.db import connect, location, resolve_target

    env = dict(os.environ, IFJUDGE_DB=resolve_target(args.db), HF_HUB_OFFLINE="1")

    db = connect(args.db)  # create and migrate once, before two processes open it
    if args.demo:
        from annotation.demo import load_demo
        from cli.demo_cmd import print_sign_ins

        result = load_demo(db)
        print_sign_ins(result["users"])
    shown = location(db)
    db.close()
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(APP),
        "--server.port", str(args.port), "--server.address", args.address,
        "--server.headless", "true", "--browser.gatherUsageStats", "false",
        "--client.toolbarMode", "viewer",  # no Deploy button or developer menu for annotators and leads
    ]
    worker = None if args.no_worker else start_worker(env["IFJUDGE_DB"], env)
    print(f"IFJudge on http://{args.address}:{args.port}  (database {shown}"
          + (", with an evaluation worker)" if worker else ", no worker)"), flush=True)
    try:
        return subprocess.call(cmd, env=env)
    finally:
        if worker is not None:
            stop_worker(worker)
