"""Prediction-powered share: an automatic judge answered every item of the benchmark, the humans a
sample of them; the sample corrects the judge's bias and the judge narrows the humans' interval.

The estimator (:func:`prediction_powered_share`) takes the human outcomes, the judge's labels and
the sampling design, nothing else: whatever produced the judge's labels (a file, a model run) feeds
it the same way.

**Estimator.** Prediction-powered inference with power tuning (Angelopoulos et al. 2023, *Science*
382:669; PPI++, Angelopoulos, Duchi & Zrnic 2023) becomes, when the unlabelled items are the whole
finite population, the survey *difference estimator* (Särndal, Swensson & Wretman 1992, §6.3)::

    theta = sum_i w_i (y_i - lam_i (yhat_i - J x_i)) / sum_i w_i x_i

with ``J`` the judge's share over every item of the estimate's population (known exactly), ``y``
the humans' decision (1 = Yes) of a decided item (``x = 1``), ``yhat`` the judge's, ``w`` the design
weight (:class:`annotation.survey.design.SampleDesign`). ``lam = 0`` is the humans alone,
``lam = 1`` plain PPI.

**The weight is fixed before the data: lam = 1/2.** The estimate is the mean of the humans' share
and the judge's share corrected by the sample's disagreements. Power tuning (the weight that
minimises the estimated variance) is kept as an option, cross-fitted so that it never looks at the
items it is applied to (``lam=None``: the sampled query groups dealt into ``folds`` folds within each
stratum, seeded; the items of fold k get ``lam_k = clip(Cov(R(y), R(yhat)) / Var(R(yhat)), 0, 1)``
of the *other* folds, 0 where the judge's answers there do not vary). It is not the default because
it fails where benchmarks live: with a good judge at a 97% share the sample holds one or two
disagreements, a tuned weight goes to about 1, and the estimate is then those two small counts
(the items the humans say Yes and the judge No, and the reverse): a discrete statistic whose 95%
intervals cover 0.98-1.00 or, without a floor, 0.74 (no interval exists between the two that holds
for either kind of error). At 1/2 the humans' share and the disagreements are averaged and the
interval covers 0.948-0.973 in every scenario measured, near-perfect judges included, and is 27-40%
narrower than the humans' alone wherever the judge is informative (``bench/bench_estimate_coverage.py``,
docs/statistics.md). The price: with a very good judge and many disagreements (a 50% share) a
tuned weight would be about 10% narrower; with a judge no better than chance the interval is
wider than the humans' alone (the report shows both, and the judge's agreement beside them).

**Interval.** Write ``theta = (1 - lam) A + lam (J + D)`` with ``lam`` the weighted mean of the
``lam_i``, ``A`` the humans' share (items weighted ``1 - lam_i``) and ``D`` the share of items the
humans say Yes and the judge No minus the reverse (items weighted ``lam_i``). ``A`` gets the design
Wilson interval (:func:`annotation.survey.intervals.wilson_design`, the same as the human-only
estimate), ``D`` a t interval whose variance is at least Agresti & Min's (half a pseudo-item in
each cell, at Kish's effective size): disagreements are rare where benchmarks live (97% valid), and
a sample without one must not give a zero-width interval; to it is added, for a tuned weight, the
variance of the cross-fitted weight's own error (:func:`weight_noise`). The two are combined by MOVER (Zou &
Donner 2008) with their design correlation: each keeps its own asymmetry. The share always lies
inside its interval, and with ``lam = 0`` the interval is the human-only one.

Measured coverage (shares 50-99%, judges biased on one domain and near-perfect, unequal domain
rates, small populations): ``bench/bench_estimate_coverage.py`` and docs/statistics.md.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

from annotation.survey.intervals import ALPHA, agresti_min_floor, correlation, mover, wilson_design
from annotation.survey.design import SampleDesign
from evaluation.undefined import Undefined
from storage.errors import IFJudgeError

FOLDS = 5
LAM = 0.5  # the weight fixed before the data (module docstring)
_ESTIMATOR = ("prediction-powered difference estimator (the judge's share over every item of the population plus the "
              "design estimate of the human-minus-judge correction), ")
_INTERVAL = ("; interval: MOVER of the design Wilson interval of the humans' share and a t interval of the "
             "disagreement share (variance at least Agresti-Min's)")
TUNED_METHOD = _ESTIMATOR + f"power-tuned weight cross-fitted over {FOLDS} folds of query groups" + _INTERVAL


def method(lam: float | None = LAM) -> str:
    """The method's description for a weight fixed at ``lam`` (None: tuned, cross-fitted).

    >>> method(None) == TUNED_METHOD, "lam = 0.5 fixed" in method(), "lam = 0.8 fixed" in method(0.8)
    (True, True, True)
    """
    if lam is None:
        return TUNED_METHOD
    return (_ESTIMATOR + f"weight lam = {lam:g} fixed before the data (the mean of the humans' share and the judge's "
            "corrected share)" + _INTERVAL)


METHOD = method()


def group_folds(design: SampleDesign, folds: int, seed: int) -> np.ndarray:
    """Per sampled group, its fold (0 .. folds - 1): the groups of each stratum in a seeded random
    order dealt round-robin, continuing across strata so that the folds have equal sizes (within
    one group).

    >>> d = SampleDesign.build(stratum=list("aaabb"), cluster=list("pqrst"), population_groups={"a": 9, "b": 9},
    ...                        group_units=dict.fromkeys("pqrst", 1))
    >>> sorted(np.bincount(group_folds(d, 2, seed=0)).tolist())
    [2, 3]
    """
    rng = np.random.default_rng(seed)
    out = np.zeros(design.n_groups, dtype=np.int64)
    dealt = 0
    for h in range(design.n_strata):
        members = np.flatnonzero(design.group_stratum == h)
        order = members[rng.permutation(len(members))]
        out[order] = (dealt + np.arange(len(order))) % folds
        dealt += len(order)
    return out


def tuned_weight(design: SampleDesign, y, yhat, x) -> float:
    """The power-tuning weight of one (sub)sample: ``Cov(R(y), R(yhat)) / Var(R(yhat))`` of the
    linearised design covariance, clipped to [0, 1]; 0 when the judge's share has no variance or
    fewer than 2 groups are sampled.

    >>> d = SampleDesign.build(stratum=[""] * 4, cluster=list("abcd"), population_groups={"": 100},
    ...                        group_units=dict.fromkeys("abcd", 1))
    >>> tuned_weight(d, [1, 1, 0, 0], [1, 1, 0, 0], [1] * 4), tuned_weight(d, [1, 0, 1, 0], [1, 1, 1, 1], [1] * 4)
    (1.0, 0.0)
    """
    if design.n_groups < 2:
        return 0.0
    _, uy = design.ratio(y, x)
    _, uh = design.ratio(yhat, x)
    C = design.covariance(np.column_stack([uy, uh]))
    if C[1, 1] <= 1e-300:
        return 0.0
    return float(np.clip(C[0, 1] / C[1, 1], 0.0, 1.0))


def cross_fitted_weights(design: SampleDesign, y, yhat, x, *, folds: int = FOLDS, seed: int = 0):
    """``(lam per row, lam per fold)``: the groups dealt into ``min(folds, groups)`` folds
    (:func:`group_folds`), each fold's rows weighted by :func:`tuned_weight` of the other folds."""
    k = min(folds, design.n_groups)
    fold_of_group = group_folds(design, k, seed)
    lam_folds = []
    for f in range(k):
        keep = fold_of_group != f
        rows = keep[design.unit_group[design.row_unit]]
        lam_folds.append(tuned_weight(design.subset(keep), y[rows], yhat[rows], x[rows]))
    return np.asarray(lam_folds)[fold_of_group[design.unit_group[design.row_unit]]], lam_folds


