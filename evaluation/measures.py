"""Standard retrieval measures with trec_eval semantics, computed through ir-measures.

Measures are named as ir-measures names them (``nDCG@10``, ``AP@1000``, ``RR@10``, ``R@100``,
``P@5``, ``Rprec``, ``Bpref``, ``Success@10``, ``Judged@10``, ``NumRet``, ...; trec_eval's own
names ``map``, ``P_30``, ``ndcg_cut_10``, ``recip_rank`` are read too): :func:`parse_measure`
(from :mod:`evaluation.measure_registry`, the one registry of names) turns a name into a
:class:`Measure` whose ``str()`` is the canonical name that keys every result.

trec_eval semantics (all from the libraries, nothing re-implemented):

- every measure trec_eval has is computed by ``pytrec_eval`` (trec_eval's own code) through
  ir-measures' pytrec_eval provider; the others (``Judged@k``, ``ERR@k``, ``Compat``, ...) by
  the ir-measures provider that has them;
- documents are ranked by score descending, ties by document id descending (trec_eval ignores
  the rank column of a run); runs given to a provider other than pytrec_eval are first put in
  that order, so every measure sees the same ranking;
- nDCG uses the relevance label as a linear gain, ``log2(rank + 1)`` discount, and the ideal
  DCG from every judged relevant document of the query (``ndcg`` / ``ndcg_cut``);
- ``AP@k`` is trec_eval's ``map_cut_k``: precision summed over the relevant documents
  retrieved in the top k, divided by the number of relevant documents of the query;
- ``R@k`` is ``recall_k``, ``P@k`` is ``P_k``, ``Rprec``, ``Bpref``, ``Success@k``,
  ``IPrec@r``, ``infAP``, ``SetP``... are ``Rprec``, ``bpref``, ``success_k``,
  ``iprec_at_recall_r``, ``infAP``, ``set_P``...;
- ``RR@k``: pytrec_eval has no cut-off for ``recip_rank``, so the run is truncated to its top k
  documents in trec_eval's order and ``recip_rank`` is computed on the truncated run;
- ``NumQ``, ``NumRet``, ``NumRel`` are totals over the queries, as trec_eval prints them; every
  other measure is a mean.

A document is relevant when its label is >= 1 (trec_eval's default relevance level; ``rel=2``
as in ``P(rel=2)@5`` changes it for one measure).
"""
from __future__ import annotations

from typing import Iterable, Mapping

import ir_measures

from evaluation.measure_registry import (  # noqa: F401  (re-exported: the public API of this module)
    DEFAULT_STANDARD,
    Measure,
    UnknownMeasure,
    parse_measure,
    parse_measures,
)
from evaluation.retrievers.topk import top_k_ranking
from formats.trec_io import trec_order

_PYTREC = ir_measures.providers.registry["pytrec_eval"]


def _supports(provider, measure) -> bool:
    try:
        return provider.is_available() and provider.supports(measure)
    except Exception:  # ir-measures validates parameters with assert
        return False


def _collect(columns: dict, measures: list[Measure], evaluator, run, wanted: set, qid_of=None) -> None:
    """Per-query values of an ir-measures evaluator's ``Metric`` records, for the evaluated
    queries only (an ir-measures evaluator also reports a default for every query of the qrels).
    The evaluator was built on ``[m.ir for m in measures]``; records carry those same objects."""
    column_of = {}
    for m in measures:
        column_of[id(m.ir)] = columns[str(m)]
    for metric in evaluator.iter_calc(run):
        qid = metric.query_id if qid_of is None else qid_of.get(metric.query_id)
        if qid in wanted:
            column = column_of.get(id(metric.measure))
            if column is None:  # an equal object, not the same one
                column = columns[str(metric.measure)]
            column[qid] = metric.value


def _rr_at_k(columns: dict, qrels, run, evaluated: list[str], measures: list[Measure]) -> None:
    """``RR@k``: ``recip_rank`` (with the measure's own rel / judged_only) of the run cut to its
    top k in trec_eval's order. One cut at the deepest k per parameter set; shallower cuts are
    its prefixes."""
    groups: dict[tuple, list[Measure]] = {}
    for m in measures:
        groups.setdefault(m.params, []).append(m)
    wanted = set(evaluated)
    for params, group in groups.items():
        uncut = Measure("RR", None, params)
        evaluator = _PYTREC.evaluator([uncut.ir], qrels)
        source = run
        if dict(params).get("judged_only"):  # trec_eval -J: unjudged documents are dropped first
            source = {qid: {d: s for d, s in run[qid].items() if d in qrels[qid]} for qid in evaluated}
        deepest = max(m.cutoff for m in group)
        cut_deep = {qid: top_k_ranking(source[qid], deepest) for qid in evaluated}
        for m in sorted(group, key=lambda m: m.cutoff):
            if m.cutoff == deepest:
                cut = cut_deep
            else:  # the first k of the deepest cut are the first k of the run
                cut = {qid: dict(list(docs.items())[:m.cutoff]) for qid, docs in cut_deep.items()}
            column = columns[str(m)]
            for metric in evaluator.iter_calc(cut):
                if metric.query_id in wanted:
                    column[metric.query_id] = metric.value


