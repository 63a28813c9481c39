"""Agreement coefficients on count matrices (items x declared categories) and label sequences.

Conventions: docs/statistics.md. Every function takes the data positionally and the
options keyword-only; the columns of a count matrix are the declared categories in declared order.
A coefficient that cannot be computed (0/0, too few items) is returned as :class:`Undefined` with
the reason, never as 0, 1 or NaN.

Library implementations are the reference where they apply: statsmodels ``fleiss_kappa`` (equal
label counts per item), scikit-learn ``cohen_kappa_score`` and ``krippendorff.alpha``. The
hand-written parts (Gwet's generalisation for varying label counts, Gwet AC1) are computed from sums
of per-item quantities by the vectorised kernels of :mod:`annotation.agreement.kernels`, which the
bootstrap (:mod:`annotation.agreement.bootstrap`) reuses on resampled sums.
"""
from __future__ import annotations

import math
from typing import Sequence

import krippendorff
import numpy as np
import pandas as pd

from annotation.agreement.kernels import MIN_PAIRABLE, kappa_from_sums, summed_features
from annotation.agreement.majority import majority_index
from evaluation.undefined import Undefined, is_defined  # noqa: F401 (re-exported)
from storage.errors import IFJudgeError, InvalidAnswer


# --------------------------------------------------------------------------- Landis & Koch

