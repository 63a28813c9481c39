"""Benchmark-wide estimates from a study's sample, with intervals that follow how it was sampled.

A study does not judge the whole benchmark: :func:`annotation.studies.sample_instances` draws
query groups (per stratum: per IFIR domain when ``subset_fraction`` is set, else one stratum),
then up to ``per_group`` instances of each drawn group. Instances of one group share a query and
their answers are correlated, so the sample is a **stratified two-stage cluster sample** with
unequal inclusion probabilities (a group of 10 instructions contributes 2 of them, a group of 3
contributes 2 too) from a finite population. An interval that treats the sampled instances as
independent (the Wilson interval of :func:`annotation.monitor.extrapolation`) is too narrow when
groups are internally alike.

Estimator (primary): the **stratified ratio (Hájek) estimator** of the share over the whole
benchmark with its **linearised (Taylor) variance** for two-stage sampling with finite-population
corrections at both stages (Särndal, Swensson & Wretman, 1992, *Model Assisted Survey Sampling*,
Result 4.3.1 with §5.5 for the ratio; Cochran, 1977, §11.8). With ``h`` the strata, ``N_h`` the
groups of stratum h in the population and ``n_h`` those sampled, ``M_g`` the units (instances) of
group g and ``m_g`` those sampled, ``y_i`` the items of unit i whose decision says Yes (for the
question's sense of Yes) and ``x_i`` its decided items::

    R = Y / X,  Y = sum_h N_h/n_h sum_g M_g/m_g sum_i y_i   (X alike with x_i)
    u_i = y_i - R x_i,  t_g = M_g/m_g sum_i u_i
    V(R) = [ sum_h N_h^2 (1 - n_h/N_h) s^2_h(t_g) / n_h
           + sum_h N_h/n_h sum_g M_g^2 (1 - m_g/M_g) s^2_g(u_i) / m_g ] / X^2

The 95% interval is **Korn & Graubard's** (1998): the exact (Clopper-Pearson) interval at the
effective sample size ``n* = R (1 - R) / V`` scaled for the design's degrees of freedom
(``df = sampled groups - strata``); unlike ``R +- t sqrt(V)`` it keeps its coverage near 0 and 1
(InstructIR's 97% natural: ``bench/bench_estimate_coverage.py``), and when every decided item
agrees (V = 0) it is the exact interval of the decided items.
A stratum with a single sampled group (of several) centres its group on the mean over all groups
(R ``survey``'s ``lonely.psu = "adjust"``); a group with a single sampled unit of several has no
within-group variance term (named in ``notes``). Items without a decision (no majority yet, a
tie) are left out as missing (domain estimation): they count neither in ``y`` nor in ``x``.

The **design effect** is ``V(R)`` over the variance of a simple random sample of the same number
of decided items, ``(1 - n/N) R (1 - R) / (n - 1)``; the **effective sample size** is
``n / deff``. The labels that would **halve the interval**: the width scales as
``sqrt(1/n - 1/N)`` in the number n of sampled groups, so a quarter of the variance needs
``n' = 4 / (1/n + 3/N)`` groups; the further labels are ``(n' - n)`` times the labels per sampled
group so far.

Prediction-powered inference (:func:`ppi_estimate`): when an automatic judge labelled every item
of the benchmark, ``ppi_py.ppi_mean_ci`` (Angelopoulos et al., 2023, *Prediction-powered
inference*, Science; power tuning: Angelopoulos, Duchi & Zrnic, 2023, PPI++) corrects the judge's
share with the human labels of the sample. It treats the labelled items as independent (it does
not know the clusters).

A figure that does not exist on the data (no decided item, the interval of a single sampled
group, the design effect of a share of 0 or 1) is :class:`~evaluation.undefined.Undefined` with
the reason; :func:`benchmark_estimates`, the JSON-ready report, shows it as null with the reason
beside it (``undefined``), as :mod:`evaluation.compare` does.
"""
from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from annotation.outcome_table import outcome_table
from evaluation.undefined import Undefined, defined_or_none, is_defined
from formats.text import decode_utf8
from storage import projects, studies
from storage.db import Database
from storage.errors import IFJudgeError, ImportFailure

ALPHA = 0.05
PPI_DESIGN_METHOD = ("design-aware prediction-powered (difference) estimator: the judge's share over every item plus "
                     "the design estimate of the human-minus-judge correction, lam tuned on the linearised variance, "
                     "t interval")
METHOD = ("stratified two-stage ratio estimator, linearised (Taylor) variance with finite-population "
          "corrections at both stages, Korn-Graubard interval (Clopper-Pearson at the effective sample size, "
          "df = sampled groups - strata)")
MATCH_THRESHOLD = 4  # passage match >= k counts as a match (IFIR's 1-5 scale)


# --------------------------------------------------------------------------- the estimator


