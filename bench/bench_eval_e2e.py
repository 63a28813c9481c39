"""A Robust04-sized evaluation end to end, as the lead runs it: a background job and a worker.

On a COPY of the fixture's ``robust04_base.db`` (``bench/fixture_robust04.py``: 52 queries x
1,000 candidates, 52,000 TREC-length documents), each job of ``--jobs`` is submitted through the
job queue (:func:`evaluation.jobs.submit_eval`, as ``ifjudge eval run --background`` and the
Evaluate page do) and run by a NEW ``ifjudge worker --once`` process at the product's nice level
(``cli.worker_cmd.WORKER_NICE`` unless ``--worker-nice``). Jobs:

* ``bm25``: BM25 over the candidates;
* ``minilm-int8``: the bundled all-MiniLM-L6-v2, ``--backend onnx-int8`` (the ONNX export included);
* ``minilm-torch``: the same model with torch; with ``--torch-prefix N`` the job is cancelled once N
  documents are encoded (any job: once ``--max-minutes`` have passed) and the full-size time is
  EXTRAPOLATED from the encoding pace (printed as such): document
  encoding is linear in the number of documents here (every document is longer than MiniLM's
  256-token window, so each costs one full window).

Each job gets a fresh embedding cache (under ``--work``, deleted afterwards): nothing is reused
from an earlier run. Printed per job: the wall time from submit to the job's end (and the
worker's), the worker's peak RSS (``ru_maxrss`` of the child, from ``os.wait4``), the encoding
throughput, the load average at start and end, and every ``--sample`` seconds the line the
Evaluate page shows for the job (``evaluation.jobs.active_jobs`` + ``eta_seconds``, formatted as
pages/evaluate.py does). With ``--latency N`` (0: off), once a job is encoding, N annotator
submits are timed beside it, in the browser and in-process, with ``bench/bench_submit_latency.py``'s
client (its build, browser_latencies and library_cycle) on its own small study database: the worker
takes CPU from the same machine as the app server.

Run: ``IFJUDGE_BENCH_CACHE=DIR HF_HUB_OFFLINE=1 python bench/bench_eval_e2e.py
[--jobs bm25,minilm-int8,minilm-torch] [--torch-prefix 8000] [--sample 5] [--latency 20]``
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CACHE = Path(os.environ.get("IFJUDGE_BENCH_CACHE", ROOT / ".cache" / "bench_robust04"))
PROJECT = "robust04"
JOBS = {
    "bm25": {"model": "bm25"},
    "minilm-int8": {"model": "minilm", "encoder": {"backend": "onnx-int8"}},
    "minilm-torch": {"model": "minilm", "encoder": {"backend": "torch"}},
}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def eta_text(seconds: float | None) -> str:
    """As pages/evaluate.py's ``_eta`` writes it."""
    if seconds is None:
        return "ETA: after the first step"
    return f"ETA {int(seconds) // 60} min {int(seconds) % 60:02d} s" if seconds >= 60 else f"ETA {seconds:.0f} s"


class Sampler(threading.Thread):
    """Every ``every`` seconds: the Evaluate page's line for the job (the same library calls),
    printed and kept; cancels the job once ``stop_at`` documents are encoded."""

    def __init__(self, db_path: Path, project_id: int, job_id: int, every: float, *, stop_at: int | None, t0: float,
                 dense: bool, deadline: float | None = None):
        super().__init__(daemon=True)
        self.dense = dense
        self.db_path, self.project_id, self.job_id, self.every = db_path, project_id, job_id, every
        self.stop_at, self.t0, self.deadline = stop_at, t0, deadline
        self.halt = threading.Event()
        # set once the job works on its main stage (dense: encoding documents; BM25: indexing)
        self.busy = threading.Event()
        self.samples: list[dict] = []
        self.cancelled_at: dict | None = None

    def run(self) -> None:
        from evaluation import jobs as eval_jobs
        from storage.db import connect

        db = connect(self.db_path)
        try:
            while not self.halt.is_set():
                now = time.time()
                job = next((j for j in eval_jobs.active_jobs(db, self.project_id) if j["id"] == self.job_id), None)
                if job is not None and job["state"] == "running":
                    eta = eval_jobs.eta_seconds(job, now=now)
                    line = f"{job['message']} {job['done']}/{job['total']}, {eta_text(eta)}"
                    s = {"t": now - self.t0, "message": job["message"], "done": job["done"], "total": job["total"],
                         "eta_s": eta, "load1": os.getloadavg()[0], "line": line}
                    self.samples.append(s)
                    print(f"  [{s['t']:7.1f} s, load {s['load1']:.2f}] job {self.job_id}: {line}", flush=True)
                    if (job["done"] and job["message"] == "encoding documents") or (not self.dense and job["total"]):
                        self.busy.set()
                    if job["message"] == "encoding documents" and job["done"]:
                        if self.stop_at and job["done"] >= self.stop_at and self.cancelled_at is None:
                            self.cancelled_at = s
                            eval_jobs.cancel(db, self.job_id, by="bench")
                            print(f"  prefix of {job['done']} documents reached: job {self.job_id} cancelled", flush=True)
                    if self.deadline and now >= self.deadline and self.cancelled_at is None:
                        self.cancelled_at = s
                        eval_jobs.cancel(db, self.job_id, by="bench")
                        print(f"  --max-minutes reached: job {self.job_id} cancelled (PARTIAL)", flush=True)
                self.halt.wait(self.every)
        finally:
            db.close()


