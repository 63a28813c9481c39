"""The lead's loop at benchmark size: every step timed in a new process, beside its target.

On the fixture of ``bench/fixture_robust04.py`` (built once into ``.cache/bench_robust04/``): a
Robust04-sized FollowIR project (52 queries x 1,000 candidates, 52,000 TREC-length documents) with
a 30,000-label re-judging study and 10 stored evaluations, and a 100,000-label InstructIR study.

Each step runs ``--repeats`` times (default 3; once when the process takes over 30 s), each time in a NEW Python process (as a user runs
a command, or as a fresh app server renders a page the first time), and the median is printed.
A child process prints three figures:

* ``step``: the step itself, after the modules are imported (the command's ``main(argv)``, the
  library call, or ``AppTest.run()``): what the targets are about;
* ``imports``: importing the modules the step needs (paid once per process by a CLI command;
  once per server by a page);
* ``warm``: a second call (a page: a second ``AppTest.run()``) in the same process on the same
  data: a lead changing a widget, or pressing Refresh while nobody labels (the Monitor keeps its
  values across runs while the study's data are unchanged: ``storage/study_reads.py``);
* ``+30 labels``: a third call after 30 new labels (changed answers, each superseding an older
  label) were stored: a lead pressing Refresh while the annotators work (the labels added since are
  read alone, the statistics computed again);

and the parent prints the whole process' wall time too, and ``cpu``, the process's CPU time during
the step (all threads: what the step costs whatever else runs on a shared machine). Mutating steps (study creation, validate,
the ``+30 labels`` of the monitor steps) work on a copy of the database made before the clock
starts. A library or page step runs as the app server does: after the server's preload before it
listens (``ui/preload.py`` ``load_now``: every module the pages import, scikit-learn, a first chart,
then ``gc.freeze``; then ``read_ahead_studies``: the newest open studies' labels and items read into
the process, printed as ``ahead``; the steps "a study not read ahead" skip it) and, for a page,
after the server's first script run (the sign-in page, which pays Streamlit's one-time
``inspect.stack()`` check and, once per server, the scan of the installed packages for custom
components, which AppTest repeats for each new page unless given the first run's registry); a command pays its own lazy imports. Targets (2 cores): each page run
and each command < 0.5 s; import < 5 s (Robust04-sized) and < 1 s (the shipped InstructIR
release); each export < 3 s. The load average (1 min) is printed before and after each step:
the machine is shared, figures taken under load are slower.

The Monitor page is timed with its first tab open (the default, "Agreement") and with each other
tab open (``Monitor page, tab Annotators``, ...): the page computes only the open tab's section.

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_lead_loop.py [--repeats 3] [--only NAME,...]``
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("IFJUDGE_BENCH_CACHE", ROOT / ".cache" / "bench_robust04"))  # where the fixture is
EXPORT_FORMATS = ("trec", "beir", "followir", "infosearch", "mteb", "ifir", "jsonl", "report")
PAGE, COMMAND, IMPORT_R, IMPORT_I, EXPORT = 0.5, 0.5, 5.0, 1.0, 3.0
LONG_S = 30.0  # a process slower than this is not repeated
# the Monitor page's tabs, in order (its `sections`); only the open one is computed in a run
MONITOR_TABS = ("Agreement", "Benchmark estimate", "Annotators", "Disagreements", "Reasons", "Judge")


def _steps() -> list[tuple[str, str, float, list]]:
    """(name, kind, target s, args). kinds: cli, lib, page."""
    r, i = "robust04", "instructir"
    steps = [
        ("import Robust04-sized (ifjudge import)", "cli", IMPORT_R,
         ["fresh", "import", "--db", "{new}", "--project", "robust04", "--format", "auto", str(CACHE / "robust04"), "--json"]),
        ("import InstructIR release (ifjudge import)", "cli", IMPORT_I,
         ["fresh", "import", "--db", "{new}", "--project", "ir", "--format", "auto", str(ROOT / "datasets" / "instructir"),
          "--json"]),
        ("study creation: rejudge-published, 30,000 assignments", "cli", COMMAND,
         ["copy:robust04_base", "narrative", "rejudge-published", "--db", "{db}", "--project", "robust04", "--author", "lead",
          "--annotators", "ann1,ann2,ann3", "--controls", "152", "--json"]),
    ]
    for name, fx in ((r, "robust04"), (i, "instructir")):
        steps += [
            (f"{name}: monitor refresh, library (study_monitor, 200 bootstrap)", "lib", COMMAND, [fx, "monitor"]),
            (f"{name}: Monitor page (AppTest)", "page", PAGE, [fx, "pages/monitor.py"]),
            # the page computes only its open tab (the first, "Agreement", above): each other tab's first run
            *[(f"{name}: Monitor page, tab {tab} (AppTest)", "page", PAGE, [fx, "pages/monitor.py", f"tab:{tab}"])
              for tab in MONITOR_TABS[1:]],
            (f"{name}: monitor refresh, library, a study not read ahead", "lib", COMMAND, [fx, "monitor", "cold"]),
            (f"{name}: Monitor page, a study not read ahead", "page", PAGE, [fx, "pages/monitor.py", "cold"]),
            (f"{name}: adjudication queue, library", "lib", COMMAND, [fx, "queue"]),
            (f"{name}: Adjudicate page (AppTest)", "page", PAGE, [fx, "pages/adjudicate.py"]),
            (f"{name}: ifjudge adjudicate --list", "cli", COMMAND,
             [f"copy:{fx}", "adjudicate", "--db", "{db}", "--study", "{sid}", "--list"]),
            (f"{name}: ifjudge validate", "cli", COMMAND,
             [f"copy:{fx}", "validate", "--db", "{db}", "--study", "{sid}"]),
        ]
        proj = "robust04" if fx == "robust04" else "instructir"
        for fmt in EXPORT_FORMATS:
            if fx == "instructir" and fmt in ("followir", "infosearch", "ifir"):
                continue
            steps.append((f"{name}: ifjudge export --format {fmt}", "cli", EXPORT,
                          [f"copy:{fx}", "export", "--db", "{db}", "--project", proj, "--format", fmt, "--out", "{out}",
                           "--study", "{sid}"]))
    steps += [
        ("robust04: ifjudge eval compare (10 evaluations)", "cli", COMMAND,
         ["copy:robust04", "eval", "compare", "--db", "{db}", "--project", "robust04", "--json"]),
        ("robust04: Evaluate page, 10 evaluations (AppTest)", "page", PAGE, ["robust04", "pages/evaluate.py"]),
    ]
    return steps


# ---------------------------------------------------------------- child side


def _study_id(path: Path) -> int:
    import sqlite3
    with sqlite3.connect(path) as c:
        return int(c.execute("SELECT MAX(id) FROM studies").fetchone()[0])


LIBRARY = ("storage", "formats", "accounts", "annotation", "evaluation", "exports", "cli")


def preimport(*, server: bool = False) -> None:
    """Import every module of the library and the CLI (not the retrievers' model code), as a running
    server has: the ``step`` figure is then the work, and ``imports`` what a new process adds. With
    ``server``, also what the app server preloads before it listens (``ui/preload.py`` ``load_now``, as
    ``ui/server.py`` calls it: the pages' imports, then the collector's freeze)."""
    import importlib
    import pkgutil
    for pkg in LIBRARY:
        mod = importlib.import_module(pkg)
        for m in pkgutil.walk_packages(mod.__path__, prefix=pkg + "."):
            if not m.name.startswith(("evaluation.retrievers.dense", "evaluation.retrievers.encoders",
                                      "evaluation.retrievers.rerank", "cli.__main__")):
                importlib.import_module(m.name)
    import altair  # noqa: F401  (the pages' charts)
    import streamlit  # noqa: F401
    if server:
        from ui.preload import load_now
        load_now()


def child(kind: str, args: list) -> dict:
    """One step in this (new) process; the copies it makes (up to 0.8 GB) are removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="lead_loop_") as tmp:
        return _child(kind, args, tmp)


