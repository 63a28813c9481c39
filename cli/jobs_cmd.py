"""``ifjudge jobs``: list evaluation jobs; ``ifjudge jobs cancel ID``: cancel one."""
from __future__ import annotations

import argparse
import getpass
import json
import time

from storage.errors import IFJudgeError
from cli.options import add_db, add_json, add_project


def register(sub) -> None:
    p = sub.add_parser("jobs", help="list evaluation jobs (or cancel one)",
                       description="Lists jobs newest first: state, progress, ETA, reason of a failure, eval runs.")
    add_db(p, required=False)
    add_project(p, required=False, help="only this project's jobs")
    p.add_argument("--state", action="append", choices=["queued", "running", "finished", "failed", "cancelled"],
                   help="only jobs in this state (repeatable)")
    add_json(p)
    p.set_defaults(func=list_cmd)
    jobs_sub = p.add_subparsers(dest="jobs_command", metavar="JOBS_COMMAND")
    c = jobs_sub.add_parser("cancel", help="cancel a queued or running job")
    c.add_argument("job_id", type=int, metavar="ID")
    add_db(c, required=False, default=argparse.SUPPRESS)
    add_json(c, default=argparse.SUPPRESS)
    c.set_defaults(func=cancel_cmd)


def _connect(args):
    from storage.db import connect

    if not args.db:
        raise IFJudgeError("--db PATH is required")
    return connect(args.db)


def _row(job: dict, names: dict) -> dict:
    from evaluation.jobs import eta_seconds

    eta = eta_seconds(job)
    return {"id": job["id"], "project": names.get(job["project_id"]), "state": job["state"],
            "evaluation": job["parameters"], "done": job["done"], "total": job["total"], "stage": job["message"],
            "eta_seconds": None if eta is None else round(eta, 1), "attempts": job["attempts"],
            "max_attempts": job["max_attempts"], "worker": job["worker_id"], "error": job["error"],
            "eval_run_ids": job["result_ids"], "created_by": job["created_by"],
            "created_at": _iso(job["created_at"]), "started_at": _iso(job["started_at"]),
            "finished_at": _iso(job["finished_at"])}


def _iso(t):
    return None if t is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def list_cmd(args) -> int:
    from evaluation.jobs import STALE_SECONDS, describe
    from storage import jobs, projects

    db = _connect(args)
    jobs.recover_stale(db, timeout=STALE_SECONDS)
    names = {p["id"]: p["name"] for p in projects.list_projects(db)}
    pid = projects.get_project(db, args.project)["id"] if args.project else None
    rows = jobs.list_jobs(db, project_id=pid, states=args.state)
    if args.json:
        print(json.dumps([_row(j, names) for j in rows], indent=2))
        return 0
    if not rows:
        print("no job")
    for j in rows:
        r = _row(j, names)
        line = f"job {j['id']:<5} {j['state']:<9} {r['project']}: {describe(j)}"
        if j["state"] == "running":
            line += f"  {j['message']} {j['done']}/{j['total']}"
            if r["eta_seconds"] is not None:
                line += f", ETA {r['eta_seconds']:.0f} s"
        if j["result_ids"]:
            line += f"  {'judge run' if j['kind'] == 'judge' else 'eval runs'} {', '.join(map(str, j['result_ids']))}"
        if j["error"]:
            line += f"  ({j['error']})"
        print(line)
    return 0


def cancel_cmd(args) -> int:
    from evaluation.jobs import cancel

    from storage.jobs import ACTIVE, get_job

    db = _connect(args)
    before = get_job(db, args.job_id)
    job = cancel(db, args.job_id, by=f"cli:{getpass.getuser()}")
    if getattr(args, "json", False):
        print(json.dumps({"id": job["id"], "state": job["state"], "cancel_requested": job["cancel_requested"]}))
    elif before["state"] not in ACTIVE:
        print(f"job {job['id']} is already {job['state']}: nothing to cancel")
    elif job["state"] == "cancelled":
        print(f"job {job['id']} cancelled")
    elif job["state"] == "running":
        print(f"job {job['id']} is running: its worker stops at its next progress report")
    else:
        print(f"job {job['id']} is {job['state']}")
    return 0
