"""Write every figure the Monitor shows to a folder, to diff two trees (the monitor's counterpart of
``bench/snapshot_outputs.py``).

For the labelled demo (built here) and the two studies of ``bench/fixture_robust04.py`` (the
Robust04-sized re-judging study, the 100,008-label InstructIR study), before and after 30 changed
answers: ``study_monitor`` at 0, 200 and 1,000 bootstrap replicates, the benchmark-wide estimates,
each annotator's habits and check accuracy, the rows the Monitor page builds (Table 7, questions,
annotators, disagreements and reasons, filtered and paged), and every element the Monitor page
draws on each of its tabs (``AppTest``: its text, its tables' cells, its charts' specifications and data). After the
new labels it also checks that the monitor kept across runs (``storage/study_reads.py``) equals one
computed from nothing, and stops if not. Run it on two trees and diff the folders::

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python bench/monitor_outputs.py /tmp/mon-base
    (change the code)
    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python bench/monitor_outputs.py /tmp/mon-new
    diff -r /tmp/mon-base /tmp/mon-new && echo identical

``--quick``: the demo only (seconds instead of a minute).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def dump(value) -> str:
    return json.dumps(value, indent=1, sort_keys=True, default=repr) + "\n"


def library_outputs(path: Path, sid: int) -> dict[str, str]:
    """The library's figures of study ``sid``, each computed on a connection that keeps nothing."""
    from annotation import check_items
    from annotation.monitoring import monitor
    from annotation.monitoring import view
    from annotation.estimates.benchmark import benchmark_estimates
    from annotation.monitoring.habits import annotator_habits
    from annotation.questions.study import study_questions
    from storage import studies
    from storage.db import connect

    out = {}
    for n_boot in (0, 200, 1000):
        out[f"study_monitor-{n_boot}.json"] = dump(monitor.study_monitor(connect(path), sid, n_boot=n_boot))
    db = connect(path)
    study = studies.get_study(db, sid)
    declared = study_questions(study)
    out["estimates.json"] = dump(benchmark_estimates(db, sid))
    table = monitor.annotator_table(db, sid)
    habits = annotator_habits(db, sid, seconds={r["annotator"]: r["median_seconds_per_screen"] for r in table})
    checks = check_items.accuracy(db, sid)
    out["habits.json"] = dump(habits)
    out["checks.json"] = dump(checks)
    seed = study["settings"].get("seed", 0)
    reports = {q: monitor.question_report(db, sid, q, n_boot=200, seed=seed) for q in study["questions"]}
    rows = {"table7": view.table7_rows(monitor.table7(db, sid, n_boot=200, seed=seed), reports),
            "annotators": view.habit_rows(table, habits, list(declared.values()), checks or None),
            "questions": {q: view.question_rows(declared[q], r) for q, r in reports.items() if r is not None},
            "kappa_cells": {q: monitor.kappa_cells(r) for q, r in reports.items() if r is not None},
            "disagreement_questions": view.disagreement_questions(db, sid)}
    pages = {}
    for qs in ([], rows["disagreement_questions"][:1]):
        for page in (1, 2, 10**6):
            part = view.disagreement_page(db, sid, questions=qs, page=page)
            pages[f"disagreements {qs} page {page}"] = {**part, "rows": [
                {k: v for k, v in r.items() if k != "full"} | {"full": r["full"]} for r in part["rows"]]}
    for text in ("", "vague", "changed", "zzz-nothing"):
        for page in (1, 3):
            pages[f"reasons {text!r} page {page}"] = view.reason_page(db, sid, contains=text, page=page)
    out["view_rows.json"] = dump(rows)
    out["view_pages.json"] = dump(pages)
    return out