def weight_noise(design: SampleDesign, yhat, x, lam_folds) -> float:
    """The variance the cross-fitted weight's own sampling error adds to the estimate:
    ``theta(lam) - theta(lam*) = -(lam - lam*) (R(yhat) - J)``, so about ``Var(lam_k) V(R(yhat))``,
    with ``Var(lam_k)`` the spread of the fold weights ``sum_k (lam_k - mean)^2`` (each a
    leave-one-fold-out estimate: a jackknife over folds) and ``V(R(yhat))`` the design variance of
    the judge's share on the sample. 0 for a weight fixed in advance (one value)."""
    lam_folds = np.asarray(lam_folds, float)
    if len(lam_folds) < 2:
        return 0.0
    _, u = design.ratio(yhat, x)
    return float(((lam_folds - lam_folds.mean()) ** 2).sum() * design.variance(u))


def mover_interval(design: SampleDesign, y, yhat, x, lam, theta: float, *, alpha: float = ALPHA,
                   noise: float = 0.0) -> tuple[float, float]:
    """The interval of ``theta = (1 - lam) A + lam (J + D)`` (module docstring): MOVER of the design
    Wilson interval of the humans' share ``A`` (items weighted ``1 - lam_i``) and the t interval of the
    disagreement share ``D`` (items weighted ``lam_i``; variance at least Agresti-Min's at Kish's size,
    plus a tuned weight's ``noise`` of :func:`weight_noise`), with their design correlation."""
    w = design.weights
    lam_bar = float((w * lam * x).sum() / (w * x).sum())
    f = design.sampled_fraction(x)
    df = design.df
    q = float(stats.t.ppf(1 - alpha / 2, df))
    parts, coefficients, columns = [], [], []
    if lam_bar < 1 - 1e-12:
        A, u_a = design.ratio((1 - lam) * y, (1 - lam) * x)
        parts.append((A, None, None, _cap(design, x, f, 1 - lam)))
        coefficients.append(1 - lam_bar)
        columns.append(u_a)
    if lam_bar > 1e-12:
        D, u_d = design.ratio(lam * (y - yhat), lam * x)
        b, _ = design.ratio(lam * y * (1 - yhat), lam * x)   # the humans say Yes, the judge No
        c, _ = design.ratio(lam * (x - y) * yhat, lam * x)   # the humans say No, the judge Yes
        parts.append((D, b, c, _cap(design, x, f, lam)))
        coefficients.append(lam_bar)
        columns.append(u_d)
    C = design.covariance(np.column_stack(columns))
    intervals = []
    for j, (est, b, c, cap) in enumerate(parts):
        if b is None:  # the humans' share: the design Wilson interval
            intervals.append((est, *wilson_design(est, C[j, j], cap=cap, df=df, alpha=alpha)))
        else:  # the disagreement share: a t interval, variance at least Agresti-Min's, plus the weight's noise
            half = q * np.sqrt(max(C[j, j], agresti_min_floor(b, c, cap)) + noise / coefficients[j] ** 2)
            intervals.append((est, est - half, est + half))
    return mover(theta, intervals, coefficients, correlation(C))