def _child(kind: str, args: list, tmp: str) -> dict:
    from bench.fixture_robust04 import copy_db
    out: dict = {}
    if kind == "cli":
        src, argv = args[0], list(args[1:])
        subs = {"{new}": f"{tmp}/new.db", "{out}": f"{tmp}/out"}
        if src.startswith("copy:"):
            original = CACHE / f"{src[5:]}.db"
            copy_db(original, Path(tmp) / "b.db")
            subs["{db}"] = f"{tmp}/b.db"
            if "{sid}" in argv:
                subs["{sid}"] = str(_study_id(original))
        argv = [subs.get(a, a) for a in argv]
        t = time.perf_counter()
        preimport()
        from cli.main import main
        out["imports"] = time.perf_counter() - t
        devnull = open(os.devnull, "w")
        real = sys.stdout
        sys.stdout = devnull
        t, cpu = time.perf_counter(), time.process_time()
        try:
            code = main(argv)
        finally:
            sys.stdout = real
        out["step"], out["cpu"] = time.perf_counter() - t, time.process_time() - cpu
        out["exit"] = code
    elif kind == "lib":
        fx, what, *cold = args
        path = Path(tmp) / "b.db"
        copy_db(CACHE / f"{fx}.db", path)
        sid = _study_id(path)
        t = time.perf_counter()
        preimport(server=True)
        out["read_ahead"] = 0.0 if cold else _read_ahead(path)
        from storage.db import connect
        if what == "monitor":
            from annotation.monitoring.monitor import study_monitor as fn
        else:
            from annotation.outcomes.adjudication import queue as fn
        out["imports"] = time.perf_counter() - t
        for figure in ("step", "warm", "labels"):
            if figure == "labels":
                _new_labels(path, 30)
            t, cpu = time.perf_counter(), time.process_time()
            res = fn(connect(path), sid)
            out[figure] = time.perf_counter() - t
            out.setdefault("cpu", time.process_time() - cpu)
        out["size"] = len(res)
    else:
        fx, page, *opts = args
        tab = next((o[4:] for o in opts if o.startswith("tab:")), None)  # the Monitor's open tab (?mon_tab=...)
        cold = "cold" in opts
        path = Path(tmp) / "b.db"
        copy_db(CACHE / f"{fx}.db", path)
        os.environ["IFJUDGE_DB"] = str(path)
        t = time.perf_counter()
        preimport(server=True)
        out["read_ahead"] = 0.0 if cold else _read_ahead(path)
        from streamlit.testing.v1 import AppTest
        import sqlite3
        first = AppTest.from_string("import streamlit as st\nst.title('IFJudge')")
        first.run()  # the server's first run: sign-in
        out["imports"] = time.perf_counter() - t
        with sqlite3.connect(path) as c:
            uid, name, role = c.execute("SELECT id, name, role FROM users WHERE name = 'lead'").fetchone()
        at = AppTest.from_file(str(ROOT / page), default_timeout=120)
        # a server scans the installed packages for custom components once, when it starts; AppTest does it in
        # each new AppTest's first run (0.3-0.6 s): the page's run uses the registry the sign-in run made
        at._bidi_component_manager = first._bidi_component_manager
        at.session_state["user"] = {"id": uid, "name": name, "role": role}
        if tab:
            at.session_state["mon_tab"] = tab
        for figure in ("step", "warm", "labels"):
            if figure == "labels":
                _new_labels(path, 30)
            t, cpu = time.perf_counter(), time.process_time()
            at.run()
            out[figure] = time.perf_counter() - t
            out.setdefault("cpu", time.process_time() - cpu)
        out["exception"] = [str(e.value)[:200] for e in at.exception]
    return out


