"""``ifjudge report``: do the benchmark's conclusions survive? Benchmark-wide estimates of the
studies named (design-aware intervals; prediction-powered ones with ``--judge``) and the
leaderboard on the published vs the validated qrels, as JSON or Markdown
(:func:`exports.benchmark_report.benchmark_report`)."""
from __future__ import annotations

import json

from annotation.judge_labels import read_judge_labels
from exports.benchmark_report import benchmark_report, to_markdown
from storage.db import connect
from storage.errors import IFJudgeError
from cli.options import add_db, add_json


def register(sub) -> None:
    p = sub.add_parser("report", help="benchmark-wide estimates with design-aware intervals, and whether the "
                                      "leaderboard changes on the validated qrels")
    add_db(p)
    p.add_argument("--study", required=True, type=int, action="append", metavar="ID",
                   help="a study whose sample the estimates come from (repeatable)")
    p.add_argument("--judge", metavar="FILE.csv",
                   help="an automatic judge's answer for every item: instance_id,question,value[,doc_id]")
    p.add_argument("--measure", default="nDCG@10", help="the leaderboard's measure (default nDCG@10)")
    p.add_argument("--bootstrap", type=int, default=2000, metavar="N",
                   help="bootstrap replicates over queries for the leaderboard (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    fmt = p.add_mutually_exclusive_group(required=True)
    add_json(fmt)
    fmt.add_argument("--md", action="store_true", help="Markdown tables to paste into a paper")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.bootstrap < 1:
        raise IFJudgeError(f"--bootstrap must be at least 1, got {args.bootstrap}")
    judge = read_judge_labels(args.judge) if args.judge else None
    report = benchmark_report(connect(args.db), list(dict.fromkeys(args.study)), judge=judge, measure=args.measure,
                              n_boot=args.bootstrap, seed=args.seed)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False))
    else:
        print(to_markdown(report), end="")
    return 0
