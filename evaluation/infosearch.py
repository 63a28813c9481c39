"""SICR and WISE (InfoSearch): does a gold document rise under the instruction and fall under
the reversed instruction?

Zhou et al. (2024), "Beyond Content Relevance: Evaluating Instruction Following in Retrieval
Models" (InfoSearch), §2.3, eqs. (4)-(9). Three runs of the same queries are compared: with the
original instruction (ori), the instruction (ins) and the reversed instruction (rev).

Definitions used here (SPEC.md, "Evaluation metrics"):

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

Differences from InfoSearch's published code, where SPEC.md decides (documented, on purpose):

- SICR per query is the mean of the indicator over all positives; the published code resets
  its counter inside the loop over positives, so it keeps only the last positive's indicator
  (divided by the number of positives). Identical when a query has one positive, which is the
  InfoSearch design ("only one unique gold document").
- the WISE penalty is -1 when R_rev < R_ori < R_ins (paper eq. 8, SPEC); the published code
  tests R_ins < R_ori < R_rev there (unreachable, that case is rewarded), so for
  R_rev < R_ori < R_ins it returns (R_ori - R_ins) / R_ins instead.
"""
from __future__ import annotations

import math
from typing import Mapping

from evaluation.pmrr import doc_ranks, pair_score
from evaluation.runs import RankedRun, as_ranked_run, check_ties


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


def wise_score(r_ori: int, r_ins: int, r_rev: int, *, n: int, k: int = 20) -> float:
    """WISE of one gold document (InfoSearch eqs. 6-8).

    Reward, when R_ins <= R_ori < R_rev::

        1                                    if R_ori < N and R_ins = 1
        (1 - (R_ori - R_ins) / K) / sqrt(R_ins)   if R_ori <= K
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
    """
    if r_ins <= r_ori < r_rev:
        if r_ori < n and r_ins == 1:
            return 1.0
        if r_ori <= k:
            return (1.0 - (r_ori - r_ins) / k) * (1.0 / math.sqrt(r_ins))
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
                       k: int = 20) -> dict:
    """WISE, SICR and p-MRR of three runs (original, instructed, reversed instruction).

    Per query (:func:`query_scores`) with >= 1 positive: WISE(q) and SICR(q), the means over its
    positives of :func:`wise_score` and :func:`sicr_indicator`; with >= 1 negative: p-MRR(q), the
    mean over its negatives of :func:`evaluation.pmrr.pair_score` (R_og in the ori run, R_new in
    the ins run). Each is then averaged over the queries that have it. A query absent from any of
    the three runs is skipped and listed in ``missing_queries``. The module docstring has the
    definitions and the two places where SPEC.md departs from InfoSearch's published code.

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

    Returns
    -------
    dict
        ``WISE``, ``SICR``, ``p-MRR`` (None when undefined: no query with a positive, resp. a
        negative), ``n_queries`` (queries with >= 1 positive), ``n_queries_pmrr``,
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
    scored: list[tuple[str, list[str], list[str]]] = []
    missing: list[str] = []
    for qid, ori in qrels_ori.items():
        ins = qrels_ins.get(qid, {})
        positives = [d for d, rel in ori.items() if rel >= 1 and ins.get(d, 0) >= 1]
        negatives = [d for d, rel in ori.items() if rel >= 1 and ins.get(d, 0) < 1]
        if not positives and not negatives:
            continue
        if qid not in run_ori or qid not in run_ins or qid not in run_rev:
            missing.append(qid)
            continue
        scored.append((qid, positives, negatives))
    # the ranks of every query's targets, one call per run: flat lists in the order of `scored`
    judged = [(qid, positives + negatives) for qid, positives, negatives in scored]
    ori_r, ori_s = run_ori.ranks(judged, ties=ties)
    ins_r, ins_s = run_ins.ranks(judged, ties=ties)
    rev_r, rev_s = run_rev.ranks([(qid, positives) for qid, positives, _ in scored], ties=ties)
    per_query: dict[str, dict] = {}
    rank_means: dict[str, list[float]] = {"ori": [], "ins": [], "rev": []}
    at = at_rev = 0
    for qid, positives, negatives in scored:
        n_pos, end = len(positives), at + len(positives) + len(negatives)
        per_query[qid], ranks = _query_row(
            (ori_r[at:end], ori_s[at:end]), (ins_r[at:end], ins_s[at:end]),
            (rev_r[at_rev:at_rev + n_pos], rev_s[at_rev:at_rev + n_pos]), n_pos, len(negatives), k=k)
        at, at_rev = end, at_rev + n_pos
        for mode, rank in ranks.items():
            rank_means[mode].append(rank)
    wise_q = [row["WISE"] for row in per_query.values() if row["WISE"] is not None]
    sicr_q = [row["SICR"] for row in per_query.values() if row["SICR"] is not None]
    pmrr_q = [row["p-MRR"] for row in per_query.values() if row["p-MRR"] is not None]
    return {"WISE": _mean(wise_q), "SICR": _mean(sicr_q), "p-MRR": _mean(pmrr_q), "n_queries": len(wise_q),
            "n_queries_pmrr": len(pmrr_q), "mean_rank": {mode: _mean(v) for mode, v in rank_means.items()},
            "per_query": per_query, "missing_queries": sorted(missing), "ties": ties, "K": int(k)}


def _mean(values: list[float]) -> float | None:
    return (sum(values) / len(values)) if values else None


def query_scores(ori: Mapping[str, float], ins: Mapping[str, float], rev: Mapping[str, float], positives: list[str],
                 negatives: list[str], *, ties: str = "docid", k: int = 20) -> tuple[dict, dict[str, float]]:
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
    return _query_row(tuple(map(list, zip(*ori_r))) or ([], []), tuple(map(list, zip(*ins_r))) or ([], []),
                      tuple(map(list, zip(*rev_r))) or ([], []), len(positives), len(negatives), k=k)


def _query_row(ori: tuple[list[int], list[float]], ins: tuple[list[int], list[float]],
               rev: tuple[list[int], list[float]], n_pos: int, n_neg: int, *, k: int) -> tuple[dict, dict[str, float]]:
    """:func:`query_scores` from the ranks and scores of the query's positives then negatives in
    the ori and ins runs (``(ranks, scores)``), and of its positives in the rev run."""
    (ro, so), (ri, si), (rr, sr) = ori, ins, rev
    row: dict = {"WISE": None, "SICR": None, "p-MRR": None, "n_positives": n_pos, "n_negatives": n_neg}
    ranks: dict[str, float] = {}
    if n_pos:
        n = n_pos + n_neg
        wise = [wise_score(ro[j], ri[j], rr[j], n=n, k=k) for j in range(n_pos)]
        sicr = [sicr_indicator(ro[j], ri[j], rr[j], so[j], si[j], sr[j]) for j in range(n_pos)]
        row["WISE"], row["SICR"] = sum(wise) / len(wise), sum(sicr) / len(sicr)
        ranks = {"ori": sum(ro[:n_pos]) / n_pos, "ins": sum(ri[:n_pos]) / n_pos, "rev": sum(rr) / n_pos}
    if n_neg:
        values = [pair_score(ro[j], ri[j]) for j in range(n_pos, n_pos + n_neg)]
        row["p-MRR"] = sum(values) / len(values)
    return row, ranks
