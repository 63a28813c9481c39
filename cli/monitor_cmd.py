"""``ifjudge monitor``: what the monitor page shows for a study (Table 7 view, extrapolation, IFIR
means, annotators, agreement per question, disagreements, reasons), from
:func:`annotation.monitoring.monitor.study_monitor`."""
from __future__ import annotations

import json

from storage.db import connect
from storage.errors import IFJudgeError
from cli.options import add_db, add_json
from cli.output import fmt_value
from evaluation.undefined import show_why


def register(sub) -> None:
    p = sub.add_parser("monitor", help="a study's progress and agreement, as the monitor page shows them")
    add_db(p)
    p.add_argument("--study", required=True, type=int)
    p.add_argument("--bootstrap", type=int, default=200, metavar="N",
                   help="bootstrap replicates for the intervals (default 200, as the page; 0: no interval)")
    p.add_argument("--seed", type=int, help="bootstrap seed (default: the study's seed)")
    add_json(p)
    p.set_defaults(func=run)


def _fmt(v) -> str:
    return fmt_value(v, digits=3)


def run(args) -> int:
    from annotation.monitoring.monitor import study_monitor

    if args.bootstrap < 0:
        raise IFJudgeError(f"--bootstrap must be >= 0, got {args.bootstrap}")
    m = study_monitor(connect(args.db), args.study, n_boot=args.bootstrap, seed=args.seed)
    if args.json:
        print(json.dumps(m, indent=2, ensure_ascii=False, allow_nan=False))
        return 0
    c = m["completeness"]
    print(f"study {m['study']['id']}: {m['study']['name']}")
    print(f"completeness: {c['labelled']} of {c['planned']} planned labels" + ("" if c["complete"] else " (unfinished)"))
    for r in m["table7"]:
        ci = "" if r["low"] is None else f" [{_fmt(r['low'])}, {_fmt(r['high'])}]"
        print(f"{r['question']}\t{r['statistic']}\t{show_why(r['value'], r['undefined_reason'], '.3f')}{ci}")
    for name, e in m["extrapolation"].items():
        print(f"naive extrapolation (independent, Wilson; `ifjudge report` gives the design-aware estimate) "
              f"{name.replace('_', ' ')}: {_fmt(e['share'])} [{_fmt(e['low'])}, {_fmt(e['high'])}] "
              f"({e['k']} of {e['n']})")
    for a in m["annotators"]:
        print(f"{a['annotator']}\t{a['done']}/{a['total']} screens\tmedian {_fmt(a['median_seconds_per_screen'])} s"
              f"\tagrees with majority {_fmt(a['agreement_with_majority'])}")
    print(f"disagreements: {len(m['disagreements'])}\treasons: {len(m['reasons'])}")
    return 0
