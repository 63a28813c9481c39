"""The interval of a share from strata sampled at very unequal rates: each stratum's design
Wilson interval, combined by MOVER.

A study stratified by a judge's answers (:mod:`annotation.judges.strata`) samples the few groups the
judge flags heavily and the many it passes lightly, where a No is rare: the sample of the large
stratum often holds no No at all, its design variance is then 0, and one interval for the whole
share built from the summed variance is too narrow exactly when that stratum's share is
overstated (measured in ``bench/bench_judge_strata.py``: 0.91 coverage at 10% of the groups, 0.83
at 20%). The share ``R = sum_h W_h R_h`` is a linear combination of independent stratum shares, so
its interval is built by the method of variance estimates recovery
(:func:`annotation.survey.intervals.mover`; Zou & Donner 2008; Zou, Huang & Zhang 2009,
*Comput. Stat. Data Anal.* 53:1080) from each stratum's interval ``(l_h, u_h)``::

    L = R - sqrt(sum_h W_h^2 (R_h - l_h)^2)        U = R + sqrt(sum_h W_h^2 (u_h - R_h)^2)

with ``W_h = X_h / X`` the stratum's estimated share of the decided items and ``(l_h, u_h)`` the
Wilson interval at the stratum's design effective size (:func:`annotation.survey.intervals.wilson_design`,
``df = sampled groups of the stratum - 1``), which stays asymmetric and away from the share
when a stratum's sample is unanimous. The variability of ``W_h`` (known exactly when every group
of the population has the same number of decided items) is left out.

Examples
--------
Two strata: 10 of 50 groups flagged by a judge (4 Yes), 10 of 950 passed (all Yes), one instance each:

>>> from annotation.survey.design import SampleDesign
>>> ids = [f"g{k}" for k in range(20)]
>>> d = SampleDesign.build(stratum=["No"] * 10 + ["Yes"] * 10, cluster=ids,
...                        population_groups={"No": 50, "Yes": 950}, group_units=dict.fromkeys(ids, 1))
>>> y = np.array([1.0] * 4 + [0.0] * 6 + [1.0] * 10)
>>> share, low, high = mover_wilson(d, y, np.ones(20))
>>> round(share, 3), round(low, 3), round(high, 3)
(0.97, 0.65, 0.985)
"""
from __future__ import annotations

import math

import numpy as np

from annotation.survey.intervals import mover, wilson_design
from annotation.survey.design import SampleDesign

ALPHA = 0.05


def mover_wilson(design: SampleDesign, y, x, *, alpha: float = ALPHA) -> tuple[float, float, float]:
    """``(R, low, high)``: the ratio estimate of ``sum w y / sum w x`` and its MOVER interval from
    the strata's design Wilson intervals (module docstring). Strata without a decided item carry
    no weight; the share is NaN (and the bounds too) when no item is decided."""
    y, x = np.asarray(y, float), np.asarray(x, float)
    R, _ = design.ratio(y, x)
    if not math.isfinite(R):
        return R, float("nan"), float("nan")
    w = design.weights
    X = float((w * x).sum())
    row_stratum = design.group_stratum[design.unit_group[design.row_unit]]
    parts, coefficients = [], []
    for h in range(design.n_strata):
        rows = row_stratum == h
        X_h = float((w[rows] * x[rows]).sum())
        if X_h <= 0:
            continue
        sub = design.subset(design.group_stratum == h)
        R_h, u = sub.ratio(y[rows], x[rows])
        f = sub.sampled_fraction(x[rows])
        cap = sub.kish_size(x[rows]) / (1 - f) if f < 1 else float("inf")
        parts.append((R_h, *wilson_design(R_h, sub.variance(u), cap=cap, df=sub.df, alpha=alpha)))
        coefficients.append(X_h / X)
    low, high = mover(R, parts, coefficients, np.eye(len(parts)))  # strata are sampled independently
    return R, max(0.0, low), min(1.0, high)