def _read_ahead(path: Path) -> float:
    """What the app server does after its preload, before it listens (``ui/server.py``): read the
    newest open studies' rows into the process (``ui/preload.py`` ``read_ahead_studies``); seconds."""
    from ui.preload import read_ahead_studies
    t = time.perf_counter()
    read_ahead_studies(path)
    return time.perf_counter() - t


def _new_labels(path: Path, n: int) -> None:
    """``n`` changed answers, as annotators store them while the lead watches: a new label for the
    first ``n`` current labels of Yes/No and relevance items, each superseding the older one."""
    import sqlite3
    with sqlite3.connect(path) as c:
        rows = c.execute("SELECT l.item_id, l.user_id, l.id, l.value FROM labels l JOIN items i ON i.id = l.item_id"
                         " WHERE i.question IN ('validity', 'naturalness', 'relevance') ORDER BY l.id LIMIT ?",
                         [n]).fetchall()
        flip = {"Yes": "No", "No": "Yes", "relevant": "not relevant", "not relevant": "relevant"}
        c.executemany("INSERT INTO labels (item_id, user_id, value, reason, submitted_at, duration_ms, supersedes)"
                      " VALUES (?, ?, ?, 'changed my mind', ?, 1200, ?)",
                      [(item, user, flip.get(value, value), time.time(), old) for item, user, old, value in rows])


