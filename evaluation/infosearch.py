"""SICR and WISE (InfoSearch): does a gold document rise under the instruction and fall under
the reversed instruction?

Zhou et al. (2024), "Beyond Content Relevance: Evaluating Instruction Following in Retrieval
Models" (InfoSearch), §2.3, eqs. (4)-(9). Three runs of the same queries are compared: with the
original instruction (ori), the instruction (ins) and the reversed instruction (rev).

Definitions used here (docs/metrics.md, "Instruction-following measures"):

- positives of a query: documents relevant (label >= 1) under both the original and the
  instructed qrels (InfoSearch's "gold document" P^i);
- negatives of a query: documents relevant under the original qrels and not under the
  instructed qrels (a document missing from the instructed qrels counts as not relevant).
  This is what InfoSearch's code (``create_qrel_match``) collects as ``negative_qrels``; its
  p-MRR is computed on these documents, ori run vs ins run;
- N = positives + negatives of the query (WISE's "R_ori < N" case);
- R_ori, R_ins, R_rev: 1-based ranks of the document in each run (ties by doc id descending,
  or the run's order with ``ties="run-order"``); absent -> len(run for the query) + 1;
  S_ori, S_ins, S_rev: its scores (absent -> 0.0, as in InfoSearch's code).

Differences from InfoSearch's published code, where docs/metrics.md decides (documented, on purpose):

- SICR per query is the mean of the indicator over all positives; the published code resets
  its counter inside the loop over positives, so it keeps only the last positive's indicator
  (divided by the number of positives). Identical when a query has one positive, which is the
  InfoSearch design ("only one unique gold document").
- WISE's reward within the top K: the paper's eq. 7 is ``(1 - (R_ori - R_ins) / K) / sqrt(R_ins)``;
  the newest official evaluator (``WISE_score`` in ``mteb_infosearch/.../evaluators/utils.py``)
  computes ``(1 - sqrt(R_ori - R_ins) / K) / sqrt(R_ins)``. Eq. 7 is the default (both protocols
  of :mod:`evaluation.protocols`); ``wise_version="evaluator"`` gives the evaluator's, stored as
  ``WISE(version='evaluator')``. The penalty (eq. 8) is the same in both.
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from evaluation.pmrr import doc_ranks, pair_scores
from evaluation.runs import RankedRun, as_ranked_run, check_ties
from evaluation.undefined import Undefined, mean_or_undefined

# why each measure is undefined over a set of queries (the whole run, or one dimension): 0/0
UNDEFINED_REASONS = {"WISE": "no query has a document relevant under both instructions",
                     "SICR": "no query has a document relevant under both instructions",
                     "p-MRR": "no document is relevant originally and not under the instruction"}


def undefined(name: str) -> Undefined:
    """WISE, SICR or p-MRR undefined over a set of queries, with the reason.

    >>> undefined("SICR")
    Undefined(reason='no query has a document relevant under both instructions')
    """
    return Undefined(UNDEFINED_REASONS[name])


def sicr_indicator(r_ori: int, r_ins: int, r_rev: int, s_ori: float, s_ins: float, s_rev: float) -> int:
    """Strict compliance of one gold document (InfoSearch eq. 4, with the R_ori = 1 case).

        1 if R_ins < R_ori < R_rev and S_ins > S_ori > S_rev          (R_ori > 1)
        1 if R_ins = 1, R_rev > 1 and S_ins >= S_ori > S_rev          (R_ori = 1)
        0 otherwise

    Examples
    --------
    >>> sicr_indicator(3, 1, 5, 0.5, 0.9, 0.1), sicr_indicator(1, 1, 2, 0.5, 0.5, 0.1)
    (1, 1)
    >>> sicr_indicator(3, 1, 5, 0.5, 0.4, 0.1)
    0
    """
    if r_ori == 1:
        return int(r_ins == 1 and r_rev > r_ori and s_ins >= s_ori and s_ori > s_rev)
    return int(r_ins < r_ori and r_rev > r_ori and s_ins > s_ori and s_ori > s_rev)


def wise_score(r_ori: int, r_ins: int, r_rev: int, *, n: int, k: int = 20, version: str = "paper") -> float:
    """WISE of one gold document (InfoSearch eqs. 6-8).

    Reward, when R_ins <= R_ori < R_rev::

        1                                    if R_ori < N and R_ins = 1
        (1 - (R_ori - R_ins) / K) / sqrt(R_ins)   if R_ori <= K   (version "paper": eq. 7)
        (1 - sqrt(R_ori - R_ins) / K) / sqrt(R_ins)  if R_ori <= K (version "evaluator": the official
                                                     evaluator's WISE_score, mteb_infosearch utils.py)
        0.01                                 otherwise

    Penalty, otherwise::

        -1                        if R_rev < R_ori < R_ins
        (R_ori - R_ins) / R_ins   if R_ori <= R_ins
        (R_rev - R_ori) / R_ori   otherwise (R_rev <= R_ori)

    Examples
    --------
    >>> wise_score(3, 1, 9, n=5), wise_score(10, 2, 30, n=5), wise_score(50, 2, 60, n=5)
    (1.0, 0.42426406871192845, 0.01)
    >>> wise_score(4, 8, 6, n=5), wise_score(6, 8, 4, n=5), wise_score(6, 2, 3, n=5)
    (-0.5, -1.0, -0.5)
    >>> wise_score(10, 2, 30, n=5, version="evaluator")  # (1 - sqrt(8) / 20) / sqrt(2)
    0.6071067811865475
    """
    if r_ins <= r_ori < r_rev:
        if r_ori < n and r_ins == 1:
            return 1.0
        if r_ori <= k:
            gain = math.sqrt(r_ori - r_ins) if version == "evaluator" else (r_ori - r_ins)
            return (1.0 - gain / k) * (1.0 / math.sqrt(r_ins))
        return 0.01
    if r_rev < r_ori < r_ins:
        return -1.0
    if r_ori <= r_ins:
        return (r_ori - r_ins) / r_ins
    return (r_rev - r_ori) / r_ori


def infosearch_metrics(qrels_ori: Mapping[str, Mapping[str, int]], qrels_ins: Mapping[str, Mapping[str, int]],
                       run_ori: Mapping[str, Mapping[str, float]] | RankedRun,
                       run_ins: Mapping[str, Mapping[str, float]] | RankedRun,
                       run_rev: Mapping[str, Mapping[str, float]] | RankedRun, *, ties: str = "docid",
                       k: int = 20, wise_version: str = "paper") -> dict:
    """WISE, SICR and p-MRR of three runs (original, instructed, reversed instruction).

    Per query (:func:`query_scores`) with >= 1 positive: WISE(q) and SICR(q), the means over its
    positives of :func:`wise_score` and :func:`sicr_indicator`; with >= 1 negative: p-MRR(q), the
    mean over its negatives of :func:`evaluation.pmrr.pair_score` (R_og in the ori run, R_new in
    the ins run). Each is then averaged over the queries that have it. A query absent from any of
    the three runs is skipped and listed in ``missing_queries``. The module docstring has the
    definitions and the two places where docs/metrics.md departs from InfoSearch's published code.

    Parameters
    ----------
    qrels_ori, qrels_ins : dict
        ``qrels[qid][docid] -> int`` under the original and the instructed qrels.
    run_ori, run_ins, run_rev : RankedRun or dict
        The runs of the three modes: :class:`evaluation.runs.RankedRun` (a retriever's), or
        ``run[qid][docid] -> score`` (converted once by :meth:`~evaluation.runs.RankedRun.from_dict`).
    ties : {"docid", "run-order"}
        Ranking of equal scores (see :func:`evaluation.pmrr.doc_ranks`).
    k : int
        WISE's K (20 in the paper).
    wise_version : {"paper", "evaluator"}
        WISE's reward as the paper's eq. 7 or as the official evaluator computes it
        (:func:`wise_score`).

    Returns
    -------
    dict
        ``WISE``, ``SICR``, ``p-MRR`` (:class:`~evaluation.undefined.Undefined` with the reason of
        :data:`UNDEFINED_REASONS` when no query has a positive, resp. a negative), ``n_queries`` (queries with >= 1 positive), ``n_queries_pmrr``,
        ``mean_rank`` ({"ori", "ins", "rev"}: mean over queries of the mean rank of the
        positives, as in the paper's Table 2), ``per_query`` ({qid: {"WISE", "SICR", "p-MRR",
        "n_positives", "n_negatives"}}), ``missing_queries``, ``ties``, ``K``.

    References
    ----------
    Zhou, J., Zheng, Y., Chen, W., Zheng, Q., Shang, Z., Zhang, W., Meng, R., Shen, X. (2024).
    Beyond Content Relevance: Evaluating Instruction Following in Retrieval Models, §2.3.
    Reference code: github.com/EIT-NLP/InfoSearch (``evaluation/evaluators/utils.py``).

    Examples
    --------
    >>> qrels_ori, qrels_ins = {"q": {"g": 1, "h": 1}}, {"q": {"g": 1, "h": 0}}
    >>> run_ori, run_ins = {"q": {"h": 0.9, "g": 0.8, "x": 0.1}}, {"q": {"g": 0.95, "h": 0.5, "x": 0.1}}
    >>> r = infosearch_metrics(qrels_ori, qrels_ins, run_ori, run_ins, {"q": {"h": 0.9, "x": 0.5, "g": 0.2}})
    >>> r["WISE"], r["SICR"], r["p-MRR"]  # g: 2 -> 1 (ins), 3 (rev), N = 2; h: 1 -> 2
    (0.95, 1.0, 0.5)
    """
    check_ties(ties)
    if int(k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    run_ori, run_ins, run_rev = as_ranked_run(run_ori), as_ranked_run(run_ins), as_ranked_run(run_rev)
    scored, missing = _judged(qrels_ori, qrels_ins, (run_ori, run_ins, run_rev))
    # the ranks of every query's targets, one call per run: flat lists in the order of `scored`
    judged = [(qid, positives + negatives) for qid, positives, negatives in scored]
    ori_r, ori_s = run_ori.ranks(judged, ties=ties)
    ins_r, ins_s = run_ins.ranks(judged, ties=ties)
    rev_r, rev_s = run_rev.ranks([(qid, positives) for qid, positives, _ in scored], ties=ties)
    rows = _rows([(len(positives), len(negatives)) for _, positives, negatives in scored],
                 (ori_r, ori_s), (ins_r, ins_s), (rev_r, rev_s), k=k, version=wise_version)
    per_query: dict[str, dict] = {}
    rank_means: dict[str, list[float]] = {"ori": [], "ins": [], "rev": []}
    for (qid, _, _), (row, ranks) in zip(scored, rows):
        per_query[qid] = row
        for mode, rank in ranks.items():
            rank_means[mode].append(rank)
    wise_q = [row["WISE"] for row in per_query.values() if row["WISE"] is not None]
    sicr_q = [row["SICR"] for row in per_query.values() if row["SICR"] is not None]
    pmrr_q = [row["p-MRR"] for row in per_query.values() if row["p-MRR"] is not None]
    return {**{n: mean_or_undefined(v, UNDEFINED_REASONS[n]) for n, v in (("WISE", wise_q), ("SICR", sicr_q),
                                                                          ("p-MRR", pmrr_q))},
            "n_queries": len(wise_q),
            "n_queries_pmrr": len(pmrr_q), "mean_rank": {mode: _mean(v) for mode, v in rank_means.items()},
            "per_query": per_query, "missing_queries": sorted(missing), "ties": ties, "K": int(k)}


def _judged(qrels_ori: Mapping[str, Mapping[str, int]], qrels_ins: Mapping[str, Mapping[str, int]],
            runs: tuple[RankedRun, ...]) -> tuple[list[tuple[str, list[str], list[str]]], list[str]]:
    """``(qid, positives, negatives)`` of each query with a positive or a negative that every run
    ranks, and the queries with one that some run does not rank."""
    scored: list[tuple[str, list[str], list[str]]] = []
    missing: list[str] = []
    for qid, ori in qrels_ori.items():
        ins = qrels_ins.get(qid, {})
        positives = [d for d, rel in ori.items() if rel >= 1 and ins.get(d, 0) >= 1]
        negatives = [d for d, rel in ori.items() if rel >= 1 and ins.get(d, 0) < 1]
        if not positives and not negatives:
            continue
        if any(qid not in run for run in runs):
            missing.append(qid)
            continue
        scored.append((qid, positives, negatives))
    return scored, missing


def _mean(values: list[float]) -> float | None:
    return (sum(values) / len(values)) if values else None


def query_scores(ori: Mapping[str, float], ins: Mapping[str, float], rev: Mapping[str, float], positives: list[str],
                 negatives: list[str], *, ties: str = "docid", k: int = 20,
                 wise_version: str = "paper") -> tuple[dict, dict[str, float]]:
    """One query's row of :func:`infosearch_metrics` from its three rankings: ``{"WISE", "SICR",
    "p-MRR", "n_positives", "n_negatives"}`` (WISE and SICR None without positives, p-MRR without
    negatives), and the mean rank of its positives in each mode (``{}`` without positives).

    >>> row, ranks = query_scores({"h": 0.9, "g": 0.8}, {"g": 0.95, "h": 0.5}, {"h": 0.9, "g": 0.2}, ["g"], ["h"])
    >>> row["WISE"], row["SICR"], row["p-MRR"], ranks  # g: rank 2 in ori and rev (no reward, no penalty); h: 1 -> 2
    (0.0, 0.0, 0.5, {'ori': 2.0, 'ins': 1.0, 'rev': 2.0})
    """
    judged = positives + negatives
    r_ori, r_ins, r_rev = (doc_ranks(ori, judged, ties=ties), doc_ranks(ins, judged, ties=ties),
                           doc_ranks(rev, positives, ties=ties))
    ori_r, ins_r = ([r[d] for d in judged] for r in (r_ori, r_ins))
    rev_r = [r_rev[d] for d in positives]
    ori_l, ins_l, rev_l = (tuple(map(list, zip(*r))) or ([], []) for r in (ori_r, ins_r, rev_r))
    return _rows([(len(positives), len(negatives))], ori_l, ins_l, rev_l, k=k, version=wise_version)[0]


def wise_scores(r_ori: np.ndarray, r_ins: np.ndarray, r_rev: np.ndarray, *, n: np.ndarray, k: int = 20,
                version: str = "paper") -> np.ndarray:
    """:func:`wise_score` of many documents at once (``n`` per document; the same operations,
    value for value).

    >>> wise_scores(np.array([3, 10, 4]), np.array([1, 2, 8]), np.array([9, 30, 6]), n=np.array([5, 5, 5])).tolist()
    [1.0, 0.42426406871192845, -0.5]
    """
    ro, ri, rr = (np.asarray(r, dtype=np.int64) for r in (r_ori, r_ins, r_rev))
    with np.errstate(divide="ignore", invalid="ignore"):  # ranks are >= 1; the branches not taken may divide by 0
        gain = np.sqrt(np.maximum(ro - ri, 0)) if version == "evaluator" else (ro - ri)
        reward = np.where((ro < n) & (ri == 1), 1.0,
                          np.where(ro <= k, (1.0 - gain / k) * (1.0 / np.sqrt(ri)), 0.01))
        penalty = np.where((rr < ro) & (ro < ri), -1.0, np.where(ro <= ri, (ro - ri) / ri, (rr - ro) / ro))
    return np.where((ri <= ro) & (ro < rr), reward, penalty)


def sicr_indicators(r_ori: np.ndarray, r_ins: np.ndarray, r_rev: np.ndarray, s_ori: np.ndarray, s_ins: np.ndarray,
                    s_rev: np.ndarray) -> np.ndarray:
    """:func:`sicr_indicator` of many documents at once (0 / 1 as int64).

    >>> sicr_indicators(*(np.array(v) for v in ([3, 1], [1, 1], [5, 2], [0.5, 0.5], [0.9, 0.5], [0.1, 0.1]))).tolist()
    [1, 1]
    """
    ro, ri, rr = (np.asarray(r, dtype=np.int64) for r in (r_ori, r_ins, r_rev))
    so, si, sr = (np.asarray(v, dtype=np.float64) for v in (s_ori, s_ins, s_rev))
    first = (ri == 1) & (rr > ro) & (si >= so) & (so > sr)
    other = (ri < ro) & (rr > ro) & (si > so) & (so > sr)
    return np.where(ro == 1, first, other).astype(np.int64)


def _rows(counts: list[tuple[int, int]], ori: tuple[list, list], ins: tuple[list, list], rev: tuple[list, list], *,
          k: int, version: str = "paper") -> list[tuple[dict, dict[str, float]]]:
    """The row of :func:`query_scores` of each query with ``(positives, negatives)`` counts, from
    the ranks and scores (``(ranks, scores)``, flat over the queries) of each query's positives
    then negatives in the ori and ins runs, and of its positives in the rev run. The formulas run
    on arrays; each query's means are summed in Python, document by document, as the scalar code."""
    if not counts:
        return []
    n_pos = np.array([p for p, _ in counts], dtype=np.int64)
    n_all = np.array([p + n for p, n in counts], dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(n_all)[:-1]]).astype(np.int64)  # each query's first judged entry
    within = np.arange(int(n_all.sum()), dtype=np.int64) - np.repeat(start, n_all)
    positive = within < np.repeat(n_pos, n_all)  # positives come first in each query
    ro, ri = np.asarray(ori[0], dtype=np.int64), np.asarray(ins[0], dtype=np.int64)
    p_idx, n_idx = np.flatnonzero(positive), np.flatnonzero(~positive)
    wise = wise_scores(ro[p_idx], ri[p_idx], rev[0], n=np.repeat(n_all, n_pos), k=k, version=version).tolist()
    sicr = sicr_indicators(ro[p_idx], ri[p_idx], rev[0], np.asarray(ori[1], dtype=np.float64)[p_idx],
                           np.asarray(ins[1], dtype=np.float64)[p_idx], rev[1]).tolist()
    pmrr = pair_scores(ro[n_idx], ri[n_idx]).tolist()
    ori_r, ins_r, rev_r = ori[0], ins[0], rev[0]
    out = []
    at = at_pos = at_neg = 0
    for p, n in counts:
        row: dict = {"WISE": None, "SICR": None, "p-MRR": None, "n_positives": p, "n_negatives": n}
        ranks: dict[str, float] = {}
        if p:
            row["WISE"] = sum(wise[at_pos:at_pos + p]) / p
            row["SICR"] = sum(sicr[at_pos:at_pos + p]) / p
            ranks = {"ori": sum(ori_r[at:at + p]) / p, "ins": sum(ins_r[at:at + p]) / p,
                     "rev": sum(rev_r[at_pos:at_pos + p]) / p}
        if n:
            row["p-MRR"] = sum(pmrr[at_neg:at_neg + n]) / n
        out.append((row, ranks))
        at, at_pos, at_neg = at + p + n, at_pos + p, at_neg + n
    return out