def page_elements(at) -> list:
    """Every element the page drew, in order: its type and what it shows (a table's cells, a chart's
    specification and data, a widget's label, options and value)."""
    from google.protobuf.json_format import MessageToDict

    import pyarrow as pa

    def frame(data: bytes) -> dict:
        table = pa.ipc.open_stream(data).read_all()
        return {"schema": str(table.schema), "columns": table.to_pydict()}

    out = []
    for node in at.main:
        kind = getattr(node, "type", None)
        proto = getattr(node, "proto", None)
        if proto is None or kind is None:
            continue
        d = MessageToDict(proto)
        d.pop("id", None)
        if kind == "dataframe":
            d.pop("arrowData", None)
            d["frame"] = frame(proto.arrow_data.data)
        elif kind == "vega_lite_chart":
            d.pop("datasets", None)
            d["spec"] = json.loads(proto.spec)
            d["datasets"] = [[ds.name, frame(ds.data.data)] for ds in proto.datasets]
        out.append([kind, d])
    return out


def page_outputs(path: Path, sid: int):
    """The Monitor page of study ``sid``, each of its tabs open in a new session (the page computes
    only the open tab): the last app and every tab's elements."""
    from streamlit.testing.v1 import AppTest

    from bench.bench_lead_loop import MONITOR_TABS

    os.environ["IFJUDGE_DB"] = str(path)
    with sqlite3.connect(path) as c:
        uid, name, role = c.execute("SELECT id, name, role FROM users WHERE role = 'lead' ORDER BY id").fetchone()
    tabs = {}
    for tab in MONITOR_TABS:
        at = AppTest.from_file(str(ROOT / "pages" / "monitor.py"), default_timeout=600)
        at.session_state["user"] = {"id": uid, "name": name, "role": role}
        at.session_state["mon_study"] = sid
        at.session_state["mon_tab"] = tab
        at.run()
        if at.exception:
            raise SystemExit(f"the Monitor page failed on its tab {tab}: {at.exception[0].value}")
        tabs[tab] = page_elements(at)
    return at, dump(tabs)


def new_labels(path: Path, n: int) -> None:
    from bench.bench_lead_loop import _new_labels
    _new_labels(path, n)


def study_of(path: Path) -> int:
    with sqlite3.connect(path) as c:
        return int(c.execute("SELECT MAX(id) FROM studies").fetchone()[0])


def snapshot(path: Path, out: Path) -> None:
    """Every output of ``path``'s newest study, before and after 30 changed answers."""
    from storage import study_reads

    sid = study_of(path)
    study_reads.forget()
    for name, text in library_outputs(path, sid).items():
        write(out / "before" / name, text)
    _, text = page_outputs(path, sid)
    write(out / "before" / "page.json", text)
    new_labels(path, 30)
    _, kept = page_outputs(path, sid)  # a new session in this process: what was kept, plus the new labels
    study_reads.forget()
    _, fresh = page_outputs(path, sid)
    if kept != fresh:
        write(out / "after" / "page-kept.json", kept)
        write(out / "after" / "page.json", fresh)
        raise SystemExit(f"{path.name}: the kept Monitor differs from a new one after new labels (see {out / 'after'})")
    write(out / "after" / "page.json", fresh)
    for name, text in library_outputs(path, sid).items():
        write(out / "after" / name, text)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--quick", action="store_true", help="the demo only")
    args = ap.parse_args()
    if args.out.exists():
        shutil.rmtree(args.out)
    tmp = Path(tempfile.mkdtemp(prefix="ifj-mon-"))
    try:
        demo = tmp / "demo.db"
        subprocess.run([sys.executable, "-m", "cli", "demo", "--db", str(demo), "--json"], cwd=ROOT, check=True,
                       capture_output=True)
        from bench.snapshot_outputs import label_demo
        label_demo(str(demo))
        snapshot(demo, args.out / "demo")
        if not args.quick:
            from bench.bench_lead_loop import CACHE
            from bench.fixture_robust04 import build, copy_db
            build(CACHE)
            for name in ("robust04", "instructir"):
                copy_db(CACHE / f"{name}.db", tmp / f"{name}.db")
                snapshot(tmp / f"{name}.db", args.out / name)
                (tmp / f"{name}.db").unlink()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    files = [p for p in args.out.rglob("*") if p.is_file()]
    print(f"{len(files)} files, {sum(p.stat().st_size for p in files):,} bytes in {args.out}")


if __name__ == "__main__":
    main()