def _other_providers(columns: dict, qrels, run, evaluated: list[str], measures: list[Measure]) -> None:
    """Measures pytrec_eval lacks, from the first installed ir-measures provider that has them.

    The run is handed over in trec_eval's order (score descending, doc id descending) as
    strictly decreasing scores, so ties are broken as everywhere else; query ids are renumbered
    (gdeval reads numeric topics only). Queries with an empty ranking keep the measure's default.
    When every measure has a ranking cut-off, only the top documents down to the deepest one are
    handed over (a measure at cut-off k reads nothing below rank k).
    """
    by_provider: dict[str, list[Measure]] = {}
    for m in measures:
        provider = next(p for p in ir_measures.providers.registry.values()
                        if p.NAME not in ("pytrec_eval", "runtime") and _supports(p, m.ir))
        by_provider.setdefault(provider.NAME, []).append(m)
    number = {qid: str(i + 1) for i, qid in enumerate(evaluated)}
    qid_of = {v: k for k, v in number.items()}
    cutoffs = [m.cutoff for m in measures if m.ir.AT_PARAM == "cutoff" and isinstance(m.cutoff, int)]
    deepest = max(cutoffs) if len(cutoffs) == len(measures) else None
    ordered = {}
    for qid in evaluated:
        if deepest is None:
            ranked = trec_order(run[qid])
        else:
            ranked = list(top_k_ranking(run[qid], deepest).items())
        if ranked:
            ordered[number[qid]] = {docid: float(len(ranked) - i) for i, (docid, _) in enumerate(ranked)}
    renumbered_qrels = {number[qid]: dict(qrels[qid]) for qid in evaluated}
    for name, group in by_provider.items():
        evaluator = ir_measures.providers.registry[name].evaluator([m.ir for m in group], renumbered_qrels)
        _collect(columns, group, evaluator, ordered, set(evaluated), qid_of)


def relevant_queries(qrels: Mapping[str, Mapping[str, int]]) -> set[str]:
    """Queries of the qrels with at least one relevant (label >= 1) document."""
    return {qid for qid, docs in qrels.items() if any(rel >= 1 for rel in docs.values())}


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    measures: "str | Iterable[str | Measure]",
    *,
    missing: str = "omit",
) -> dict:
    """Evaluate a run against qrels with trec_eval semantics (through ir-measures and pytrec_eval).

    Per query, each measure comes from trec_eval (see the module docstring); the reported value
    is the mean over queries (the total for ``NumQ``, ``NumRet``, ``NumRel``, as trec_eval):

        M = (1 / |Q|) * sum_{q in Q} M(q)

    where Q are the queries of the run that have qrels (``missing="omit"``), plus, with
    ``missing="zero"``, the *missing queries* -- queries of the qrels with >= 1 relevant
    document that are absent from the run -- each counted as 0.

    Parameters
    ----------
    qrels : dict
        ``qrels[qid][docid] -> int`` relevance labels.
    run : dict
        ``run[qid][docid] -> float`` scores.
    measures : str or list
        Measure names such as ``"nDCG@10,AP@1000,RR@10,R@100,P@5"`` or ``"map,P_30,Rprec,bpref"``
        (any standard name of :mod:`evaluation.measure_registry`), or :class:`Measure` objects.
    missing : {"omit", "zero"}
        How missing queries enter the mean.

    Returns
    -------
    dict
        ``measures`` ({canonical name: float, or None when no query was evaluated}),
        ``n_queries`` (queries in the mean), ``n_evaluated`` (queries of the run with qrels),
        ``missing_queries`` (sorted), ``unjudged_queries`` (queries of the run without qrels,
        ignored; sorted), ``per_query`` ({qid: {name: float}}, missing queries included as 0
        when ``missing="zero"``), ``missing`` (the option).

    Raises
    ------
    UnknownMeasure (a ValueError)
        A name the registry does not know; the message lists the known ones.

    References
    ----------
    trec_eval (NIST); MacAvaney, Macdonald & Ounis (2022), "Streamlining Evaluation with
    ir-measures", ECIR; Van Gysel & de Rijke (2018), "pytrec_eval: An Extremely Fast Python
    Interface to trec_eval", SIGIR.

    Examples
    --------
    >>> qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 1}}
    >>> run = {"q1": {"d1": 0.2, "d2": 0.9}}
    >>> evaluate(qrels, run, "RR@10")["measures"]
    {'RR@10': 0.5}
    >>> evaluate(qrels, run, "RR@10", missing="zero")["measures"]
    {'RR@10': 0.25}
    >>> evaluate(qrels, run, "Rprec,Success@1,Judged@2,NumRet")["measures"]
    {'Rprec': 0.0, 'Success@1': 0.0, 'Judged@2': 1.0, 'NumRet': 2.0}
    """
    if missing not in ("omit", "zero"):
        raise ValueError(f"missing must be 'omit' or 'zero', got {missing!r}")
    parsed = parse_measures(measures)
    names = [str(m) for m in parsed]
    per_query = per_query_values(qrels, run, parsed)
    missing_queries = sorted(q for q in relevant_queries(qrels) if q not in run)
    n_evaluated = len(per_query)
    if missing == "zero":
        for qid in missing_queries:
            per_query[qid] = {n: 0.0 for n in names}
    return {
        "measures": aggregate(per_query, parsed),
        "n_queries": len(per_query),
        "n_evaluated": n_evaluated,
        "missing_queries": missing_queries,
        "unjudged_queries": sorted(q for q in run if q not in qrels),
        "missing": missing,
        "per_query": per_query,
    }


