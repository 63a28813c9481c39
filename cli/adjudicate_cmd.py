"""``ifjudge adjudicate``: list the items a lead settles, or record a final value for one item.

    ifjudge adjudicate --db ifjudge.db --study 1 --list [--show unresolved|majority|decided|all]
    ifjudge adjudicate --db ifjudge.db --study 1 --item 12 --value No --note "ann3 is right"

The same library calls as the Adjudicate page (annotation.outcomes.adjudication).
"""
from __future__ import annotations

from annotation.outcomes.resolution import SHOW
from storage.db import connect
from storage.errors import IFJudgeError
from annotation.glossary import UNDEFINED, label, votes
from cli.options import add_db


def register(sub) -> None:
    p = sub.add_parser("adjudicate", help="list items to settle (--list) or record a lead's final value for one item")
    add_db(p)
    p.add_argument("--study", required=True, type=int)
    p.add_argument("--list", action="store_true", help="print the queue (tab-separated) instead of recording")
    p.add_argument("--show", choices=SHOW, default="unresolved",
                   help="which items --list prints (default: unresolved, the ties no majority settles)")
    p.add_argument("--item", type=int, help="the item to decide (an id from --list)")
    p.add_argument("--value", help="the final value: one of the question's answers (a passage's doc id for the best passage)")
    p.add_argument("--note", default="", help="why (kept with the decision)")
    p.add_argument("--lead", default="cli", help="the name recorded as the deciding lead (default: cli)")
    p.set_defaults(func=run)


def run(args) -> int:
    from annotation.outcomes import adjudication

    db = connect(args.db)
    if args.list:
        print("item\tinstance\tquestion\tvotes\tdecision")
        for r in adjudication.queue(db, args.study, show=args.show):
            print(f"{r['item']}\t{r['instance']}\t{label(r['question'])}\t{votes(r['votes'])}\t{r['decision'] or UNDEFINED}")
        return 0
    if args.item is None or args.value is None:
        raise IFJudgeError("give --item and --value to record a decision, or --list to see the queue")
    d = adjudication.record(db, args.study, args.item, args.value, lead=args.lead, note=args.note)
    print(f"item {args.item}: recorded {d['value']} (lead {d['lead']}" + (f"; note: {d['note']})" if d["note"] else ")"))
    return 0