# ---------------------------------------------------------------- parent side


def load() -> float:
    return os.getloadavg()[0]


def run_step(kind: str, args: list, repeats: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    rows, walls, before = [], [], load()
    for _ in range(repeats):
        t = time.perf_counter()
        p = subprocess.run([sys.executable, str(Path(__file__)), "--child", kind, json.dumps(args)], cwd=ROOT, env=env,
                           capture_output=True, text=True)
        walls.append(time.perf_counter() - t)
        if p.returncode != 0:
            return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}
        rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
        if walls[-1] > LONG_S:  # a step far over its target: one run says enough, the machine is shared
            break
    med = {k: statistics.median(r[k] for r in rows) for k in ("step", "cpu", "imports", "warm", "labels", "read_ahead")
           if k in rows[0]}
    return {**med, "wall": statistics.median(walls), "runs": [round(r["step"], 3) for r in rows],
            "exit": rows[-1].get("exit"), "exception": rows[-1].get("exception"), "load": (before, load())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", help="comma-separated substrings of step names")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        sys.path.insert(0, str(ROOT))
        print(json.dumps(child(args.child[0], json.loads(args.child[1]))))
        return
    sys.path.insert(0, str(ROOT))
    from bench.fixture_robust04 import build
    t = time.perf_counter()
    info = build(CACHE)
    print(f"fixture: {json.dumps(info)} (ready in {time.perf_counter() - t:.1f} s)")
    print(f"{'step':<64} {'median':>8} {'cpu':>6} {'target':>7} {'met':>4} {'warm':>7} {'+30 lab':>7} {'ahead':>6} {'imports':>8}"
          f" {'process':>8}  load 1m")
    wanted = [w.strip() for w in args.only.split(",")] if args.only else None
    for name, kind, target, step_args in _steps():
        if wanted and not any(w in name for w in wanted):
            continue
        r = run_step(kind, step_args, args.repeats)
        if "error" in r:
            print(f"{name:<64} FAILED: {r['error']}")
            continue
        note = ""
        if r.get("exit") not in (0, None):
            note = f"  (exit {r['exit']}: refused)"
        if r.get("exception"):
            note = f"  (page exception: {r['exception'][0]})"
        warm = f"{r['warm']:.3f}" if "warm" in r else "-"
        fresh = f"{r['labels']:.3f}" if "labels" in r else "-"
        ahead = f"{r['read_ahead']:.3f}" if r.get("read_ahead") else "-"
        print(f"{name:<64} {r['step']:>7.3f}s {r['cpu']:>5.2f}s {target:>6.1f}s {'yes' if r['step'] < target else 'NO':>4} "
              f"{warm:>7} {fresh:>7} {ahead:>6} "
              f"{r['imports']:>7.3f}s {r['wall']:>7.2f}s  {r['load'][0]:.2f}->{r['load'][1]:.2f}  runs {r['runs']}{note}",
              flush=True)


if __name__ == "__main__":
    main()
