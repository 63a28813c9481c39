"""Judge runs as jobs of the worker (kind ``judge``): queued by ``ifjudge judge run``, run by
``ifjudge worker`` (:func:`evaluation.jobs.run_job` dispatches here) with the same progress,
ETA, cancel and recovery as an evaluation. A job names its judge run; a job that is cancelled,
fails, or whose worker dies, leaves the answers stored so far, and the next job of the same run
judges only the rest."""
from __future__ import annotations

import hashlib
import json

from evaluation.judges.runs import run_judge
from storage import jobs as jobs_store
from storage import judge_labels as store
from storage.db import Database

JUDGE_KIND = "judge"  # evaluation.jobs.JUDGE_KIND
#: a judge job whose worker died is queued again twice (it resumes where it stopped)
MAX_ATTEMPTS = 3


def submit_judge(db: Database, run_id: int, *, created_by: str, sending: dict | None = None,
                 estimate: dict | None = None) -> tuple[dict, bool]:
    """Queue the judging of a run's pending items, or return its queued or running job.
    ``sending``: concurrency, time-out, retries, key variable for this job; ``estimate``: what was
    shown before it was queued (requests, prompt tokens, the rule), kept with the job."""
    run = store.get_run(db, run_id)
    parameters = {"judge_run_id": run_id, "question": run["question"], "judge": run["judge"], "model": run["model"],
                  "sending": dict(sending or {})}
    if estimate is not None:
        parameters["estimate"] = {k: estimate.get(k) for k in ("requests", "prompt_tokens", "max_completion_tokens",
                                                                "cost", "rule")}
    key = hashlib.sha256(json.dumps({"kind": JUDGE_KIND, "judge_run_id": run_id}).encode()).hexdigest()
    return jobs_store.submit(db, kind=JUDGE_KIND, project_id=run["project_id"], parameters=parameters,
                             dedupe_key=key, created_by=created_by, max_attempts=MAX_ATTEMPTS)


def run_judge_job(db: Database, job: dict, progress) -> list[int]:
    """Run one claimed judge job; returns the judge run's id as the job's result."""
    p = job["parameters"]
    run_judge(db, p["judge_run_id"], sending=p.get("sending"), progress=progress)
    return [p["judge_run_id"]]