def landis_koch_band(value) -> str | None:
    """Landis & Koch (1977) band of a kappa, on the value rounded to 10 decimals.

    ``< 0`` poor, ``<= .20`` slight, ``<= .40`` fair, ``<= .60`` moderate, ``<= .80`` substantial,
    else almost perfect. Undefined values have no band (``None``).

    References
    ----------
    Landis, J. R., Koch, G. G. (1977). The measurement of observer agreement for categorical data.
    Biometrics 33(1), 159-174.

    Examples
    --------
    >>> landis_koch_band(0.2000000000001), landis_koch_band(0.21), landis_koch_band(-0.1)
    ('slight', 'fair', 'poor')
    """
    if not is_defined(value) or math.isnan(float(value)):
        return None
    v = round(float(value), 10)
    if v < 0:
        return "poor"
    for bound, name in ((0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if v <= bound:
            return name
    return "almost perfect"


# --------------------------------------------------------------------------- checks

def check_categories(categories: Sequence[str]) -> tuple[str, ...]:
    """The declared categories as a tuple of strings; refuses fewer than 2 or duplicates."""
    cats = tuple(str(c) for c in categories)
    if len(cats) < 2:
        raise IFJudgeError(f"at least 2 declared categories are needed, got {list(cats)}")
    seen = set()
    for c in cats:
        if c in seen:
            raise IFJudgeError(f"category {c!r} is declared twice in {list(cats)}")
        seen.add(c)
    return cats


def interval_values(categories: Sequence[str]) -> np.ndarray:
    """Numeric value of each category for the interval level: the number itself when every
    category parses as a number, else its 0-based index in the declared order."""
    try:
        values = np.array([float(c) for c in categories])
    except ValueError:
        return np.arange(len(categories), dtype=float)
    if len(np.unique(values)) != len(values) or not np.isfinite(values).all():
        raise IFJudgeError(f"categories {list(categories)} do not have distinct finite numeric values")
    return values


def _counts(counts) -> np.ndarray:
    c = np.asarray(counts)
    if c.ndim != 2 or c.shape[1] < 2:
        raise IFJudgeError(f"a count matrix of shape (items, >= 2 categories) is needed, got shape {c.shape}")
    if (c < 0).any():
        raise IFJudgeError("a count matrix cannot hold negative counts")
    return c


def _names(categories, q: int) -> tuple[str, ...]:
    return tuple(categories) if categories is not None else tuple(str(i) for i in range(q))


def pairable_reason(n_pairable: int) -> str | None:
    """Why a chance-corrected coefficient is undefined for lack of pairable items, or None."""
    if n_pairable == 0:
        return "no item has 2 or more labels"
    if n_pairable < MIN_PAIRABLE:
        return f"only {n_pairable} items have 2 or more labels; at least {MIN_PAIRABLE} are needed"
    return None


def single_category_reason(totals: np.ndarray, categories, what: str = "label") -> str | None:
    """Why a coefficient with chance agreement 1 is 0/0 (every ``what`` in one category), or None."""
    used = np.flatnonzero(np.asarray(totals) > 0)
    if len(used) == 1:
        return (f"every {what} is {categories[used[0]]!r}: expected agreement is 1, "
                f"so the coefficient is 0/0")
    return None


# --------------------------------------------------------------------------- public coefficients

def _n_pairable(c: np.ndarray) -> int:
    return int((c.sum(1) >= 2).sum())


def _equal_counts(c: np.ndarray) -> bool:
    n = c.sum(1)
    n = n[n > 0]
    return len(n) > 0 and n.min() == n.max() >= 2


def percent_agreement(counts, *, unanimous: bool = False):
    """Mean over items with >= 2 labels of the share of agreeing label pairs,
    ``P_i = sum_k n_ik (n_ik - 1) / (n_i (n_i - 1))``; with ``unanimous=True`` the share of those
    items on which every label is the same.

    Examples
    --------
    >>> percent_agreement([[3, 0], [2, 1]])  # (1 + 1/3) / 2
    0.6666666666666666
    """
    c = _counts(counts)
    n_pair = _n_pairable(c)
    if n_pair == 0:
        return Undefined(pairable_reason(0))
    S, cols = summed_features(c)
    key = "unanimous" if unanimous else "agree"
    return float(S[0, cols[key]][0] / S[0, cols["pairable"]][0])


def _multirater(counts, method: str, categories=None):
    c = _counts(counts)
    reason = pairable_reason(_n_pairable(c))
    if reason:
        return Undefined(reason)
    if method == "fleiss":
        rated = c[c.sum(1) > 0]
        reason = single_category_reason((rated / rated.sum(1, keepdims=True)).sum(0), _names(categories, c.shape[1]))
        if reason:
            return Undefined(reason)
    if method in ("fleiss", "randolph") and _equal_counts(c):
        from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa  # imported when used: 0.8 s

        return float(sm_fleiss_kappa(c[c.sum(1) > 0], method=method))
    S, cols = summed_features(c)
    name = {"fleiss": "fleiss_kappa", "randolph": "randolph_kappa", "ac1": "gwet_ac1"}[method]
    return float(kappa_from_sums(S, cols, c.shape[1])[name][0])


def randolph_kappa(counts, *, categories: Sequence[str] | None = None):
    """Randolph's free-marginal multirater kappa: ``(P_o - 1/q) / (1 - 1/q)``, q = number of
    declared categories (columns), ``P_o`` = :func:`percent_agreement`.

    statsmodels ``fleiss_kappa(method='randolph')`` when every item has the same number of labels.

    References
    ----------
    Randolph, J. J. (2005). Free-marginal multirater kappa (multirater kappa_free): an alternative
    to Fleiss' fixed-marginal multirater kappa. Joensuu Learning and Instruction Symposium.

    Examples
    --------
    >>> round(randolph_kappa([[3, 0], [3, 0], [2, 1]]), 4)  # P_o = 7/9, (7/9 - 1/2) / (1/2)
    0.5556
    """
    return _multirater(counts, "randolph", categories)


def fleiss_kappa(counts, *, categories: Sequence[str] | None = None):
    """Fleiss' kappa ``(P_o - P_e) / (1 - P_e)``, ``P_e = sum_k pi_k^2``.

    With the same number of labels on every item this is statsmodels ``fleiss_kappa`` (``pi_k`` =
    overall share of category k). With varying numbers, Gwet's generalisation: ``P_o`` averaged over
    items with >= 2 labels, ``pi_k = mean_i n_ik / n_i`` over items with >= 1 label (both reduce to
    Fleiss' formula when counts are equal). Undefined when every label is in one category.

    References
    ----------
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological
    Bulletin 76(5), 378-382. Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed., ch. 5.

    Examples
    --------
    >>> round(fleiss_kappa([[2, 0], [0, 2], [1, 1]]), 4)  # P_o = 2/3, P_e = 1/2
    0.3333
    """
    return _multirater(counts, "fleiss", categories)


def gwet_ac1(counts):
    """Gwet's AC1 for any number of raters and missing labels: ``(P_a - P_e) / (1 - P_e)``,
    ``P_a`` = :func:`percent_agreement`, ``P_e = sum_k pi_k (1 - pi_k) / (q - 1)``,
    ``pi_k = mean_i n_ik / n_i`` over items with >= 1 label.

    References
    ----------
    Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of high
    agreement. British Journal of Mathematical and Statistical Psychology 61, 29-48.

    Examples
    --------
    >>> round(gwet_ac1([[2, 0], [0, 2], [1, 1]]), 4)  # P_a = 2/3, P_e = 1/2
    0.3333
    """
    return _multirater(counts, "ac1")


def krippendorff_alpha(counts, *, level: str = "nominal", values: Sequence[float] | None = None,
                       categories: Sequence[str] | None = None):
    """Krippendorff's alpha ``1 - D_o / D_e`` via ``krippendorff.alpha(value_counts=...)``.

    ``level``: nominal, ordinal (declared column order) or interval (``values`` per column, default
    the column index). Items with fewer than 2 labels are not pairable and do not count.

    References
    ----------
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for
    Communication Departmental Papers 43.

    Examples
    --------
    >>> round(krippendorff_alpha([[2, 0], [0, 2], [1, 1]]), 4)  # 1 - D_o/D_e = 1 - 2 / (2 * 3 * 3 / 5)
    0.4444
    """
    c = _counts(counts)
    q = c.shape[1]
    pair = c[c.sum(1) >= 2]
    reason = pairable_reason(len(pair))
    if reason:
        return Undefined(reason)
    reason = single_category_reason(pair.sum(0), _names(categories, q), "pairable label")
    if reason:
        return Undefined(reason)
    if level not in ("nominal", "ordinal", "interval"):
        raise IFJudgeError(f"level must be nominal, ordinal or interval, got {level!r}")
    domain = np.arange(q, dtype=float) if values is None or level != "interval" else np.asarray(values, float)
    return float(krippendorff.alpha(value_counts=pair.astype(float), value_domain=domain, level_of_measurement=level))


def cohen_kappa_table(table: np.ndarray, categories: Sequence[str], *, weights: str | None = None,
                      who: str = "both annotators"):
    """Cohen's kappa of a q x q contingency table (rows: first rater, columns: second), computed by
    scikit-learn ``cohen_kappa_score(labels=range(q), sample_weight=cell counts)``, or
    :class:`Undefined` with the reason (no shared item; both raters used one same category)."""
    t = np.asarray(table, dtype=np.int64)
    n = int(t.sum())
    if n < MIN_PAIRABLE:
        return Undefined(f"{who} share {n} item(s); at least {MIN_PAIRABLE} are needed")
    rows, cols = t.sum(1), t.sum(0)
    if (rows > 0).sum() == 1 and (cols > 0).sum() == 1 and np.argmax(rows) == np.argmax(cols):
        return Undefined(f"{who} gave {categories[int(np.argmax(rows))]!r} to all {n} shared items: "
                         f"expected agreement is 1, so kappa is 0/0")
    from sklearn.metrics import cohen_kappa_score  # imported when used: 0.85 s a process otherwise pays

    r, c = np.nonzero(t)
    return float(cohen_kappa_score(r, c, labels=np.arange(len(categories)), weights=weights,
                                   sample_weight=t[r, c].astype(float)))


def contingency_table(c1: np.ndarray, c2: np.ndarray, q: int) -> np.ndarray:
    """q x q table of two aligned arrays of category indices."""
    return np.bincount(np.asarray(c1) * q + np.asarray(c2), minlength=q * q).reshape(q, q)


def cohen_kappa(y1: Sequence, y2: Sequence, *, labels: Sequence[str], weights: str | None = None):
    """Cohen's kappa ``(p_o - p_e) / (1 - p_e)`` of two raters on the same items (scikit-learn
    ``cohen_kappa_score``), with the declared ``labels``; ``weights`` None, 'linear' or 'quadratic'
    (distance = difference of the label indices in declared order).

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and Psychological
    Measurement 20(1), 37-46. Cohen, J. (1968). Weighted kappa. Psychological Bulletin 70(4).

    Examples
    --------
    >>> cohen_kappa(["Yes", "No", "Yes", "No"], ["Yes", "No", "No", "No"], labels=["Yes", "No"])
    0.5
    """
    cats = check_categories(labels)
    if len(y1) != len(y2):
        raise IFJudgeError(f"y1 and y2 have different lengths ({len(y1)} and {len(y2)})")
    codes = []
    for y in (y1, y2):
        code = pd.Index(list(cats)).get_indexer(pd.Series(list(y), dtype=object).astype(str))
        if (code < 0).any():
            bad = list(y)[int(np.flatnonzero(code < 0)[0])]
            raise InvalidAnswer(f"label {bad!r} is not one of the declared categories: {', '.join(cats)}")
        codes.append(code.astype(np.int64))
    return cohen_kappa_table(contingency_table(codes[0], codes[1], len(cats)), cats, weights=weights)


def majority_vote(counts) -> np.ndarray:
    """Index of the category with a strict plurality per row; -1 for a tie (no majority), a row
    without labels or a row with one label (no majority yet): :func:`annotation.agreement.majority.majority_index`.

    Examples
    --------
    >>> majority_vote([[2, 1, 0], [1, 1, 0], [0, 0, 1], [0, 0, 2]]).tolist()
    [0, -1, -1, 2]
    """
    return majority_index(_counts(counts))
