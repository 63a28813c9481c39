"""Confidence intervals for shares estimated from a complex sample.

Each takes the estimate, its design variance and the design's sizes, never the raw rows, so that
the design-aware estimate (:func:`annotation.estimates.benchmark.design_estimate`) and the prediction-powered
one (:mod:`annotation.survey.prediction_powered`) share them.

- :func:`wilson_design`: the default. Wilson's score interval (Wilson 1927) at the *effective
  sample size* of the design, ``n* = p (1 - p) / V``, with the t quantile of the design's degrees
  of freedom (Kott & Carr 1997; compared by Franco, Little, Louis & Slud 2019, *J. Survey Stat.
  Methodol.* 7:334). The effective size never exceeds Kish's effective size of the weights over
  ``1 - f`` (``f`` the sampled fraction): the design effect is at least that of unequal weighting
  (Kish 1992, *J. Official Statistics* 8:183). Without that floor a sample whose few "No" answers
  fall in lightly weighted units reads as *more* precise than a simple random sample, and the
  interval is too narrow exactly where shares are near 0 or 1 (measured:
  ``bench/bench_estimate_coverage.py``).
- :func:`korn_graubard`: the exact (Clopper-Pearson) interval at the effective size, scaled by
  ``(t(n - 1) / t(df))^2`` (Korn & Graubard 1998; R ``survey``'s ``svyciprop(method = "beta")``),
  kept as a named alternative: conservative near 0 and 1 (coverage above 0.975 at 97% shares).
- :func:`mover`: the interval of a linear combination of estimates from the intervals of its parts
  (the *method of variance estimates recovery*; Zou & Donner 2008, *Stat. Med.* 27:1693; Newcombe
  2011), which keeps each part's asymmetry.
- :func:`agresti_min_floor`: the smallest variance the difference of two disagreement shares is
  given: half a pseudo-item added to each of the two discordant cells (Agresti & Min 2005,
  *Stat. Med.* 24:729), so that a sample without a disagreement does not read as certainty.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats

ALPHA = 0.05


def effective_size(share: float, var: float, cap: float) -> float:
    """``n* = p (1 - p) / V``, at most ``cap``; ``cap`` itself when V is 0 or the share is 0 or 1
    (every decided item alike: the interval of ``cap`` items that all agree).

    >>> effective_size(0.5, 0.01, 100.0), effective_size(0.5, 0.001, 100.0), effective_size(1.0, 0.0, 40.0)
    (25.0, 100.0, 40.0)
    """
    if var <= 0 or share <= 0 or share >= 1:
        return float(cap)
    return float(min(share * (1 - share) / var, cap))


def wilson_design(share: float, var: float, *, cap: float, df: int, alpha: float = ALPHA) -> tuple[float, float]:
    """Wilson's score interval at the effective size ``n*`` (:func:`effective_size`) with the
    ``t(df)`` quantile ``z``::

        (p + z^2 / (2 n*) -+ z sqrt(p (1 - p) / n* + z^2 / (4 n*^2))) / (1 + z^2 / n*)

    ``cap`` is Kish's effective size over ``1 - f`` (:class:`annotation.survey.design.SampleDesign`).
    The share always lies inside; the width is 0 only for a census (``cap`` infinite, V = 0).

    >>> [round(v, 4) for v in wilson_design(0.5, 0.01, cap=1e9, df=10**6)]  # n* = 25: Wilson's interval of 12.5 / 25
    [0.3175, 0.6825]
    >>> [round(v, 4) for v in wilson_design(1.0, 0.0, cap=40, df=10**6)]   # 40 of 40
    [0.9124, 1.0]
    """
    n = effective_size(share, var, cap)
    if not math.isfinite(n):
        return float(share), float(share)
    z = float(stats.t.ppf(1 - alpha / 2, max(df, 1)))
    den = 1 + z * z / n
    centre = (share + z * z / (2 * n)) / den
    half = z * math.sqrt(max(share * (1 - share), 0.0) / n + z * z / (4 * n * n)) / den
    return max(0.0, min(share, centre - half)), min(1.0, max(share, centre + half))


def korn_graubard(share: float, var: float, n: float, df: int, *, alpha: float = ALPHA) -> tuple[float, float]:
    """Korn & Graubard (1998) interval of a proportion from a complex sample: the exact
    (Clopper-Pearson) interval at the effective sample size ``n* = p (1 - p) / var``, scaled by
    ``(t(n - 1) / t(df))^2`` for the design's degrees of freedom (R ``survey``'s
    ``svyciprop(method = "beta")``). With ``var = 0`` (every item alike) ``n* = n``: the plain
    exact interval of the n items.

    >>> [round(v, 4) for v in korn_graubard(0.5, 0.01, 40, 39)]  # n* = 25
    [0.2954, 0.7046]
    """
    if n <= 0:
        return None, None
    n_eff = n if var <= 0 else min(share * (1 - share) / var, float("inf"))
    if n > 1 and var > 0:
        n_eff *= (stats.t.ppf(alpha / 2, n - 1) / stats.t.ppf(alpha / 2, df)) ** 2
    k = share * n_eff
    low = 0.0 if k <= 0 else float(stats.beta.ppf(alpha / 2, k, n_eff - k + 1))
    high = 1.0 if k >= n_eff else float(stats.beta.ppf(1 - alpha / 2, k + 1, n_eff - k))
    return low, high


def mover(estimate: float, parts: list[tuple[float, float, float]], coefficients, correlation) -> tuple[float, float]:
    """The interval of ``sum c_i theta_i`` from each part's estimate and interval ``(theta_i, l_i,
    u_i)`` and their correlation matrix ``r`` (Zou & Donner 2008)::

        L = est - sqrt(e' R* e),  e_i = c_i (theta_i - l_i) if c_i > 0 else |c_i| (u_i - theta_i)
        U = est + sqrt(f' R* f),  f_i = c_i (u_i - theta_i) if c_i > 0 else |c_i| (theta_i - l_i)

    with ``R*_ij = sign(c_i c_j) r_ij``. Independent parts with symmetric intervals give the Wald
    interval of the sum.

    >>> [round(v, 3) for v in mover(0.2, [(0.5, 0.4, 0.6), (0.3, 0.2, 0.4)], [1, -1], np.eye(2))]
    [0.059, 0.341]
    """
    c = np.asarray(coefficients, float)
    est = np.array([p[0] for p in parts], float)
    lo = np.array([p[1] for p in parts], float)
    hi = np.array([p[2] for p in parts], float)
    down = np.where(c > 0, c * (est - lo), -c * (hi - est))
    up = np.where(c > 0, c * (hi - est), -c * (est - lo))
    R = np.sign(np.outer(c, c)) * np.asarray(correlation, float)
    return (float(estimate - math.sqrt(max(float(down @ R @ down), 0.0))),
            float(estimate + math.sqrt(max(float(up @ R @ up), 0.0))))


def agresti_min_floor(b: float, c: float, n: float) -> float:
    """The variance of the difference of two disagreement shares ``b - c`` (items the humans say
    Yes and the judge No, and the reverse) in a sample of ``n`` with half a pseudo-item added to
    each cell of the 2 x 2 table (Agresti & Min 2005): ``(b~ + c~ - (b~ - c~)^2) / (n + 2)``,
    ``b~ = (n b + 1/2) / (n + 2)``.

    >>> round(agresti_min_floor(0.0, 0.0, 200) * 202**2, 6)  # no disagreement: 1 / (n + 2)^2
    1.0
    """
    if not n or not math.isfinite(n):
        return 0.0
    bt, ct = (n * b + 0.5) / (n + 2), (n * c + 0.5) / (n + 2)
    return float((bt + ct - (bt - ct) ** 2) / (n + 2))


def correlation(C: np.ndarray) -> np.ndarray:
    """The correlation matrix of a covariance matrix; 0 beside a part without variance."""
    sd = np.sqrt(np.maximum(np.diag(C), 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        R = np.where(np.outer(sd, sd) > 0, C / np.outer(sd, sd), 0.0)
    np.fill_diagonal(R, 1.0)
    return np.clip(R, -1.0, 1.0)
