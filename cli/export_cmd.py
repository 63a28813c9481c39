"""``ifjudge export`` and ``ifjudge validate``: validated data out of a project."""
from __future__ import annotations

import json

from annotation.outcomes import ValidationRules, store_validated_qrels
from exports.validated import FORMATS, export_project
from storage.db import connect


def _rules(args) -> ValidationRules:
    return ValidationRules(
        drop_invalid=not args.keep_invalid, drop_unnatural=not args.keep_unnatural,
        drop_best_passage_mismatch=args.drop_best_passage_mismatch, keep_unsampled=not args.only_checked,
    )


def _rule_args(p) -> None:
    p.add_argument("--keep-invalid", action="store_true", help="keep instances whose majority says invalid")
    p.add_argument("--keep-unnatural", action="store_true", help="keep instances whose majority says unnatural")
    p.add_argument("--drop-best-passage-mismatch", action="store_true",
                   help="also drop instances whose human best passage is not the dataset's target")
    p.add_argument("--only-checked", action="store_true", help="keep only the instances the study checked")


def register(sub) -> None:
    p = sub.add_parser("export", help="export validated qrels, layouts, JSONL with provenance, the report")
    p.add_argument("--db", required=True)
    p.add_argument("--project", required=True)
    p.add_argument("--format", required=True, choices=FORMATS)
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--study", type=int, help="study id (default: the newest study of the project)")
    _rule_args(p)
    p.add_argument("--json", action="store_true", help="print the manifest")
    p.set_defaults(func=run_export)
    v = sub.add_parser("validate", help="store the project's 'validated' qrels version from a study")
    v.add_argument("--db", required=True)
    v.add_argument("--study", type=int, required=True)
    _rule_args(v)
    v.set_defaults(func=run_validate)


def run_export(args) -> int:
    manifest = export_project(connect(args.db), args.project, args.format, args.out, study_id=args.study, rules=_rules(args))
    if args.json:
        print(json.dumps(manifest))
    else:
        print(f"wrote {len(manifest['files'])} files and manifest.json to {args.out}")
    return 0


def run_validate(args) -> int:
    n = store_validated_qrels(connect(args.db), args.study, _rules(args))
    print(f"stored {n} validated qrels rows")
    return 0
