"""What each annotator's habits (annotation/monitoring/habits.py) add to the Monitor of a 100,000-label study.

On the InstructIR study of ``bench/fixture_robust04.py`` (``instructir.db``: 11,112 instances x 3
questions x 3 annotators = 100,008 labels; built once, ``--db`` to use another copy), prints the
median over ``--repeats`` of, each in wall seconds and CPU seconds of this process:

* ``read``: the one extra read of the habits (in what passage order each current label
  was shown for the best passage, ``storage.studies.shown_order_columns``);
* ``habits``: ``annotator_habits`` itself, the outcome table already built (the Monitor builds it
  for its other sections);
* ``monitor page``: a warm ``AppTest`` run of ``pages/monitor.py`` (the whole page, habits
  included),

beside the target of a Monitor run (0.5 s) and the share the habits take of it. The load average
is printed before and after: figures taken on a shared machine are slower.

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_monitor_habits.py [--db PATH] [--repeats 5]``
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TARGET = 0.5


def _timed(fn, repeats: int) -> tuple[float, float]:
    """(median wall s, median CPU s) of ``fn()`` over ``repeats`` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", type=Path, default=ROOT / ".cache" / "bench_robust04" / "instructir.db")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if not args.db.exists():
        from bench.fixture_robust04 import build_instructir_db

        args.db.parent.mkdir(parents=True, exist_ok=True)
        build_instructir_db(args.db)
    work = Path(tempfile.mkdtemp()) / "instructir.db"
    shutil.copy(args.db, work)  # the page remembers the lead's last study: a copy takes that write
    os.environ["IFJUDGE_DB"] = str(work)

    from annotation.monitoring.habits import annotator_habits
    from annotation.outcomes.table import outcome_table
    from storage import studies
    from storage.db import connect

    print(f"load average before: {os.getloadavg()[0]:.2f}")
    db = connect(work)
    sid = studies.list_studies(db)[0]["id"]

    def fresh():
        shared = studies.share_reads(connect(work))
        outcome_table(shared, sid)
        studies.item_screens(shared, sid)
        return shared

    read = _timed(lambda: studies.shown_order_columns(connect(work), sid), args.repeats)
    dbs = [fresh() for _ in range(args.repeats)]
    habits = _timed(lambda: annotator_habits(dbs.pop(), sid), args.repeats)

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "monitor.py"), default_timeout=300)
    at.session_state["user"] = dict(zip(("id", "name", "role"), db.execute(
        "SELECT id, name, role FROM users WHERE role = 'lead' ORDER BY id LIMIT 1").fetchone()))
    at.run()
    page = _timed(lambda: at.run(), args.repeats)
    print(f"read (shown orders): {read[0]:.3f} s wall, {read[1]:.3f} s CPU")
    print(f"annotator_habits:     {habits[0]:.3f} s wall, {habits[1]:.3f} s CPU")
    print(f"monitor page (warm):  {page[0]:.3f} s wall, {page[1]:.3f} s CPU; target {TARGET} s per run; the habits "
          f"(read + compute) take {100 * (read[1] + habits[1]) / page[1]:.0f}% of its CPU")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
