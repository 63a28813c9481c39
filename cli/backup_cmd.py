"""``ifjudge backup``: an online, consistent copy of the database (safe while annotators work),
and ``ifjudge backup --check FILE``: the restore check of a copy."""
from __future__ import annotations

import json

from storage import backup as backups
from storage.errors import IFJudgeError
from storage.postgres import is_url, redact
from cli.options import add_db, add_json


def register(sub) -> None:
    p = sub.add_parser(
        "backup",
        help="copy the live database (SQLite's online backup API, or pg_dump), or check a backup (--check)",
        description="ifjudge backup --db PATH|URL --out FILE  |  ifjudge backup --check FILE [--db SERVER_URL]. "
        "A PostgreSQL backup is a pg_dump archive plus FILE.manifest.json (checksums of every table, taken in "
        "the dump's snapshot); --check restores it into a scratch database on the server given by --db "
        "(created and dropped) and compares the checksums.",
    )
    add_db(p, required=False, help="the database in use (file path or postgresql:// URL); with --check: the "
                   "PostgreSQL server to restore a pg_dump backup into")
    p.add_argument("--out", metavar="FILE", help="the backup file to create")
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--check", metavar="FILE",
                   help="restore check of a backup: integrity_check, schema version, row counts")
    add_json(p)
    p.set_defaults(func=run)


def _summary(result: dict) -> str:
    counts = result["counts"]
    main = ", ".join(f"{counts[t]} {t}" for t in ("projects", "instances", "studies", "items", "labels", "users")
                     if t in counts)
    return f"integrity ok, schema version {result['schema_version']}: {main}"


def run(args) -> int:
    if args.check:
        if args.out:
            raise IFJudgeError("--check FILE takes no --out; to make a backup give --db PATH --out FILE")
        if backups.is_pg_dump(args.check):
            if not is_url(args.db):
                raise IFJudgeError(f"{args.check} is a PostgreSQL dump: give --db postgresql://... (a server "
                                   "where a scratch database may be created) to restore and check it")
            result = backups.check_postgresql(args.check, args.db)
        elif args.db:
            raise IFJudgeError("--check of a SQLite backup is used alone (no --db)")
        else:
            result = backups.check(args.check)
        print(json.dumps(result) if args.json else f"{args.check}: {_summary(result)}")
        return 0
    if not args.db or not args.out:
        raise IFJudgeError("give --db PATH --out FILE to make a backup, or --check FILE to check one")
    if is_url(args.db):
        result = backups.backup_postgresql(args.db, args.out, overwrite=args.force)
    else:
        result = backups.backup(args.db, args.out, overwrite=args.force)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"backed up {redact(args.db)} to {result['path']} in {result['seconds']:.2f} s "
              f"({result['bytes']} bytes): {_summary(result)}")
    return 0