def per_query_values(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                     measures: list[Measure]) -> dict[str, dict[str, float]]:
    """``{qid: {canonical name: value}}`` of the parsed standard ``measures`` for the queries of
    ``run`` that have qrels, in run order, from trec_eval (pytrec_eval) where it computes the
    measure, else :func:`_rr_at_k` / another ir-measures provider; a query a provider leaves out
    gets the measure's default (0).

    >>> per_query_values({"q1": {"d1": 1}}, {"q1": {"d2": 0.9, "d1": 0.2}, "q9": {}}, parse_measures("RR"))
    {'q1': {'RR': 0.5}}
    """
    names = [str(m) for m in measures]
    evaluated = [qid for qid in run if qid in qrels]
    columns: dict[str, dict[str, float]] = {name: {} for name in names}
    rr_cut = [m for m in measures if m.name == "RR" and m.cutoff is not None]
    trec = [m for m in measures if m not in rr_cut and _supports(_PYTREC, m.ir)]
    other = [m for m in measures if m not in rr_cut and m not in trec]
    # one evaluator per parameter set: ir-measures 0.4.3 files a parameterless measure (NumRet,
    # nDCG) under any other pytrec_eval invocation, e.g. a judged_only one, which changes it
    by_params: dict[tuple, list[Measure]] = {}
    for m in trec:
        by_params.setdefault(m.params, []).append(m)
    for group in by_params.values():
        _collect(columns, group, _PYTREC.evaluator([m.ir for m in group], qrels), run, set(evaluated))
    if rr_cut:
        _rr_at_k(columns, qrels, run, evaluated, rr_cut)
    if other:
        _other_providers(columns, qrels, run, evaluated, other)
    defaults = [(name, columns[name], m.ir.DEFAULT) for m, name in zip(measures, names)]
    return {qid: {name: column.get(qid, default) for name, column, default in defaults} for qid in evaluated}


def aggregate(per_query: dict[str, dict[str, float]], measures: list[Measure]) -> dict[str, float | None]:
    """``{canonical name: mean over the queries of per_query}`` (the total for ``NumQ``,
    ``NumRet``, ``NumRel``, as trec_eval prints them); None when there is no query.

    >>> aggregate({"a": {"NumRet": 2.0, "P@5": 0.2}, "b": {"NumRet": 3.0, "P@5": 0.4}}, parse_measures("NumRet,P@5"))
    {'NumRet': 5.0, 'P@5': 0.30000000000000004}
    """
    n = len(per_query)
    means: dict[str, float | None] = {}
    for m in measures:
        name = str(m)
        total = sum(row[name] for row in per_query.values())
        means[name] = None if not n else (total if m.aggregate == "sum" else total / n)
    return means
