"""``ifjudge serve``: run the Streamlit app on a database, with one evaluation worker beside it."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from cli.options import add_db

APP = Path(__file__).resolve().parents[1] / "ui" / "entry.py"  # runs app.py; see ui/entry.py
ROOT = Path(__file__).resolve().parents[1]
WORKER_STOP_SECONDS = 10


def register(sub) -> None:
    p = sub.add_parser("serve", help="serve the web app (and an evaluation worker)")
    add_db(p, creates=True)
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


def start_app(cmd: list[str], env: dict) -> subprocess.Popen:
    """Start the Streamlit server (``streamlit run``) as a child process."""
    return subprocess.Popen(cmd, env=env)


def stop_worker(proc: subprocess.Popen, timeout: float = WORKER_STOP_SECONDS) -> None:
    """SIGTERM (a running job goes back to the queue at its next progress report), then SIGKILL
    after ``timeout`` seconds (the job is then recovered by the next worker's heartbeat check).
    The app server is stopped the same way."""
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
    # SIGTERM (`kill`, `systemctl stop`, `docker stop`) stops the app and the worker as Ctrl+C does;
    # Python's default would end this process at once and leave both running without it
    stopping, children = threading.Event(), []

    def on_sigterm(signum, frame):
        stopping.set()
        for child in children:
            if child.poll() is None:
                child.terminate()

    previous = signal.signal(signal.SIGTERM, on_sigterm) if threading.current_thread() is threading.main_thread() else None
    worker = app = None
    try:
        if not args.no_worker:
            worker = start_worker(env["IFJUDGE_DB"], env)
            children.append(worker)
        print(f"IFJudge on http://{args.address}:{args.port}  (database {shown}"
              + (", with an evaluation worker)" if worker else ", no worker)"), flush=True)
        if not stopping.is_set():
            app = start_app(cmd, env)
            children.append(app)
            if stopping.is_set():  # the signal came while the app was starting
                app.terminate()
            code = app.wait()
        return 128 + signal.SIGTERM if stopping.is_set() else code
    finally:
        for child in (app, worker):
            if child is not None:
                stop_worker(child)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