def design_estimate(y, x, *, stratum, cluster, population_groups: dict, group_units: dict,
                    alpha: float = ALPHA, interval: str = "korn-graubard") -> dict:
    """Share ``sum y / sum x`` over the whole population from a stratified two-stage cluster sample.

    Parameters
    ----------
    y, x : sequences of numbers, one per sampled unit
        Items of the unit that say Yes, and decided items of the unit (``0 <= y <= x``).
    stratum, cluster : sequences of str, one per sampled unit
        The unit's stratum and group (a group lies in one stratum).
    population_groups : dict stratum -> int or None
        ``N_h``, the groups of the stratum in the population (None: an infinite population, no
        finite-population correction at the first stage).
    group_units : dict cluster -> int
        ``M_g``, the units of each sampled group in the population.
    alpha : float, keyword-only
        1 - the interval's confidence (0.05: 95%).
    interval : {"korn-graubard", "wald"}, keyword-only
        ``korn-graubard`` (default): :func:`korn_graubard`; ``wald``: ``R +- t(df) se`` clipped to [0, 1].

    Returns
    -------
    dict
        ``share``, ``low``, ``high``, ``se``, ``df``, ``n_units``, ``n_items`` (decided items),
        ``n_groups``, ``n_strata``, ``deff``, ``n_effective``, ``notes`` and (with a decided item)
        ``interval``. A value that does not exist on the data is
        :class:`~evaluation.undefined.Undefined` with the reason: every figure without a decided
        item, the interval of a single sampled group, the design effect of a share of 0 or 1 (0/0).

    Examples
    --------
    Two strata, each with two sampled groups of two units (of 4 groups, 3 units each):

    >>> r = design_estimate([1, 1, 0, 1, 1, 0, 0, 0], [1] * 8, stratum=list("aaaabbbb"),
    ...                     cluster=["a1", "a1", "a2", "a2", "b1", "b1", "b2", "b2"],
    ...                     population_groups={"a": 4, "b": 4}, group_units=dict.fromkeys(["a1", "a2", "b1", "b2"], 3))
    >>> round(r["share"], 4), round(r["se"], 4), r["df"]
    (0.5, 0.1443, 2)
    >>> design_estimate([0], [0], stratum=[""], cluster=["g"], population_groups={"": 5}, group_units={"g": 2})["low"]
    Undefined(reason='no decided item yet')
    """
    if interval not in ("korn-graubard", "wald"):
        raise IFJudgeError(f"interval must be korn-graubard or wald, got {interval!r}")
    y = np.asarray(y, dtype=float)
    x = np.asarray(x, dtype=float)
    stratum = [str(s) for s in stratum]
    cluster = [str(c) for c in cluster]
    notes: list[str] = []
    groups_in, units_of = sample_clusters(stratum, cluster)
    n_items = float(x.sum())
    counts = {"n_units": int(len(y)), "n_items": int(n_items), "n_groups": len(units_of), "n_strata": len(groups_in)}
    if n_items == 0:
        return {**counts, **dict.fromkeys(ESTIMATE_FIGURES, Undefined("no decided item yet")), "notes": notes}
    w1 = {h: (population_groups.get(h) or len(gs)) / len(gs) for h, gs in groups_in.items()}
    w2 = {g: group_units[g] / len(ix) for g, ix in units_of.items()}
    w = np.array([w1[h] * w2[g] for h, g in zip(stratum, cluster)])
    X = float((w * x).sum())
    R = float((w * y).sum()) / X
    var = linearised_variance(y - R * x, w2, groups_in, units_of, population_groups, group_units, notes) / X**2
    se = math.sqrt(max(var, 0.0))
    df = max(len(units_of) - len(groups_in), 1)
    finite = all(population_groups.get(h) is not None for h in groups_in)
    deff, n_effective = design_effect(var, R, n_items, X, finite=finite, notes=notes)
    if len(units_of) < 2:
        low = high = Undefined("a single sampled group: no interval")
    elif interval == "wald":
        q = float(stats.t.ppf(1 - alpha / 2, df))
        low, high = max(0.0, R - q * se), min(1.0, R + q * se)
    else:
        low, high = korn_graubard(R, var, n_items, df, alpha=alpha)
    return {**counts, "share": R, "low": low, "high": high, "se": se, "df": df, "deff": deff,
            "n_effective": n_effective, "notes": notes, "interval": interval}


#: the figures of :func:`design_estimate`, each a number or :class:`~evaluation.undefined.Undefined`
ESTIMATE_FIGURES = ("share", "low", "high", "se", "df", "deff", "n_effective")


def sample_clusters(stratum: list[str], cluster: list[str]) -> tuple[dict[str, list[str]], dict[str, list[int]]]:
    """The sample's structure: the groups of each stratum (in order of first appearance) and the
    positions of each group's units.

    >>> sample_clusters(["a", "a", "b"], ["g1", "g1", "g2"])
    ({'a': ['g1'], 'b': ['g2']}, {'g1': [0, 1], 'g2': [2]})
    """
    groups_in: dict[str, list[str]] = defaultdict(list)
    units_of: dict[str, list[int]] = defaultdict(list)
    for i, (h, g) in enumerate(zip(stratum, cluster)):
        if g not in units_of:
            groups_in[h].append(g)
        units_of[g].append(i)
    return dict(groups_in), dict(units_of)


