"""Paired significance tests and rank correlation for comparing retrieval systems over the same
queries: the paired sign-flip permutation test and the paired t-test of a per-query difference,
Holm's step-down correction over a family of tests, and Kendall's tau between two leaderboards.

Plain functions over score lists (no storage): :mod:`evaluation.compare` assembles them into a
project's comparison across qrels versions. Undefined cases are
:class:`~evaluation.undefined.Undefined` with the reason, never None, 0 or NaN.
"""
from __future__ import annotations

import gc
import math
from collections.abc import Sequence

import numpy as np
from scipy import special, stats
from statsmodels.stats.multitest import multipletests

from evaluation.undefined import Undefined, is_defined


def paired_permutation_test(a: Sequence[float], b: Sequence[float], *, n_permutations: int = 10_000, seed: int = 0) -> float | Undefined:
    """Two-sided paired permutation (sign-flip) test of mean(a - b) = 0.

    With d_i = a_i - b_i and T = |mean(d)|, under H0 each d_i is equally likely to have either
    sign, so::

        p = #{s in S : |mean(s * d)| >= T} / |S|

    over all 2^n sign vectors S when 2^n <= ``n_permutations`` (exact), else over
    ``n_permutations`` random sign vectors (seeded) plus the observed one,
    p = (1 + #{...}) / (1 + n_permutations) (Phipson & Smyth, 2010). Smucker, Allan & Carterette
    (2007), "A comparison of statistical significance tests for information retrieval
    evaluation", CIKM, recommend this test for IR.

    Undefined with fewer than 2 pairs or when every d_i is 0.

    Examples
    --------
    >>> paired_permutation_test([0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3, 0.4])  # exact: 2 of 16 sign vectors
    0.125
    >>> paired_permutation_test([0.5, 0.5], [0.5, 0.5])
    Undefined(reason='every per-query difference is 0')
    """
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = d.shape[0]
    if n < 2:
        return Undefined("fewer than 2 common queries")
    if not np.any(d != 0):
        return Undefined("every per-query difference is 0")
    observed = abs(d.mean())
    tol = 1e-12 * max(1.0, observed)
    if n <= 20 and 2**n <= n_permutations:
        signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        extreme = np.abs((signs * d).mean(axis=1)) >= observed - tol
        return float(extreme.mean())
    rng = np.random.default_rng(seed)
    count = 0
    for start in range(0, n_permutations, 1000):
        size = min(1000, n_permutations - start)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, n))
        count += int(np.sum(np.abs((signs * d).mean(axis=1)) >= observed - tol))
    return (1 + count) / (1 + n_permutations)


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> dict:
    """Paired t-test of mean(a - b) = 0 (``scipy.stats.ttest_rel``, two-sided):
    t = mean(d) / (sd(d) / sqrt(n)), n - 1 degrees of freedom.

    Returns ``{"t", "p_value"}``, both :class:`~evaluation.undefined.Undefined` with fewer than
    2 pairs or when every difference is equal (sd = 0).

    Examples
    --------
    >>> round(paired_t_test([0.9, 0.8, 0.7], [0.1, 0.3, 0.2])["p_value"], 4)
    0.0267
    >>> paired_t_test([0.9], [0.1])["p_value"]
    Undefined(reason='fewer than 2 common queries')
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape[0] < 2:
        why = Undefined("fewer than 2 common queries")
        return {"t": why, "p_value": why}
    d = a - b
    if np.allclose(d, d[0], rtol=0, atol=1e-15):
        why = Undefined("every per-query difference is equal (zero variance)")
        return {"t": why, "p_value": why}
    res = stats.ttest_rel(a, b)
    return {"t": float(res.statistic), "p_value": float(res.pvalue)}


def holm(p_values: Sequence[float | Undefined | None]) -> list[float | Undefined | None]:
    """Holm (1979) step-down adjusted p-values (``statsmodels multipletests(method="holm")``):
    sorted p_(1) <= ... <= p_(m), adjusted p_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)).
    Undefined entries (:class:`~evaluation.undefined.Undefined`, or None) are left out of the
    family and stay as they are.

    Examples
    --------
    >>> holm([0.01, None, 0.04, 0.03])
    [0.03, None, 0.06, 0.06]
    """
    idx = [i for i, p in enumerate(p_values) if is_defined(p)]
    out: list[float | Undefined | None] = list(p_values)
    if idx:
        gc.freeze()  # multipletests calls gc.collect(): 0.3-0.5 s per call on a large heap (a page, compare)
        try:
            adjusted = multipletests([p_values[i] for i in idx], method="holm")[1]
        finally:
            gc.unfreeze()
        for i, p in zip(idx, adjusted):
            out[i] = float(p)
    return out


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> dict:
    """Kendall's tau-b between two score lists over the same systems (``scipy.stats.kendalltau``):
    tau_b = (P - Q) / sqrt((P + Q + T_x)(P + Q + T_y)), P / Q concordant / discordant pairs,
    T_x / T_y pairs tied only in x / only in y (Kendall, 1945). Used for leaderboard stability
    across qrels versions as in Voorhees (2000), "Variations in relevance judgments and the
    measurement of retrieval effectiveness".

    Returns ``{"tau", "p_value", "n_systems"}``; ``tau`` and ``p_value`` are
    :class:`~evaluation.undefined.Undefined` with fewer than 2 systems or when one list is
    constant, ``p_value`` alone when scipy gives none.

    Examples
    --------
    >>> kendall_tau([0.5, 0.4, 0.3], [0.6, 0.2, 0.3])["tau"]
    0.33333333333333337
    >>> kendall_tau([0.5], [0.6])["tau"]
    Undefined(reason='undefined with 1 system(s): needs at least 2')
    """
    if len(x) < 2:
        why = Undefined(f"undefined with {len(x)} system(s): needs at least 2")
        return {"tau": why, "p_value": why, "n_systems": len(x)}
    res = stats.kendalltau(x, y)
    if res.statistic is None or math.isnan(res.statistic):
        why = Undefined("undefined: a leaderboard has all scores tied")
        return {"tau": why, "p_value": why, "n_systems": len(x)}
    p = Undefined("scipy gives no p-value") if math.isnan(res.pvalue) else float(res.pvalue)
    return {"tau": float(res.statistic), "p_value": p, "n_systems": len(x)}


def bca_interval(replicates: np.ndarray, observed: float, jackknife: np.ndarray, alpha: float) -> tuple[float, float]:
    """The BCa interval (Efron & Tibshirani 1993, §14.3) from bootstrap ``replicates`` and the
    ``jackknife`` (leave-one-out) values of the statistic::

        z0 = Phi^-1(#{theta* < theta} / B)  (ties one half)
        a  = sum (m - theta_(i))^3 / (6 (sum (m - theta_(i))^2)^(3/2)),  m = mean of theta_(i)
        alpha_1,2 = Phi(z0 + (z0 + z_q) / (1 - a (z0 + z_q))),  q = alpha/2, 1 - alpha/2

    and the replicates' quantiles at ``alpha_1, alpha_2``. All replicates alike: ``(observed, observed)``.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.exponential(size=25); boot = np.array([rng.choice(x, 25).mean() for _ in range(4000)])
    >>> jack = (x.sum() - x) / 24
    >>> lo, hi = bca_interval(boot, x.mean(), jack, 0.05)
    >>> bool(lo < x.mean() < hi), bool(hi - x.mean() > x.mean() - lo)  # skewed right, like the data
    (True, True)
    """
    r = np.asarray(replicates, float)
    r = r[~np.isnan(r)]
    jackknife = np.asarray(jackknife, float)
    jackknife = jackknife[~np.isnan(jackknife)]
    if len(r) == 0:
        return float("nan"), float("nan")
    if np.ptp(r) == 0:
        return float(observed), float(observed)
    p0 = (np.sum(r < observed) + 0.5 * np.sum(r == observed)) / len(r)
    # the standard normal's quantile and distribution function: scipy.special's ndtri and ndtr, which
    # stats.norm.ppf and .cdf call (the same values, without their per-call argument handling)
    z0 = special.ndtri(min(max(p0, 1 / (2 * len(r))), 1 - 1 / (2 * len(r))))
    d = np.mean(jackknife) - np.asarray(jackknife, float)
    den = 6 * np.sum(d**2) ** 1.5
    a = float(np.sum(d**3) / den) if den > 0 else 0.0
    qs = []
    for z in (special.ndtri(alpha / 2), special.ndtri(1 - alpha / 2)):
        qs.append(special.ndtr(z0 + (z0 + z) / (1 - a * (z0 + z))))
    lo, hi = np.quantile(r, qs)
    return float(lo), float(hi)
