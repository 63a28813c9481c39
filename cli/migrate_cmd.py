"""``ifjudge migrate --from SOURCE --to TARGET``: copy a whole IFJudge database to another engine
(typically a SQLite file to PostgreSQL), then verify it table by table."""
from __future__ import annotations

import json
from pathlib import Path

from storage.db import connect, is_url, location
from storage.errors import IFJudgeError
from storage.transfer import copy_database
from cli.options import add_json


def register(sub) -> None:
    p = sub.add_parser(
        "migrate",
        help="copy a whole database to another engine (SQLite file <-> postgresql:// URL) and verify it",
        description="ifjudge migrate --from data/ifjudge.db --to postgresql://USER@HOST/DB. The target must "
        "exist and be empty (its schema is created); the copy is one transaction, checked afterwards by "
        "row counts and a SHA-256 of every table, and rolled back if any differs.",
    )
    p.add_argument("--from", dest="source", required=True, metavar="SOURCE", help="file path or postgresql:// URL")
    p.add_argument("--to", dest="target", required=True, metavar="TARGET", help="file path or postgresql:// URL (empty)")
    add_json(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if not is_url(args.source) and not Path(args.source).is_file():
        raise IFJudgeError(f"{args.source}: no such database file to migrate from")
    source, target = connect(args.source), connect(args.target)
    report = copy_database(source, target)
    if args.json:
        print(json.dumps({"from": location(source), "to": location(target), **report}))
        return 0
    tables = report["tables"]
    rows = sum(t["rows"] for t in tables.values())
    print(f"copied {rows} rows in {len(tables)} tables from {location(source)} to {location(target)} "
          f"in {report['seconds']:.1f} s; verified: every table's row count and SHA-256 match")
    for name, t in tables.items():
        if t["rows"]:
            print(f"  {name:<20} {t['rows']:>9} rows  sha256 {t['sha256'][:16]}")
    return 0