def linearised_variance(u, w2: dict[str, float], groups_in: dict[str, list[str]], units_of: dict[str, list[int]],
                        population_groups: dict, group_units: dict, notes: list[str]) -> float:
    """The two-stage variance of the total of the linearised values ``u_i = y_i - R x_i`` (the
    bracket of the module's ``V(R)``, before dividing by ``X^2``): between the groups of each
    stratum (``t_g = M_g/m_g sum u_i``, with the first-stage correction) plus within each group
    (with the second-stage correction). Appends to ``notes`` the lonely-group adjustments.

    >>> linearised_variance(np.array([0.5, -0.5, 0.5, -0.5]), {"a": 1.0, "b": 1.0}, {"": ["a", "b"]},
    ...                     {"a": [0, 1], "b": [2, 3]}, {"": None}, {"a": 2, "b": 2}, [])
    0.0
    """
    totals = {g: w2[g] * u[ix].sum() for g, ix in units_of.items()}
    grand = float(np.mean(list(totals.values())))
    v1 = v2 = 0.0
    for h, gs in groups_in.items():
        n_h, N_h = len(gs), population_groups.get(h)
        fpc1 = 1.0 if N_h is None else 1 - n_h / N_h
        t = np.array([totals[g] for g in gs])
        big_n = N_h if N_h is not None else n_h  # no FPC: the with-replacement form
        if n_h >= 2:
            v1 += big_n**2 * fpc1 * t.var(ddof=1) / n_h
        elif fpc1 > 0:
            v1 += big_n**2 * fpc1 * (t[0] - grand) ** 2
            notes.append(f"stratum {h or '(all)'} has a single sampled group: its variance is centred on the mean "
                         "over all groups (lonely PSU, adjust)")
        for g in gs:
            ix, M = units_of[g], group_units[g]
            m = len(ix)
            if m < M and m >= 2:
                v2 += (big_n / n_h) * M**2 * (1 - m / M) * u[ix].var(ddof=1) / m
            elif m < M:
                notes.append(f"group {g}: one sampled unit of {M}, no within-group variance term")
    return float(v1 + v2)


def design_effect(var: float, share: float, n_items: float, population_items: float, *, finite: bool,
                  notes: list[str]) -> tuple:
    """``(deff, n_effective)``: the design variance over that of a simple random sample of the same
    decided items, ``(1 - n/N) R (1 - R) / (n - 1)`` (no correction without a finite population),
    and ``n / deff``; :class:`~evaluation.undefined.Undefined` where 0/0 (a share of 0 or 1, a
    census) or unbounded (design variance 0). Appends the reason to ``notes`` too.

    >>> [round(v, 6) for v in design_effect(0.02, 0.5, 10, 100, finite=True, notes=[])]  # srs: 0.9 * 0.25 / 9
    [0.8, 12.5]
    >>> design_effect(0.0, 1.0, 10, 100, finite=True, notes=[])[0]
    Undefined(reason='every decided item agrees (share 0 or 1): 0/0')
    """
    fpc = max(0.0, 1 - n_items / population_items) if finite and population_items > 0 else 1.0
    srs = fpc * share * (1 - share) / max(n_items - 1, 1)
    if srs > 0 and var > 0:
        deff = float(var / srs)
        return deff, float(n_items / deff)
    if share in (0.0, 1.0):
        notes.append("every decided item agrees (share 0 or 1): design effect undefined (0/0)")
        why = Undefined("every decided item agrees (share 0 or 1): 0/0")
        return why, why
    if srs > 0:
        notes.append("design variance 0 (every sampled group alike): design effect 0, effective size unbounded")
        return 0.0, Undefined("design variance 0 (every sampled group alike): effective size unbounded")
    notes.append("every item of the population is decided (a census): design effect undefined (0/0)")
    why = Undefined("every item of the population is decided (a census): 0/0")
    return why, why


def estimate_json(result: dict) -> dict:
    """A :func:`design_estimate` result in its JSON form (that of :func:`benchmark_estimates`):
    undefined figures null, and beside them ``undefined``, the reason there is no interval (None
    when there is one).

    >>> r = estimate_json(design_estimate([1, 0], [1, 1], stratum=["", ""], cluster=["g", "g"],
    ...                                   population_groups={"": 5}, group_units={"g": 2}))
    >>> r["low"], r["undefined"], round(r["share"], 2)
    (None, 'a single sampled group: no interval', 0.5)
    """
    out = {}
    for key, value in result.items():
        if key == "notes":
            out["undefined"] = result["low"].reason if isinstance(result["low"], Undefined) else None
        out[key] = defined_or_none(value)
    return out


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


def labels_to_halve(n_groups: int, population_groups: int | None, labels_so_far: int, *,
                    all_agree: bool = False) -> dict:
    """Further groups and labels that would halve the interval's width, if the new groups are
    like the sampled ones: the variance scales as ``1/n - 1/N`` in the n sampled groups of N, so a
    quarter of it needs ``n' = 4 / (1/n + 3/N)`` groups (``4 n`` without a finite population).

    >>> labels_to_halve(10, 100, 60)
    {'groups_needed': 31, 'further_groups': 21, 'further_labels': 126}
    >>> labels_to_halve(10, 10, 60)["further_groups"]  # a census: the interval is already 0 wide
    0
    >>> labels_to_halve(10, 100, 60, all_agree=True)["groups_needed"]  # exact interval: width ~ 1/n
    20

    When every decided item agrees (``all_agree``), the interval is the exact one, whose width
    shrinks like 1/n rather than 1/sqrt(n): twice the groups halve it.
    """
    if n_groups <= 0:
        return {"groups_needed": None, "further_groups": None, "further_labels": None}
    if all_agree:
        needed = 2 * n_groups if population_groups is None else min(population_groups, 2 * n_groups)
    elif population_groups is None:
        needed = 4 * n_groups
    else:
        needed = 4 / (1 / n_groups + 3 / population_groups)
        needed = min(population_groups, math.ceil(needed - 1e-9))
    needed = int(math.ceil(needed - 1e-9))
    further = max(0, needed - n_groups)
    return {"groups_needed": needed, "further_groups": further,
            "further_labels": int(math.ceil(further * labels_so_far / n_groups))}


# --------------------------------------------------------------------------- the study's design


@dataclass(frozen=True)
class Estimand:
    """One benchmark-wide share: its name, the question it reads, and which items (``kind``:
    ``best_passage`` gold / excluded passages, ``condition`` mode)."""

    name: str
    question: str
    part: str | None = None


