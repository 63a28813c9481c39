"""Concurrency load test: N simulated annotators, each its own process with its own connection,
submit screens through ``annotation.workspace`` (open_screen + submit_screen: the code path of the
annotate page) against one SQLite file, for a bounded time.

Afterwards the database is checked: every label a worker reported as committed is stored, no
label is stored twice, no item has more annotators than its cap, assignments marked done match the
labels, and no worker met an error (in particular no "database is locked").

Prints submissions per second and the median / 95th-percentile submit latency (submit_screen
alone, and open_screen + submit_screen), compared with the 300 ms target for "submit to next item".

Run (full variant: 20 annotators, 2 minutes, loopback-free: no server, one local file)::

    python bench/load_test.py                     # 20 annotators, 120 s, 20,000 instances
    python bench/load_test.py --annotators 6 --seconds 8

The functions here are shared by tests/test_load.py (short CI variant), tests/test_crash.py and
tests/test_backup.py. A worker prints one line per event, flushed at once:
``C <screen>`` (claimed), ``L <label id>`` (committed), ``T <submit s> <open+submit s>``,
``E <error>`` and ``DONE``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from accounts import auth  # noqa: E402
from annotation import workspace
from annotation.studies import StudySettings, create_study  # noqa: E402
from storage.projects import get_project  # noqa: E402
from storage import projects, users  # noqa: E402
from formats.bundle import Bundle, Document, Instance, Qrel, Query  # noqa: E402
from storage.db import check_integrity, connect, is_url  # noqa: E402

TARGET_MS = 300.0
QUESTIONS = ["validity", "naturalness", "best_passage"]
PASSWORD = "load-test-pw"


def synthetic_bundle(n_instances: int, *, per_group: int = 4, text_words: int = 60) -> Bundle:
    """``n_instances`` InstructIR-like instances in groups of ``per_group``, each with its own
    target passage (so best_passage has candidates)."""
    rng = random.Random(7)
    words = ["retrieval", "instruction", "passage", "clinic", "solar", "running", "kohlrabi", "query",
             "benchmark", "annotator", "judge", "relevant", "user", "context", "document", "search"]
    b = Bundle()
    n_groups = (n_instances + per_group - 1) // per_group
    made = 0
    for g in range(n_groups):
        qid = f"q{g:05d}"
        b.queries.append(Query(qid, f"synthetic query {g} about {rng.choice(words)}"))
        for j in range(1, per_group + 1):
            if made == n_instances:
                break
            iid = f"{qid}_{j}"
            doc = f"d{g:05d}-{j}"
            b.documents.append(Document(doc, " ".join(rng.choice(words) for _ in range(text_words)), f"title {doc}"))
            b.instances.append(Instance(iid, qid, qid, f"I am user {j} of group {g}; " + " ".join(
                rng.choice(words) for _ in range(text_words // 3)), "og"))
            b.qrels.append(Qrel(iid, doc, 1, "original"))
            made += 1
    return b


def build_study_db(path: str | os.PathLike, *, n_instances: int, annotators: list[str], overlap: int = 3,
                   project: str = "load") -> dict:
    """A database with a synthetic project, the annotators and one study over every instance.

    Built with storage.projects.import_bundle, accounts.auth.add_user and
    annotation.studies.create_study. Returns create_study's summary."""
    db = connect(path)
    projects.import_bundle(db, project, synthetic_bundle(n_instances), fmt="beir", kind="instructir")
    for name in annotators:
        if users.get_user(db, name) is None:
            auth.add_user(db, name, "annotator", PASSWORD)
    settings = StudySettings(group_fraction=1.0, per_group=4, overlap=overlap, passages=3, seed=1)
    summary = create_study(db, project=get_project(db, project), questions=QUESTIONS, annotators=annotators,
                           created_by="load-test", name="load test", settings=settings)
    db.close()
    return summary


def answers_for(screen, rng: random.Random) -> dict[str, dict]:
    """Plausible answers for a screen: Yes/No (with a reason for No) and a passage."""
    out = {}
    for it in screen.items:
        q = it.question
        if q.id == "best_passage":
            out[q.id] = {"value": rng.choice(it.passages)["doc_id"], "reason": ""}
        else:
            value = rng.choice(q.categories)
            out[q.id] = {"value": value, "reason": "load-test reason" if value in q.reason_required_for else ""}
    return out


