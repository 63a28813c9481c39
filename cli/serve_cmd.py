"""``ifjudge serve``: run the Streamlit app on a database, with one evaluation worker beside it.

The app runs as ``ui/server.py`` (Streamlit's ASGI app with IFJudge's guard around it: uploads
and metrics for leads only, anti-framing headers, the HttpOnly sign-in cookie) with Streamlit's
error details off. The database reaches the worker and the app through ``IFJUDGE_DB`` in their
environment, never on a command line (``ps`` would show a PostgreSQL password there)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from cli.options import add_db

APP = Path(__file__).resolve().parents[1] / "ui" / "server.py"  # runs ui/entry.py, which runs app.py
ROOT = Path(__file__).resolve().parents[1]
WORKER_STOP_SECONDS = 10
UPLOAD_ENV = "IFJUDGE_MAX_UPLOAD_MB"
DEFAULT_UPLOAD_MB = 200


def register(sub) -> None:
    p = sub.add_parser("serve", help="serve the web app (and an evaluation worker)")
    add_db(p, creates=True)
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--address", default="localhost")
    p.add_argument("--demo", action="store_true",
                   help="load the demo project into a new, empty database and print its sign-ins (a database "
                        "that already has users is served without it)")
    p.add_argument("--max-upload-mb", type=int, default=None, metavar="MB",
                   help=f"largest file a lead may upload on the Projects page (default ${UPLOAD_ENV} or "
                        f"{DEFAULT_UPLOAD_MB}); larger imports: `ifjudge import` on the server")
    p.add_argument("--no-worker", action="store_true",
                   help="do not start an evaluation worker (run `ifjudge worker` elsewhere on the same database)")
    p.set_defaults(func=run)


def worker_command(*options: str) -> list[str]:
    """The command line of a worker process (``ifjudge worker``; its database comes from
    ``IFJUDGE_DB`` in its environment, so no password is ever in its arguments)."""
    return [sys.executable, "-m", "cli", "worker", *options]


def start_worker(db: str | os.PathLike, env: dict, *options: str, **popen) -> subprocess.Popen:
    """Start ``ifjudge worker [options]`` on ``db`` as a child process (run from the project root)."""
    env = dict(env, IFJUDGE_DB=str(db), PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    return subprocess.Popen(worker_command(*options), cwd=ROOT, env=env, **popen)


def readable_by_others(target: str) -> list[str]:
    """What others on this machine may read of a SQLite database (its -wal and -shm too): a copy
    made with ``cp`` keeps the copier's umask, while IFJudge creates its files owner-only."""
    import stat

    from storage.db import is_url

    if is_url(target):
        return []
    out = []
    for path in (Path(target), Path(target + "-wal"), Path(target + "-shm")):
        try:
            mode = path.stat().st_mode
        except OSError:
            continue
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            out.append(f"{path} may be read by other users of this machine ({stat.filemode(mode)}): it holds "
                       f"password hashes and every answer; make it owner-only: chmod 600 {path}")
    return out


def max_upload_mb(value: int | None = None) -> int:
    """The upload limit in MB: ``value``, else ``IFJUDGE_MAX_UPLOAD_MB``, else 200."""
    if value is None:
        try:
            value = int(os.environ.get(UPLOAD_ENV) or DEFAULT_UPLOAD_MB)
        except ValueError:
            value = DEFAULT_UPLOAD_MB
    return max(1, value)


def app_command(port: int, address: str, *, upload_mb: int | None = None, extra: tuple[str, ...] = ()) -> list[str]:
    """``streamlit run ui/server.py`` with the options a deployment facing annotators needs: no
    error details for visitors (the server's log has them), no developer menu, XSRF protection,
    the upload limit, no built-in table download (it would write cells raw; IFJUDGE's CSV exports
    neutralise formulas)."""
    return [
        sys.executable, "-m", "streamlit", "run", str(APP),
        "--server.port", str(port), "--server.address", address,
        "--server.headless", "true", "--browser.gatherUsageStats", "false",
        "--client.toolbarMode", "viewer",  # no Deploy button or developer menu for annotators and leads
        "--client.showErrorDetails", "none",
        "--client.disableDataExport", "true",
        "--server.enableXsrfProtection", "true",
        "--server.maxUploadSize", str(max_upload_mb(upload_mb)),
        *extra,
    ]


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
        from annotation.demo import demo_refusal, load_demo
        from cli.demo_cmd import print_sign_ins

        refusal = demo_refusal(db)
        if refusal:
            print(f"not loading the demo: {refusal}", file=sys.stderr, flush=True)
        else:
            print_sign_ins(load_demo(db)["users"])
    from accounts.auth import forget_old

    forget_old(db)  # sessions and sign-in attempts older than 30 days
    shown = location(db)
    db.close()
    for note in readable_by_others(env["IFJUDGE_DB"]):
        print(f"note: {note}", file=sys.stderr, flush=True)
    from accounts.session_tokens import load_key

    load_key(env["IFJUDGE_DB"], env)  # the cookie key made (owner-only) or checked now, not at the first sign-in
    cmd = app_command(args.port, args.address, upload_mb=args.max_upload_mb)
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
