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

from evaluation.pmrr import _check_ties, doc_ranks, pair_score


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


def infosearch_metrics(
    qrels_ori: Mapping[str, Mapping[str, int]],
    qrels_ins: Mapping[str, Mapping[str, int]],
    run_ori: Mapping[str, Mapping[str, float]],
    run_ins: Mapping[str, Mapping[str, float]],
    run_rev: Mapping[str, Mapping[str, float]],
    *,
    ties: str = "docid",
    k: int = 20,
) -> dict:
    """WISE, SICR and p-MRR of three runs (original, instructed, reversed instruction).

    Per query with >= 1 positive: WISE(q) = mean over its positives of :func:`wise_score`,
    SICR(q) = mean over its positives of :func:`sicr_indicator`; WISE and SICR are the means
    over those queries. p-MRR(q) = mean over the query's negatives of the FollowIR score
    (:func:`evaluation.pmrr.pair_score`, R_og = rank in the ori run, R_new = rank in the ins
    run); p-MRR is the mean over the queries with >= 1 negative. A query with positives or
    negatives that is absent from any of the three runs is skipped and listed in
    ``missing_queries``. See the module docstring for the definitions and for the two places
    where SPEC.md departs from InfoSearch's published code.

    Parameters
    ----------
    qrels_ori, qrels_ins : dict
        ``qrels[qid][docid] -> int`` under the original and the instructed qrels.
    run_ori, run_ins, run_rev : dict
        ``run[qid][docid] -> score`` of the three modes.
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
    >>> qrels_ori = {"q": {"g": 1, "h": 1}}
    >>> qrels_ins = {"q": {"g": 1, "h": 0}}
    >>> run_ori = {"q": {"h": 0.9, "g": 0.8, "x": 0.1}}
    >>> run_ins = {"q": {"g": 0.95, "h": 0.5, "x": 0.1}}
    >>> run_rev = {"q": {"h": 0.9, "x": 0.5, "g": 0.2}}
    >>> r = infosearch_metrics(qrels_ori, qrels_ins, run_ori, run_ins, run_rev)
    >>> r["WISE"], r["SICR"], r["p-MRR"]  # g: 2 -> 1 (ins), 3 (rev), N = 2; h: 1 -> 2
    (0.95, 1.0, 0.5)
    """
    _check_ties(ties)
    if int(k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    per_query: dict[str, dict] = {}
    missing: list[str] = []
    wise_q: list[float] = []
    sicr_q: list[float] = []
    pmrr_q: list[float] = []
    rank_means = {"ori": [], "ins": [], "rev": []}
    for qid, ori in qrels_ori.items():
        ins = qrels_ins.get(qid, {})
        positives = [d for d, rel in ori.items() if rel >= 1 and ins.get(d, 0) >= 1]
        negatives = [d for d, rel in ori.items() if rel >= 1 and ins.get(d, 0) < 1]
        if not positives and not negatives:
            continue
        if qid not in run_ori or qid not in run_ins or qid not in run_rev:
            missing.append(qid)
            continue
        targets = positives + negatives
        r_ori = doc_ranks(run_ori[qid], targets, ties=ties)
        r_ins = doc_ranks(run_ins[qid], targets, ties=ties)
        r_rev = doc_ranks(run_rev[qid], positives, ties=ties) if positives else {}
        row: dict = {"WISE": None, "SICR": None, "p-MRR": None,
                     "n_positives": len(positives), "n_negatives": len(negatives)}
        if positives:
            n = len(positives) + len(negatives)
            wise = []
            sicr = []
            for d in positives:
                (ro, so), (ri, si), (rr, sr) = r_ori[d], r_ins[d], r_rev[d]
                wise.append(wise_score(ro, ri, rr, n=n, k=k))
                sicr.append(sicr_indicator(ro, ri, rr, so, si, sr))
            row["WISE"] = sum(wise) / len(wise)
            row["SICR"] = sum(sicr) / len(sicr)
            wise_q.append(row["WISE"])
            sicr_q.append(row["SICR"])
            for mode, ranks in (("ori", r_ori), ("ins", r_ins), ("rev", r_rev)):
                rank_means[mode].append(sum(ranks[d][0] for d in positives) / len(positives))
        if negatives:
            values = [pair_score(r_ori[d][0], r_ins[d][0]) for d in negatives]
            row["p-MRR"] = sum(values) / len(values)
            pmrr_q.append(row["p-MRR"])
        per_query[qid] = row

    def mean(values):
        return (sum(values) / len(values)) if values else None

    return {
        "WISE": mean(wise_q),
        "SICR": mean(sicr_q),
        "p-MRR": mean(pmrr_q),
        "n_queries": len(wise_q),
        "n_queries_pmrr": len(pmrr_q),
        "mean_rank": {mode: mean(v) for mode, v in rank_means.items()},
        "per_query": per_query,
        "missing_queries": sorted(missing),
        "ties": ties,
        "K": int(k),
    }
