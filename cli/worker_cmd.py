"""``ifjudge worker``: run queued evaluation jobs (:func:`evaluation.jobs.work`).

``ifjudge serve`` starts one beside the web app; start more (or one on another machine that
sees the same database file) with this command.
"""
from __future__ import annotations

import sys
import threading

from cli.eval_cmd import _positive_float


def register(sub) -> None:
    from evaluation.jobs import HEARTBEAT_SECONDS, POLL_SECONDS, STALE_SECONDS

    p = sub.add_parser("worker", help="run queued evaluation jobs",
                       description="Claims queued jobs one at a time and runs them; stops on SIGTERM / Ctrl-C "
                                   "(a running job goes back to the queue).")
    p.add_argument("--db", required=True, help="IFJudge database: a file path or a postgresql:// URL")
    p.add_argument("--once", action="store_true", help="run the queued jobs, then exit instead of waiting for more")
    p.add_argument("--poll", type=_positive_float, default=POLL_SECONDS,
                   help=f"seconds between looks at an empty queue (default {POLL_SECONDS:g})")
    p.add_argument("--heartbeat", type=_positive_float, default=HEARTBEAT_SECONDS,
                   help=f"seconds between heartbeats of a running job (default {HEARTBEAT_SECONDS:g})")
    p.add_argument("--stale", type=_positive_float, default=STALE_SECONDS,
                   help=f"a running job without a heartbeat for this many seconds has lost its worker: it is "
                        f"queued again once, then failed (default {STALE_SECONDS:g})")
    p.set_defaults(func=run)


def run(args) -> int:
    from evaluation.jobs import new_worker_id, stop_on_signals, work

    stopping = threading.Event()
    if threading.current_thread() is threading.main_thread():
        stop_on_signals(stopping)
    worker_id = new_worker_id()

    def log(text: str) -> None:
        print(f"worker {worker_id}: {text}", file=sys.stderr, flush=True)

    log(f"started on {args.db}")
    n = work(args.db, once=args.once, poll=args.poll, heartbeat=args.heartbeat, stale=args.stale,
             worker_id=worker_id, stopping=stopping, log=log)
    log(f"stopped after {n} job(s)")
    return 0
