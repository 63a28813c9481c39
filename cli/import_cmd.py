"""``ifjudge import``: parse files into a project, all-or-nothing."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from annotation.imports import import_files
from formats import readers as importers
from storage import projects
from storage.db import connect
from cli.options import add_db, add_json, add_project


def register(sub) -> None:
    p = sub.add_parser("import", help="import benchmark files into a project (all-or-nothing)")
    add_db(p, creates=True)
    add_project(p)
    p.add_argument("--format", default="auto", choices=importers.CHOICES,
                   help="the benchmark layout (default: auto, recognised from the files)")
    p.add_argument("--kind", choices=projects.PROJECT_KINDS, help="project kind (default: from the format)")
    p.add_argument("--subset", "--dimension", "--domain", dest="subset", metavar="NAME",
                   help="the subset every query belongs to (InfoSearch dimension, IFIR domain); "
                        "default: read from the folder names where the release has them")
    p.add_argument("paths", nargs="+", type=Path, help="files or directories")
    add_json(p)
    p.set_defaults(func=run)


def run(args) -> int:
    result = import_files(connect(args.db), args.project, list(args.paths), fmt=args.format, subset=args.subset,
                          kind=args.kind)  # validates all before any write
    if result.detected is not None:
        print(f"detected format: {result.format} ({result.detected})", file=sys.stderr)
    if args.json:
        print(json.dumps(result.counts))
    else:
        print(f"imported into {args.project}: " + ", ".join(f"{v} {k}" for k, v in result.counts.items() if v))
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0
