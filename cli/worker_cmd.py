"""``ifjudge worker``: run queued evaluation jobs (:func:`evaluation.jobs.work`).

``ifjudge serve`` starts one beside the web app; start more (or one on another machine that
sees the same database file) with this command.
"""
from __future__ import annotations

import os
import sys
import threading

from cli.eval_cmd import _positive_float
from cli.options import add_db

#: the worker's CPU priority: ``os.nice`` increment (0-19; higher yields more to the web app)
WORKER_NICE = 10
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def worker_threads(cores: int | None) -> int:
    """Threads an evaluation may use for torch / BLAS: one core fewer than the machine has, so the
    web app beside the worker always finds a free core (at least 1).

    >>> worker_threads(8), worker_threads(2), worker_threads(1), worker_threads(None)
    (7, 1, 1, 1)
    """
    return max(1, (cores or 1) - 1)


def yield_to_app(nice: int = WORKER_NICE, env: dict | None = None) -> int:
    """Lower this process's CPU priority by ``nice`` and cap torch / BLAS threads at
    :func:`worker_threads` (a thread variable already set is kept): an evaluation job on the
    machine that serves the annotate page no longer delays it. Called before anything imports
    numpy or torch. Returns the thread count."""
    env = os.environ if env is None else env
    threads = worker_threads(os.cpu_count())
    for name in THREAD_VARIABLES:
        env.setdefault(name, str(threads))
    if nice and hasattr(os, "nice"):
        try:
            os.nice(nice)
        except OSError:  # not permitted here: run at the normal priority
            pass
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(env["OMP_NUM_THREADS"]))
    return threads


def register(sub) -> None:
    from storage.jobs import HEARTBEAT_SECONDS, POLL_SECONDS, STALE_SECONDS

    p = sub.add_parser("worker", help="run queued evaluation jobs",
                       description="Claims queued jobs one at a time and runs them; stops on SIGTERM / Ctrl-C "
                                   "(a running job goes back to the queue).")
    add_db(p, required=False, help="IFJudge database: a SQLite file path or a postgresql:// URL (default: "
           "$IFJUDGE_DB, which keeps a PostgreSQL password out of the process list)")
    p.add_argument("--once", action="store_true", help="run the queued jobs, then exit instead of waiting for more")
    p.add_argument("--poll", type=_positive_float, default=POLL_SECONDS,
                   help=f"seconds between looks at an empty queue (default {POLL_SECONDS:g})")
    p.add_argument("--heartbeat", type=_positive_float, default=HEARTBEAT_SECONDS,
                   help=f"seconds between heartbeats of a running job (default {HEARTBEAT_SECONDS:g})")
    p.add_argument("--nice", type=int, default=WORKER_NICE, choices=range(0, 20), metavar="0-19",
                   help=f"lower the worker's CPU priority by this much, so the web app beside it stays quick "
                        f"(default {WORKER_NICE}; torch/BLAS threads are also capped at one fewer than the cores)")
    p.add_argument("--stale", type=_positive_float, default=STALE_SECONDS,
                   help=f"a running job without a heartbeat for this many seconds has lost its worker: it is "
                        f"queued again once, then failed (default {STALE_SECONDS:g})")
    p.set_defaults(func=run)


def run(args) -> int:
    from storage.errors import IFJudgeError
    from storage.postgres import redact

    args.db = args.db or os.environ.get("IFJUDGE_DB")
    if not args.db:
        raise IFJudgeError("give --db PATH|URL or set IFJUDGE_DB")
    threads = yield_to_app(args.nice)  # before evaluation.jobs imports numpy (and a job torch)
    from evaluation.jobs import new_worker_id, stop_on_signals, work

    stopping = threading.Event()
    if threading.current_thread() is threading.main_thread():
        stop_on_signals(stopping)
    worker_id = new_worker_id()

    def log(text: str) -> None:
        print(f"worker {worker_id}: {text}", file=sys.stderr, flush=True)

    log(f"started on {redact(args.db)} (nice +{args.nice}, {threads} torch/BLAS thread(s))")
    n = work(args.db, once=args.once, poll=args.poll, heartbeat=args.heartbeat, stale=args.stale,
             worker_id=worker_id, stopping=stopping, log=log)
    log(f"stopped after {n} job(s)")
    return 0
