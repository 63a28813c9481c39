"""Top-k selection over a score vector, shared by the retrievers."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def top_k(scores: np.ndarray, doc_ids: Sequence[str], k: int, *, drop_zero: bool = False) -> dict[str, float]:
    """The ``k`` best documents by score, best first, as ``{doc_id: score}``.

    ``np.argpartition`` finds the k best in O(n), then only those k are sorted. Ties are broken
    by doc id descending, as trec_eval does, so a run's dict order is its ranking.
    With ``drop_zero`` documents scoring exactly 0 are left out (BM25: no query term in common).

    Examples
    --------
    >>> top_k(np.array([0.1, 0.9, 0.5]), ["a", "b", "c"], 2)
    {'b': 0.9, 'c': 0.5}
    """
    scores = np.asarray(scores, dtype=np.float64)
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return {}
    if k < n:
        idx = np.argpartition(-scores, k - 1)[:k]
        # Documents tied with the k-th score may be cut arbitrarily by argpartition: take them
        # all so that the doc-id tie-break below is deterministic.
        kth = scores[idx].min()
        idx = np.union1d(idx, np.flatnonzero(scores == kth))
    else:
        idx = np.arange(n)
    order = sorted(idx.tolist(), key=lambda i: (scores[i], doc_ids[i]), reverse=True)[:k]
    return {doc_ids[i]: float(scores[i]) for i in order if not (drop_zero and scores[i] == 0.0)}
