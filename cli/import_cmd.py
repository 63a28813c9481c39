"""``ifjudge import``: parse files into a project, all-or-nothing; ``--add`` adds one further file
of a layout (its corpus, more qrels, candidate lists) to a project already stored."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from annotation.imports import add_files, import_files
from formats import readers as importers
from storage import projects
from storage.db import connect
from storage.errors import IFJudgeError
from cli.options import add_db, add_json, add_project


def register(sub) -> None:
    p = sub.add_parser("import", help="import benchmark files into a project (all-or-nothing)",
                       description="Import a benchmark release into a project; with --add, add one further file of "
                                   "its layout (corpus, qrels, top_ranked) to a project already stored.")
    add_db(p, creates=True)
    add_project(p)
    p.add_argument("--format", default="auto", choices=importers.CHOICES,
                   help="the benchmark layout (default: auto, recognised from the files)")
    p.add_argument("--kind", choices=projects.PROJECT_KINDS, help="project kind (default: from the format)")
    p.add_argument("--subset", "--dimension", "--domain", dest="subset", metavar="NAME",
                   help="the subset every query belongs to (InfoSearch dimension, IFIR domain); "
                        "default: read from the folder names where the release has them. With --add corpus: "
                        "the subset whose own corpus the documents are")
    p.add_argument("--add", choices=importers.PART_ROLES, metavar="{" + ",".join(importers.PART_ROLES) + "}",
                   help="add to the existing project only this part of its layout: corpus (corpus.jsonl), qrels "
                        "(a qrels TSV, JSONL or TREC file) or top_ranked (top_ranked.jsonl); all-or-nothing, and "
                        "refused unless every judged document is then in the corpus")
    p.add_argument("--qrels-version", default="original", choices=["original", "changed", "reversed"],
                   help="with --add qrels: the version the judgments are (default original)")
    p.add_argument("paths", nargs="+", type=Path, help="files or directories")
    add_json(p)
    p.set_defaults(func=run)


def run(args) -> int:
    db = connect(args.db)
    if args.add:
        if args.format != "auto" or args.kind:
            raise IFJudgeError("--add adds to the project as it is stored: --format and --kind do not apply")
        result = add_files(db, args.project, args.add, list(args.paths), subset=args.subset, version=args.qrels_version)
    else:
        result = import_files(db, args.project, list(args.paths), fmt=args.format, subset=args.subset,
                              kind=args.kind)  # validates all before any write
    if result.detected is not None:
        print(f"detected format: {result.format} ({result.detected})", file=sys.stderr)
    if args.json:
        print(json.dumps(result.counts))
    else:
        verb = f"added to {args.project}" if args.add else f"imported into {args.project}"
        print(f"{verb}: " + ", ".join(f"{v} {k}" for k, v in result.counts.items() if v))
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0
