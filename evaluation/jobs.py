"""Evaluation jobs: an evaluation submitted by the page or the CLI and run by a worker process.

The page (or ``ifjudge eval run --background``) calls :func:`submit_eval`; a worker
(``ifjudge worker``, started beside the app by ``ifjudge serve``) runs :func:`work`, which
claims queued jobs one at a time and runs each with :func:`evaluation.runner.run_eval` -- the
same call as a foreground ``ifjudge eval run``, so a job stores the same eval run. State lives in
the database (:mod:`storage.jobs`): a page that is reloaded or left shows the job where it is.

- **One job per evaluation**: the parameters are normalised and hashed (:func:`eval_parameters`,
  :func:`dedupe_key`); submitting an evaluation that is already queued or running returns that job.
- **Progress**: ``run_eval``'s ``progress(done, total, message)`` is written to the job; the
  ETA is the current stage's elapsed time scaled to what is left (:func:`eta_seconds`).
- **Cancel**: :func:`cancel`; a running job stops at its next progress report.
- **A worker that dies**: a heartbeat thread writes every ``heartbeat`` seconds while the job
  runs; a running job without a heartbeat for ``stale`` seconds is queued again once, then marked
  failed with the reason (:func:`storage.jobs.recover_stale`, run by every worker before it claims
  and by the page before it shows jobs).
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import threading
import time
import uuid
from pathlib import Path

from evaluation.measure_registry import parse_all
from evaluation.runner import CANDIDATE_MODES, DEFAULT_K, check_evaluable, run_eval
from evaluation.pmrr import TIES
from evaluation.protocols import PROTOCOLS, check_wise_version
from evaluation.protocols import resolve as resolve_protocol
from evaluation.templates import get_template
from storage import jobs as store
from storage.jobs import HEARTBEAT_SECONDS, POLL_SECONDS, STALE_SECONDS
from storage import projects
from storage.db import Database, connect, target_of
from storage.errors import IFJudgeError, NotFound
from storage.postgres import DatabaseUnavailable

EVAL_KIND = "eval"
JUDGE_KIND = "judge"  # a judge run (evaluation.judges.jobs)
KINDS = (EVAL_KIND, JUDGE_KIND)
MAX_ATTEMPTS = 2  # a job whose worker died is retried once
#: the options of :class:`evaluation.retrievers.dense.DenseRetriever` (and of a ``rerank`` cross-encoder) a job can carry
ENCODER_OPTIONS = ("device", "backend", "batch_size", "fp16")


class JobCancelled(Exception):
    """Raised inside a running job when a cancel was requested."""


class JobLost(Exception):
    """Raised inside a running job when its worker no longer owns it (presumed dead and recovered)."""


class WorkerStopping(Exception):
    """Raised inside a running job when the worker was asked to stop (SIGTERM / SIGINT)."""


def eval_parameters(
    *,
    model: str,
    template: str | None = None,  # the project kind's default (MTEB's query_instruction)
    qrels_version: str = "original",
    k: int = DEFAULT_K,
    measures=None,  # the project kind's headline measures
    variant: str | None = None,
    rerank: str | None = None,
    candidates: str = "auto",
    missing: str = "zero",
    score: str = "cosine",
    cache_dir: str | None = None,
    reuse: bool = True,
    ties: str | None = None,  # the protocol's (doc id descending under MTEB's)
    encoder: dict | None = None,
    protocol: str = "mteb",
    wise_version: str = "paper",
) -> dict:
    """The keyword arguments of :func:`evaluation.runner.run_eval` as a job stores them: checked,
    with canonical measure and template names and absolute paths (a worker may run elsewhere).

    >>> p = eval_parameters(model="bm25", template="query", k=10, measures=["ndcg_cut_10", "MAP@100"])
    >>> p["measures"], p["template"], p["qrels_version"]
    (['nDCG@10', 'AP@100'], 'query', 'original')
    """
    if not isinstance(model, str) or not model.strip():
        raise IFJudgeError(f"a job's model must be a name or a path, got {model!r}")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise IFJudgeError(f"k must be an integer >= 1, got {k!r}")
    if candidates not in CANDIDATE_MODES:
        raise IFJudgeError(f"unknown candidates mode {candidates!r}; expected one of {', '.join(CANDIDATE_MODES)}")
    if ties is not None and ties not in TIES:
        raise IFJudgeError(f"unknown tie rule {ties!r}; expected one of {', '.join(TIES)}")
    if protocol not in PROTOCOLS:
        raise IFJudgeError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")
    check_wise_version(wise_version)
    if missing not in ("zero", "omit"):
        raise IFJudgeError(f"unknown missing rule {missing!r}; expected zero or omit")
    if score not in ("cosine", "dot"):
        raise IFJudgeError(f"unknown score {score!r}; expected cosine or dot")
    encoder = {key: value for key, value in (encoder or {}).items() if value is not None}
    unknown = set(encoder) - set(ENCODER_OPTIONS)
    if unknown:
        raise IFJudgeError(f"unknown encoder option(s) {', '.join(sorted(unknown))}; expected {', '.join(ENCODER_OPTIONS)}")

    def absolute(path):
        return str(Path(path).resolve()) if path is not None and Path(path).exists() else path

    return {
        "model": absolute(model.strip()), "template": get_template(template).name if template is not None else None,
        "qrels_version": qrels_version,
        "k": k, "measures": [str(m) for m in parse_all(measures)] if measures is not None else None, "variant": variant,
        "rerank": absolute(rerank), "candidates": candidates, "missing": missing, "score": score,
        "cache_dir": str(Path(cache_dir).resolve()) if cache_dir else None, "reuse": bool(reuse), "ties": ties,
        "protocol": protocol, "wise_version": wise_version,
        # dense encoder options (device, backend, batch size, fp16); absent when all are defaults
        **({"encoder": encoder} if encoder else {}),
    }


def _run_arguments(parameters: dict) -> dict:
    """A stored job's parameters as :func:`run_eval` takes them: encoder options become a
    :class:`~evaluation.retrievers.dense.DenseRetriever` for a dense model (same run identity as
    run_eval's own) and a cross-encoder reranker on the same device / backend for ``rerank``
    (as ``ifjudge eval run`` in the foreground)."""
    from evaluation.retrievers.external import names_external_run

    args = dict(parameters)
    encoder = args.pop("encoder", None)
    if encoder and args["rerank"] is not None:
        from evaluation.retrievers.rerank import cross_encoder_reranker

        args["rerank"] = cross_encoder_reranker(args["rerank"], cache_dir=args["cache_dir"], **encoder)
    if encoder and not (args["model"] == "bm25" or names_external_run(args["model"])):
        from evaluation.retrievers.dense import DenseRetriever

        args["model"] = DenseRetriever(args["model"], score=args["score"], cache_dir=args["cache_dir"], **encoder)
    return args


def dedupe_key(kind: str, project_id: int, parameters: dict) -> str:
    """SHA-256 of the kind, the project and the normalised parameters: equal for the same evaluation."""
    blob = json.dumps({"kind": kind, "project_id": project_id, "parameters": parameters}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def submit_eval(db: Database, project: dict, *, created_by: str, **params) -> tuple[dict, bool]:
    """Queue one evaluation (the keyword arguments of :func:`eval_parameters`), or return the
    queued or running job of the same evaluation in ``project`` (its row). Returns ``(job, created)``.

    The project and the qrels version are checked now, so that a typo is refused at once rather
    than by the worker.

    >>> from annotation.demo import load_demo
    >>> from storage.db import connect
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> demo = projects.get_project(db, "demo")
    >>> job, created = submit_eval(db, demo, created_by="lead", model="bm25")
    >>> created, submit_eval(db, demo, created_by="lead2", model="bm25")[0]["id"] == job["id"]
    (True, True)
    """
    proj = project
    parameters = eval_parameters(**params)
    rules = resolve_protocol(proj["kind"], parameters["protocol"])
    if parameters["template"] is None:  # the protocol's default for the kind, named in the job
        parameters["template"] = rules.template
    if parameters["ties"] is None:
        parameters["ties"] = rules.ties
    versions = projects.qrels_versions(db, proj["id"])
    if parameters["qrels_version"] not in versions:
        raise IFJudgeError(f"project {proj['name']!r} has no qrels version {parameters['qrels_version']!r}; "
                           f"it has: {', '.join(versions) or 'none'}")
    from evaluation.retrievers.external import names_external_run

    check_evaluable(db, proj, qrels_version=parameters["qrels_version"], variant=parameters["variant"],
                    external=names_external_run(parameters["model"]))
    return store.submit(db, kind=EVAL_KIND, project_id=proj["id"], parameters=parameters,
                        dedupe_key=dedupe_key(EVAL_KIND, proj["id"], parameters), created_by=created_by,
                        max_attempts=MAX_ATTEMPTS)


def cancel(db: Database, job_id: int, *, by: str) -> dict:
    """Cancel a queued job now, or ask the worker of a running one to stop; returns the job."""
    return store.request_cancel(db, job_id, by)


def active_jobs(db: Database, project_id: int) -> list[dict]:
    """The project's queued and running jobs, after handing back (or failing) those whose worker
    stopped sending heartbeats: a page never shows a job that claims to run forever."""
    store.recover_stale(db, timeout=STALE_SECONDS)
    return store.list_jobs(db, project_id=project_id, states=store.ACTIVE)


def eta_seconds(job: dict, *, now: float | None = None) -> float | None:
    """Seconds left in the job's current stage, from its pace so far: elapsed x (total - done) / done.

    None while nothing is done yet (no pace to extrapolate) or when the job is not running.

    >>> eta_seconds({"state": "running", "done": 25, "total": 100, "stage_started_at": 0.0}, now=10.0)
    30.0
    """
    if job["state"] != "running" or not job["done"] or not job["total"] or job["stage_started_at"] is None:
        return None
    elapsed = max(_now(now) - job["stage_started_at"], 0.0)
    return elapsed * max(job["total"] - job["done"], 0) / job["done"]


def _now(now):
    return time.time() if now is None else now


def describe(job: dict) -> str:
    """One line naming the evaluation of a job: model / template / qrels version (k, protocol); a
    judge job: its judge run, question and model."""
    p = job["parameters"]
    if job.get("kind") == JUDGE_KIND:
        return f"judge run {p.get('judge_run_id')}: {p.get('question')} by {p.get('judge')} {p.get('model')}"
    return (f"{p.get('model')} / {p.get('template')} / {p.get('qrels_version')} "
            f"(k={p.get('k')}, {p.get('protocol') or 'mteb'} protocol)")


def new_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class _Heartbeat(threading.Thread):
    """Writes the job's heartbeat every ``every`` seconds from its own connection while the job
    runs, so that a slow stage without progress reports (loading a model) is not taken for a
    dead worker; notes a cancel request or a lost ownership for the progress callback."""

    def __init__(self, path: str, job_id: int, worker_id: str, every: float):
        super().__init__(daemon=True, name=f"heartbeat-job-{job_id}")
        self.path, self.job_id, self.worker_id, self.every = path, job_id, worker_id, every
        self.stop = threading.Event()
        self.cancel = False
        self.lost = False

    def run(self) -> None:
        db = connect(self.path)
        try:
            while not self.stop.wait(self.every):
                state = store.heartbeat(db, self.job_id, self.worker_id)
                self.cancel, self.lost = state["cancel"], not state["owned"]
        finally:
            db.close()


def run_job(db: Database, job: dict, worker_id: str, *, heartbeat: float = HEARTBEAT_SECONDS,
            stopping: threading.Event | None = None) -> dict:
    """Run one claimed job to its end state; returns the job as stored afterwards.

    ``run_eval``'s errors fail the job with their message (not retried: the same evaluation would
    fail again); a cancel request ends it ``cancelled``; ``stopping`` set (the worker is being
    stopped) hands it back to the queue.
    """
    if job["kind"] not in KINDS:
        store.fail(db, job["id"], worker_id, f"this worker does not know jobs of kind {job['kind']!r}")
        return store.get_job(db, job["id"])
    beat = _Heartbeat(target_of(db), job["id"], worker_id, heartbeat)
    beat.start()

    def progress(done: int, total: int, message: str) -> None:
        if stopping is not None and stopping.is_set():
            raise WorkerStopping()
        state = store.progress(db, job["id"], worker_id, int(done), int(total), str(message))
        if not state["owned"] or beat.lost:
            raise JobLost()
        if state["cancel"] or beat.cancel:
            raise JobCancelled()

    try:
        if job["kind"] == EVAL_KIND:
            run_id = run_eval(db, _project(db, job["project_id"]), progress=progress, **_run_arguments(job["parameters"]))
        else:  # a judge run (evaluation.judges.jobs): its result is the judge run's id
            from evaluation.judges.jobs import run_judge_job

            run_id = run_judge_job(db, job, progress)[0]
    except JobCancelled:
        store.cancelled(db, job["id"], worker_id, store.get_job(db, job["id"])["error"] or "cancelled")
    except JobLost:
        pass  # another worker (or the recovery) has it now: write nothing
    except WorkerStopping:
        store.release(db, job["id"], worker_id, f"worker {worker_id} was stopped; queued again")
    except IFJudgeError as exc:
        store.fail(db, job["id"], worker_id, str(exc))
    except Exception as exc:  # noqa: BLE001 -- any error of a model or a library ends the job with its reason
        store.fail(db, job["id"], worker_id, f"{type(exc).__name__}: {exc}")
    else:
        if store.get_job(db, job["id"])["cancel_requested"]:
            # cancelled after the last progress report: the eval run is stored, say so
            store.cancelled(db, job["id"], worker_id, f"cancel requested after the work ended; run {run_id} was stored")
        else:
            store.finish(db, job["id"], worker_id, [run_id])
    finally:
        beat.stop.set()
        beat.join()
    return store.get_job(db, job["id"])


def _project(db, project_id: int) -> dict:
    """The job's project (by id, through storage); refused when it was deleted meanwhile."""
    try:
        return projects.get_project_by_id(db, project_id)
    except NotFound:
        raise IFJudgeError(f"project {project_id} no longer exists") from None


