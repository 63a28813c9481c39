"""Benchmark-wide estimates from a study's sample, with intervals that follow how it was sampled.

A study does not judge the whole benchmark: :func:`annotation.studies.sample_instances` draws
query groups (per stratum: per domain when the study sampled per domain, else one stratum), then up
to ``per_group`` instances of each drawn group (and, for IFIR's excluded passages under
``max_excluded``, some of an instance's passages). Instances of one group share a query and their
answers are correlated, so the sample is a **stratified multi-stage cluster sample** with unequal
inclusion probabilities (a group of 10 instructions contributes 2 of them, a group of 3
contributes 2 too) from a finite population (:class:`annotation.survey.design.SampleDesign`). An
interval that treats the sampled instances as independent (the Wilson interval of
:func:`annotation.monitoring.monitor.extrapolation`) is too narrow when groups are internally alike.

Estimator (primary): the **stratified ratio (Hájek) estimator** of the share over the whole
benchmark with its **linearised (Taylor) variance** with finite-population corrections at every
stage (Särndal, Swensson & Wretman, 1992, *Model Assisted Survey Sampling*, Result 4.4.1 with §5.6
for the ratio; Cochran, 1977, §11.8). With the weights ``w`` of the design, ``y`` 1 for a decided
item whose decision says Yes (for the question's sense of Yes) and ``x`` 1 for a decided item::

    R = sum w y / sum w x,   V(R) = V_design(sum w u) with u = (y - R x) / sum w x

The 95% interval is **Wilson's at the design's effective sample size** ``n* = R (1 - R) / V``
with the t quantile of ``df = sampled groups - strata`` (Kott & Carr 1997; Franco et al. 2019),
``n*`` at most Kish's effective size of the weights over ``1 - f``
(:func:`annotation.survey.intervals.wilson_design`). Measured
(``bench/bench_estimate_coverage.py``): it covers between 0.94 and 0.97 at shares from 50 to 99%,
with unequal group sizes, unequal domain rates and small populations; Korn & Graubard's interval
(``interval="korn-graubard"``) covers above 0.975 at 97%, the Wald-t form (``interval="wald"``)
below 0.90. A stratum with a single sampled group (of several) centres its group on the mean over
all groups (R ``survey``'s ``lonely.psu = "adjust"``); a group with a single sampled unit of several
has no within-group variance term (named in ``notes``). Items without a decision (no majority yet,
a tie) are left out as missing (domain estimation): they count neither in ``y`` nor in ``x``.

The **design effect** is ``V(R)`` over the variance of a simple random sample of the same number
of decided items, ``(1 - n/N) R (1 - R) / (n - 1)``; the **effective sample size** is
``n / deff``. The labels that would **halve the interval**: the width scales as
``sqrt(1/n - 1/N)`` in the number n of sampled groups, so a quarter of the variance needs
``n' = 4 / (1/n + 3/N)`` groups; the further labels are ``(n' - n)`` times the labels per sampled
group so far.

Prediction-powered estimates (:mod:`annotation.survey.prediction_powered`): when an automatic judge
labelled every item of the benchmark, its share over the population corrected by the humans'
sample, in the same design.

A figure that does not exist on the data (no decided item, the interval of a single sampled
group, the design effect of a share of 0 or 1) is :class:`~evaluation.undefined.Undefined` with
the reason; :func:`benchmark_estimates`, the JSON-ready report, shows it as null with the reason
beside it (``undefined``), as :mod:`evaluation.compare` does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from annotation.estimates.estimands import MATCH_THRESHOLD, Estimand, estimand_rows
from annotation.judges.labels import judge_yes
from annotation.survey.prediction_powered import LAM, prediction_powered_share
from annotation.questions.question_type import Question
from annotation.questions.study import study_questions
from annotation.survey.intervals import korn_graubard, wilson_design
from annotation.survey.stratified_wilson import mover_wilson
from annotation.estimates.sampling import study_design
from annotation.survey.design import SampleDesign
from evaluation.undefined import Undefined, defined_or_none, is_defined
from storage import projects, studies
from storage.db import Database
from storage.errors import IFJudgeError

ALPHA = 0.05
METHOD = ("stratified multi-stage ratio estimator, linearised (Taylor) variance with finite-population "
          "corrections at every stage, Wilson interval at the design's effective sample size (t quantile, "
          "df = sampled groups - strata; design effect at least Kish's weighting effect)")
INTERVALS = ("wilson", "korn-graubard", "wald", "stratified-wilson")


# --------------------------------------------------------------------------- the estimator


def design_estimate(y, x, *, stratum, cluster, population_groups: dict, group_units: dict, unit=None,
                    unit_items: dict | None = None, alpha: float = ALPHA, interval: str = "wilson") -> dict:
    """Share ``sum w y / sum w x`` over the whole population from a stratified multi-stage sample.

    Parameters
    ----------
    y, x : sequences of numbers, one per sampled row
        Items of the row that say Yes, and decided items of the row (``0 <= y <= x``). A row is a
        unit (an instance), or with ``unit`` an item of one.
    stratum, cluster : sequences of str, one per row
        The row's stratum and group (a group lies in one stratum).
    population_groups : dict stratum -> int or None
        ``N_h``, the groups of the stratum in the population (None: an infinite population, no
        finite-population correction at the first stage).
    group_units : dict cluster -> int
        ``M_g``, the units of each sampled group in the population.
    unit, unit_items : optional
        The unit of each row, and unit -> ``E_u``, its items in the population (a third stage;
        default: every item of the unit sampled).
    alpha : float, keyword-only
        1 - the interval's confidence (0.05: 95%).
    interval : {"wilson", "korn-graubard", "wald", "stratified-wilson"}, keyword-only
        ``wilson`` (default): :func:`annotation.survey.intervals.wilson_design`;
        ``korn-graubard``: :func:`annotation.survey.intervals.korn_graubard`;
        ``wald``: ``R +- t(df) se`` clipped to [0, 1]; ``stratified-wilson``: :func:`_wilson` by stratum.

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
    if interval not in INTERVALS:
        raise IFJudgeError(f"interval must be one of {', '.join(INTERVALS)}, got {interval!r}")
    y = np.asarray(y, dtype=float)
    x = np.asarray(x, dtype=float)
    design = SampleDesign.build(stratum=stratum, cluster=cluster, population_groups=population_groups,
                                group_units=group_units, unit=unit, unit_items=unit_items)
    notes: list[str] = []
    n_items = float(x.sum())
    counts = {"n_units": len(design.E), "n_items": int(n_items), "n_groups": design.n_groups,
              "n_strata": design.n_strata}
    if n_items == 0:
        return {**counts, **dict.fromkeys(ESTIMATE_FIGURES, Undefined("no decided item yet")), "notes": notes}
    R, u = design.ratio(y, x)
    var = design.variance(u, notes=notes)
    se = math.sqrt(max(var, 0.0))
    df = design.df
    X = float((design.weights * x).sum())
    deff, n_effective = design_effect(var, R, n_items, X, finite=design.finite, notes=notes)
    if design.n_groups < 2:
        low = high = Undefined("a single sampled group: no interval")
    elif interval == "wald":
        q = float(stats.t.ppf(1 - alpha / 2, df))
        low, high = max(0.0, R - q * se), min(1.0, R + q * se)
    elif interval == "korn-graubard":
        low, high = korn_graubard(R, var, n_items, df, alpha=alpha)
    else:
        low, high = _wilson(design, R, var, y, x, df=df, alpha=alpha, by_stratum=interval == "stratified-wilson")
    return {**counts, "share": R, "low": low, "high": high, "se": se, "df": df, "deff": deff,
            "n_effective": n_effective, "notes": notes, "interval": interval}


