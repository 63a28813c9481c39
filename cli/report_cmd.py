"""``ifjudge report``: do the benchmark's conclusions survive? Benchmark-wide estimates of the
studies named (design-aware intervals; prediction-powered ones with ``--judge``) and the
leaderboard on the published vs the validated qrels, as JSON or Markdown
(:func:`exports.benchmark_report.benchmark_report`)."""
from __future__ import annotations

import argparse
import json

from storage.db import connect
from storage.errors import IFJudgeError
from cli.options import add_db, add_json


def register(sub) -> None:
    p = sub.add_parser("report", help="benchmark-wide estimates with design-aware intervals, and whether the "
                                      "leaderboard changes on the validated qrels")
    add_db(p)
    p.add_argument("--study", required=True, type=int, action="append", metavar="ID",
                   help="a study whose sample the estimates come from (repeatable)")
    judge = p.add_mutually_exclusive_group()
    judge.add_argument("--judge", metavar="FILE.csv",
                       help="an automatic judge's answer for every item: instance_id,question,value[,doc_id]")
    judge.add_argument("--judge-run", type=int, action="append", metavar="ID",
                       help="a stored judge run instead of a file (`ifjudge judge runs`; repeatable, one per question)")
    p.add_argument("--judge-weight", type=judge_weight, default=0.5, metavar="LAM|tuned",
                   help="with a judge: its weight in the prediction-powered estimate, fixed before the data "
                        "(default 0.5: docs/statistics.md says why), or 'tuned' for the power-tuned weight, "
                        "cross-fitted over folds of query groups")
    p.add_argument("--measure", default="nDCG@10", help="the leaderboard's measure (default nDCG@10)")
    p.add_argument("--bootstrap", type=int, default=2000, metavar="N",
                   help="bootstrap replicates over queries for the leaderboard (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    fmt = p.add_mutually_exclusive_group(required=True)
    add_json(fmt)
    fmt.add_argument("--md", action="store_true", help="Markdown tables to paste into a paper")
    p.set_defaults(func=run)


def judge_weight(text: str) -> float | None:
    """``--judge-weight``: a number in [0, 1], or ``tuned`` (None).

    >>> judge_weight("0.5"), judge_weight("tuned")
    (0.5, None)
    """
    if text.strip().lower() == "tuned":
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a number from 0 to 1, or 'tuned'; got {text!r}")
    return value


def run(args) -> int:
    from annotation.judges.labels import read_judge_labels
    from exports.benchmark_report import benchmark_report, to_markdown

    if args.bootstrap < 1:
        raise IFJudgeError(f"--bootstrap must be at least 1, got {args.bootstrap}")
    db = connect(args.db)
    judge = read_judge_labels(args.judge) if args.judge else None
    if args.judge_run:  # the stored answers, in the shape of the file's (evaluation.judges.stored)
        from evaluation.judges.stored import estimate_answers

        judge = estimate_answers(db, list(dict.fromkeys(args.judge_run)))
    report = benchmark_report(db, list(dict.fromkeys(args.study)), judge=judge, measure=args.measure,
                              n_boot=args.bootstrap, seed=args.seed, judge_weight=args.judge_weight)
    if args.judge_run:  # who the judge is and how well it agrees with the humans, beside its estimate
        from annotation.judges.agreement import measured_runs

        report["judge_runs"] = measured_runs(db, list(dict.fromkeys(args.judge_run)), list(dict.fromkeys(args.study)),
                                             n_boot=args.bootstrap, seed=args.seed)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False))
    else:
        print(to_markdown(report), end="")
    return 0
