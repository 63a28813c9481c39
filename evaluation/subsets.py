"""A subset is its own dataset: per-subset means and the mean over subsets, and IFIR's level scores.

A release published in parts (IFIR's domains, InfoSearch's dimensions, an MTEB task's subsets or
languages) is evaluated part by part: each subset's queries are ranked against its own corpus and
in its own mode (candidate lists or the full corpus: :class:`evaluation.runner._Retrieval`), each
subset's figures are the means over its queries, and the figure of the whole release is the mean
over its subsets, as the papers and MTEB average them (IFIR Table 3 "Average", InfoSearch Table 2
"averaged over six dimensions", MTEB's score of a task with several ``hf_subsets``):

    M = (1 / |S|) * sum_{s in S} (1 / |Q_s|) * sum_{q in Q_s} M(q)

A measure that trec_eval sums (``NumQ``, ``NumRet``, ``NumRel``) is summed over the subsets. With
one subset this is the plain mean over queries.

IFIR's level scores (MTEB's ``IFIRFiQA.task_specific_scores``: ``level_1`` .. ``level_3``) are the
means over the instructions of one level (variants ``level1`` .. ``level3``); per subset, and over
the subsets that have the level.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from evaluation.undefined import Undefined, mean_or_undefined

LEVELS = ("level1", "level2", "level3")
NO_SUBSET = "no subset has a value"  # why a mean over subsets is undefined


def split_by_subset(topics: list[dict], subset_of: Mapping[str, str]) -> dict[str, list[dict]]:
    """``{subset: its topics}`` in the topics' order, by the subset of each topic's query
    (``subset_of``: query id -> subset; a query without one is in subset ``""``).

    >>> split_by_subset([{"query_id": "a"}, {"query_id": "b"}, {"query_id": "c"}], {"a": "x", "c": "x"})
    {'x': [{'query_id': 'a'}, {'query_id': 'c'}], '': [{'query_id': 'b'}]}
    """
    out: dict[str, list[dict]] = {}
    for t in topics:
        out.setdefault(subset_of.get(t["query_id"], ""), []).append(t)
    return out


def mean(values: Iterable[float]) -> float | None:
    """The mean of ``values``, None when there is none.

    >>> mean([1, 2]), mean([])
    (1.5, None)
    """
    values = list(values)
    return sum(values) / len(values) if values else None


def subset_means(per_query: Mapping[str, Mapping[str, float | None]], subset_of_qid: Mapping[str, str],
                 names: Iterable[str], *, summed: Iterable[str] = ()) -> dict[str, dict]:
    """``{subset: {"n_queries", "metrics": {name: mean over its queries where defined}}}`` of the
    per-query values; a ``summed`` name is the subset's total.

    >>> pq = {"q1": {"m": 1.0}, "q2": {"m": 0.0}, "q3": {"m": 0.5}}
    >>> subset_means(pq, {"q1": "a", "q2": "a", "q3": "b"}, ["m"])
    {'a': {'n_queries': 2, 'metrics': {'m': 0.5}}, 'b': {'n_queries': 1, 'metrics': {'m': 0.5}}}
    """
    names, summed = list(names), set(summed)
    rows: dict[str, list[Mapping]] = {}
    for qid, row in per_query.items():
        rows.setdefault(subset_of_qid.get(qid, ""), []).append(row)
    out = {}
    for subset in sorted(rows):
        values = {n: [r[n] for r in rows[subset] if r.get(n) is not None] for n in names}
        out[subset] = {"n_queries": len(rows[subset]),
                       "metrics": {n: (sum(v) if v else None) if n in summed else mean(v) for n, v in values.items()}}
    return out


def over_subsets(by_subset: Mapping[str, Mapping], names: Iterable[str], *, summed: Iterable[str] = ()) -> dict:
    """``{name: mean over the subsets where it is defined}`` (the total for a ``summed`` name) of
    :func:`subset_means`-shaped entries; :class:`~evaluation.undefined.Undefined` where no subset
    has a value.

    >>> over_subsets({"a": {"metrics": {"m": 0.5}}, "b": {"metrics": {"m": 1.0}}, "c": {"metrics": {"m": None}}}, ["m"])
    {'m': 0.75}
    >>> over_subsets({"a": {"metrics": {"m": None}}}, ["m", "n"], summed=["n"])
    {'m': Undefined(reason='no subset has a value'), 'n': Undefined(reason='no subset has a value')}
    """
    summed = set(summed)
    out = {}
    for n in names:
        values = [e["metrics"].get(n) for e in by_subset.values() if e["metrics"].get(n) is not None]
        out[n] = (sum(values) if values else Undefined(NO_SUBSET)) if n in summed else mean_or_undefined(values, NO_SUBSET)
    return out


def level_means(per_query: Mapping[str, Mapping[str, float]], level_of_qid: Mapping[str, str],
                names: Iterable[str]) -> dict[str, dict[str, float | None]]:
    """``{level: {name: mean over that level's instructions}}`` for the levels present (IFIR
    ``level1`` .. ``level3``; MTEB's ``level_scores``).

    >>> level_means({"12_1": {"nDCG@20": 1.0}, "47_1": {"nDCG@20": 0.5}, "12_2": {"nDCG@20": 0.0}},
    ...             {"12_1": "level1", "47_1": "level1", "12_2": "level2"}, ["nDCG@20"])
    {'level1': {'nDCG@20': 0.75}, 'level2': {'nDCG@20': 0.0}}
    """
    names = list(names)
    out = {}
    for level in LEVELS:
        rows = [row for qid, row in per_query.items() if level_of_qid.get(qid) == level]
        if rows:
            out[level] = {n: mean(r[n] for r in rows if r.get(n) is not None) for n in names}
    return out


def levels_over_subsets(by_subset: Mapping[str, Mapping]) -> dict[str, dict[str, float | None]]:
    """``{level: {name: mean over the subsets that have the level}}`` of the ``levels`` of each
    subset entry.

    >>> levels_over_subsets({"a": {"levels": {"level1": {"m": 1.0}}}, "b": {"levels": {"level1": {"m": 0.0}}}})
    {'level1': {'m': 0.5}}
    """
    out: dict[str, dict[str, float | None]] = {}
    for level in LEVELS:
        entries = [e["levels"][level] for e in by_subset.values() if level in (e.get("levels") or {})]
        if entries:
            names = list(dict.fromkeys(n for e in entries for n in e))
            out[level] = {n: mean(e[n] for e in entries if e.get(n) is not None) for n in names}
    return out