def _cap(design: SampleDesign, x, f: float, scale=None) -> float:
    """Kish's effective size of the decided items ``x``, each weighted ``w * scale``, over ``1 - f``."""
    return design.kish_size(x, scale) / (1 - f) if f < 1 else float("inf")


def prediction_powered_share(y, yhat, x, judge_share: float, *, stratum, cluster, population_groups: dict,
                             group_units: dict, unit=None, unit_items: dict | None = None, alpha: float = ALPHA,
                             folds: int = FOLDS, seed: int = 0, lam: float | None = LAM) -> dict | Undefined:
    """The prediction-powered share of the population and its interval (module docstring).

    Parameters
    ----------
    y, yhat, x : sequences, one value per sampled item
        The humans' decision (1 Yes, 0 No; 0 for an undecided item), the judge's answer (1 / 0) and
        whether the item is decided (1 / 0; an undecided item is left out as missing).
    judge_share : float
        ``J``, the judge's share of Yes over every item of the estimate's population.
    stratum, cluster, population_groups, group_units, unit, unit_items
        The design, as :meth:`annotation.survey.design.SampleDesign.build` takes it.
    alpha : float
        1 - the interval's confidence.
    folds, seed : int
        Cross-fitting: folds of query groups, and the seed that deals them.
    lam : float or None
        The weight, fixed before the data (default 1/2; 0: the humans alone, 1: plain PPI), or None
        for the power-tuned weight cross-fitted over ``folds`` folds of query groups.

    Returns
    -------
    dict or Undefined
        ``share``, ``low``, ``high``, ``se`` (linearised, at the items' weights), ``lam``
        (the items' mean weight), ``lam_folds`` (the fixed weight alone when not tuned), ``folds`` (0
        when not tuned), ``df``, ``human_only`` (``share``, ``low``,
        ``high``: the design Wilson interval of the same items), ``method``, ``notes``; without
        a decided item or with a single sampled group: :class:`~evaluation.undefined.Undefined`.

    Examples
    --------
    A judge that agrees with the humans on 38 of 40 items (2 per group; 200 groups of 5):

    >>> y = [1, 0] * 20; yhat = [1, 0] * 19 + [0, 1]
    >>> r = prediction_powered_share(y, yhat, [1] * 40, 0.5, stratum=[""] * 40, cluster=[f"g{i // 2}" for i in range(40)],
    ...                              population_groups={"": 200}, group_units={f"g{i}": 5 for i in range(20)})
    >>> r["low"] < r["share"] < r["high"], r["high"] - r["low"] < r["human_only"]["high"] - r["human_only"]["low"]
    (True, True)
    """
    y, yhat, x = (np.asarray(v, float) for v in (y, yhat, x))
    y, yhat = y * x, yhat * x
    design = SampleDesign.build(stratum=stratum, cluster=cluster, population_groups=population_groups,
                                group_units=group_units, unit=unit, unit_items=unit_items)
    if x.sum() <= 0:
        return Undefined("no decided item yet")
    if design.n_groups < 2:
        return Undefined("a single sampled group: no interval")
    cross_fitted = lam is None
    if cross_fitted:
        lam, lam_folds = cross_fitted_weights(design, y, yhat, x, folds=folds, seed=seed)
    else:
        if not 0 <= lam <= 1:
            raise IFJudgeError(f"lam must be in [0, 1], got {lam}")
        lam_folds = [float(lam)]
        lam = np.full(len(y), float(lam))
    J = float(judge_share)
    w = design.weights
    theta, u_theta = design.ratio(y - lam * (yhat - J * x), x)
    notes: list[str] = []
    var_theta = design.variance(u_theta, notes=notes)
    lam_bar = float((w * lam * x).sum() / (w * x).sum())
    f = design.sampled_fraction(x)
    human, u_h = design.ratio(y, x)
    human_ci = wilson_design(human, design.variance(u_h), cap=_cap(design, x, f), df=design.df, alpha=alpha)
    low, high = mover_interval(design, y, yhat, x, lam, theta, alpha=alpha,
                               noise=weight_noise(design, yhat, x, lam_folds) if cross_fitted else 0.0)
    share = min(max(theta, 0.0), 1.0)
    return {"share": share, "low": max(0.0, min(low, share)), "high": min(1.0, max(high, share)),
            "se": float(np.sqrt(max(var_theta, 0.0))), "lam": lam_bar, "lam_folds": [float(v) for v in lam_folds],
            "folds": len(lam_folds) if cross_fitted else 0, "df": design.df, "judge_share": J,
            "human_only": {"share": human, "low": human_ci[0], "high": human_ci[1]},
            "method": method(None if cross_fitted else lam_folds[0]), "notes": notes}