def work(
    db_path: str | os.PathLike,
    *,
    once: bool = False,
    poll: float = POLL_SECONDS,
    heartbeat: float = HEARTBEAT_SECONDS,
    stale: float = STALE_SECONDS,
    worker_id: str | None = None,
    stopping: threading.Event | None = None,
    log=None,
) -> int:
    """The worker loop: recover jobs of dead workers, claim the oldest queued job, run it, repeat;
    wait ``poll`` seconds when the queue is empty. With ``once``, return when the queue is empty.
    Stops when ``stopping`` is set (between jobs, or at the running job's next progress report,
    which goes back to the queue). Returns the number of jobs run.
    """
    if heartbeat <= 0 or stale <= heartbeat:
        raise IFJudgeError(f"the stale limit ({stale:g} s) must exceed the heartbeat interval ({heartbeat:g} s) > 0")
    worker_id = worker_id or new_worker_id()
    stopping = stopping or threading.Event()
    db = connect(db_path)
    say = log or (lambda text: None)
    ran = 0
    try:
        while not stopping.is_set():
            try:
                for j in store.recover_stale(db, timeout=stale):
                    say(f"job {j['id']}: {j['state']} ({j['error']})")
                job = store.claim(db, worker_id, kinds=list(KINDS))
            except DatabaseUnavailable as exc:  # a full or restarting server: wait, ask again, keep the worker
                say(f"waiting {poll:g} s: {exc}")
                stopping.wait(poll)
                continue
            if job is None:
                if once:
                    break
                stopping.wait(poll)
                continue
            say(f"job {job['id']}: running {describe(job)} (attempt {job['attempts']} of {job['max_attempts']})")
            end = run_job(db, job, worker_id, heartbeat=heartbeat, stopping=stopping)
            ran += 1
            say(f"job {end['id']}: {end['state']}" + (f" ({end['error']})" if end["error"] else "")
                + (f", {'judge' if end['kind'] == JUDGE_KIND else 'eval'} runs {end['result_ids']}"
                   if end["result_ids"] else ""))
    finally:
        db.close()
    return ran


def stop_on_signals(stopping: threading.Event) -> None:
    """Set ``stopping`` on SIGTERM and SIGINT (the main thread only)."""
    def handler(signum, frame):
        stopping.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)
