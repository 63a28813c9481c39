"""``ifjudge agreement``: agreement statistics of one question from a labels CSV (item,annotator,label).

The report comes from :func:`annotation.agreement.report.agreement_report`; :func:`report_from_frame` is
the one place that builds it from a DataFrame, so other label sources (the database form
``--db PATH --study ID --question Q``, which joins the ``source`` group) only need to produce the
DataFrame and the categories.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from storage.errors import IFJudgeError, ImportFailure
from formats.csv_table import read_csv_table as read_table
from cli.options import add_db, add_json
from cli.output import fmt_value, format_table
from evaluation.undefined import is_undefined, show

if TYPE_CHECKING:
    import pandas as pd

LABEL_COLUMNS = ("item", "annotator", "label")
GOLD_COLUMNS = ("item", "label")


def register(sub) -> None:
    p = sub.add_parser("agreement", help="agreement statistics of one question (InstructIR Table 7 style)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--labels", metavar="FILE.csv", help="CSV with header item,annotator,label")
    add_db(source, required=False, metavar="DB", help="the current labels of a study (with --study and --question)")
    p.add_argument("--study", type=int, help="with --db: the study id")
    p.add_argument("--question", help="with --db: validity, naturalness, best_passage, passage_match, instfol_match or relevance")
    p.add_argument("--categories",
                   help="declared categories, comma-separated (for --ordinal, in scale order); "
                        "with --db they come from the question")
    p.add_argument("--gold", metavar="FILE.csv", help="CSV with header item,label: the dataset's answer")
    p.add_argument("--ordinal", action="store_true",
                   help="ordinal scale: also Krippendorff ordinal/interval alpha and weighted Cohen kappa")
    p.add_argument("--overlap", type=int, metavar="R",
                   help="with --labels: annotators planned per item; 1 lets a single label decide the majority "
                        "(default: two labels decide); with --db it comes from the study")
    p.add_argument("--bootstrap", type=int, default=0, metavar="N", help="bootstrap replicates for 95%% intervals")
    p.add_argument("--resample", choices=("groups", "items"),
                   help="what the bootstrap resamples: query groups within domains (the default with --db: items of "
                        "a group are answered alike) or items (the default with --labels; with --db a comparison)")
    p.add_argument("--seed", type=int, default=0)
    add_json(p)
    p.set_defaults(func=run)


def parse_categories(text: str) -> list[str]:
    cats = [c.strip() for c in text.split(",")]
    if any(c == "" for c in cats):
        raise IFJudgeError(f"--categories {text!r}: empty category name")
    return cats


def read_csv_table(path: str, columns: tuple[str, ...]) -> tuple[pd.DataFrame, list[int]]:
    """Rows of a CSV with (at least) the header ``columns``, values stripped, and the file line of
    every row (:func:`formats.csv_table.read_csv_table`: refused naming file, line and field)."""
    import pandas as pd

    table = read_table(path, columns)
    return pd.DataFrame(table.columns), table.lines


def report_from_frame(labels: pd.DataFrame, categories: list[str], *, gold: pd.DataFrame | None, args,
                      labels_name: str = "labels", label_lines: list[int] | None = None,
                      gold_name: str = "gold", gold_lines: list[int] | None = None,
                      overlap=None, adjudications=None, clusters=None, strata=None) -> dict:
    """The agreement report of a label DataFrame; errors about a row are re-raised naming the
    source (file) and its line when ``*_lines`` map rows to lines."""
    from annotation.agreement.report import agreement_report
    from annotation.agreement.data import DuplicateLabel, MissingValue, UnknownLabel

    try:
        return agreement_report(labels, categories, gold=gold, ordinal=args.ordinal,
                                n_boot=args.bootstrap, seed=args.seed, overlap=overlap, adjudications=adjudications,
                                clusters=clusters, strata=strata, resample=args.resample)
    except (UnknownLabel, DuplicateLabel, MissingValue) as exc:
        name, lines = (gold_name, gold_lines) if exc.table == "gold" else (labels_name, label_lines)
        line = (lambda r: lines[r] if lines else r + 1)
        if isinstance(exc, UnknownLabel):
            raise ImportFailure(name, line(exc.row), "label",
                                f"label {exc.label!r} is not one of the declared categories: "
                                f"{', '.join(categories)}") from None
        if isinstance(exc, MissingValue):
            raise ImportFailure(name, line(exc.row), exc.field, f"empty {exc.field}") from None
        raise ImportFailure(name, line(exc.rows[1]), "annotator" if exc.table != "gold" else "item",
                            f"duplicate {exc.key}: already given on line {line(exc.rows[0])}") from None


def run(args) -> int:
    if args.bootstrap < 0:
        raise IFJudgeError(f"--bootstrap must be >= 0, got {args.bootstrap}")
    if args.db:
        if args.overlap is not None:
            raise IFJudgeError("--overlap goes with --labels; with --db the study's planned overlap is used")
        return run_db(args)
    if args.overlap is not None and args.overlap < 1:
        raise IFJudgeError(f"--overlap must be at least 1, got {args.overlap}")
    if args.resample == "groups":
        raise IFJudgeError("--resample groups needs each item's query group: use --db with --study")
    if not args.categories:
        raise IFJudgeError("--categories is required with --labels (the declared categories, comma-separated)")
    categories = parse_categories(args.categories)
    labels, label_lines = read_csv_table(args.labels, LABEL_COLUMNS)
    gold, gold_lines = read_csv_table(args.gold, GOLD_COLUMNS) if args.gold else (None, None)
    report = report_from_frame(labels, categories, gold=gold, args=args, labels_name=args.labels,
                               label_lines=label_lines, gold_name=args.gold or "gold", gold_lines=gold_lines,
                               overlap=args.overlap)
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_report(report))
    return 0


def run_db(args) -> int:
    """The same report from the database: the study's current labels of one question, its declared
    categories, and the dataset's gold where the question has one (best_passage: the target); the
    majority follows the study's planned overlap and the lead's adjudications, as on the monitor."""
    import pandas as pd

    from annotation.monitoring.monitor import decision_inputs, item_groups
    from annotation.outcomes.items import labels_frame
    from annotation.questions.study import study_question
    from storage import studies
    from storage.db import connect

    if args.study is None or not args.question:
        raise IFJudgeError("--db needs --study ID and --question Q")
    db = connect(args.db)
    labels, categories, gold = labels_frame(db, args.study, args.question)
    overlap, adjudications = decision_inputs(db, args.study, args.question)
    if args.categories and parse_categories(args.categories) != categories:
        raise IFJudgeError(f"--categories {args.categories!r} differ from the question's declared categories "
                           f"{','.join(categories)}")
    if labels.empty:
        raise IFJudgeError(f"study {args.study} has no label for question {args.question!r} yet")
    args.ordinal = args.ordinal or study_question(studies.get_study(db, args.study), args.question).scale == "ordinal"
    gold_frame = None if gold is None else pd.DataFrame(sorted(gold.items()), columns=["item", "label"])
    clusters, strata = item_groups(db, args.study, args.question)
    report = report_from_frame(labels, categories, gold=gold_frame, args=args,
                               labels_name=f"study {args.study}", overlap=overlap, adjudications=adjudications,
                               clusters=clusters, strata=strata)
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_report(report))
    return 0


def format_report(report: dict) -> str:
    """A readable table: statistic, value (an undefined one as "—"), Landis & Koch band, 95%
    interval, and why a value is undefined (as the Monitor's "Why undefined" column)."""
    intervals = report.get("intervals", {})
    bands = report.get("bands", {})
    reasons = report.get("undefined_reasons", {})
    rows = [("statistic", "value", "band", "95% interval", "why undefined")]

    def add(name, value, band=None, iv=None, why=None):
        ci = f"[{fmt_value(iv['low'])}, {fmt_value(iv['high'])}]" if iv and iv.get("low") is not None else ""
        rows.append((name, show(value), band or "", ci, why if is_undefined(value) and isinstance(why, str) else ""))

    for key, value in report.items():
        if key in ("categories", "ordinal", "bands", "intervals", "undefined_reasons", "notes",
                   "intervals_resampled") or isinstance(value, dict):
            continue
        add(key, value, bands.get(key), intervals.get(key), reasons.get(key))
    for key in ("cohen_kappa", "cohen_kappa_linear_pairwise", "cohen_kappa_quadratic_pairwise"):
        for pair, value in report.get(key, {}).items():
            band = bands.get(key, {}).get(pair) if isinstance(bands.get(key), dict) else None
            why = reasons.get(key, {}).get(pair) if isinstance(reasons.get(key), dict) else reasons.get(key)
            add(f"{key} {pair}", value, band, intervals.get(key, {}).get(pair), why)
    for key in ("label_shares", "majority_shares"):
        for cat, value in report.get(key, {}).items():
            add(f"{key} {cat}", value, iv=intervals.get(f"majority_share_{cat}") if key == "majority_shares" else None)
    out = [f"categories: {', '.join(report['categories'])}", *format_table(rows)]
    if report.get("intervals_resampled"):
        out.append(f"95% intervals: bootstrap percentile, {report['intervals_resampled']}")
    out += [f"note: {n}" for n in report.get("notes", [])]
    return "\n".join(out)