def reap(worker: subprocess.Popen, *, block: bool = False) -> bool:
    """True once the worker has exited; its resource usage (peak RSS: ``ru_maxrss``) is then in
    ``worker.usage``. (``os.wait4``, never ``Popen.poll``: that would reap it without the usage.)"""
    if getattr(worker, "usage", None) is not None:
        return True
    pid, status, usage = os.wait4(worker.pid, 0 if block else os.WNOHANG)
    if pid == 0:
        return False
    worker.usage, worker.returncode = usage, os.waitstatus_to_exitcode(status)
    return True


def start_worker(db_path: Path, nice: int | None, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "cli", "worker", "--db", str(db_path), "--once"]
    if nice is not None:
        cmd += ["--nice", str(nice)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    worker = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    worker.usage = None
    return worker


def measure_latency(latency_db: tuple[Path, int, dict, int] | None, n: int, copy: Path) -> dict | None:
    """``n`` annotator submits timed in the browser (Ctrl+Enter -> next item ready) and in-process,
    on a fresh copy (``copy``) of the latency study's database (the browser user starts at item 1)."""
    if latency_db is None or n <= 0:
        return None
    import bench_submit_latency as sl
    from bench.load_test import percentile

    pristine, sid, _, total = latency_db
    path = copy
    shutil.copyfile(pristine, path)
    lib = sl.library_cycle(path, sid, n)
    web = sl.browser_latencies(path, n)
    ms = lambda xs: {"p50_ms": 1000 * statistics.median(xs), "p95_ms": 1000 * percentile(xs, 95), "n": len(xs)}  # noqa: E731
    return {"browser": ms([x / 1000 for x in web]), "library": ms(lib)}


def run_job(name: str, db_path: Path, work: Path, args, latency_db) -> dict:
    from evaluation import jobs as eval_jobs
    from storage import projects
    from storage.db import connect

    spec = JOBS[name]
    emb = work / f"embeddings-{name}"
    shutil.rmtree(emb, ignore_errors=True)
    db = connect(db_path)
    proj = projects.get_project(db, PROJECT)
    load_start = load()
    t0 = time.time()
    job, _ = eval_jobs.submit_eval(db, proj, created_by="bench", model=spec["model"], qrels_version="original",
                                   cache_dir=str(emb), reuse=False, encoder=spec.get("encoder"))
    db.close()
    print(f"{name}: job {job['id']} queued ({eval_jobs.describe(job)}), load {load_start}", flush=True)
    stop_at = args.torch_prefix if name == "minilm-torch" and args.torch_prefix else None
    sampler = Sampler(db_path, proj["id"], job["id"], args.sample, stop_at=stop_at, t0=t0,
                      dense=spec["model"] != "bm25", deadline=t0 + 60 * args.max_minutes if args.max_minutes else None)
    sampler.start()
    worker = start_worker(db_path, args.worker_nice, work / f"worker-{name}.log")
    latency = None
    if args.latency and name in args.latency_during:
        while not sampler.busy.is_set() and not reap(worker):
            time.sleep(1)
        if worker.usage is None:
            print(f"  timing {args.latency} annotator submits beside the job (load {load()})", flush=True)
            latency = measure_latency(latency_db, args.latency, work / f"latency-{name}.db")
            latency["load_after"] = load()
            for what, v in latency.items():
                if isinstance(v, dict):
                    print(f"  submit latency beside the job, {what}: p50 {v['p50_ms']:.0f} ms, p95 {v['p95_ms']:.0f} ms "
                          f"({v['n']} submits; load after {latency['load_after']})", flush=True)
    reap(worker, block=True)
    usage = worker.usage
    wall = time.time() - t0
    sampler.halt.set()
    sampler.join()
    db = connect(db_path)
    from storage import jobs as job_store

    end = job_store.get_job(db, job["id"])
    db.close()
    out = {
        "job": name, "state": end["state"], "error": end["error"], "result_ids": end["result_ids"], "wall_s": wall,
        "worker_peak_rss_mb": usage.ru_maxrss / 1024, "worker_cpu_s": usage.ru_utime + usage.ru_stime,
        "load_start": load_start, "load_end": load(),
        "load1_mean": statistics.mean(s["load1"] for s in sampler.samples) if sampler.samples else None,
        "samples": [s["line"] for s in sampler.samples], "latency": latency,
    }
    enc = [s for s in sampler.samples if s["message"] == "encoding documents" and s["done"]]
    if len(enc) >= 2:
        a, b = enc[0], enc[-1]
        out["docs_per_s"] = (b["done"] - a["done"]) / (b["t"] - a["t"]) if b["t"] > a["t"] else None
        out["encode_total"] = b["total"]
        if sampler.cancelled_at:
            c = sampler.cancelled_at
            before = a["t"] - a["done"] / out["docs_per_s"]  # time before the first document was encoded
            out["prefix_docs"], out["prefix_s"] = c["done"], c["t"]
            out["extrapolated_encode_s"] = c["total"] / out["docs_per_s"]
            out["extrapolated_wall_s"] = before + out["extrapolated_encode_s"]
    return out


def report(r: dict) -> None:
    print(f"== {r['job']}: {r['state']}" + (f" ({r['error']})" if r["error"] else "")
          + f", eval runs {r['result_ids']}")
    print(f"   wall (submit -> job ended) {r['wall_s']:.1f} s; worker peak RSS {r['worker_peak_rss_mb']:.0f} MB, "
          f"CPU {r['worker_cpu_s']:.0f} s; load {r['load_start']} -> {r['load_end']} (mean 1-min while sampled "
          f"{r['load1_mean'] if r['load1_mean'] is None else round(r['load1_mean'], 2)})")
    if r.get("docs_per_s"):
        print(f"   encoding documents: {r['docs_per_s']:.1f} docs/s over {r['encode_total']} documents")
    if r.get("extrapolated_wall_s"):
        print(f"   PARTIAL, cancelled after {r['prefix_docs']} documents in {r['prefix_s']:.0f} s; EXTRAPOLATED full size: encoding "
              f"{r['extrapolated_encode_s'] / 60:.1f} min, job ~{r['extrapolated_wall_s'] / 60:.1f} min")
    lat = r.get("latency")
    if lat:
        for what, v in lat.items():
            if isinstance(v, dict):
                print(f"   submit latency beside the job, {what}: p50 {v['p50_ms']:.0f} ms, p95 {v['p95_ms']:.0f} ms ({v['n']} submits)")
        print(f"   (load after the latency run {lat['load_after']})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", default="bm25,minilm-int8,minilm-torch", help=f"comma-separated, of {', '.join(JOBS)}")
    ap.add_argument("--torch-prefix", type=int, default=8000,
                    help="cancel the torch job after this many documents and extrapolate (0: run it in full)")
    ap.add_argument("--sample", type=float, default=5.0, help="seconds between progress samples (default 5)")
    ap.add_argument("--worker-nice", type=int, default=None, help="the worker's --nice (default: the product's)")
    ap.add_argument("--latency", type=int, default=20, help="annotator submits timed beside each job (0: none)")
    ap.add_argument("--latency-during", default="bm25,minilm-int8,minilm-torch", help="beside which jobs")
    ap.add_argument("--latency-instances", type=int, default=2000, help="size of the latency study's project")
    ap.add_argument("--max-minutes", type=float, default=None,
                    help="cancel a job still running after this many minutes and report it as partial (extrapolated)")
    ap.add_argument("--work", default=None, help="working folder (default: a new one under /tmp, deleted)")
    ap.add_argument("--json", default=None, metavar="FILE", help="also write the results here")
    args = ap.parse_args()
    names = [n.strip() for n in args.jobs.split(",") if n.strip()]
    bad = [n for n in names if n not in JOBS]
    if bad:
        ap.error(f"unknown job(s) {', '.join(bad)}; expected {', '.join(JOBS)}")
    args.latency_during = {n.strip() for n in args.latency_during.split(",")}
    base = CACHE / "robust04_base.db"
    if not base.exists():
        ap.error(f"no fixture at {base}: build it with bench/fixture_robust04.py (or set IFJUDGE_BENCH_CACHE)")
    sys.path.insert(0, str(ROOT / "bench"))
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="ifjudge-e2e-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average {load()} ({os.cpu_count()} cores); work folder {work}", flush=True)
    results = []
    try:
        db_path = work / "robust04.db"
        shutil.copyfile(base, db_path)
        latency_db = None
        if args.latency:
            import bench_submit_latency as sl

            lpath = work / "latency.db"
            lpath.unlink(missing_ok=True)
            sid = sl.build(lpath, args.latency_instances)
            latency_db = (lpath, sid, None, args.latency_instances)
        for name in names:
            r = run_job(name, db_path, work, args, latency_db)
            report(r)
            results.append(r)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=2))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