def _yes(question: str, value: str, *, gold: str | None, threshold: int, scale: str) -> bool:
    """Whether a decided value counts as Yes for the estimand of ``question``."""
    if question == "best_passage":
        return value == gold
    if question in ("passage_match", "instfol_match"):
        return int(value) >= threshold
    if question == "naturalness":
        return value == "Yes" or (value.isdigit() and int(value) >= 3)
    if question == "relevance":
        return value == "relevant" or (scale == "graded" and value.isdigit() and int(value) > 0)
    return value == "Yes"


NAMES = {
    "validity": "valid instruction", "naturalness": "natural instruction",
    "best_passage": "best passage is the dataset's target", "passage_match": "passage match >= {k}",
    "condition": "condition satisfied", "relevance": "narrative change confirmed (re-judgment agrees with the changed qrels)",
}


def study_design(db: Database, study_id: int) -> dict:
    """How a study sampled the benchmark, read from its settings and the project (the same pool
    and strata as :func:`annotation.studies.create_study`):

    ``{"kind": "instances" | "condition" | "relevance", "description", "strata": {stratum: N_h},
    "group_units": {group: M_g}, "unit_group": {unit: group}, "group_stratum": {group: stratum},
    "seed", "overlap"}``. Units are instances (``relevance``: documents of a re-judged query,
    every one of them judged, from an infinite population of queries: no finite-population
    correction).
    """
    study = studies.get_study(db, study_id)
    s = study["settings"]
    pid = study["project_id"]
    qs = study["questions"]
    cols = studies.item_columns(db, study_id)  # shared within a page run (storage.studies.share_reads)
    out = {"seed": s.get("seed", 0), "overlap": s.get("overlap")}
    if qs == ["relevance"]:
        groups = defaultdict(set)
        for inst, doc in zip(cols["instance_id"], cols["doc_id"]):
            groups[inst].add(f"{inst}|{doc}")
        return {**out, "kind": "relevance", "strata": {"": None},
                "group_units": {g: len(u) for g, u in groups.items()},
                "unit_group": {u: g for g, us in groups.items() for u in us}, "group_stratum": dict.fromkeys(groups, ""),
                "description": (f"re-judged queries as groups ({len(groups)}), every relevant document judged; the "
                                "queries are those experts edited, not a random sample: no finite-population correction")}
    if qs == ["condition"]:
        modes = s.get("modes") or ["changed", "reversed"]
        by_query = defaultdict(set)
        for inst in projects.instances(db, pid):
            if inst["variant"] in modes:
                by_query[inst["query_id"]].add(inst["instance_id"])
        unit_group = {i: q for q, insts in by_query.items() for i in insts}
        sampled = sorted({unit_group.get(inst, inst) for inst in cols["instance_id"]})
        return {**out, "kind": "condition", "strata": {"": len(by_query)},
                "group_units": {q: len(by_query.get(q, ())) or 1 for q in sampled}, "unit_group": unit_group,
                "group_stratum": dict.fromkeys(sampled, ""),
                "description": (f"{len(sampled)} of {len(by_query)} queries sampled at random (fraction "
                                f"{s.get('group_fraction')}, seed {out['seed']}); every document relevant under the "
                                "original qrels judged for each mode")}
    pool = projects.instances(db, pid)
    if any(i["instruction"].strip() for i in pool):
        pool = [i for i in pool if i["instruction"].strip()]
    subsets = projects.query_subsets(db, pid)
    members: dict[str, list[dict]] = defaultdict(list)
    for inst in sorted(pool, key=lambda i: (i["group_id"], i["instance_id"])):
        members[inst["group_id"]].append(inst)
    stratified = s.get("subset_fraction") is not None
    group_stratum = {g: (subsets.get(m[0]["query_id"], "") if stratified else "") for g, m in members.items()}
    strata: dict[str, int] = defaultdict(int)
    for g, h in group_stratum.items():
        strata[h] += 1
    n_sampled = len({inst.split("|")[0] for inst in cols["instance_id"]})
    sampled_groups: dict[str, int] = defaultdict(int)
    unit_group = {i["instance_id"]: g for g, m in members.items() for i in m}
    for g in {unit_group[inst] for inst in cols["instance_id"] if inst in unit_group}:
        sampled_groups[group_stratum[g]] += 1
    fraction = s.get("subset_fraction") if stratified else s.get("group_fraction")
    notes = [f"stratum {h or '(all)'}: {sampled_groups.get(h, 0)} groups sampled where the settings give "
             f"{max(1, round(fraction * N))} of {N}; the study was restricted to chosen groups, and the "
             "population is taken to be every group of the project" for h, N in strata.items()
             if fraction is not None and sampled_groups.get(h, 0) != max(1, round(fraction * N))]
    how = (f"{s.get('subset_fraction')} of the query groups per domain ({len(strata)} strata)" if stratified
           else f"{s.get('group_fraction')} of the query groups")
    return {**out, "kind": "instances", "strata": dict(strata), "group_units": {g: len(m) for g, m in members.items()},
            "unit_group": unit_group, "group_stratum": group_stratum, "notes": notes,
            "description": (f"{how} sampled at random (seed {out['seed']}), then up to {s.get('per_group')} instances "
                            f"per group ({n_sampled} instances sampled of {len(pool)} in {len(members)} groups); "
                            f"{out['overlap']} annotators per item, majority vote")}


