"""Does the leaderboard change on the validated qrels? Per-system scores with bootstrap intervals
over queries, paired differences with their intervals, the probability that two systems swap
order, and Kendall's tau between the published and the validated leaderboards with its interval.

The bootstrap (Efron & Tibshirani, 1993; for IR evaluation: Sakai, 2006, "Evaluating evaluation
metrics based on the bootstrap", SIGIR) resamples **queries** with replacement: one draw of the
union U of the queries judged on either qrels version, the same draw for every system and both
versions (so differences and tau are paired). A system's score on a version in one replicate is
the weighted mean of its per-query values over the drawn queries that version judges (the
validated version may drop queries). Intervals are percentile intervals. Fewer than
:data:`MIN_QUERIES` queries (any interval) or fewer than :data:`MIN_SYSTEMS` systems (tau) make the
result **undefined**, with the reason, instead of a number.

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
from storage import projects

MIN_QUERIES = 10
MIN_SYSTEMS = 3
PAIRS = (("original", "validated"), ("changed", "changed-validated"), ("reversed", "reversed-validated"))


def _undefined(reason: str) -> dict:
    return {"value": None, "low": None, "high": None, "undefined": reason}


def _interval(values: np.ndarray, observed: float, alpha: float) -> dict:
    v = values[~np.isnan(values)]
    lo, hi = np.quantile(v, [alpha / 2, 1 - alpha / 2]) if len(v) else (np.nan, np.nan)
    return {"value": float(observed), "low": float(lo), "high": float(hi), "undefined": None}


def leaderboard_stability(published: dict[str, dict[str, float]], validated: dict[str, dict[str, float]], *,
                          n_boot: int = 2000, seed: int = 0, alpha: float = 0.05) -> dict:
    """Bootstrap comparison of two leaderboards given per-query scores ``{system: {query: value}}``.

    Returns
    -------
    dict
        ``systems`` (one row per system: ``published`` and ``validated`` as ``{value, low, high,
        undefined}``, their ranks, ``n_queries`` of each side); ``pairs`` (each pair a, b: the
        differences a - b on each side with their intervals, ``p_swap_published`` /
        ``p_swap_validated`` = the share of replicates whose order differs from the observed one on
        that side, ``p_order_differs`` = the share of replicates in which the two sides order a and
        b differently; ties count one half); ``kendall_tau`` (``{value, low, high, undefined}``);
        ``n_boot``, ``seed``, ``n_queries_published``, ``n_queries_validated``.

    Examples
    --------
    >>> pub = {"A": {"q1": 0.9, "q2": 0.8}, "B": {"q1": 0.1, "q2": 0.2}}
    >>> leaderboard_stability(pub, pub, n_boot=10)["kendall_tau"]["undefined"]
    'undefined with 2 queries and 2 systems: needs at least 10 queries and 3 systems'
    """
    systems = sorted(set(published) & set(validated))
    q_pub = sorted(set.intersection(*[{q for q, v in published[s].items() if v is not None} for s in systems])) if systems else []
    q_val = sorted(set.intersection(*[{q for q, v in validated[s].items() if v is not None} for s in systems])) if systems else []
    universe = sorted(set(q_pub) | set(q_val))
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(len(universe), np.full(len(universe), 1 / len(universe)), size=n_boot) if universe and n_boot else np.zeros((0, len(universe)))
    sides = {"published": (*_bootstrap_side(published, systems, q_pub, universe, counts), len(q_pub)),
             "validated": (*_bootstrap_side(validated, systems, q_val, universe, counts), len(q_val))}
    return {"systems": _system_rows(systems, sides, alpha), "pairs": _pair_rows(systems, sides, alpha),
            "kendall_tau": _tau(sides, len(systems), alpha), "n_boot": n_boot, "seed": seed, "alpha": alpha,
            "n_queries_published": len(q_pub), "n_queries_validated": len(q_val), "n_systems": len(systems)}


def _bootstrap_side(scores: dict, systems: list[str], queries: list[str], universe: list[str], counts: np.ndarray):
    """(observed mean per system over ``queries``, replicates x systems bootstrap means): a replicate
    draws ``counts`` of the ``universe`` and keeps the draws of ``queries``."""
    pos = {q: i for i, q in enumerate(universe)}
    mask = np.zeros(len(universe), dtype=bool)
    mask[[pos[q] for q in queries]] = True
    matrix = np.array([[scores[s].get(q, 0.0) if mask[pos[q]] else 0.0 for q in universe] for s in systems]).reshape(len(systems), len(universe))
    observed = np.array([np.mean([scores[s][q] for q in queries]) if queries else np.nan for s in systems])
    c = counts * mask
    denom = c.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (c @ matrix.T) / denom[:, None]  # replicates x systems
    return observed, boot


def _too_few(n: int) -> str | None:
    return f"undefined with {n} queries: needs at least {MIN_QUERIES}" if n < MIN_QUERIES else None


def _order(x):
    return np.sign(np.round(x, 12))


def _disagree(a, b):  # 1 when the signs differ, 1/2 when exactly one of them is a tie
    return np.where(a == b, 0.0, np.where((a == 0) | (b == 0), 0.5, 1.0))


def _system_rows(systems: list[str], sides: dict, alpha: float) -> list[dict]:
    """One row per system: its value with interval on each side and its rank there."""
    def rank(obs):
        return {s: int(r) for s, r in zip(systems, stats.rankdata(-obs, method="min"))} if len(obs) else {}

    ranks = {name: rank(obs) for name, (obs, _, _) in sides.items()}
    rows = []
    for i, s in enumerate(systems):
        row = {"system": s, "rank_published": ranks["published"].get(s), "rank_validated": ranks["validated"].get(s),
               "n_queries_published": sides["published"][2], "n_queries_validated": sides["validated"][2]}
        for name, (obs, boot, n) in sides.items():
            why = _too_few(n)
            row[name] = ({**_undefined(why), "value": None if n == 0 else float(obs[i])} if why
                         else _interval(boot[:, i], obs[i], alpha))
        rows.append(row)
    return rows


def _pair_rows(systems: list[str], sides: dict, alpha: float) -> list[dict]:
    """Each pair of systems: the difference with interval and the swap probability on each side,
    and how often the two sides order the pair differently."""
    (_, boot_p, n_p), (_, boot_v, n_v) = sides["published"], sides["validated"]
    pairs = []
    for (i, a), (j, b) in itertools.combinations(enumerate(systems), 2):
        entry = {"a": a, "b": b}
        for name, (obs, boot, n) in sides.items():
            d_obs, d_boot = obs[i] - obs[j], boot[:, i] - boot[:, j]
            why = _too_few(n)
            entry[f"difference_{name}"] = ({**_undefined(why), "value": None if n == 0 else float(d_obs)} if why
                                           else _interval(d_boot, d_obs, alpha))
            ok = ~np.isnan(d_boot)
            entry[f"p_swap_{name}"] = None if why else float(_disagree(_order(d_boot[ok]), _order(np.array(d_obs))).mean())
        both = ~np.isnan(boot_p[:, i] - boot_p[:, j]) & ~np.isnan(boot_v[:, i] - boot_v[:, j])
        why = _too_few(min(n_p, n_v))
        entry["p_order_differs"] = None if why else float(_disagree(
            _order(boot_p[both, i] - boot_p[both, j]), _order(boot_v[both, i] - boot_v[both, j])).mean())
        entry["undefined"] = why
        pairs.append(entry)
    return pairs


def _tau(sides: dict, n_systems: int, alpha: float) -> dict:
    """Kendall's tau of the two leaderboards with its bootstrap interval, or undefined with the reason."""
    (obs_p, boot_p, n_p), (obs_v, boot_v, n_v) = sides["published"], sides["validated"]
    n_min = min(n_p, n_v)
    if n_min < MIN_QUERIES or n_systems < MIN_SYSTEMS:
        return _undefined(f"undefined with {n_min} queries and {n_systems} systems: needs at least "
                          f"{MIN_QUERIES} queries and {MIN_SYSTEMS} systems")
    t_obs = stats.kendalltau(obs_p, obs_v).statistic
    taus = np.array([stats.kendalltau(boot_p[b], boot_v[b]).statistic for b in range(len(boot_p))
                     if not (np.isnan(boot_p[b]).any() or np.isnan(boot_v[b]).any())], dtype=float)
    if np.isnan(t_obs):
        return _undefined("undefined: a leaderboard has all scores tied")
    return _interval(taus, t_obs, alpha)


