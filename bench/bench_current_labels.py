"""The current-label read (the newest label of each (item, annotator) of a study) written four
ways, timed on one database; every variant must return the same rows as the first.

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/bench_current_labels.py DB [STUDY_ID] [--repeats N]``
(e.g. the 100,008-label InstructIR study of ``bench/fixture_robust04.py``: ``instructir.db``).
The database is opened read-only. Prints the load average, then each variant's best time.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import time

COLUMNS = (
    "l.item_id, i.instance_id, i.question, i.doc_id, u.name, l.value, l.reason, l.shown_order,"
    " l.submitted_at, l.duration_ms, i.screen"
)
FROM = "FROM labels l JOIN items i ON i.id = l.item_id JOIN users u ON u.id = l.user_id"
ORDER = " ORDER BY l.item_id, u.name"

VARIANTS = {
    "correlated MAX(id) subquery": (
        f"SELECT {COLUMNS} {FROM} WHERE i.study_id = ? AND l.id = (SELECT MAX(id) FROM labels l2"
        " WHERE l2.item_id = l.item_id AND l2.user_id = l.user_id)" + ORDER
    ),
    "GROUP BY MAX(id) joined back": (
        f"SELECT {COLUMNS} FROM (SELECT MAX(l2.id) AS id FROM labels l2 JOIN items i2 ON i2.id = l2.item_id"
        " WHERE i2.study_id = ? GROUP BY l2.item_id, l2.user_id) m JOIN labels l ON l.id = m.id"
        " JOIN items i ON i.id = l.item_id JOIN users u ON u.id = l.user_id" + ORDER
    ),
    "ROW_NUMBER() window": (
        f"SELECT {COLUMNS} FROM (SELECT l2.*, ROW_NUMBER() OVER (PARTITION BY l2.item_id, l2.user_id"
        " ORDER BY l2.id DESC) AS rn FROM labels l2 JOIN items i2 ON i2.id = l2.item_id WHERE i2.study_id = ?) l"
        " JOIN items i ON i.id = l.item_id JOIN users u ON u.id = l.user_id WHERE l.rn = 1" + ORDER
    ),
    "NOT EXISTS a newer label": (
        f"SELECT {COLUMNS} {FROM} WHERE i.study_id = ? AND NOT EXISTS (SELECT 1 FROM labels l2"
        " WHERE l2.item_id = l.item_id AND l2.user_id = l.user_id AND l2.id > l.id)" + ORDER
    ),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("db")
    p.add_argument("study", nargs="?", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    con = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    print(f"{args.db}, study {args.study}; load average {os.getloadavg()[0]:.1f}; SQLite {sqlite3.sqlite_version}")
    best = dict.fromkeys(VARIANTS, float("inf"))
    reference = None
    for _ in range(args.repeats):  # rounds of every variant: the machine's load hits them alike
        for name, sql in VARIANTS.items():
            start = time.perf_counter()
            rows = con.execute(sql, [args.study]).fetchall()
            best[name] = min(best[name], time.perf_counter() - start)
            if reference is None:
                reference = rows
            if rows != reference:
                raise SystemExit(f"{name}: {len(rows)} rows differ from the first variant's {len(reference)}")
    for name, seconds in best.items():
        print(f"  {seconds:6.3f} s  {len(reference):>7} rows  {name}")


if __name__ == "__main__":
    main()
