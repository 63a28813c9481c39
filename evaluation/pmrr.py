"""p-MRR (FollowIR): how the ranks of the documents whose relevance changed move between two runs.

Weller et al. (2024), "FollowIR: Evaluating and Teaching Information Retrieval Models to Follow
Instructions", §3.1 eq. (1). The per-document score compares the reciprocal ranks of a document
under the original instruction (R_og) and under the changed instruction (R_new).
"""
from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

from evaluation.runs import TIES, RankedRun, as_ranked_run, check_ties
from evaluation.undefined import mean_or_undefined

__all__ = ["TIES", "changed_documents", "doc_ranks", "p_mrr", "pair_score", "pair_scores", "undefined_reason"]


def undefined_reason(original: str = "original", changed: str = "changed") -> str:
    """Why p-MRR is undefined: no query has a changed document that both runs rank (0/0).

    >>> undefined_reason("original", "changed-validated")
    'no query has a document of original whose label differs in changed-validated'
    """
    return f"no query has a document of {original} whose label differs in {changed}"


def doc_ranks(
    docs: Mapping[str, float] | None,
    targets: Iterable[str],
    *,
    ties: str = "docid",
) -> dict[str, tuple[int, float]]:
    """1-based rank and score of each target document in one query's run.

    The rank is the position when the run's documents are ordered by score descending; equal
    scores are ordered by document id descending (``ties="docid"``: trec_eval's order, and MTEB
    2.26's ``get_rank_from_dict``, which sorts by ``(score, doc id)`` descending) or keep the order
    in which the run lists them (``ties="run-order"``: a stable sort by score, as in FollowIR's
    and InfoSearch's original code, which sort the run dict with Python's ``sorted``). A
    document absent from the run gets rank ``len(run) + 1`` and score 0.0 (the reference code's
    value). A whole run's ranks are :meth:`evaluation.runs.RankedRun.ranks`, which this calls.

    Examples
    --------
    >>> run = {"a": 0.5, "b": 0.9, "c": 0.5}
    >>> doc_ranks(run, ["a", "c", "z"])
    {'a': (3, 0.5), 'c': (2, 0.5), 'z': (4, 0.0)}
    >>> doc_ranks(run, ["a", "c"], ties="run-order")
    {'a': (2, 0.5), 'c': (3, 0.5)}
    """
    check_ties(ties)
    targets = list(targets)
    ranks, scores = RankedRun.from_dict({"": docs or {}}).ranks([("", targets)], ties=ties)
    return {d: (r, s) for d, r, s in zip(targets, ranks, scores)}


def pair_score(r_og: int, r_new: int) -> float:
    """p-MRR of one document from its original and new ranks (FollowIR eq. 1).

        R_new / R_og - 1   if R_og >= R_new   (moved up or stayed: <= 0)
        1 - R_og / R_new   otherwise          (moved down: > 0)

    Examples
    --------
    >>> pair_score(10, 5), pair_score(5, 10), pair_score(3, 3)
    (-0.5, 0.5, 0.0)
    """
    if r_og >= r_new:
        return r_new / r_og - 1.0
    return 1.0 - r_og / r_new


def pair_scores(r_og: np.ndarray, r_new: np.ndarray) -> np.ndarray:
    """:func:`pair_score` of many documents at once (the same operations, value for value).

    >>> pair_scores(np.array([10, 5, 3]), np.array([5, 10, 3])).tolist()
    [-0.5, 0.5, 0.0]
    """
    r_og, r_new = np.asarray(r_og, dtype=np.int64), np.asarray(r_new, dtype=np.int64)
    return np.where(r_og >= r_new, r_new / r_og - 1.0, 1.0 - r_og / r_new)


def changed_documents(
    qrels_og: Mapping[str, Mapping[str, int]],
    qrels_changed: Mapping[str, Mapping[str, int]],
) -> dict[str, list[str]]:
    """Per query, the documents of ``qrels_og`` whose label differs in ``qrels_changed`` (MTEB's
    rule: the changed-document set is taken from the original qrels).

    Only queries judged in both versions are compared; a document of the original qrels that the
    changed qrels of its query do not list counts as 0 (not relevant) there; a document judged
    only in the changed version is not a changed document. FollowIR's annotators re-judged only
    the documents relevant under the original narrative, so in its data the changed documents are
    those that went from relevant to not relevant (its ``qrel_diff``). Queries without a changed
    document are left out.

    Examples
    --------
    >>> changed_documents({"q": {"a": 1, "b": 1, "c": 0}}, {"q": {"a": 0, "b": 1, "z": 1}, "r": {"x": 1}})
    {'q': ['a']}
    """
    out: dict[str, list[str]] = {}
    for qid, og in qrels_og.items():
        if qid not in qrels_changed:
            continue
        new = qrels_changed[qid]
        diff = [d for d in og if og[d] != new.get(d, 0)]
        if diff:
            out[qid] = diff
    return out