def _wilson(design: SampleDesign, R: float, var: float, y, x, *, df: int, alpha: float,
            by_stratum: bool) -> tuple[float, float]:
    """The design Wilson interval, its effective size capped at Kish's over ``1 - f``; with
    ``by_stratum`` (a study stratified by a judge's answers) each stratum's, combined by MOVER
    (:func:`annotation.survey.stratified_wilson.mover_wilson`)."""
    if by_stratum:
        return mover_wilson(design, y, x, alpha=alpha)[1:]
    f = design.sampled_fraction(x)
    cap = design.kish_size(x) / (1 - f) if f < 1 else float("inf")
    return wilson_design(R, var, cap=cap, df=df, alpha=alpha)


#: the figures of :func:`design_estimate`, each a number or :class:`~evaluation.undefined.Undefined`
ESTIMATE_FIGURES = ("share", "low", "high", "se", "df", "deff", "n_effective")


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


# --------------------------------------------------------------------------- the study's estimates


def benchmark_estimates(db: Database, study_id: int, *, match_threshold: int = MATCH_THRESHOLD,
                        alpha: float = ALPHA, judge: dict | None = None, judge_weight: float | None = LAM) -> dict:
    """The study's benchmark-wide estimates: ``{"study", "design", "method", "estimates": [...]}``,
    one estimate per question (and part) with the share, its interval (:func:`design_estimate`),
    the design effect, the effective sample size, the naive independent (Wilson) interval for
    comparison, and the labels that would halve the interval (:func:`labels_to_halve`). With
    ``judge`` (:func:`annotation.judges.labels.read_judge_labels`), each estimate also carries
    ``ppi_design``, the prediction-powered estimate of the same items
    (:func:`annotation.survey.prediction_powered.prediction_powered_share`) with the judge's agreement with
    the humans, and the result ``ppi_method``; ``judge_weight`` is its weight, fixed before the data
    (1/2, the default: docs/statistics.md says why), or None for the power-tuned one, cross-fitted.

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
        return _benchmark_estimates(db, study_id, match_threshold=match_threshold, alpha=alpha, judge=judge,
                                    judge_weight=judge_weight)
    # once per page run or report when ``db`` shares its reads, kept across runs when it does
    # (storage.studies.share_reads): the Monitor shows it on every run
    return studies.shared(db, ("benchmark_estimates", study_id, match_threshold, alpha),
                          lambda: _benchmark_estimates(db, study_id, match_threshold=match_threshold, alpha=alpha))


def _benchmark_estimates(db: Database, study_id: int, *, match_threshold: int, alpha: float,
                         judge: dict | None = None, judge_weight: float | None = LAM) -> dict:
    from annotation.survey.prediction_powered import method as ppi_method

    design = studies.shared(db, ("study_design", study_id), lambda: study_design(db, study_id))  # read-only
    study = studies.get_study(db, study_id)
    per_estimand = estimand_rows(db, study_id, match_threshold=match_threshold)
    sampled = set(studies.item_columns(db, study_id)["instance_id"])
    declared = study_questions(study)
    variant = None
    estimates = []
    for est, rows in per_estimand.items():
        sample = estimand_sample(est, rows, design, sampled)
        estimates.append(_estimate_entry(est, sample, design, alpha=alpha))
        if judge is not None:
            variant = variant if variant is not None else {
                i["instance_id"]: i["variant"] for i in projects.instances(db, study["project_id"])}
            keep = None if est.part not in ("changed", "reversed") else (lambda key, m=est.part: variant.get(key[0]) == m)
            estimates[-1]["ppi_design"] = judge_estimate(judge, est, sample, design, keep=keep,
                                                         threshold=match_threshold, question=declared[est.question],
                                                         alpha=alpha, lam=judge_weight)
    out = {"study": {"id": study["id"], "name": study["name"], "questions": study["questions"]},
           "design": {k: v for k, v in design.items() if k in ("kind", "description", "seed", "overlap", "notes")}
           | {"strata": design["strata"], "population_groups": None if None in design["strata"].values()
              else sum(design["strata"].values())},
           "method": METHOD, "alpha": alpha, "estimates": estimates}
    if judge is not None:
        out["ppi_method"] = ppi_method(judge_weight)
        out["judge_weight"] = judge_weight
    return out


@dataclass
class EstimandSample:
    """One estimand's sampled rows: an item each, and an empty row (``x = 0``) for a sampled unit
    without an item of the estimand (it still counts among its group's sampled units). Per row
    ``unit``, ``cluster`` (its group), ``y`` (1: decided Yes), ``x`` (1: decided) and ``key`` (the
    item in a judge's file, None for an empty row); ``group_units`` group -> ``M_g``,
    ``unit_items`` unit -> ``E_u`` where a study sampled some of a unit's items, and ``labels``,
    the labels given to its items."""

    unit: list[str]
    cluster: list[str]
    y: np.ndarray
    x: np.ndarray
    key: list
    group_units: dict[str, int]
    unit_items: dict[str, int]
    labels: int

    def design_args(self, design: dict, alpha: float) -> dict:
        """The keyword arguments of :func:`design_estimate` for these rows under ``design``
        (:func:`annotation.estimates.sampling.study_design`)."""
        return {"stratum": [design["group_stratum"].get(g, "") for g in self.cluster], "cluster": self.cluster,
                "unit": self.unit, "unit_items": self.unit_items, "population_groups": design["strata"],
                "group_units": self.group_units, "alpha": alpha}


def estimand_sample(est: Estimand, rows: list[dict], design: dict, sampled: set[str]) -> EstimandSample:
    """The rows of one estimand (:func:`annotation.estimates.estimands.estimand_rows`) with the group
    structure of :func:`annotation.estimates.sampling.study_design`. An instances study counts every
    sampled instance (one without an item of this question as missing); a changed / reversed
    estimand of a condition study has units at the mode level (one instance of each mode per query:
    ``M_g = 1``), and a sampled query without a document adds an empty unit."""
    items = [(r["unit"], r["key"], r["y"]) for r in rows]
    labels = sum(r["labels"] for r in rows)
    unit_items = {r["unit"]: int(r["unit_items"]) for r in rows if r.get("unit_items")}
    seen = {u for u, _, _ in items}
    if design["kind"] == "instances":
        items += [(inst, None, None) for inst in sampled - seen]
    group_of = {u: design["unit_group"].get(u, u) for u, _, _ in items}
    mode_level = est.part in ("changed", "reversed")
    group_units = {g: (1 if mode_level else design["group_units"].get(g, 1)) for g in set(group_of.values())}
    if mode_level:
        for g in set(design["group_stratum"]) - set(group_of.values()):
            items.append((f"{g}|none", None, None))
            group_of[f"{g}|none"] = g
            group_units[g] = 1
    items.sort(key=lambda r: (r[0], r[1] or ()))
    return EstimandSample(
        unit=[u for u, _, _ in items], cluster=[group_of[u] for u, _, _ in items],
        y=np.array([0.0 if v is None else float(v) for _, _, v in items]),
        x=np.array([0.0 if v is None else 1.0 for _, _, v in items]),
        key=[k for _, k, _ in items], group_units=group_units, unit_items=unit_items, labels=labels)


def _estimate_entry(est: Estimand, sample: EstimandSample, design: dict, *, alpha: float) -> dict:
    """One estimate of :func:`benchmark_estimates` (JSON form): :func:`design_estimate` of the
    rows, the Yes items and labels, the naive independent (Wilson) interval of the decided items
    and :func:`labels_to_halve`."""
    from statsmodels.stats.proportion import proportion_confint

    res = design_estimate(sample.y, sample.x, **sample.design_args(design, alpha),
                          interval=design.get("interval", "wilson"))
    k = int(sample.y.sum())
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


def judge_estimate(judge: dict, est: Estimand, sample: EstimandSample, design: dict, *, keep, threshold: int,
                   question: Question, alpha: float, lam: float | None = LAM) -> dict:
    """The prediction-powered estimate of one estimand (JSON form; ``undefined``: why there is
    none, else None) from the judge's answers (:func:`annotation.judges.labels.read_judge_labels`):
    the judge's share over the items of the estimate's population it answered (the project's
    instances the design samples from, of the question, of the mode for a condition estimand),
    :func:`annotation.survey.prediction_powered.prediction_powered_share` of the sampled decided items,
    and the judge's agreement with the humans there (share and Cohen kappa); ``lam``: its weight
    (None: tuned, cross-fitted)."""
    if question.estimand_rule != "positive" or (est.part is not None and keep is None):
        return {"undefined": "the judge's items of this estimate cannot be told apart in its file"}
    population = design["unit_group"]
    answers, outside = {}, 0
    for key, v in judge.items():
        if key[1] != est.question or (keep is not None and not keep(key)):
            continue
        if key[0] not in population:
            outside += 1
            continue
        j = judge_yes(question, v, threshold=threshold)
        if j is not None:
            answers[key] = j
    if not answers:
        return {"undefined": "the judge answered no item of this estimate's population"}
    decided = sample.x > 0
    missing = sum(1 for k, d in zip(sample.key, decided) if d and k not in answers)
    if missing:
        return {"undefined": f"{missing} decided item(s) of the sample have no answer of the judge"}
    yhat = np.array([answers.get(k, 0) if d else 0 for k, d in zip(sample.key, decided)], dtype=float)
    judge_share = float(np.mean(list(answers.values())))
    res = prediction_powered_share(sample.y, yhat, sample.x, judge_share, seed=int(design.get("seed") or 0),
                                   lam=lam, **sample.design_args(design, alpha))
    notes = []
    if outside:
        notes.append(f"{outside} answer(s) of the judge are for items outside this estimate's population: left out "
                     "of its share")
    answered_units = {k[0] for k in answers}
    in_population = ({u for u in population if keep is None or keep((u, est.question, ""))}
                     if design["kind"] != "relevance" else set())
    if in_population and len(answered_units) < len(in_population):
        notes.append(f"the judge answered {len(answered_units)} of the {len(in_population)} instances of the population: "
                     "its share is over those")
    agreement = judge_agreement(sample.y[decided], yhat[decided])
    if isinstance(res, Undefined):
        return {"undefined": res.reason, "n_judged": len(answers), "judge_agreement": agreement, "notes": notes}
    return {**res, "notes": notes + res["notes"], "undefined": None, "n_judged": len(answers),
            "judge_agreement": agreement}


def judge_agreement(y, yhat) -> dict:
    """The judge's agreement with the humans' decisions on the sampled decided items: the share
    alike and Cohen's kappa (None where 0/0, e.g. every answer alike).

    >>> judge_agreement([1, 1, 0, 0], [1, 1, 0, 1])
    {'n': 4, 'agreement': 0.75, 'cohen_kappa': 0.5}
    """
    from sklearn.metrics import cohen_kappa_score

    y, yhat = np.asarray(y, int), np.asarray(yhat, int)
    out = {"n": int(len(y)), "agreement": float(np.mean(y == yhat)) if len(y) else None, "cohen_kappa": None}
    if len(y) and len(set(y.tolist()) | set(yhat.tolist())) > 1:
        with np.errstate(invalid="ignore", divide="ignore"):
            k = cohen_kappa_score(y, yhat, labels=[0, 1])
        out["cohen_kappa"] = None if math.isnan(k) else float(k)
    return out


def require_study(db: Database, study_id: int) -> None:
    """Raise a clear error for a study id that does not exist."""
    try:
        studies.get_study(db, study_id)
    except Exception as exc:  # NotFound is an IFJudgeError
        raise IFJudgeError(str(exc)) from None