def estimand_rows(db: Database, study_id: int, *, match_threshold: int = MATCH_THRESHOLD) -> dict[Estimand, list[dict]]:
    """Per estimand of the study, one row per item: ``{"item", "unit", "key", "y"}`` with ``y``
    1 / 0 for a decided item and None for an undecided one; ``key`` = (instance id, question,
    doc id or "") names the item in a judge's file."""
    study = studies.get_study(db, study_id)
    scale = study["settings"].get("relevance", "binary")
    t = outcome_table(db, study_id)  # every item's decision as columns: no Outcome object per item
    parts = studies.item_parts(db, study_id)
    changed = projects.qrels(db, study["project_id"], "changed") if "relevance" in study["questions"] else {}
    query_of = ({i["instance_id"]: i["query_id"] for i in projects.instances(db, study["project_id"])}
                if changed else {})
    out: dict[Estimand, list[dict]] = {}
    estimands: dict[tuple, list[dict]] = {}  # (question, part) -> its rows: one Estimand per part, hashed once
    for item, instance, question_, doc_id, value, gold, n, control, kind, mode in zip(
            t.item.tolist(), t.instance.tolist(), t.question.tolist(), t.doc_id.tolist(), t.value.tolist(),
            t.gold.tolist(), t.n_labels.tolist(), parts["control"], parts["kind"], parts["mode"]):
        if question_ == "instfol_match":
            continue
        if control:  # a re-judging control document, not a document the change is about
            continue
        part = kind or mode
        rows = estimands.get((question_, part))
        if rows is None:
            name = NAMES.get(question_, question_).format(k=match_threshold)
            if part:
                name += f" ({'gold' if part == 'gold' else part} {'passages' if question_ == 'passage_match' else 'instruction'})"
            rows = estimands[(question_, part)] = out.setdefault(Estimand(name, question_, part), [])
        unit = f"{instance}|{doc_id}" if question_ == "relevance" else instance
        y = None
        if value is not None:
            if question_ == "relevance":
                published = changed.get(instance) or changed.get(query_of.get(instance, ""), {})
                rel = published.get(doc_id)
                y = None if rel is None else int(_yes("relevance", value, gold=None, threshold=0, scale=scale)
                                                  == (rel > 0))
            elif question_ == "best_passage" and not gold:
                y = None
            else:
                y = int(_yes(question_, value, gold=gold, threshold=match_threshold, scale=scale))
        rows.append(
            {"item": item, "unit": unit, "key": (instance, question_, doc_id or ""), "y": y, "labels": n})
    return out


def benchmark_estimates(db: Database, study_id: int, *, match_threshold: int = MATCH_THRESHOLD,
                        alpha: float = ALPHA, judge: dict | None = None) -> dict:
    """The study's benchmark-wide estimates: ``{"study", "design", "method", "estimates": [...]}``,
    one estimate per question (and part) with the share, its interval (:func:`design_estimate`),
    the design effect, the effective sample size, the naive independent (Wilson) interval for
    comparison, and the labels that would halve the interval (:func:`labels_to_halve`). With
    ``judge`` (:func:`read_judge_labels`), each estimate also carries ``ppi``
    (:func:`judge_ppi`) over the judge's items of that question and ``ppi_design``
    (:func:`design_ppi_estimate`).

    The result is JSON-ready: an undefined figure is null with the reason beside it, ``undefined``
    (:func:`estimate_json`).

    Examples
    --------
    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); sid = load_demo(db)["study"]["study_id"]
    >>> out = benchmark_estimates(db, sid)
    >>> [e["estimand"] for e in out["estimates"]]
    ['valid instruction', 'natural instruction', "best passage is the dataset's target"]
    >>> out["estimates"][0]["share"], out["estimates"][0]["undefined"]
    (None, 'no decided item yet')
    """
    if judge is not None:
        return _benchmark_estimates(db, study_id, match_threshold=match_threshold, alpha=alpha, judge=judge)
    # once per page run or report when ``db`` shares its reads, kept across runs when it does
    # (storage.studies.share_reads): the Monitor shows it on every run
    return studies.shared(db, ("benchmark_estimates", study_id, match_threshold, alpha),
                          lambda: _benchmark_estimates(db, study_id, match_threshold=match_threshold, alpha=alpha))


def _benchmark_estimates(db: Database, study_id: int, *, match_threshold: int, alpha: float,
                         judge: dict | None = None) -> dict:
    design = studies.shared(db, ("study_design", study_id), lambda: study_design(db, study_id))  # read-only
    study = studies.get_study(db, study_id)
    per_estimand = estimand_rows(db, study_id, match_threshold=match_threshold)
    sampled = set(studies.item_columns(db, study_id)["instance_id"])
    scale = study["settings"].get("relevance", "binary")
    variant = None
    estimates = []
    for est, rows in per_estimand.items():
        sample = estimand_sample(est, rows, design, sampled)
        estimates.append(_estimate_entry(est, sample, design, alpha=alpha))
        if judge is not None:
            variant = variant if variant is not None else {
                i["instance_id"]: i["variant"] for i in projects.instances(db, study["project_id"])}
            keep = None if est.part not in ("changed", "reversed") else (lambda key, m=est.part: variant.get(key[0]) == m)
            estimates[-1]["ppi"] = judge_ppi(rows, judge, est, match_threshold=match_threshold, alpha=alpha,
                                             scale=scale, keep=keep)
            estimates[-1]["ppi_design"] = _design_ppi(rows, judge, est, sample, design, keep=keep,
                                                      threshold=match_threshold, scale=scale, alpha=alpha)
    return {"study": {"id": study["id"], "name": study["name"], "questions": study["questions"]},
            "design": {k: v for k, v in design.items() if k in ("kind", "description", "seed", "overlap", "notes")}
            | {"strata": design["strata"], "population_groups": None if None in design["strata"].values()
               else sum(design["strata"].values())},
            "method": METHOD, "alpha": alpha, "estimates": estimates}