def p_mrr(
    qrels_og: Mapping[str, Mapping[str, int]],
    qrels_changed: Mapping[str, Mapping[str, int]],
    run_og: Mapping[str, Mapping[str, float]] | RankedRun,
    run_changed: Mapping[str, Mapping[str, float]] | RankedRun,
    *,
    ties: str = "docid",
    qrels_names: tuple[str, str] = ("original", "changed"),
) -> dict:
    """p-MRR: mean over queries of the mean per-document rank change score (FollowIR).

    For each query with >= 1 changed document (:func:`changed_documents`) and each changed
    document d, with R_og its rank in ``run_og`` and R_new its rank in ``run_changed``
    (:func:`doc_ranks`; absent from a run -> ``len(run for the query) + 1``)::

        p(d) = R_new / R_og - 1   if R_og >= R_new
               1 - R_og / R_new   otherwise
        p-MRR(q) = mean_d p(d);   p-MRR = mean_q p-MRR(q)

    Ranges from -1 to 1; higher means the changed instruction pushed the documents that stopped
    being relevant further down. A query with changed documents that is absent from either run
    is skipped (as FollowIR's code does) and listed in ``missing_queries``.

    Parameters
    ----------
    qrels_og, qrels_changed : dict
        ``qrels[qid][docid] -> int`` under the original and the changed instruction.
    run_og, run_changed : RankedRun or dict
        The runs with the original and the changed instruction: :class:`evaluation.runs.RankedRun`
        (a retriever's), or ``run[qid][docid] -> score`` (converted once by
        :meth:`~evaluation.runs.RankedRun.from_dict`).
    ties : {"docid", "run-order"}
        How equal scores are ranked: doc id descending (trec_eval, MTEB 2.26), or the run's own
        order (reproduces FollowIR's original code).
    qrels_names : (str, str)
        What the two qrels are called in the reason of an undefined p-MRR (the qrels versions).

    Returns
    -------
    dict
        ``p-MRR`` (:class:`~evaluation.undefined.Undefined` when no query has a changed document
        present in both runs: :func:`undefined_reason`),
        ``n_queries``, ``per_query`` ({qid: float}), ``n_documents`` (changed documents
        scored), ``missing_queries``, ``ties``.

    References
    ----------
    Weller, O., Chang, B., MacAvaney, S., Lo, K., Cohan, A., Van Durme, B., Lawrie, D.,
    Soldaini, L. (2024). FollowIR. arXiv:2403.15246, §3.1 eq. (1).

    Examples
    --------
    >>> qrels_og = {"q": {"a": 1, "b": 1}}
    >>> qrels_changed = {"q": {"a": 0, "b": 1}}
    >>> run_og = {"q": {"a": 0.9, "b": 0.8, "c": 0.1}}
    >>> run_changed = {"q": {"b": 0.9, "c": 0.5, "a": 0.2}}
    >>> p_mrr(qrels_og, qrels_changed, run_og, run_changed)["p-MRR"]  # a: rank 1 -> 3
    0.6666666666666667
    >>> p_mrr(qrels_og, qrels_og, run_og, run_changed)["p-MRR"]
    Undefined(reason='no query has a document of original whose label differs in changed')
    """
    check_ties(ties)
    run_og, run_changed = as_ranked_run(run_og), as_ranked_run(run_changed)
    changed = changed_documents(qrels_og, qrels_changed)
    present = [(qid, docs) for qid, docs in changed.items() if qid in run_og and qid in run_changed]
    missing = [qid for qid in changed if qid not in run_og or qid not in run_changed]
    values = pair_scores(run_og.ranks(present, ties=ties)[0], run_changed.ranks(present, ties=ties)[0]).tolist()
    per_query: dict[str, float] = {}
    at = 0
    for qid, docs in present:  # summed in Python, document by document: the mean of the scalar formula
        per_query[qid] = sum(values[at:at + len(docs)]) / len(docs)
        at += len(docs)
    return {
        "p-MRR": mean_or_undefined(per_query.values(), undefined_reason(*qrels_names)),
        "n_queries": len(per_query),
        "per_query": per_query,
        "n_documents": at,
        "missing_queries": sorted(missing),
        "ties": ties,
    }