def worker(db_path: str, study_id: int, name: str, *, seconds: float, max_screens: int, seed: int,
           pause_s: float = 0.0) -> int:
    """Submit screens for ``name`` until time, the screen budget or the queue runs out."""
    out = sys.stdout
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    try:
        db = connect(db_path)
        u = users.get_user(db, name)
        user = {"id": u["id"], "name": u["name"], "role": u["role"]}
        n = 0
        out.write(f"B {time.time():.6f}\n")
        out.flush()
        while n < max_screens and time.monotonic() < deadline:
            t0 = time.perf_counter()
            screen = workspace.open_screen(db, study_id, user)
            if screen is None:
                break
            out.write(f"C {screen.screen}\n")
            out.flush()
            answers = answers_for(screen, rng)
            t1 = time.perf_counter()
            label_ids = workspace.submit_screen(db, screen, user, answers, started_at=time.time() - 1.0)
            t2 = time.perf_counter()
            out.write("".join(f"L {i}\n" for i in label_ids) + f"T {t2 - t1:.6f} {t2 - t0:.6f} {time.time():.6f}\n")
            out.flush()
            n += 1
            if pause_s:
                time.sleep(pause_s)
    except Exception as exc:  # reported to the parent, which fails the run
        out.write(f"E {type(exc).__name__}: {str(exc)[:300]}\n")
        out.flush()
        return 1
    out.write("DONE\n")
    out.flush()
    return 0


def start_worker(db_path, study_id: int, name: str, *, seconds: float, max_screens: int, seed: int,
                 stdout, pause_s: float = 0.0) -> subprocess.Popen:
    """Start :func:`worker` in its own Python process (own connection), stdout to ``stdout``."""
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--worker", "--db", str(db_path), "--study", str(study_id),
         "--user", name, "--seconds", str(seconds), "--max-screens", str(max_screens), "--seed", str(seed),
         "--pause", str(pause_s)],
        stdout=stdout, stderr=subprocess.STDOUT, cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1"),
    )


def parse_output(text: str) -> dict:
    """Events of a worker's stdout: claims, label ids, timings, errors, whether it finished."""
    ev = {"claims": [], "labels": [], "submit_s": [], "cycle_s": [], "walls": [], "begin": None, "errors": [],
          "done": False}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "C":
            ev["claims"].append(rest)
        elif kind == "L":
            ev["labels"].append(int(rest))
        elif kind == "T":
            a, b, wall = rest.split()
            ev["submit_s"].append(float(a))
            ev["cycle_s"].append(float(b))
            ev["walls"].append(float(wall))
        elif kind == "B":
            ev["begin"] = float(rest)
        elif kind == "E":
            ev["errors"].append(rest)
        elif kind == "DONE":
            ev["done"] = True
        elif line.strip():
            ev["errors"].append(line)  # a traceback or any stray output
    return ev