@dataclass
class EstimandSample:
    """One estimand's sampled units: ``units`` unit -> [Yes items, decided items], ``groups_of``
    unit -> its group, ``group_units`` group -> ``M_g`` (its units in the population) and
    ``labels``, the labels given to its items."""

    units: dict[str, list[float]]
    groups_of: dict[str, str]
    group_units: dict[str, int]
    labels: int

    @property
    def names(self) -> list[str]:
        """The units in a fixed order (sorted)."""
        return sorted(self.units)

    def design_args(self, design: dict, alpha: float) -> dict:
        """The keyword arguments of :func:`design_estimate` for these units under ``design``
        (:func:`study_design`)."""
        names = self.names
        return {"stratum": [design["group_stratum"].get(self.groups_of[u], "") for u in names],
                "cluster": [self.groups_of[u] for u in names], "population_groups": design["strata"],
                "group_units": self.group_units, "alpha": alpha}


def estimand_sample(est: Estimand, rows: list[dict], design: dict, sampled: set[str]) -> EstimandSample:
    """The units of one estimand (:func:`estimand_rows`): per unit its Yes and decided items, and
    the group structure of :func:`study_design`. An instances study counts every sampled instance
    (one without an item of this question as missing); a changed / reversed estimand of a
    condition study has units at the mode level (one instance of each mode per query: ``M_g = 1``),
    and a sampled query without a document adds an empty unit."""
    units: dict[str, list[float]] = {}
    labels = 0
    for r in rows:
        acc = units.setdefault(r["unit"], [0.0, 0.0])
        labels += r["labels"]
        if r["y"] is not None:
            acc[0] += r["y"]
            acc[1] += 1
    if design["kind"] == "instances":
        for inst in sampled:
            units.setdefault(inst, [0.0, 0.0])
    groups_of = {u: design["unit_group"].get(u, u) for u in units}
    mode_level = est.part in ("changed", "reversed")
    group_units = {g: (1 if mode_level else design["group_units"].get(g, 1)) for g in set(groups_of.values())}
    if mode_level:
        units = {u: v for u, v in units.items() if u in {r["unit"] for r in rows}}
        groups_of = {u: groups_of[u] for u in units}
        for g in set(design["group_stratum"]) - set(groups_of.values()):
            units[f"{g}|none"] = [0.0, 0.0]
            groups_of[f"{g}|none"] = g
            group_units[g] = 1
    return EstimandSample(units, groups_of, group_units, labels)


def _estimate_entry(est: Estimand, sample: EstimandSample, design: dict, *, alpha: float) -> dict:
    """One estimate of :func:`benchmark_estimates` (JSON form): :func:`design_estimate` of the
    units, the Yes items and labels, the naive independent (Wilson) interval of the decided items
    and :func:`labels_to_halve`."""
    from statsmodels.stats.proportion import proportion_confint

    names = sample.names
    res = design_estimate([sample.units[u][0] for u in names], [sample.units[u][1] for u in names],
                          **sample.design_args(design, alpha))
    k = int(sum(sample.units[u][0] for u in names))
    n = res["n_items"]
    naive = None
    if n:
        lo, hi = proportion_confint(k, n, alpha=alpha, method="wilson")
        naive = {"share": k / n, "low": float(lo), "high": float(hi), "k": k, "n": n}
    N_total = None if any(v is None for v in design["strata"].values()) else sum(design["strata"].values())
    halve = (labels_to_halve(res["n_groups"], N_total, sample.labels, all_agree=res["share"] in (0.0, 1.0))
             if is_defined(res["share"])
             else {"groups_needed": None, "further_groups": None, "further_labels": None})
    return {"estimand": est.name, "question": est.question, "part": est.part, **estimate_json(res),
            "yes_items": k, "labels": sample.labels, "naive_independent": naive, "to_halve": halve}


def _design_ppi(rows, judge, est, sample: EstimandSample, design, *, keep, threshold, scale, alpha) -> dict:
    """:func:`design_ppi_estimate` of one estimand from the study's units and the judge's file, in
    its JSON form (``undefined``: why there is none, else None)."""
    if est.question == "relevance" or (est.part is not None and est.question == "passage_match"):
        return {"undefined": "the judge's items of this estimate cannot be told apart in its file"}
    answers = {key: _judge_yes(est.question, v, threshold=threshold, scale=scale)
               for key, v in judge.items() if key[1] == est.question and (keep is None or keep(key))}
    answers = {k: v for k, v in answers.items() if v is not None}
    if not answers:
        return {"undefined": "the judge answered no item of this question"}
    yhat = dict.fromkeys(sample.units, 0.0)
    missing = 0
    for r in rows:
        if r["y"] is None:
            continue
        if r["key"] not in answers:
            missing += 1
            continue
        yhat[r["unit"]] += answers[r["key"]]
    if missing:
        return {"undefined": f"{missing} decided item(s) of the sample have no answer of the judge"}
    names, args = sample.names, sample.design_args(design, alpha)
    y, x = [sample.units[u][0] for u in names], [sample.units[u][1] for u in names]
    res = design_ppi_estimate(y, [yhat[u] for u in names], x, float(np.mean(list(answers.values()))), **args)
    if isinstance(res, Undefined):
        return {"undefined": res.reason, "n_judged": len(answers)}
    out = {**res, "undefined": None}
    if out.get("se") == 0:
        kg = design_estimate(y, x, **args)
        out.update(low=defined_or_none(kg["low"]), high=defined_or_none(kg["high"]),
                   note="no variability in the sample: the design interval of the human labels (Korn-Graubard) is given")
    return {**out, "n_judged": len(answers)}


