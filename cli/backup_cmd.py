"""``ifjudge backup``: an online, consistent copy of the database (safe while annotators work),
and ``ifjudge backup --check FILE``: the restore check of a copy."""
from __future__ import annotations

import json

from storage import backup as backups
from storage.errors import IFJudgeError


def register(sub) -> None:
    p = sub.add_parser(
        "backup",
        help="copy the live database with SQLite's online backup API, or check a backup (--check)",
        description="ifjudge backup --db PATH --out FILE  |  ifjudge backup --check FILE",
    )
    p.add_argument("--db", help="the database in use")
    p.add_argument("--out", metavar="FILE", help="the backup file to create")
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--check", metavar="FILE",
                   help="restore check of a backup: integrity_check, schema version, row counts")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _summary(result: dict) -> str:
    counts = result["counts"]
    main = ", ".join(f"{counts[t]} {t}" for t in ("projects", "instances", "studies", "items", "labels", "users")
                     if t in counts)
    return f"integrity ok, schema version {result['schema_version']}: {main}"


def run(args) -> int:
    if args.check:
        if args.db or args.out:
            raise IFJudgeError("--check FILE is used alone; to make a backup give --db PATH --out FILE")
        result = backups.check(args.check)
        print(json.dumps(result) if args.json else f"{args.check}: {_summary(result)}")
        return 0
    if not args.db or not args.out:
        raise IFJudgeError("give --db PATH --out FILE to make a backup, or --check FILE to check one")
    result = backups.backup(args.db, args.out, overwrite=args.force)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"backed up {args.db} to {result['path']} in {result['seconds']:.2f} s "
              f"({result['bytes']} bytes): {_summary(result)}")
    return 0
