"""Does the leaderboard change on the validated qrels? Per-system scores with bootstrap intervals
over queries, paired differences with their intervals, each pair's one-sided bootstrap level, a
multiplicity-adjusted verdict on whether the order of a pair changed, and Kendall's tau between the
published and the validated leaderboards with its interval.

The bootstrap (Efron & Tibshirani, 1993; for IR evaluation: Sakai, 2006, "Evaluating evaluation
metrics based on the bootstrap", SIGIR) resamples **queries** with replacement: one draw of the
union U of the queries judged on either qrels version, the same draw for every system and both
versions (so differences and tau are paired). A system's score on a version in one replicate is
the weighted mean of its per-query values over the drawn queries that version judges (the
validated version may drop queries).

**Intervals** are **studentized** (bootstrap-t; Efron & Tibshirani 1993, §12.5: the quantiles of
``(theta* - theta) / se*`` replace the normal ones) by default: measured at 10, 20 and 30 queries
(``bench/bench_estimate_coverage.py --section leaderboard``, per-query scores skewed like nDCG) it
covers a system's mean and a paired difference 0.93-0.96 of the time, where the percentile
interval covers 0.87-0.93 and BCa (bias-corrected and accelerated, Efron 1987; §14.3) 0.88-0.94.
``interval="bca"`` and ``interval="percentile"`` are the named alternatives. Kendall's tau has no
standard error: its interval is BCa (jackknife over the queries) unless percentile is asked for.

**The pair statistic** is a *one-sided bootstrap level*: the share of replicates that order the
pair opposite to the observed order (ties count one half), about the p-value of "the observed order
is the true one" -- not a probability that the pair swaps. **"The order changed"** is tested per
pair on the validated qrels against the published order (H0: ordered as published or tied) with
the one-sided bootstrap p-value ``(1 + #replicates ordered as published) / (1 + B)``, and Holm's
step-down adjustment over the ``k (k - 1) / 2`` pairs (Holm 1979; ``statsmodels``'
``multipletests`` through :func:`evaluation.significance.holm`) keeps the chance of declaring
any false change at 5%.

Fewer than :data:`MIN_QUERIES` queries (any interval) or fewer than :data:`MIN_SYSTEMS` systems
(tau) make the result **undefined**, with the reason, instead of a number.

Runs are read as :mod:`evaluation.compare` reads them (the newest eval run of each system and qrels
version, :func:`evaluation.compare.pick_versions`, as result records of :mod:`evaluation.results`).
"""
from __future__ import annotations

import itertools

import numpy as np
from scipy import stats

from evaluation import results
from evaluation.compare import pick_versions
from evaluation.measure_registry import parse as parse_measure_name
from evaluation.significance import bca_interval, holm
from storage import projects
from storage.errors import IFJudgeError

MIN_QUERIES = 10
MIN_SYSTEMS = 3
PAIRS = (("original", "validated"), ("changed", "changed-validated"), ("reversed", "reversed-validated"))
INTERVALS = ("studentized", "bca", "percentile")
INTERVAL_NAMES = {"bca": "BCa bootstrap", "studentized": "studentized (bootstrap-t)", "percentile": "percentile bootstrap"}


def _undefined(reason: str) -> dict:
    return {"value": None, "low": None, "high": None, "undefined": reason}


def studentized_interval(boot_mean: np.ndarray, boot_se: np.ndarray, observed: float, se: float,
                         alpha: float) -> tuple[float, float]:
    """The studentized (bootstrap-t) interval of a mean (Efron & Tibshirani 1993, §12.5):
    ``(theta - t*_(1-q) se, theta - t*_(q) se)`` with ``t* = (theta* - theta) / se*``."""
    ok = ~np.isnan(boot_mean) & (boot_se > 0)
    if not ok.any() or se <= 0:
        return float(observed), float(observed)
    t = (boot_mean[ok] - observed) / boot_se[ok]
    t_lo, t_hi = np.quantile(t, [alpha / 2, 1 - alpha / 2])
    return float(observed - t_hi * se), float(observed - t_lo * se)


