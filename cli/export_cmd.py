"""``ifjudge export`` and ``ifjudge validate``: validated data out of a project.

Validated qrels versions are built only from the studies named with ``--study`` (repeatable);
unresolved judgments block until ``--unresolved`` says how to treat them, and a study with
unlabelled assignments needs ``--allow-incomplete``.
"""
from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from annotation.outcomes.resolution import UNRESOLVED_POLICIES
from exports.validated import FORMATS, export_to_folder, left_out_lines
from storage.db import connect
from cli.options import add_db, add_json, add_project

if TYPE_CHECKING:  # imported by the handlers (numpy, pandas): --help is read without them
    from annotation.outcomes.items import ValidationRules
    from annotation.outcomes.qrels_builds import UnresolvedJudgments


def _rules(args) -> ValidationRules:
    from annotation.outcomes.items import ValidationRules

    return ValidationRules(
        drop_invalid=not args.keep_invalid, drop_unnatural=not args.keep_unnatural,
        drop_best_passage_mismatch=args.drop_best_passage_mismatch, keep_unsampled=not args.only_checked,
        match_gold_max=args.match_gold_max, match_excluded_min=args.match_excluded_min,
    )


def _rule_args(p) -> None:
    p.add_argument("--keep-invalid", action="store_true", help="keep instances whose majority says invalid")
    p.add_argument("--keep-unnatural", action="store_true", help="keep instances whose majority says unnatural")
    p.add_argument("--drop-best-passage-mismatch", action="store_true",
                   help="also drop instances whose human best passage is not the dataset's target")
    p.add_argument("--only-checked", action="store_true", help="keep only the instances the study checked")
    p.add_argument("--match-gold-max", type=int, choices=range(0, 6), default=2, metavar="{0..5}",
                   help="IFIR passage_match: a gold passage whose match score (median of the labels, or the "
                        "adjudicated score) is at most this becomes not relevant (default 2; 0: never)")
    p.add_argument("--match-excluded-min", type=int, choices=range(1, 7), default=4, metavar="{1..6}",
                   help="IFIR passage_match: an excluded passage whose match score is at least this becomes "
                        "relevant (default 4; 6: never)")
    p.add_argument("--unresolved", choices=UNRESOLVED_POLICIES, default=None,
                   help="how to treat judgments without a majority (ties, single labels): keep the published "
                        "label, drop the judgment (instance validation: the instance), or set it relevant / "
                        "not relevant. Required when there are some; there is no silent default")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="confirm building from a study whose planned assignments are not all labelled")


def register(sub) -> None:
    p = sub.add_parser("export", help="export validated qrels, layouts, JSONL with provenance, the report")
    add_db(p)
    add_project(p)
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("--out", required=True, help="output folder: new or empty (see --replace)")
    p.add_argument("--replace", action="store_true",
                   help="replace --out whole if it is a file or a previous export (a folder with manifest.json): "
                        "nothing of it is left beside the new export")
    p.add_argument("--raw-csv", action="store_true",
                   help="write CSV cells as stored; by default a cell a spreadsheet would run as a formula (starting "
                        "with = + - @, a tab or a carriage return) gets an apostrophe in front")
    p.add_argument("--study", type=int, action="append", default=[],
                   help="study id the validated qrels are built from (repeat for several; "
                        "without it only the published qrels are exported)")
    _rule_args(p)
    add_json(p)
    p.set_defaults(func=run_export)
    v = sub.add_parser("validate", help="store the validated qrels versions built from the named studies")
    add_db(v)
    add_project(v, required=False, help="project name (default: the project of the first study)")
    v.add_argument("--study", type=int, action="append", required=True, help="study id (repeat for several)")
    _rule_args(v)
    add_json(v)
    v.set_defaults(func=run_validate)


def _print_unresolved(exc: UnresolvedJudgments) -> None:
    print("unresolved judgments (qid, doc_id, published, reason, label counts):", file=sys.stderr)
    for r in exc.rows:
        print(f"  {r['qid']}\t{r['doc_id']}\t{r['published']}\t{r['reason']}\t{json.dumps(r['label_counts'])}",
              file=sys.stderr)


def run_export(args) -> int:
    from annotation.outcomes.qrels_builds import UnresolvedJudgments

    from storage import projects

    db = connect(args.db)
    try:
        manifest = export_to_folder(db, projects.get_project(db, args.project), args.format, args.out, study_ids=args.study,
                                  rules=_rules(args), unresolved=args.unresolved, allow_incomplete=args.allow_incomplete,
                                  replace_out=args.replace, raw_csv=args.raw_csv)
    except UnresolvedJudgments as exc:
        _print_unresolved(exc)
        raise
    for line in left_out_lines(manifest):  # on the terminal whatever the output mode; the exit status stays 0
        print(f"warning: {line}", file=sys.stderr)
    if args.json:
        print(json.dumps(manifest))
        return 0
    print(f"wrote {len(manifest['files'])} files and manifest.json to {args.out}")
    for s in manifest["studies"]:
        print(f"  built from study {s['id']} ({s['name']}): {s['labelled']}/{s['planned']} labels")
    for v, info in manifest["qrels_versions"].items():
        if info["built_from"] != "published":
            c = info["counts"]
            print(f"  {v}: {c['judgments']} judgments, {c['left_out']} left out, {c['unresolved']} unresolved "
                  f"({args.unresolved or 'none'})")
    return 0


def run_validate(args) -> int:
    from annotation.outcomes.qrels_builds import UnresolvedJudgments, describe_studies, store_versions
    from storage import projects, studies

    db = connect(args.db)
    project = projects.get_project(db, args.project) if args.project else \
        projects.get_project_by_id(db, studies.get_study(db, args.study[0])["project_id"])
    try:
        stored = store_versions(db, project, args.study, rules=_rules(args), unresolved=args.unresolved,
                                allow_incomplete=args.allow_incomplete, created_by="cli")
    except UnresolvedJudgments as exc:
        _print_unresolved(exc)
        raise
    out = {v: {"build_id": build_id, **b.counts} for v, (build_id, b) in stored.items()}
    if args.json:
        print(json.dumps(out))
        return 0
    for v, c in out.items():
        print(f"stored {c['judgments']} {v} qrels rows (build {c['build_id']}, {c['unresolved']} unresolved) from "
              f"{describe_studies(stored[v][1].studies)}")
    return 0