# --------------------------------------------------------------------------- prediction-powered


def ppi_estimate(y, yhat, yhat_unlabelled, *, alpha: float = ALPHA) -> dict | Undefined:
    """Prediction-powered share (``ppi_py.ppi_mean_ci``, power-tuned ``lam``) beside the human-only
    interval of the same items (``lam = 0``, the classical CLT interval), both treating the labelled
    items as independent.

    Power tuning chooses ``lam`` in [0, 1] to minimise an *estimated* variance, so on a given sample
    the PPI interval can come out wider than the human-only one; ``reported`` is then the
    human-only interval and ``reported_method`` says so. With fewer than 2 labelled items or no
    unlabelled one: :class:`~evaluation.undefined.Undefined` with the reason.

    >>> r = ppi_estimate([1, 0, 1, 1], [1, 0, 1, 0], [1, 0, 1, 1, 0, 1, 1, 1])
    >>> r["reported_method"] in ("prediction-powered (PPI++)", "human-only (narrower than PPI on this sample)")
    True
    """
    import ppi_py

    y = np.asarray(y, dtype=float)
    yhat = np.asarray(yhat, dtype=float)
    yu = np.asarray(yhat_unlabelled, dtype=float)
    if len(y) < 2 or len(yu) < 1:
        return Undefined(f"needs at least 2 labelled and 1 unlabelled items (got {len(y)} and {len(yu)})")
    note = None
    with np.errstate(invalid="ignore", divide="ignore"):
        lo, hi = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=alpha)
        point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, yu))[0])
    if any(math.isnan(float(np.ravel(v)[0])) for v in (lo, hi, point)):
        # the judge's answers do not vary: the power-tuning weight is 0/0; lam = 0 (the humans alone)
        lo, hi = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=alpha, lam=0)
        point = float(y.mean())
        note = "the judge's answers do not vary: power tuning is 0/0, lam = 0 (the human labels alone)"
    clo, chi = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=alpha, lam=0)
    ppi = {"share": point, "low": float(np.ravel(lo)[0]), "high": float(np.ravel(hi)[0]), "note": note}
    human = {"share": float(y.mean()), "low": float(clo[0]), "high": float(chi[0])}
    narrower = (ppi["high"] - ppi["low"]) <= (human["high"] - human["low"])
    return {"ppi": ppi, "human_only": human, "n_labelled": int(len(y)), "n_unlabelled": int(len(yu)),
            "reported": ppi if narrower else human,
            "reported_method": "prediction-powered (PPI++)" if narrower
            else "human-only (narrower than PPI on this sample)"}


def design_ppi_estimate(y, yhat, x, judge_share: float, *, stratum, cluster, population_groups: dict,
                        group_units: dict, alpha: float = ALPHA) -> dict | Undefined:
    """Prediction-powered share that respects the sampling design: the judge's share over every
    item of the benchmark (known exactly: the judge labelled them all) plus the design estimate
    of the human-minus-judge correction (a *difference estimator*; Särndal et al., 1992, §6.3,
    which PPI becomes when the unlabelled data are the whole finite population)::

        theta = lam * judge_share + R(y - lam * yhat),    Var = V_design(R(y - lam * yhat))

    ``R`` and ``V_design`` are those of :func:`design_estimate` (per sampled unit: ``y`` items
    the humans decided Yes, ``yhat`` those the judge says Yes, ``x`` decided items). The
    linearised variance is a quadratic in ``lam``; ``lam`` minimises it over [0, 1], so the
    interval (``theta +- t(df) se``) is never wider than the human-only design one with the same
    t form (``lam = 0``). Without an interval of the human labels (no decided item, a single
    sampled group): :class:`~evaluation.undefined.Undefined` with the reason.

    >>> r = design_ppi_estimate([1, 1, 0, 0], [1, 1, 0, 1], [1, 1, 1, 1], 0.6, stratum=[""] * 4,
    ...     cluster=["a", "b", "c", "d"], population_groups={"": 100}, group_units=dict.fromkeys("abcd", 1))
    >>> 0 <= r["lam"] <= 1 and r["se"] <= r["human_only_se"]
    True
    """
    y, yhat = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
    design = {"stratum": stratum, "cluster": cluster, "population_groups": population_groups,
              "group_units": group_units, "alpha": alpha, "interval": "wald"}
    a = design_estimate(y, x, **design)
    if not is_defined(a["low"]):
        return a["low"]
    vb = design_estimate(yhat, x, **design)["se"] ** 2
    vab = design_estimate(y + yhat, x, **design)["se"] ** 2
    va = a["se"] ** 2
    cov = (vab - va - vb) / 2
    lam = 0.0 if vb <= 0 else float(np.clip(cov / vb, 0.0, 1.0))
    d = design_estimate(y - lam * yhat, x, **design)
    theta = lam * judge_share + d["share"]
    q = float(stats.t.ppf(1 - alpha / 2, d["df"]))
    return {"share": theta, "low": max(0.0, theta - q * d["se"]), "high": min(1.0, theta + q * d["se"]),
            "se": d["se"], "lam": lam, "df": d["df"], "human_only_se": a["se"],
            "human_only": {"share": a["share"], "low": a["low"], "high": a["high"]}}