def check_database(db_path, study_id: int, reported_labels: list[int]) -> dict:
    """The invariants after a run; returns the figures and a list of violations (empty = good)."""
    db = connect(db_path)
    q = lambda sql, *a: db.execute(sql, list(a)).fetchall()  # noqa: E731
    problems = []
    stored = {r[0] for r in q("SELECT l.id FROM labels l JOIN items i ON i.id = l.item_id WHERE i.study_id = ?", study_id)}
    lost = set(reported_labels) - stored
    if lost:
        problems.append(f"{len(lost)} reported labels are not stored, e.g. {sorted(lost)[:5]}")
    if len(reported_labels) != len(set(reported_labels)):
        problems.append("a label id was reported twice")
    extra = stored - set(reported_labels)
    if extra:
        problems.append(f"{len(extra)} stored labels were never reported as committed, e.g. {sorted(extra)[:5]}")
    dup = q("SELECT l.item_id, l.user_id, COUNT(*) FROM labels l JOIN items i ON i.id = l.item_id"
            " WHERE i.study_id = ? GROUP BY l.item_id, l.user_id HAVING COUNT(*) > 1", study_id)
    if dup:
        problems.append(f"{len(dup)} (item, annotator) pairs hold more than one label, e.g. {dup[:3]}")
    over = q("SELECT i.id, i.cap, COUNT(DISTINCT a.user_id) FROM items i JOIN assignments a ON a.item_id = i.id"
             " WHERE i.study_id = ? GROUP BY i.id HAVING COUNT(DISTINCT a.user_id) > i.cap", study_id)
    over_labels = q("SELECT i.id, i.cap, COUNT(DISTINCT l.user_id) FROM items i JOIN labels l ON l.item_id = i.id"
                    " WHERE i.study_id = ? GROUP BY i.id HAVING COUNT(DISTINCT l.user_id) > i.cap", study_id)
    if over or over_labels:
        problems.append(f"items above their cap: {(over + over_labels)[:3]}")
    done_without = q("SELECT a.item_id, a.user_id FROM assignments a JOIN items i ON i.id = a.item_id"
                     " WHERE i.study_id = ? AND a.state = 'done' AND NOT EXISTS"
                     " (SELECT 1 FROM labels l WHERE l.item_id = a.item_id AND l.user_id = a.user_id)", study_id)
    label_not_done = q("SELECT l.item_id, l.user_id FROM labels l JOIN items i ON i.id = l.item_id"
                       " LEFT JOIN assignments a ON a.item_id = l.item_id AND a.user_id = l.user_id"
                       " WHERE i.study_id = ? AND (a.state IS NULL OR a.state != 'done')", study_id)
    if done_without or label_not_done:
        problems.append(f"assignments and labels disagree: {done_without[:3]} {label_not_done[:3]}")
    integrity = check_integrity(db)
    if integrity != "ok":
        problems.append(f"integrity check: {integrity}")
    db.close()
    return {"labels_stored": len(stored), "problems": problems}


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (linear interpolation, numpy's default)."""
    import numpy as np

    return float(np.percentile(values, p)) if values else float("nan")


class Sampler:
    """Every ``every_s`` seconds while the run lasts: the 1-minute load average and, on PostgreSQL,
    the server's client connections (``pg_stat_activity`` rows of backend type "client backend",
    the sampler's own included: what ``max_connections`` limits). Keeps the peaks."""

    def __init__(self, db_path, every_s: float = 0.5):
        self.db_path, self.every_s = db_path, every_s
        self.peak_connections: int | None = None
        self.peak_load = os.getloadavg()[0]
        self.sample_errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        db = connect(self.db_path) if is_url(self.db_path) else None
        while not self._stop.is_set():
            self.peak_load = max(self.peak_load, os.getloadavg()[0])
            if db is not None:
                try:
                    n = db.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'").fetchone()[0]
                    self.peak_connections = max(self.peak_connections or 0, n)
                except Exception as exc:  # the server may refuse the sampler too: say so, keep going
                    self.sample_errors.append(f"{type(exc).__name__}: {exc}")
            self._stop.wait(self.every_s)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def run_load(db_path, *, annotators: int, seconds: float, n_instances: int, workdir: Path,
             max_screens: int = 100_000) -> dict:
    """Build the database, run ``annotators`` worker processes for ``seconds``, check, and return
    the figures: submissions, submissions per second, latencies, problems."""
    names = [f"load{i:02d}" for i in range(annotators)]
    summary = build_study_db(db_path, n_instances=n_instances, annotators=names)
    study_id = summary["study_id"]
    files = [open(workdir / f"{n}.out", "w+b") for n in names]
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    with Sampler(db_path) as sampler:
        procs = [start_worker(db_path, study_id, n, seconds=seconds, max_screens=max_screens, seed=i, stdout=f)
                 for i, (n, f) in enumerate(zip(names, files))]
        for p in procs:
            p.wait(timeout=seconds + 120)
    elapsed = time.monotonic() - start
    load_after = os.getloadavg()[0]
    events = []
    for f in files:
        f.seek(0)
        events.append(parse_output(f.read().decode("utf-8", "replace")))
        f.close()
    labels = [i for e in events for i in e["labels"]]
    submit_s = [t for e in events for t in e["submit_s"]]
    cycle_s = [t for e in events for t in e["cycle_s"]]
    errors = [err for e in events for err in e["errors"]]
    unfinished = [n for n, e in zip(names, events) if not e["done"]]
    checked = check_database(db_path, study_id, labels)
    begins = [e["begin"] for e in events if e["begin"] is not None]
    walls = [w for e in events for w in e["walls"]]
    active = (max(walls) - min(begins)) if walls and begins else float("nan")
    return {
        "annotators": annotators, "seconds": seconds, "elapsed_s": elapsed, "instances": n_instances,
        "screens": summary["screens"], "assignments": summary["assignments"],
        "screen_assignments": summary["screens"] * 3,
        "submissions": len(submit_s), "labels": len(labels),
        "active_s": active, "submissions_per_s": len(submit_s) / active if active == active and active > 0 else 0.0,
        "submit_ms_median": 1000 * statistics.median(submit_s) if submit_s else float("nan"),
        "submit_ms_p95": 1000 * percentile(submit_s, 95),
        "cycle_ms_median": 1000 * statistics.median(cycle_s) if cycle_s else float("nan"),
        "cycle_ms_p95": 1000 * percentile(cycle_s, 95),
        "errors": errors, "locked_errors": [e for e in errors if "locked" in e.lower()],
        "unfinished": unfinished, "load_before": load_before, "load_peak": sampler.peak_load,
        "load_after": load_after, "peak_connections": sampler.peak_connections,
        "sample_errors": sampler.sample_errors, **checked,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--annotators", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--instances", type=int, default=20_000)
    ap.add_argument("--max-screens", type=int, default=100_000, help="per annotator")
    ap.add_argument("--db", help="(worker) database; (run) where to build it (default: a temp dir)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--study", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--user", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--pause", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.db, args.study, args.user, seconds=args.seconds, max_screens=args.max_screens,
                      seed=args.seed, pause_s=args.pause)
    if not 1 <= args.annotators <= 128 or not 0 < args.seconds <= 600:
        ap.error("bounded run: 1-128 annotators, at most 600 s")
    with tempfile.TemporaryDirectory(prefix="ifjudge-load-") as tmp:
        # a postgresql:// URL runs the same test against PostgreSQL (its database must be empty)
        db_path = (args.db if is_url(args.db) else Path(args.db)) if args.db else Path(tmp) / "load.db"
        r = run_load(db_path, annotators=args.annotators, seconds=args.seconds, n_instances=args.instances,
                     workdir=Path(tmp), max_screens=args.max_screens)
    if args.json:
        print(json.dumps(r))
    print(f"{r['annotators']} annotator processes, {r['seconds']:.0f} s budget ({r['elapsed_s']:.1f} s elapsed), "
          f"{r['instances']} instances, {r['screens']} screens x overlap 3 = {r['screen_assignments']} screen assignments "
          f"({r['assignments']} item assignments)")
    print(f"submissions: {r['submissions']} screens ({r['labels']} labels), "
          f"{r['submissions_per_s']:.1f} submissions/s over {r['active_s']:.1f} s (first worker start to last submission) "
          f"(screens of 3 questions; {r['submissions_per_s'] * 3:.0f} labels/s)")
    print(f"submit_screen latency: median {r['submit_ms_median']:.1f} ms, p95 {r['submit_ms_p95']:.1f} ms; "
          f"open_screen + submit_screen: median {r['cycle_ms_median']:.1f} ms, p95 {r['cycle_ms_p95']:.1f} ms "
          f"(target: next item within {TARGET_MS:.0f} ms)")
    print(f"labels stored {r['labels_stored']}, reported {r['labels']}; errors {len(r['errors'])} "
          f"(database is locked: {len(r['locked_errors'])}); workers that did not finish: {len(r['unfinished'])}")
    print("invariants: " + ("OK (no lost or duplicated label, no item above its cap)" if not r["problems"]
                            else "VIOLATED: " + "; ".join(r["problems"])))
    print(f"load average (1 min): {r['load_before']:.1f} before, {r['load_peak']:.1f} peak, "
          f"{r['load_after']:.1f} after ({os.cpu_count()} cores)")
    if r["peak_connections"] is not None:
        print(f"PostgreSQL client connections (pg_stat_activity, sampled every 0.5 s): peak {r['peak_connections']}"
              + (f"; the sampler was refused {len(r['sample_errors'])} times" if r["sample_errors"] else ""))
    for e in r["errors"][:5]:
        print("  error:", e)
    return 0 if not r["problems"] and not r["errors"] and not r["unfinished"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