class _Side:
    """One qrels version's per-query scores under the shared bootstrap draw: ``matrix`` (systems x
    the union of queries, 0 where the version does not judge the query), ``mask`` (the queries it
    judges) and the replicates' draw ``counts`` (B x union)."""

    def __init__(self, scores: dict, systems: list[str], queries: list[str], universe: list[str], counts: np.ndarray):
        pos = {q: i for i, q in enumerate(universe)}
        self.mask = np.zeros(len(universe), dtype=bool)
        self.mask[[pos[q] for q in queries]] = True
        self.matrix = np.array([[scores[s].get(q, 0.0) if self.mask[pos[q]] else 0.0 for q in universe]
                                for s in systems]).reshape(len(systems), len(universe))
        self.n = len(queries)
        self.c = counts * self.mask
        self.denom = self.c.sum(1)

    def values(self, coef: np.ndarray) -> np.ndarray:
        """Per query of the version, the statistic's value (a system's score, or a difference)."""
        return (coef @ self.matrix)[self.mask]

    def observed(self, coef: np.ndarray) -> float:
        return float(self.values(coef).mean()) if self.n else float("nan")

    def boot(self, coef: np.ndarray) -> np.ndarray:
        """The statistic in every replicate (NaN where a replicate drew none of the version's queries)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return (self.c @ (coef @ self.matrix)) / self.denom

    def means(self) -> tuple[np.ndarray, np.ndarray]:
        """(observed, replicates x systems) means of every system."""
        eye = np.eye(self.matrix.shape[0])
        return (np.array([self.observed(e) for e in eye]),
                np.column_stack([self.boot(e) for e in eye]) if len(eye) else np.zeros((len(self.c), 0)))

    def interval(self, coef: np.ndarray, method: str, alpha: float) -> dict:
        """``{value, low, high, undefined}`` of the statistic by ``method``."""
        x = self.values(coef)
        obs, boot = float(x.mean()), self.boot(coef)
        if method == "percentile":
            v = boot[~np.isnan(boot)]
            lo, hi = np.quantile(v, [alpha / 2, 1 - alpha / 2]) if len(v) else (np.nan, np.nan)
        elif method == "bca":
            lo, hi = bca_interval(boot, obs, (x.sum() - x) / (self.n - 1), alpha)
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                second = (self.c @ (coef @ self.matrix) ** 2) / self.denom
                var = np.maximum(second - boot**2, 0) * self.denom / np.maximum(self.denom - 1, 1)
                boot_se = np.sqrt(var / self.denom)
            lo, hi = studentized_interval(boot, boot_se, obs, float(x.std(ddof=1) / np.sqrt(self.n)), alpha)
        return {"value": obs, "low": float(lo), "high": float(hi), "undefined": None}


def leaderboard_stability(published: dict[str, dict[str, float]], validated: dict[str, dict[str, float]], *,
                          n_boot: int = 2000, seed: int = 0, alpha: float = 0.05, interval: str = "studentized") -> dict:
    """Bootstrap comparison of two leaderboards given per-query scores ``{system: {query: value}}``.

    Returns
    -------
    dict
        ``systems`` (one row per system: ``published`` and ``validated`` as ``{value, low, high,
        undefined}``, their ranks, ``n_queries`` of each side); ``pairs`` (each pair a, b: the
        differences a - b on each side with their intervals; ``one_sided_level_published`` /
        ``one_sided_level_validated``, the share of replicates ordering a and b opposite to the
        observed order on that side; ``replicates_ordered_differently``, the share of replicates in
        which the two sides order a and b differently -- ties count one half; ``order_changed``
        ``{p_value, p_holm, changed}``); ``order_changed`` (the pairs whose order changed after
        Holm's adjustment, and the method); ``kendall_tau`` (``{value, low, high, undefined}``);
        ``interval``, ``n_boot``, ``seed``, ``n_queries_published``, ``n_queries_validated``.

    Examples
    --------
    >>> pub = {"A": {"q1": 0.9, "q2": 0.8}, "B": {"q1": 0.1, "q2": 0.2}}
    >>> leaderboard_stability(pub, pub, n_boot=10)["kendall_tau"]["undefined"]
    'undefined with 2 queries and 2 systems: needs at least 10 queries and 3 systems'
    """
    if interval not in INTERVALS:
        raise IFJudgeError(f"interval must be one of {', '.join(INTERVALS)}, got {interval!r}")
    systems = sorted(set(published) & set(validated))
    q_pub = sorted(set.intersection(*[{q for q, v in published[s].items() if v is not None} for s in systems])) if systems else []
    q_val = sorted(set.intersection(*[{q for q, v in validated[s].items() if v is not None} for s in systems])) if systems else []
    universe = sorted(set(q_pub) | set(q_val))
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(universe), np.full(len(universe), 1 / len(universe)), size=n_boot) if universe and n_boot else np.zeros((0, len(universe)))
    sides = {"published": _Side(published, systems, q_pub, universe, counts),
             "validated": _Side(validated, systems, q_val, universe, counts)}
    pairs = _pair_rows(systems, sides, alpha, interval)
    return {"systems": _system_rows(systems, sides, alpha, interval), "pairs": pairs,
            "order_changed": order_changed(pairs, alpha),
            "kendall_tau": _tau(sides, len(systems), alpha, "percentile" if interval == "percentile" else "bca"),
            "interval": interval, "n_boot": n_boot, "seed": seed, "alpha": alpha,
            "n_queries_published": len(q_pub), "n_queries_validated": len(q_val), "n_systems": len(systems)}


def _too_few(n: int) -> str | None:
    return f"undefined with {n} queries: needs at least {MIN_QUERIES}" if n < MIN_QUERIES else None


def _order(x):
    return np.sign(np.round(x, 12))


def _disagree(a, b):  # 1 when the signs differ, 1/2 when exactly one of them is a tie
    return np.where(a == b, 0.0, np.where((a == 0) | (b == 0), 0.5, 1.0))


def _system_rows(systems: list[str], sides: dict, alpha: float, interval: str) -> list[dict]:
    """One row per system: its value with interval on each side and its rank there."""
    def rank(obs):
        return {s: int(r) for s, r in zip(systems, stats.rankdata(-obs, method="min"))} if len(obs) else {}

    eye = np.eye(len(systems))
    ranks = {name: rank(np.array([side.observed(e) for e in eye])) for name, side in sides.items()}
    rows = []
    for i, s in enumerate(systems):
        row = {"system": s, "rank_published": ranks["published"].get(s), "rank_validated": ranks["validated"].get(s),
               "n_queries_published": sides["published"].n, "n_queries_validated": sides["validated"].n}
        for name, side in sides.items():
            why = _too_few(side.n)
            row[name] = ({**_undefined(why), "value": None if side.n == 0 else side.observed(eye[i])} if why
                         else side.interval(eye[i], interval, alpha))
        rows.append(row)
    return rows


def _pair_rows(systems: list[str], sides: dict, alpha: float, interval: str) -> list[dict]:
    """Each pair of systems: the difference with interval and the one-sided bootstrap level on each
    side, how often the two sides order the pair differently, and the one-sided p-value of "the
    validated qrels reverse the published order"."""
    pub, val = sides["published"], sides["validated"]
    pairs = []
    for (i, a), (j, b) in itertools.combinations(enumerate(systems), 2):
        coef = np.zeros(len(systems))
        coef[i], coef[j] = 1.0, -1.0
        entry = {"a": a, "b": b}
        for name, side in sides.items():
            why = _too_few(side.n)
            d_obs, d_boot = side.observed(coef) if side.n else float("nan"), side.boot(coef)
            entry[f"difference_{name}"] = ({**_undefined(why), "value": None if side.n == 0 else d_obs} if why
                                           else side.interval(coef, interval, alpha))
            ok = ~np.isnan(d_boot)
            entry[f"one_sided_level_{name}"] = (None if why else
                                                float(_disagree(_order(d_boot[ok]), _order(np.array(d_obs))).mean()))
        d_p, d_v = pub.boot(coef), val.boot(coef)
        both = ~np.isnan(d_p) & ~np.isnan(d_v)
        why = _too_few(min(pub.n, val.n))
        entry["replicates_ordered_differently"] = None if why else float(_disagree(_order(d_p[both]), _order(d_v[both])).mean())
        entry["order_changed"] = None if why else {"p_value": _reversal_p(pub.observed(coef), d_v)}
        entry["undefined"] = why
        pairs.append(entry)
    return pairs


def _reversal_p(published_difference: float, validated_boot: np.ndarray) -> float:
    """One-sided bootstrap p-value of H0 "the validated qrels order the pair as the published ones
    (or tie it)": ``(1 + #replicates with the published order or a tie) / (1 + B)``; 1 when the
    published scores tie the pair."""
    s = np.sign(round(published_difference, 12))
    v = validated_boot[~np.isnan(validated_boot)]
    if s == 0 or len(v) == 0:
        return 1.0
    return float((1 + np.sum(s * np.round(v, 12) >= 0)) / (1 + len(v)))


def order_changed(pairs: list[dict], alpha: float = 0.05) -> dict:
    """Holm's step-down adjustment (:func:`evaluation.significance.holm`) of the pairs' reversal
    p-values: each pair's ``order_changed`` gains ``p_holm`` and ``changed`` (``p_holm <= alpha``);
    returns the verdict ``{"pairs": [[a, b], ...], "any": bool, "tested": m, "method"}`` (family-wise
    error ``alpha`` over the m pairs).

    >>> ps = [{"a": "A", "b": "B", "order_changed": {"p_value": 0.001}},
    ...       {"a": "A", "b": "C", "order_changed": {"p_value": 0.03}}]
    >>> order_changed(ps)["pairs"], ps[1]["order_changed"]["p_holm"]  # 0.001 x 2 <= 0.05; then 0.03 x 1
    ([['A', 'B'], ['A', 'C']], 0.03)
    >>> order_changed([{**ps[0], "order_changed": {"p_value": 0.03}}, {**ps[1], "order_changed": {"p_value": 0.04}}])["any"]
    False
    """
    tested = [p for p in pairs if p.get("order_changed")]
    verdict = {"pairs": [], "any": False, "tested": len(tested),
               "method": f"one-sided bootstrap p-values, Holm's adjustment over the {len(tested)} "
                         f"pair{'' if len(tested) == 1 else 's'} (family-wise error {alpha:g})"}
    if not tested:
        return verdict
    adjusted = holm([p["order_changed"]["p_value"] for p in tested])
    for p, q in zip(tested, adjusted):
        p["order_changed"].update(p_holm=float(q), changed=bool(q <= alpha))
        if q <= alpha:
            verdict["pairs"].append([p["a"], p["b"]])
    verdict["any"] = bool(verdict["pairs"])
    return verdict


def _tau(sides: dict, n_systems: int, alpha: float, method: str) -> dict:
    """Kendall's tau of the two leaderboards with its bootstrap interval (BCa: jackknife over the
    queries of either version), or undefined with the reason."""
    pub, val = sides["published"], sides["validated"]
    n_min = min(pub.n, val.n)
    if n_min < MIN_QUERIES or n_systems < MIN_SYSTEMS:
        return _undefined(f"undefined with {n_min} queries and {n_systems} systems: needs at least "
                          f"{MIN_QUERIES} queries and {MIN_SYSTEMS} systems")
    (obs_p, boot_p), (obs_v, boot_v) = pub.means(), val.means()
    t_obs = stats.kendalltau(obs_p, obs_v).statistic
    if np.isnan(t_obs):
        return _undefined("undefined: a leaderboard has all scores tied")
    ok = ~(np.isnan(boot_p).any(1) | np.isnan(boot_v).any(1))
    taus = kendall_taus(boot_p[ok], boot_v[ok])
    taus = taus[~np.isnan(taus)]
    if method == "percentile":
        lo, hi = np.quantile(taus, [alpha / 2, 1 - alpha / 2]) if len(taus) else (np.nan, np.nan)
    else:
        lo, hi = bca_interval(taus, t_obs, _tau_jackknife(pub, val), alpha)
    return {"value": float(t_obs), "low": float(lo), "high": float(hi), "undefined": None}


def kendall_taus(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of ``X`` with the same row of ``Y`` (replicates x systems), as
    ``scipy.stats.kendalltau`` computes it, for every replicate at once:
    ``(C - D) / sqrt((P - T_x)(P - T_y))`` over the P pairs of systems, ties ``T`` (NaN when a row is
    all tied).

    >>> X = np.array([[1., 2., 3.], [1., 1., 2.]]); Y = np.array([[1., 3., 2.], [2., 1., 3.]])
    >>> [round(float(t), 6) for t in kendall_taus(X, Y)], [round(float(stats.kendalltau(x, y).statistic), 6) for x, y in zip(X, Y)]
    ([0.333333, 0.816497], [0.333333, 0.816497])
    """
    X, Y = np.atleast_2d(X), np.atleast_2d(Y)
    i, j = np.triu_indices(X.shape[1], 1)
    dx, dy = np.sign(X[:, i] - X[:, j]), np.sign(Y[:, i] - Y[:, j])
    pairs = len(i)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (dx * dy).sum(1) / np.sqrt((pairs - (dx == 0).sum(1)) * (pairs - (dy == 0).sum(1)))


def _tau_jackknife(pub: _Side, val: _Side) -> np.ndarray:
    """Kendall's tau with each query of the union left out in turn (from both versions)."""
    means = []
    for side in (pub, val):
        left = np.maximum(side.n - side.mask, 1)[:, None]
        means.append((side.matrix.sum(1)[None, :] - side.matrix.T) / left)
    out = kendall_taus(*means)
    return out[~np.isnan(out)] if (~np.isnan(out)).any() else np.zeros(1)


def per_query_scores(db, project: dict, measure: str) -> dict[str, dict[str, dict[str, float]]]:
    """``{qrels version: {system label: {query: value of measure}}}`` from the newest eval run of
    each system and qrels version (:func:`evaluation.compare.pick_versions`), read as result records
    (:func:`evaluation.results.run_results`) of ``project`` (its row)."""
    proj = project
    sel = pick_versions(results.load_runs(db, proj["id"]))
    out: dict[str, dict[str, dict[str, float]]] = {}
    for (key, version), r in sel.latest.items():
        records = results.run_results(r, system=sel.labels[key], per_query=True)
        out.setdefault(version, {})[sel.labels[key]] = {q: float(v) for q, v in results.per_query_of(records, measure).items()}
    return out


def validated_coverage(db, project_id: int, version: str) -> dict:
    """How much of the benchmark a validated qrels version checked: from its newest build, the queries
    with a judgment the named studies decided, of all its queries, and a sentence to print beside
    every leaderboard conclusion (``note``; None when the version checked every query)."""
    builds = projects.qrels_builds(db, project_id, version)
    if not builds:
        return {"queries_checked": None, "queries": None,
                "note": f"{version} was not built from a study here (imported): which queries were checked is unknown"}
    checked, total = projects.checked_queries(db, builds[0]["id"])
    note = None
    if checked < total:
        note = (f"the {version} qrels checked {checked} of {total} queries (the studies' sample); the other {total - checked} "
                "keep their published judgments, so a change outside the sample cannot show here")
    return {"queries_checked": checked, "queries": total, "note": note}


def leaderboard_change(db, project: dict, *, measure: str = "nDCG@10", n_boot: int = 2000, seed: int = 0,
                       alpha: float = 0.05, interval: str = "studentized") -> dict:
    """For each published qrels version with a validated counterpart that both have eval runs
    (``original`` / ``validated``, ``changed`` / ``changed-validated``, ``reversed`` /
    ``reversed-validated``): :func:`leaderboard_stability` of the stored per-query ``measure``,
    with :func:`validated_coverage` of the validated version (``coverage``).

    Returns ``{"project", "measure", "comparisons": [{"published", "validated", "coverage", **stability}],
    "undefined"}`` (``undefined`` names why there is no comparison at all).
    """
    measure = str(parse_measure_name(measure))
    proj = project
    scores = per_query_scores(db, proj, measure)
    comparisons = []
    for pub, val in PAIRS:
        if pub in scores and val in scores:
            comparisons.append({"published": pub, "validated": val, "coverage": validated_coverage(db, proj["id"], val),
                                **leaderboard_stability(scores[pub], scores[val], n_boot=n_boot, seed=seed, alpha=alpha,
                                                        interval=interval)})
    why = None
    if not comparisons:
        why = (f"no stored evaluation on both a published and its validated qrels version (have: "
               f"{', '.join(sorted(scores)) or 'none'}); run `ifjudge eval run` on each")
    return {"project": proj["name"], "measure": measure, "comparisons": comparisons, "undefined": why}
