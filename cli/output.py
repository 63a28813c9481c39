"""How ``ifjudge`` commands print numbers and tables: one formatter for every command.

:func:`fmt_value` is the one way a command shows a figure (:func:`evaluation.undefined.show`:
an undefined value is "—", never ``None``; :func:`evaluation.undefined.show_why` puts its reason
beside it); :func:`format_table` lines up rows of cells in columns; :func:`infosearch_lines` is
the InfoSearch block (WISE / SICR / p-MRR per dimension) that ``eval run`` and ``eval compare``
both print. The nested blocks are read as :class:`evaluation.results.Result` records
(:func:`evaluation.results.infosearch_records`, :func:`~evaluation.results.pmrr_records`,
:func:`~evaluation.results.table2_records`), never walked here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from evaluation.undefined import UNDEFINED, show, show_why

if TYPE_CHECKING:  # evaluation.results (numpy, ir_measures) is imported when a block is printed, not at start-up
    from evaluation.results import Result


def fmt_value(value, *, digits: int = 4) -> str:
    """``value`` as printed: a float with ``digits`` decimals, "—" when undefined (None,
    Undefined, NaN): :func:`evaluation.undefined.show`.

    >>> fmt_value(0.123456), fmt_value(1 / 3, digits=3), fmt_value(None), fmt_value(12), fmt_value(float("nan"))
    ('0.1235', '0.333', '—', '12', '—')
    """
    return show(value, f".{digits}f")


def format_table(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows of text cells lined up in columns two spaces apart, trailing blanks cut.

    >>> format_table([("statistic", "value"), ("kappa", "0.5")])
    ['statistic  value', 'kappa      0.5']
    """
    if not rows:
        return []
    width = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width[i]) for i, cell in enumerate(r)).rstrip() for r in rows]


def infosearch_lines(records: list[Result], *, indent: str = "") -> list[str]:
    """One line per dimension and one ``overall``: WISE / SICR / p-MRR and the number of queries
    (WISE's), from the records of one InfoSearch block (:func:`evaluation.results.infosearch_records`).

    >>> from evaluation.results import infosearch_records
    >>> row = {"WISE": 0.5, "SICR": None, "p-MRR": -0.25, "n_queries": 2}
    >>> block = {"by_dimension": {"audience": row}, "overall": row}
    >>> print("\\n".join(infosearch_lines(infosearch_records(block, qrels="changed"), indent="  ")))
      audience         0.5000 / — / -0.2500  (2)
      overall          0.5000 / — / -0.2500  (2)
    """
    from evaluation.results import ALL, base_name

    rows: dict[str, dict[str, Result]] = {}
    for r in records:
        rows.setdefault(r.query_set, {})[base_name(r.measure)] = r
    f = fmt_value
    return [f"{indent}{'overall' if q == ALL else q:<16} {f(r['WISE'].value)} / {f(r['SICR'].value)} / "
            f"{f(r['p-MRR'].value)}  ({r['WISE'].n_queries})" for q, r in rows.items()]


_f = fmt_value


