"""``ifjudge summary``: mean scores of a study's 1-5 / 0-3 questions (IFIR Table 2)."""
from __future__ import annotations

import json
import math

from storage.db import connect
from storage.errors import IFJudgeError
from cli.options import add_db, add_json


def register(sub) -> None:
    p = sub.add_parser("summary", help="mean scores and bootstrap 95%% intervals of a study's scale questions "
                                       "(IFIR Table 2: per question, gold/excluded, level, domain)")
    add_db(p)
    p.add_argument("--study", required=True, type=int)
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="bootstrap replicates (default 1000)")
    p.add_argument("--seed", type=int, help="bootstrap seed (default: the study's seed)")
    add_json(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from annotation.monitoring.scales import scale_summary

    if args.bootstrap < 0:
        raise IFJudgeError(f"--bootstrap must be >= 0, got {args.bootstrap}")
    table = scale_summary(connect(args.db), args.study, n_boot=args.bootstrap, seed=args.seed)
    if table.empty:
        raise IFJudgeError(f"study {args.study} has no label on a 1-5 or 0-3 question yet "
                           "(naturalness on the 1-5 scale, passage_match, instfol_match)")
    rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in table.to_dict("records")]
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    for r in rows:
        ci = "" if r["ci_low"] is None else f"  [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
        print(f"{r['statistic']}\t{r['by']}={r['group']}\t{r['mean']:.2f}{ci}\titems={r['items']}\tlabels={r['labels']}")
    return 0
