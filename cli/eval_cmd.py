"""``ifjudge eval ...``: standard and instruction-following metrics from TREC files.

Thin shells over :mod:`evaluation.measures`, :mod:`evaluation.robustness`,
:mod:`evaluation.pmrr`, :mod:`evaluation.infosearch` and :mod:`evaluation.instfol`.
``eval run`` and ``eval compare`` are added by :mod:`cli.eval_run_cmd`.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math

from formats import trec_io
from evaluation.instfol import instfol, read_judge_scores
from evaluation.measure_registry import DEFAULT_STANDARD, TIES, parse_measures
from storage.errors import IFJudgeError, ImportFailure
from cli.options import add_db, add_json
from evaluation.undefined import as_json, json_null, show_why
from cli.output import fmt_value


def _measures_arg(text: str):
    try:
        return parse_measures(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def register(subparsers) -> None:
    """Add ``eval`` and its sub-commands ``metrics``, ``robustness``, ``pmrr``, ``infosearch``,
    ``instfol`` (and, from :mod:`cli.eval_run_cmd`, ``run`` and ``compare``)."""
    parser = subparsers.add_parser(
        "eval", help="evaluate runs: standard and instruction-following metrics",
        description="Evaluate retrieval runs (TREC run files) against qrels (TREC or BEIR TSV).",
    )
    parser.set_defaults(func=run)
    eval_sub = parser.add_subparsers(dest="eval_command", required=True, metavar="EVAL_COMMAND")

    p = eval_sub.add_parser("metrics", help="nDCG@k, AP, Rprec, Bpref, P@k, ... any trec_eval / ir-measures measure")
    p.add_argument("--qrels", required=True, help="qrels file: TREC 'qid 0 docid rel' or BEIR TSV")
    p.add_argument("--run", required=True, help="TREC run file 'qid Q0 docid rank score tag'")
    p.add_argument("--measures", type=_measures_arg, default=",".join(DEFAULT_STANDARD),  # parsed when used
                   help=f"comma-separated measures (default {','.join(DEFAULT_STANDARD)})")
    p.add_argument("--missing", choices=("omit", "zero"), default="omit",
                   help="queries with relevant documents absent from the run: left out of the mean "
                        "(omit, default) or counted as 0 (zero)")
    p.add_argument("--per-query", action="store_true", help="include per-query values")
    add_json(p)
    p.set_defaults(func=run, handler=_metrics)

    p = eval_sub.add_parser("robustness", help="Robustness@k (InstructIR) and mean nDCG@k")
    p.add_argument("--qrels", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--k", type=_positive_int, default=10, help="nDCG cut-off (default 10)")
    p.add_argument("--groups", help="two-column TSV/CSV 'qid group' (default: qid prefix before '_')")
    add_json(p)
    p.set_defaults(func=run, handler=_robustness)

    p = eval_sub.add_parser("pmrr", help="p-MRR (FollowIR) between an original and a changed run")
    p.add_argument("--qrels-og", required=True)
    p.add_argument("--qrels-changed", required=True)
    p.add_argument("--run-og", required=True)
    p.add_argument("--run-changed", required=True)
    p.add_argument("--ties", choices=TIES, default="docid",
                   help="equal scores: doc id descending (default) or the run's order (FollowIR code)")
    add_json(p)
    p.set_defaults(func=run, handler=_pmrr)

    p = eval_sub.add_parser("infosearch", help="WISE, SICR and p-MRR (InfoSearch)")
    p.add_argument("--qrels-og", required=True, help="qrels of the original mode")
    p.add_argument("--qrels-ins", required=True, help="qrels of the instructed mode")
    p.add_argument("--run-ori", required=True)
    p.add_argument("--run-ins", required=True)
    p.add_argument("--run-rev", required=True)
    p.add_argument("--ties", choices=TIES, default="docid")
    p.add_argument("--K", dest="K", type=_positive_int, default=20, help="WISE's K (default 20)")
    p.add_argument("--wise-version", choices=["paper", "evaluator"], default="paper",
                   help="WISE's reward: paper (eq. 7, default) or evaluator (the official evaluator's "
                        "(1 - sqrt(R_ori - R_ins)/K)/sqrt(R_ins))")
    add_json(p)
    p.set_defaults(func=run, handler=_infosearch)

    p = eval_sub.add_parser("instfol", help="INSTFOL (IFIR) from judge scores, or from a study's human labels")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--scores", help="CSV with header query,mode,rank,score")
    source.add_argument("--study", type=int, metavar="ID",
                        help="an instfol_match study (with --db): the mean of its annotators' labels per passage is the judge")
    add_db(p, required=False, help="with --study: the database")
    llm = p.add_mutually_exclusive_group()
    llm.add_argument("--llm-scores", metavar="FILE.csv",
                     help="with --study: an LLM judge's scores (query,mode,rank,score; query = instance id); "
                          "reports both judges' INSTFOL on the same passages and their agreement")
    source.add_argument("--judge-run", "--judge", dest="judge_run", type=int, metavar="ID",
                        help="a stored instfol_match judge run (with --db; `ifjudge judge run --question instfol_match`):"
                             " INSTFOL with that judge on the runs' passages; with --check-study, the human study "
                             "on the same passages beside it")
    llm.add_argument("--check-study", type=int, metavar="ID", help="with --judge-run: an instfol_match study as its check")
    p.add_argument("--max", type=_positive_float, default=3.0,
                   help="top of the judge's scale (default 3: IFIR's 0-3 LLM judge)")
    p.add_argument("--k", type=_positive_int, default=None,
                   help="use only ranks <= k (default: every row)")
    add_json(p)
    p.set_defaults(func=run, handler=_instfol)

    importlib.import_module("cli.eval_run_cmd").register_eval(eval_sub)


def run(args) -> int:
    """Dispatch to the handler of the ``eval`` sub-command."""
    return args.handler(args)


def _print(result: dict, args, lines: list[str]) -> int:
    if args.json:
        print(json.dumps(result, indent=2, default=json_null))
    else:
        print("\n".join(lines))
    return 0


def _list(items: list[str], limit: int = 10) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def _metrics(args) -> int:
    from evaluation.measures import evaluate

    qrels = trec_io.read_qrels(args.qrels)
    run_ = trec_io.read_run(args.run)
    result = evaluate(qrels, run_, args.measures, missing=args.missing)
    if not args.per_query:
        result.pop("per_query")
    lines = [f"{name:<10} {fmt_value(value)}" for name, value in result["measures"].items()]
    lines.append(f"queries: {result['n_queries']} in the mean ({result['n_evaluated']} evaluated, "
                 f"missing queries {args.missing}: {len(result['missing_queries'])})")
    if result["missing_queries"]:
        lines.append(f"missing from the run: {_list(result['missing_queries'])}")
    if result["unjudged_queries"]:
        lines.append(f"in the run without qrels (ignored): {_list(result['unjudged_queries'])}")
    return _print(result, args, lines)


def _robustness(args) -> int:
    from evaluation.robustness import read_groups, robustness

    qrels = trec_io.read_qrels(args.qrels)
    run_ = trec_io.read_run(args.run)
    groups = read_groups(args.groups) if args.groups else None
    try:
        result = robustness(qrels, run_, k=args.k, groups=groups)
    except ValueError as exc:
        raise ImportFailure(args.groups, None, "qid", str(exc)) from None
    k = args.k
    lines = [
        f"Robustness@{k}  {show_why(result[f'Robustness@{k}'])}  ({result['n_groups']} groups)",
        f"nDCG@{k}        {show_why(result[f'nDCG@{k}'])}  ({result['n_instances']} instances)",
    ]
    if result["missing_instances"]:
        lines.append(f"instances absent from the run (groups use the present ones): "
                     f"{_list(result['missing_instances'])}")
    if result["empty_groups"]:
        lines.append(f"groups with no instance in the run (left out): {_list(result['empty_groups'])}")
    return _print(as_json(result), args, lines)


def _pmrr(args) -> int:
    from evaluation.pmrr import p_mrr

    result = p_mrr(
        trec_io.read_qrels(args.qrels_og), trec_io.read_qrels(args.qrels_changed),
        trec_io.read_run(args.run_og), trec_io.read_run(args.run_changed),
        ties=args.ties,
    )
    lines = [f"p-MRR  {show_why(result['p-MRR'])}  ({result['n_queries']} queries with changed "
             f"documents, {result['n_documents']} documents, ties: {args.ties})"]
    if result["missing_queries"]:
        lines.append(f"queries absent from a run (skipped): {_list(result['missing_queries'])}")
    return _print(as_json(result), args, lines)


def _infosearch(args) -> int:
    from evaluation.infosearch import infosearch_metrics

    result = infosearch_metrics(
        trec_io.read_qrels(args.qrels_og), trec_io.read_qrels(args.qrels_ins),
        trec_io.read_run(args.run_ori), trec_io.read_run(args.run_ins), trec_io.read_run(args.run_rev),
        ties=args.ties, k=args.K, wise_version=args.wise_version,
    )
    result["wise_version"] = args.wise_version
    ranks = result["mean_rank"]
    lines = [
        f"WISE   {show_why(result['WISE'])}  ({result['n_queries']} queries with positives, K={args.K}, "
        f"{args.wise_version} version)",
        f"SICR   {show_why(result['SICR'])}",
        f"p-MRR  {show_why(result['p-MRR'])}  ({result['n_queries_pmrr']} queries with negatives)",
        f"mean rank of positives: ori {fmt_value(ranks['ori'])}, ins {fmt_value(ranks['ins'])}, "
        f"rev {fmt_value(ranks['rev'])} (ties: {args.ties})",
    ]
    if result["missing_queries"]:
        lines.append(f"queries absent from a run (skipped): {_list(result['missing_queries'])}")
    return _print(as_json(result), args, lines)


def _instfol(args) -> int:
    if args.study is not None:
        return _instfol_study(args)
    if args.judge_run is not None:
        from cli.judge_cmd import instfol_judged

        return instfol_judged(args)
    if args.llm_scores or args.db or args.check_study is not None:
        raise IFJudgeError("--llm-scores and --db go with --study")
    rows = read_judge_scores(args.scores)
    try:
        result = instfol(rows, max_score=args.max, k=args.k)
    except ValueError as exc:
        raise ImportFailure(args.scores, None, None, str(exc)) from None
    lines = [f"INSTFOL  {fmt_value(result['INSTFOL'])}  ({result['n_queries']} queries, max {args.max:g}"
             + (f", top {args.k}" if args.k else "") + ")"]
    return _print(result, args, lines)


def _instfol_study(args) -> int:
    """INSTFOL with the annotators of an ``instfol_match`` study as the judge (0-3 scale)."""
    from annotation.instfol_study import instfol_from_study
    from storage.db import connect

    if not args.db:
        raise IFJudgeError("--study needs --db PATH")
    llm = read_judge_scores(args.llm_scores) if args.llm_scores else None
    result = instfol_from_study(connect(args.db), args.study, llm_scores=llm, k=args.k)
    c = result["counts"]
    lines = [f"INSTFOL  {fmt_value(result['INSTFOL'])}  ({result['n_queries']} queries, human judge: mean label per passage, "
             f"max 3" + (f", top {result['k']}" if result["k"] else "") + ")",
             f"passages scored {c['scored']} of {c['passages']} ({c['unlabelled']} unlabelled; {c['ties']} ties "
             f"scored by their mean)"]
    if result["left_out"]:
        lines.append(f"left out (a mode has no scored passage): {_list(result['left_out'])}")
    if "llm" in result:
        a = result["llm"]["agreement"]
        m = result["llm"]
        lines.append(f"on the same {m['passages']} passages ({m['n_queries']} queries): LLM judge INSTFOL "
                     f"{fmt_value(m['INSTFOL'])}, human {fmt_value(m['human_INSTFOL'])}"
                     f" ({m['only_human']} passages only the humans scored, {m['only_llm']} only the LLM)")
        lines.append(f"human vs LLM on {a['n']} passages: Cohen kappa linear {fmt_value(a['cohen_kappa_linear'])}, "
                     f"quadratic {fmt_value(a['cohen_kappa_quadratic'])}, Krippendorff alpha ordinal "
                     f"{fmt_value(a['krippendorff_alpha_ordinal'])}, exact {fmt_value(a['exact'])}")
        lines += [f"undefined {k}: {v}" for k, v in a["undefined_reasons"].items()]
    return _print(result, args, lines)