def eval_run_lines(summary: dict, *, missing: str = "zero") -> list[str]:
    """What ``ifjudge eval run`` prints of one evaluation (:func:`evaluation.results.run_summary`):
    the run and its protocol, each headline figure, each subset's figures and the mean over them,
    IFIR's level scores, the bare-query baseline, p-MRR's versions and InfoSearch's Table 2.

    >>> s = {"eval_run_id": 3, "model": "bm25", "template": "query_instruction", "qrels_version": "original",
    ...      "protocol": "mteb", "n_queries": 4, "reused_run": False, "metrics": {"nDCG@20": 0.5},
    ...      "undefined": {}, "missing_queries": []}
    >>> print("\\n".join(eval_run_lines(s)))
    eval run 3: bm25 [query_instruction] on original qrels, mteb protocol (4 queries)
      nDCG@20  0.5000
    """
    lines = [f"eval run {summary['eval_run_id']}: {summary['model']} [{summary['template']}] on "
             f"{summary['qrels_version']} qrels, {summary['protocol']} protocol ({summary['n_queries']} queries"
             f"{', stored run reused' if summary.get('reused_run') else ''})"]
    subsets = summary.get("subsets") or {}
    rows = [(name, show_why(value, summary["undefined"].get(name)),
             f"({summary['averaging']})" if name in (summary.get("query_means") or {}) else "")
            for name, value in summary["metrics"].items()]
    lines += ["  " + r for r in format_table(rows)]
    if summary.get("missing_queries"):
        lines.append(f"  {len(summary['missing_queries'])} judged queries absent from the run ({missing})")
    if subsets:
        names = list(dict.fromkeys(n for e in subsets.values() for n in e["metrics"]))
        rows = [("subset", "queries", "ranked against", *names)]
        for subset, e in subsets.items():
            against = "candidate lists" if e.get("candidates") == "top_ranked" else (
                f"its corpus ({e['corpus']} docs)" if isinstance(e.get("corpus"), int) else "the whole corpus")
            rows.append((subset or "(none)", str(e["n_queries"]), against, *(_f(e["metrics"].get(n)) for n in names)))
        rows.append((summary["averaging"], str(summary["n_queries"]), "", *(_f(summary["metrics"].get(n)) for n in names)))
        lines += ["  per subset:", *("    " + r for r in format_table(rows))]
    lines += _level_lines(summary.get("levels"), "  level scores (mean over the instructions of each level):", "    ")
    base = summary.get("baseline")
    if base:
        lines.append(f"  baseline: the {base['n_queries']} bare queries (variant bare, not in the figures above), "
                     f"on their own {base['qrels']} qrels: "
                     + ", ".join(f"{n} {_f(v)}" for n, v in base["metrics"].items()))
        inst = base.get("on_instructed") or {}
        if inst.get("n_queries"):
            lines.append(f"  baseline on the {inst['n_queries']} instructed queries' qrels (each scored with its "
                         "bare query's ranking): " + ", ".join(f"{n} {_f(v)}" for n, v in inst["metrics"].items()))
            lines += _level_lines(inst.get("levels"), "    per level:", "      ")
    from evaluation.measure_registry import parse
    from evaluation.results import infosearch_records, pmrr_records

    pm = summary.get("p_mrr") or {}
    for r in pmrr_records(pm):
        v = parse(r.measure).params["qrels"]
        lines.append(f"  p-MRR on original vs {v}: {show_why(r.shown)} over {r.n_queries} queries, "
                     f"{pm['by_qrels'][v]['n_documents']} changed documents (ties: {pm['ties']})")
    for v, b in (summary.get("infosearch") or {}).items():
        lines.append(f"  InfoSearch on original vs {v} (WISE / SICR / p-MRR, queries; WISE "
                     f"{summary.get('wise_version', 'paper')} version):")
        lines += infosearch_lines(infosearch_records(b, qrels=v), indent="    ")
    if summary.get("infosearch_table2"):
        lines += table2_lines(summary["infosearch_table2"], indent="  ")
    return lines


def _level_lines(levels: dict | None, title: str, indent: str) -> list[str]:
    if not levels:
        return []
    return [title, *(f"{indent}{level}: " + ", ".join(f"{n} {_f(v)}" for n, v in values.items())
                     for level, values in levels.items())]


def table2_lines(table: dict, *, indent: str = "") -> list[str]:
    """InfoSearch's Table 2 as printed: per dimension and the mean over dimensions, nDCG@10 and
    Robustness@10 in the original / instructed / reversed modes, p-MRR, WISE, SICR.

    >>> t = {"qrels": {"original": "original", "instructed": "changed", "reversed": "reversed"}, "averaging": "mean over 1 dimension",
    ...      "dimensions": {"Language": {"n_queries": 3, "nDCG@10": {"original": 1.0, "instructed": 0.5, "reversed": 0.25},
    ...      "Robustness@10": {"original": 1.0, "instructed": 0.5, "reversed": 0.25}, "p-MRR": 0.1, "WISE": -0.2, "SICR": 0.0}}}
    >>> t["mean"] = t["dimensions"]["Language"]
    >>> print("\\n".join(table2_lines(t)))
    InfoSearch Table 2 (qrels: original / changed / reversed):
    dimension              queries  nDCG@10 ori / ins / rev   Robustness@10 ori / ins / rev  p-MRR   WISE     SICR
    Language               3        1.0000 / 0.5000 / 0.2500  1.0000 / 0.5000 / 0.2500       0.1000  -0.2000  0.0000
    mean over 1 dimension  3        1.0000 / 0.5000 / 0.2500  1.0000 / 0.5000 / 0.2500       0.1000  -0.2000  0.0000
    """
    from evaluation.results import table2_records

    modes = ("original", "instructed", "reversed")
    q = table["qrels"]
    by_set: dict[str, dict[tuple[str, str], Result]] = {}
    for r in table2_records(table):
        by_set.setdefault(r.query_set, {})[(r.measure, r.qrels_version)] = r

    def value(cells: dict, measure: str, version: str | None) -> str:
        found = cells.get((measure, version))
        return _f(found.value if found is not None else None)

    def three(cells: dict, measure: str) -> str:
        return " / ".join(value(cells, measure, q.get(m)) for m in modes)

    rows = [("dimension", "queries", "nDCG@10 ori / ins / rev", "Robustness@10 ori / ins / rev", "p-MRR", "WISE", "SICR")]
    for dim, cells in by_set.items():
        n = next(iter(cells.values())).n_queries
        rows.append((dim, str(n), three(cells, "nDCG@10"), three(cells, "Robustness@10"),
                     *(value(cells, m, q.get("instructed", "")) for m in ("p-MRR", "WISE", "SICR"))))
    return [f"{indent}InfoSearch Table 2 (qrels: {' / '.join(q.get(m, UNDEFINED) for m in modes)}):",
            *(indent + r for r in format_table(rows))]
