"""Top-k selection in trec_eval's order (score descending, then doc id descending): the one
:func:`top_k` over a score vector, shared by the retrievers, and :func:`top_k_ranking` over one
query's ``{doc_id: score}`` (the measures' run depth, the INSTFOL study's top k)."""
from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

import numpy as np


def top_k(scores: np.ndarray, doc_ids: Sequence[str], k: int, *, drop_zero: bool = False) -> dict[str, float]:
    """The ``k`` best documents by score, best first, as ``{doc_id: score}``.

    ``np.argpartition`` finds the k best in O(n) (:func:`top_k_indices`), then only those are
    sorted. Ties are broken by doc id descending, as trec_eval does, so a run's dict order is its ranking.
    With ``drop_zero`` documents scoring exactly 0 are left out (BM25: no query term in common).
    The same selection as arrays is :func:`top_k_arrays`.

    Examples
    --------
    >>> top_k(np.array([0.1, 0.9, 0.5]), ["a", "b", "c"], 2)
    {'b': 0.9, 'c': 0.5}
    """
    positions, best = top_k_arrays(scores, doc_ids, k, drop_zero=drop_zero)
    return dict(zip([doc_ids[p] for p in positions.tolist()], best.tolist()))


def top_k_arrays(scores: np.ndarray, doc_ids: Sequence[str], k: int, *,
                 drop_zero: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """:func:`top_k` as arrays: the positions in ``doc_ids`` of the ``k`` best documents, best
    first (ties by doc id descending), and their scores as float64 (what a retriever hands to
    :class:`evaluation.runs.RunBuilder`).

    Examples
    --------
    >>> positions, best = top_k_arrays(np.array([0.5, 0.9, 0.5]), ["a", "b", "c"], 2)
    >>> positions.tolist(), best.tolist()
    ([1, 2], [0.9, 0.5])
    """
    scores = np.asarray(scores)
    if scores.dtype.kind != "f":
        scores = scores.astype(np.float64)
    if k <= 0 or scores.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    if drop_zero:
        # Left out before selecting: with fewer than k matches, every zero would tie at the k-th.
        nonzero = np.flatnonzero(scores)
        idx = nonzero[top_k_indices(scores[nonzero], k)]
    else:
        idx = top_k_indices(scores, k)
    best = scores[idx].astype(np.float64)  # only the selected few are converted
    # score descending by numpy (a stable sort of the negated scores), then each run of equal
    # scores by doc id descending in Python: the order of sorting (score, doc id) descending
    order = np.argsort(-best, kind="stable")
    ordered = best[order]
    equal = np.flatnonzero(ordered[1:] == ordered[:-1])
    if equal.shape[0]:
        order = order.tolist()
        starts = equal[np.r_[True, equal[1:] != equal[:-1] + 1]].tolist()  # first pair of each run
        ends = (equal[np.r_[equal[1:] != equal[:-1] + 1, True]] + 2).tolist()  # past its last pair
        ids = [doc_ids[i] for i in idx.tolist()]
        for a, b in zip(starts, ends):
            order[a:b] = sorted(order[a:b], key=ids.__getitem__, reverse=True)
        order = np.asarray(order, dtype=np.int64)
    order = order[:k]
    return idx[order].astype(np.int64), best[order]


def top_k_ranking(docs: Mapping[str, float], k: int) -> dict[str, float]:
    """The first ``k`` documents of one query's ``{doc_id: score}``, best first, in the order of
    :func:`top_k` (score descending, ties by doc id descending, as trec_eval).

    Examples
    --------
    >>> top_k_ranking({"a": 1.0, "b": 1.0, "c": 0.5}, 1)
    {'b': 1.0}
    >>> list(top_k_ranking({"a": 1.0, "b": 2.0, "c": 1.0}, 2))
    ['b', 'c']
    """
    if k <= 0:
        return {}
    if len(docs) <= k:
        candidates = [(score, docid) for docid, score in docs.items()]
    else:  # a dict is cut fastest in Python: the k-th score by a heap, then only those at or above it sorted
        threshold = heapq.nlargest(k, docs.values())[-1]
        candidates = [(score, docid) for docid, score in docs.items() if score >= threshold]
    candidates.sort(reverse=True)
    return {docid: score for score, docid in candidates[:k]}


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best scores plus every score tied with the k-th (unsorted).

    ``np.argpartition`` finds the k best in O(n); documents tied with the k-th score may be cut
    arbitrarily by it, so all of them are taken and the caller's tie-break decides.

    Examples
    --------
    >>> top_k_indices(np.array([0.1, 0.5, 0.9, 0.5]), 2).tolist()
    [1, 2, 3]
    """
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if k >= n:
        return np.arange(n)
    idx = np.argpartition(-scores, k - 1)[:k]
    kth = scores[idx].min()
    return np.flatnonzero(scores >= kth)


class RunningTopK:
    """The ``k`` best documents of one query over scores that arrive chunk by chunk.

    Memory stays O(k) whatever the corpus size; :meth:`result` equals :func:`top_k` over the
    concatenation of every chunk (same documents, same order, same tie-break), because each
    chunk keeps its k best with their ties: a document among the k best of the whole corpus is
    among the k best of any subset holding it.

    Examples
    --------
    >>> best = RunningTopK(2)
    >>> best.add(np.array([0.1, 0.9]), np.array([0, 1]))
    >>> best.add(np.array([0.5, 0.2]), np.array([2, 3]))
    >>> best.result(["a", "b", "c", "d"])
    {'b': 0.9, 'c': 0.5}
    """

    def __init__(self, k: int):
        self.k = k
        self.scores = np.zeros(0, dtype=np.float64)
        self.positions = np.zeros(0, dtype=np.int64)

    def add(self, scores: np.ndarray, positions: np.ndarray) -> None:
        """Offer ``scores[i]`` for the document at corpus position ``positions[i]``."""
        scores = np.asarray(scores, dtype=np.float64)
        keep = top_k_indices(scores, self.k)
        merged_scores = np.concatenate([self.scores, scores[keep]])
        merged_positions = np.concatenate([self.positions, np.asarray(positions, dtype=np.int64)[keep]])
        if merged_scores.shape[0] > self.k:
            keep = top_k_indices(merged_scores, self.k)
            merged_scores, merged_positions = merged_scores[keep], merged_positions[keep]
        self.scores, self.positions = merged_scores, merged_positions

    def result(self, doc_ids: Sequence[str], *, drop_zero: bool = False) -> dict[str, float]:
        """``{doc_id: score}`` best first, ``doc_ids`` indexed by corpus position."""
        positions, best = self.result_arrays(doc_ids, drop_zero=drop_zero)
        return dict(zip([doc_ids[p] for p in positions.tolist()], best.tolist()))

    def result_arrays(self, doc_ids: Sequence[str], *, drop_zero: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`result` as arrays (:func:`top_k_arrays`): corpus positions best first, and scores."""
        kept = self.positions
        order, best = top_k_arrays(self.scores, [doc_ids[p] for p in kept.tolist()], self.k, drop_zero=drop_zero)
        return kept[order], best
