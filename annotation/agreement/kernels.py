"""Vectorised kernels of the agreement statistics: per-item features whose (weighted) sums determine
every count-based coefficient, and the coefficients computed from those sums, one value per row.

The public coefficients (:mod:`annotation.agreement.stats`) use them on the observed data; the
bootstrap (:mod:`annotation.agreement.bootstrap`) on resampled sums, so one replicate costs one
matrix product instead of a pass over the items. Formulas and sources are those of
:mod:`annotation.agreement.stats`; NaN marks 0/0 here (the public functions turn it into
:class:`annotation.agreement.stats.Undefined` with the reason).
"""
from __future__ import annotations

import numpy as np

from annotation.agreement.majority import majority_index
from storage.errors import IFJudgeError

MIN_PAIRABLE = 1  # one item with >= 2 labels makes the coefficients defined unless they are 0/0 (docs/statistics.md)


# --------------------------------------------------------------------------- per-item features

def item_features(counts: np.ndarray, gold: np.ndarray | None = None, *,
                  overlap: np.ndarray | None = None, adjudicated: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """Per-row quantities whose (weighted) sums determine every count-based statistic.

    ``overlap`` (planned annotators per row) and ``adjudicated`` (category index a lead decided,
    -1 for none) feed the majority vote (:func:`annotation.agreement.majority.majority_index`). A tie is a row
    with >= 2 labels, no adjudication and no strict plurality; ``decided`` marks the rows with a
    majority (or an adjudication).

    Returns ``(F, cols)``: ``F`` has one row per row of ``counts``; ``cols`` maps a name to the
    column slice. Summing rows (with bootstrap weights) and passing the sums to
    :func:`kappa_from_sums` (or :func:`annotation.agreement.bootstrap.statistics_from_sums`) gives the statistics of the corresponding set of items.
    """
    r = np.asarray(counts, dtype=float)
    u, q = r.shape
    n = r.sum(1)
    pairable = n >= 2
    rated = n >= 1
    safe_pairs = np.where(pairable, n * (n - 1), 1.0)
    agree = np.where(pairable, (r * (r - 1)).sum(1) / safe_pairs, 0.0)
    unanimous = pairable & (r.max(1) == n)
    share = np.where(rated[:, None], r / np.where(rated, n, 1.0)[:, None], 0.0)
    eye = np.eye(q)
    coinc = (r[:, :, None] * r[:, None, :] - r[:, :, None] * eye) / np.where(pairable, n - 1, 1.0)[:, None, None]
    coinc[~pairable] = 0.0
    vote = majority_index(r, overlap=overlap, adjudicated=adjudicated)  # the one rule: annotation.agreement.majority
    has_major = vote >= 0
    major = np.where(has_major, vote, 0)
    major_onehot = np.zeros((u, q))
    major_onehot[has_major, major[has_major]] = 1.0
    blocks = {
        "pairable": pairable[:, None], "agree": agree[:, None], "unanimous": unanimous[:, None],
        "rated": rated[:, None], "share": share, "labels": r, "coinc": coinc.reshape(u, q * q),
        "major": major_onehot,
    }
    if gold is not None:
        g = np.asarray(gold)
        has_gold = rated & (g >= 0)
        mg = np.zeros((u, q * q))
        ok = has_gold & has_major
        mg[ok, major[ok] * q + g[ok]] = 1.0
        blocks.update({
            "gold": has_gold[:, None], "tie": (has_gold & pairable & ~has_major)[:, None],
            "decided": (has_gold & has_major)[:, None],
            "correct": (ok & (major == g))[:, None], "major_gold": mg,
        })
    cols, parts, start = {}, [], 0
    for name, block in blocks.items():
        block = np.asarray(block, dtype=float)
        cols[name] = slice(start, start + block.shape[1])
        parts.append(block)
        start += block.shape[1]
    return np.hstack(parts), cols


def _div(num, den):
    num, den = np.broadcast_arrays(np.asarray(num, float), np.asarray(den, float))
    out = np.full(num.shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def kappa_from_sums(S: np.ndarray, cols: dict, q: int) -> dict[str, np.ndarray]:
    """Percent agreement, Randolph, Fleiss (Gwet's generalisation) and Gwet AC1 from summed
    :func:`item_features` (``S`` of shape (B, K)); NaN marks 0/0 (no pairable item counts as
    0/0 too)."""
    S = np.atleast_2d(S)
    n_pair = S[:, cols["pairable"]][:, 0]
    po = _div(S[:, cols["agree"]][:, 0], n_pair)
    po[n_pair < MIN_PAIRABLE - 1e-9] = np.nan
    pi = _div(S[:, cols["share"]], S[:, cols["rated"]])
    pe_f = (pi ** 2).sum(1)
    single = (S[:, cols["share"]] > 0).sum(1) <= 1
    fleiss = _div(po - pe_f, 1 - pe_f)
    fleiss[single] = np.nan
    pe_r = 1.0 / q
    pe_g = (pi * (1 - pi)).sum(1) / (q - 1)
    return {
        "randolph_kappa": (po - pe_r) / (1 - pe_r),
        "fleiss_kappa": fleiss,
        "gwet_ac1": _div(po - pe_g, 1 - pe_g),
    }


def alpha_from_coincidences(o: np.ndarray, *, level: str = "nominal",
                            values: np.ndarray | None = None) -> np.ndarray:
    """Krippendorff's alpha ``1 - sum(o*d) / sum(e*d)`` from coincidence matrices ``o`` (B, q, q),
    ``e = (n_c n_k - [c=k] n_c) / (n - 1)``, ``d`` from :func:`distance_matrix`. NaN marks 0/0
    (fewer than 2 distinct pairable values)."""
    o = np.asarray(o, float)
    q = o.shape[-1]
    o = o.reshape(-1, q, q)
    n_v = o.sum(1)
    n = n_v.sum(1)
    vals = np.arange(q, dtype=float) if values is None else np.asarray(values, float)
    if level == "ordinal":
        d = np.stack([distance_matrix(level, vals, nv) for nv in n_v])
    else:
        d = distance_matrix(level, vals)[None]
    e = (n_v[:, :, None] * n_v[:, None, :] - n_v[:, :, None] * np.eye(q)) / np.where(n > 1, n - 1, 1)[:, None, None]
    out = 1 - _div((o * d).sum((1, 2)), (e * d).sum((1, 2)))
    out[(n_v > 0).sum(1) <= 1] = np.nan
    return out


def distance_matrix(level: str, values: np.ndarray, n_v: np.ndarray | None = None) -> np.ndarray:
    """Krippendorff's squared distances between categories: nominal [c != k]; interval
    (v_c - v_k)^2; ordinal (sum_{g=c..k} n_g - (n_c + n_k)/2)^2 (needs the value totals n_v)."""
    q = len(values)
    if level == "nominal":
        return 1.0 - np.eye(q)
    if level == "interval":
        v = np.asarray(values, float)
        return (v[:, None] - v[None, :]) ** 2
    if level == "ordinal":
        cum = np.concatenate([[0.0], np.cumsum(n_v)])
        i, k = np.minimum.outer(np.arange(q), np.arange(q)), np.maximum.outer(np.arange(q), np.arange(q))
        return (cum[k + 1] - cum[i] - (n_v[i] + n_v[k]) / 2) ** 2
    raise IFJudgeError(f"level must be nominal, ordinal or interval, got {level!r}")


def cohen_from_tables(T: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Cohen's kappa ``1 - sum(w*O) / sum(w*E)`` of contingency tables ``T`` (..., q, q),
    ``E = row x col / n``; weights as scikit-learn (None, 'linear', 'quadratic' on the category
    index). NaN marks 0/0 and empty tables."""
    T = np.asarray(T, float)
    q = T.shape[-1]
    idx = np.arange(q)
    w = {None: 1.0 - np.eye(q), "linear": np.abs(idx[:, None] - idx[None, :]).astype(float),
         "quadratic": ((idx[:, None] - idx[None, :]) ** 2).astype(float)}[weights]
    n = T.sum((-1, -2))
    E = T.sum(-1)[..., :, None] * T.sum(-2)[..., None, :] / np.where(n > 0, n, 1)[..., None, None]
    out = 1 - _div((w * T).sum((-1, -2)), (w * E).sum((-1, -2)))
    out[n < MIN_PAIRABLE - 1e-9] = np.nan
    return out


def distinct_rows(cols: np.ndarray):
    """Distinct rows of a non-negative integer matrix: ``(first, inverse)`` = the first row of each
    distinct row and the distinct-row index of every row."""
    cols = np.asarray(cols, dtype=np.int64)
    base = int(cols.max(initial=0)) + 1
    if float(base) ** cols.shape[1] < 2.0 ** 62:
        code = cols @ (base ** np.arange(cols.shape[1], dtype=np.int64))
        _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(cols, axis=0, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def distinct_patterns(counts: np.ndarray, gold: np.ndarray | None = None, *extra):
    """Distinct rows of (counts, gold, extra per-row columns) (see :func:`distinct_rows`)."""
    c = np.asarray(counts, dtype=np.int64)
    cols = [c] + [np.asarray(x, np.int64)[:, None] + 1 for x in (gold, *extra) if x is not None]
    return distinct_rows(np.column_stack(cols) if len(cols) > 1 else c)


def _at(x, rows):
    return None if x is None else np.asarray(x)[rows]


def pattern_sums(counts, gold=None, *, overlap=None, adjudicated=None):
    """Sums over rows of :func:`item_features`, computed once per distinct row pattern.

    Returns ``(S, cols, F, pattern_of_row)`` with ``S`` of shape (1, K)."""
    c = np.asarray(counts)
    first, inverse = distinct_patterns(c, gold, overlap, adjudicated)
    F, cols = item_features(c[first], _at(gold, first), overlap=_at(overlap, first),
                            adjudicated=_at(adjudicated, first))
    freq = np.bincount(inverse, minlength=len(first)).astype(float)
    return (freq @ F)[None, :], cols, F, inverse


def summed_features(counts, gold=None) -> tuple[np.ndarray, dict]:
    """``(S, cols)`` of :func:`pattern_sums`: the summed :func:`item_features` of every row.

    >>> S, cols = summed_features([[3, 0], [2, 1]])
    >>> float(S[0, cols["agree"]][0] / S[0, cols["pairable"]][0])  # percent agreement (1 + 1/3) / 2
    0.6666666666666666
    """
    S, cols, _, _ = pattern_sums(counts, gold)
    return S, cols