def per_query_scores(db, project: str | dict, measure: str) -> dict[str, dict[str, dict[str, float]]]:
    """``{qrels version: {system label: {query: value of measure}}}`` from the newest eval run of
    each system and qrels version (:func:`evaluation.compare.pick_versions`), read as result records
    (:func:`evaluation.results.run_results`)."""
    proj = projects.get_project(db, project) if isinstance(project, str) else project
    sel = pick_versions(results.load_runs(db, proj["id"]))
    out: dict[str, dict[str, dict[str, float]]] = {}
    for (key, version), r in sel.latest.items():
        records = results.run_results(r, system=sel.labels[key], per_query=True)
        out.setdefault(version, {})[sel.labels[key]] = {q: float(v) for q, v in results.per_query_of(records, measure).items()}
    return out


def leaderboard_change(db, project: str | dict, *, measure: str = "nDCG@10", n_boot: int = 2000, seed: int = 0,
                       alpha: float = 0.05) -> dict:
    """For each published qrels version with a validated counterpart that both have eval runs
    (``original`` / ``validated``, ``changed`` / ``changed-validated``, ``reversed`` /
    ``reversed-validated``): :func:`leaderboard_stability` of the stored per-query ``measure``.

    Returns ``{"project", "measure", "comparisons": [{"published", "validated", **stability}],
    "undefined"}`` (``undefined`` names why there is no comparison at all).
    """
    measure = str(parse_measure_name(measure))
    proj = projects.get_project(db, project) if isinstance(project, str) else project
    scores = per_query_scores(db, proj, measure)
    comparisons = []
    for pub, val in PAIRS:
        if pub in scores and val in scores:
            comparisons.append({"published": pub, "validated": val,
                                **leaderboard_stability(scores[pub], scores[val], n_boot=n_boot, seed=seed, alpha=alpha)})
    why = None
    if not comparisons:
        why = (f"no stored evaluation on both a published and its validated qrels version (have: "
               f"{', '.join(sorted(scores)) or 'none'}); run `ifjudge eval run` on each")
    return {"project": proj["name"], "measure": measure, "comparisons": comparisons, "undefined": why}