def read_judge_labels(path: str | Path) -> dict[tuple[str, str, str], str]:
    """An automatic judge's per-item answers: a CSV with the header ``instance_id,question,value``
    and optionally ``doc_id`` (``passage_match``, ``condition``, ``relevance``). ``value`` is an
    answer of the question (``Yes``/``No``, ``1``-``5``, ``relevant``/``not relevant``) or, for
    ``best_passage``, ``Yes``/``No`` (or ``1``/``0``): is the dataset's target the best passage.
    The rows are every item of the benchmark the judge labelled (sampled or not).

    Raises
    ------
    ImportFailure
        Empty file, not UTF-8, a missing column or value, or one item twice (file, line, field).
    """
    data = Path(path).read_bytes()
    if not data.strip():
        raise ImportFailure(str(path), None, None, "empty file: expected the header instance_id,question,value[,doc_id]")
    reader = csv.reader(io.StringIO(decode_utf8(data, path), newline=""))
    try:
        header = [h.strip().lower() for h in next(reader)]
        for col in ("instance_id", "question", "value"):
            if col not in header:
                raise ImportFailure(str(path), 1, col, f"missing column {col!r}; expected instance_id,question,value[,doc_id]")
        at = {c: header.index(c) for c in ("instance_id", "question", "value", "doc_id") if c in header}
        out: dict[tuple[str, str, str], str] = {}
        for row in reader:
            if not any(c.strip() for c in row):
                continue
            line = reader.line_num
            if len(row) < len(header):
                raise ImportFailure(str(path), line, header[len(row)], f"expected {len(header)} fields, got {len(row)}")
            key = (row[at["instance_id"]].strip(), row[at["question"]].strip(),
                   row[at["doc_id"]].strip() if "doc_id" in at else "")
            value = row[at["value"]].strip()
            if not key[0] or not key[1] or not value:
                field = "instance_id" if not key[0] else "question" if not key[1] else "value"
                raise ImportFailure(str(path), line, field, f"empty {field}")
            if key in out:
                raise ImportFailure(str(path), line, "instance_id", f"item {key[0]} / {key[1]} {key[2]} appears twice")
            out[key] = value
    except csv.Error as exc:
        raise ImportFailure(str(path), reader.line_num or 1, None, f"malformed CSV: {exc}") from None
    return out


def _judge_yes(question: str, value: str, *, threshold: int, scale: str) -> int | None:
    """The judge's answer as 1 / 0 for the estimand of ``question`` (None: not an answer of it).
    ``best_passage``: Yes/No or 1/0 (is the dataset's target the best passage); otherwise an
    answer of the question.

    >>> _judge_yes("best_passage", "1", threshold=4, scale="binary"), _judge_yes("naturalness", "2", threshold=4, scale="binary")
    (1, 0)
    """
    v = value.strip()
    if question == "best_passage":
        return {"1": 1, "yes": 1, "0": 0, "no": 0}.get(v.lower())
    if question in ("validity", "condition") or (question == "naturalness" and not v.isdigit()):
        return {"Yes": 1, "No": 0}.get(v)
    if question in ("naturalness", "passage_match"):
        return int(_yes(question, v, gold=None, threshold=threshold, scale=scale)) if v in "12345" and v else None
    return None


def judge_ppi(rows: list[dict], judge: dict, est: Estimand, *, match_threshold: int = MATCH_THRESHOLD,
              alpha: float = ALPHA, scale: str = "binary", keep=None) -> dict:
    """:func:`ppi_estimate` of one estimand: labelled = the study's decided items the judge
    also answered; unlabelled = the judge's other items of the question (the rest of the
    benchmark); with the judge's agreement with the human decisions (share and Cohen kappa). JSON
    form: ``undefined`` says why there is no estimate (None when there is one)."""
    from sklearn.metrics import cohen_kappa_score

    if est.question == "relevance":
        return {"undefined": "the judge's re-judgments are not compared with the changed qrels"}
    mine = {r["key"]: r for r in rows}
    y, yhat, bad = [], [], 0
    unl: list[int] = []
    if est.part is not None and est.question == "passage_match":
        return {"undefined": "the judge's file does not say which passages are gold or excluded"}
    for key, value in judge.items():
        if key[1] != est.question or (keep is not None and not keep(key)):
            continue
        j = _judge_yes(est.question, value, threshold=match_threshold, scale=scale)
        if j is None:
            bad += 1
            continue
        r = mine.get(key)
        if r is None:
            unl.append(j)
        elif r["y"] is not None:
            y.append(r["y"])
            yhat.append(j)
    missing = sum(1 for k, r in mine.items() if r["y"] is not None and k not in judge)
    res = ppi_estimate(y, yhat, unl, alpha=alpha)
    out = {"undefined": res.reason} if isinstance(res, Undefined) else {**res, "undefined": None}
    agree = {"n": len(y), "agreement": float(np.mean(np.equal(y, yhat))) if y else None, "cohen_kappa": None}
    if len(set(y) | set(yhat)) > 1 and y:
        k = cohen_kappa_score(y, yhat, labels=[0, 1])
        agree["cohen_kappa"] = None if math.isnan(k) else float(k)
    return {**out, "judge_agreement": agree, "decided_items_without_judge": missing, "judge_values_not_understood": bad}


def require_study(db: Database, study_id: int) -> None:
    """Raise a clear error for a study id that does not exist."""
    try:
        studies.get_study(db, study_id)
    except Exception as exc:  # NotFound is an IFJudgeError
        raise IFJudgeError(str(exc)) from None
