"""Benchmark-wide estimates: the design-aware interval against a hand-computed two-stage variance
(Cochran 1977, §11.8) and Wilson's formula at the effective size, the third stage of IFIR's
subsampled excluded passages, the study's design read from its settings, and the prediction-powered
estimate against the difference estimator written out by hand (ppi_py, with the design weights, as
the reference for the point estimate and the rectifier's variance)."""
from __future__ import annotations

import json
import math
import time

import numpy as np
import ppi_py
import pytest
from scipy import stats

from annotation import workspace
from annotation.estimates.benchmark import benchmark_estimates, design_estimate, estimate_json, labels_to_halve
from annotation.judges.labels import read_judge_labels
from annotation.survey.prediction_powered import group_folds, prediction_powered_share
from annotation.estimates.sampling import study_design
from annotation.studies import StudySettings, create_study
from annotation.survey.design import SampleDesign
from evaluation.undefined import Undefined
from storage import projects, studies
from storage.errors import ImportFailure
from tests.builders import app, label_demo, open_tab, user_row
from storage.projects import get_project


def test_two_stage_variance_matches_the_hand_computation():
    # strata a, b: 2 of 4 groups sampled in each, 2 of 3 instances per group
    # y: a1 [1,1], a2 [0,1], b1 [1,0], b2 [0,0]; every weight 4/2 * 3/2 = 3, R = 12/24 = 1/2
    # u = y - R; group totals t = 3/2 * sum u: a1 1.5, a2 0, b1 0, b2 -1.5
    # V1 = sum_h 16 (1 - 2/4) s2(t) / 2 = 4.5 + 4.5;  V2 = sum_g 2 * 9 * (1 - 2/3) s2(u) / 2 = 1.5 + 1.5
    # V = 12 / X^2 = 12 / 24^2
    r = design_estimate([1, 1, 0, 1, 1, 0, 0, 0], [1] * 8, stratum=list("aaaabbbb"),
                        cluster=["a1", "a1", "a2", "a2", "b1", "b1", "b2", "b2"],
                        population_groups={"a": 4, "b": 4}, group_units=dict.fromkeys(["a1", "a2", "b1", "b2"], 3))
    assert r["share"] == 0.5
    assert r["se"] == pytest.approx(math.sqrt(12) / 24)
    assert r["df"] == 2  # 4 groups - 2 strata
    # Wilson at n* = R (1 - R) / V = 1/4 / (12/576) = 12, at most Kish's size over 1 - f: weights all 3,
    # so Kish's size is the 8 items, f = 8/24 and the cap 8 / (2/3) = 12; z = t(2)
    z = stats.t.ppf(0.975, 2)
    half = z * math.sqrt(0.25 / 12 + z**2 / (4 * 144)) / (1 + z**2 / 12)
    assert (r["low"], r["high"]) == pytest.approx((0.5 - half, 0.5 + half))  # centre 1/2: symmetric
    assert r["interval"] == "wilson"
    # Korn-Graubard (a named alternative): n* = 12 * (t_{7} / t_{2})^2; Clopper-Pearson at n*, k = n*/2
    kg = design_estimate([1, 1, 0, 1, 1, 0, 0, 0], [1] * 8, stratum=list("aaaabbbb"), interval="korn-graubard",
                         cluster=["a1", "a1", "a2", "a2", "b1", "b1", "b2", "b2"],
                         population_groups={"a": 4, "b": 4}, group_units=dict.fromkeys(["a1", "a2", "b1", "b2"], 3))
    n_star = 0.25 / (12 / 576) * (stats.t.ppf(0.025, 7) / stats.t.ppf(0.025, 2)) ** 2
    assert (kg["low"], kg["high"]) == pytest.approx((stats.beta.ppf(0.025, n_star / 2, n_star / 2 + 1),
                                                     stats.beta.ppf(0.975, n_star / 2 + 1, n_star / 2)))
    wald = design_estimate([1, 1, 0, 1, 1, 0, 0, 0], [1] * 8, stratum=list("aaaabbbb"),
                           cluster=["a1", "a1", "a2", "a2", "b1", "b1", "b2", "b2"], interval="wald",
                           population_groups={"a": 4, "b": 4}, group_units=dict.fromkeys(["a1", "a2", "b1", "b2"], 3))
    half = stats.t.ppf(0.975, 2) * math.sqrt(12) / 24
    assert (wald["low"], wald["high"]) == pytest.approx((max(0, 0.5 - half), min(1, 0.5 + half)))
    # simple random sample of 8 of the 24 instances: (1 - 8/24) * 1/4 / 7
    assert r["deff"] == pytest.approx((12 / 576) / ((1 - 8 / 24) * 0.25 / 7))
    assert r["n_effective"] == pytest.approx(8 / r["deff"])


def test_without_finite_population_the_first_stage_is_the_with_replacement_form():
    # one stratum, infinite population; 3 groups of 2 units, every unit of each group judged
    r = design_estimate([1, 1, 1, 0, 0, 0], [1] * 6, stratum=[""] * 6, cluster=list("aabbcc"),
                        population_groups={"": None}, group_units={"a": 2, "b": 2, "c": 2})
    # R = 1/2; totals t = (1, 0, -1); V = 3^2 * s2(t) / 3 / X^2 with X = 6 (the weights are 1)
    assert r["se"] == pytest.approx(math.sqrt(9 * 1.0 / 3) / 6)


def test_correlated_groups_widen_the_interval_beyond_the_naive_one():
    # 10 groups, both sampled instances of a group answer alike: the design effect is about 2
    y = [1, 1] * 5 + [0, 0] * 5
    r = design_estimate(y, [1] * 20, stratum=[""] * 20, cluster=[f"g{i // 2}" for i in range(20)],
                        population_groups={"": 1000}, group_units={f"g{i}": 10 for i in range(10)})
    assert r["deff"] > 1.5
    assert r["n_effective"] < 20 / 1.5


def test_undefined_cases_are_named():
    none = design_estimate([0], [0], stratum=[""], cluster=["g"], population_groups={"": 5}, group_units={"g": 2})
    assert {none[k] for k in ("share", "low", "high", "se", "df", "deff", "n_effective")} == {
        Undefined("no decided item yet")}
    one = design_estimate([1, 0], [1, 1], stratum=["", ""], cluster=["g", "g"], population_groups={"": 5},
                          group_units={"g": 2})
    assert one["low"] == one["high"] == Undefined("a single sampled group: no interval") and one["share"] == 0.5
    # every decided item says Yes: the design effect is 0/0, the interval Wilson's at the cap: 4 items of
    # weight 5 (Kish's size 4), f = 4/20: n* = 5; at a share of 1 Wilson's lower bound is n / (n + z^2)
    agree = design_estimate([1, 1, 1, 1], [1] * 4, stratum=[""] * 4, cluster=["a", "a", "b", "b"],
                            population_groups={"": 10}, group_units={"a": 2, "b": 2})
    assert agree["deff"] == agree["n_effective"] == Undefined("every decided item agrees (share 0 or 1): 0/0")
    z = stats.t.ppf(0.975, 1)
    assert agree["high"] == 1.0 and agree["low"] == pytest.approx(5 / (5 + z**2)) and agree["low"] > 0


def test_the_json_form_is_null_beside_the_reason():
    one = design_estimate([1, 0], [1, 1], stratum=["", ""], cluster=["g", "g"], population_groups={"": 5},
                          group_units={"g": 2})
    form = estimate_json(one)
    assert (form["low"], form["high"], form["undefined"], form["share"]) == (
        None, None, "a single sampled group: no interval", 0.5)
    json.dumps(form, allow_nan=False)  # no Undefined object left
    two = estimate_json(design_estimate([1, 0], [1, 1], stratum=["", ""], cluster=["g", "h"],
                                        population_groups={"": 5}, group_units={"g": 1, "h": 1}))
    assert two["undefined"] is None and 0 < two["low"] < 0.5 < two["high"] < 1


def test_labels_to_halve_the_interval():
    # n' = 4 / (1/10 + 3/100) = 30.77 -> 31 groups; 21 more at 6 labels per group
    assert labels_to_halve(10, 100, 60) == {"groups_needed": 31, "further_groups": 21, "further_labels": 126}
    assert labels_to_halve(10, None, 60)["further_groups"] == 30  # infinite population: 4 n


def _label(db, sid, answer):
    for name in ("ann1", "ann2", "ann3"):
        u = user_row(db, name)
        while (s := workspace.open_screen(db, sid, u)) is not None:
            answers = {"validity": {"value": answer(s.instance_id), "reason": "no"}, "naturalness": {"value": "Yes"}}
            for it in s.items:
                if it.question.id == "best_passage":
                    answers["best_passage"] = {"value": sorted(p["doc_id"] for p in it.passages)[0]}
            workspace.submit_screen(db, s, u, answers, started_at=time.time() - 1)


@pytest.fixture
def census_study(demo):
    """Every group of the demo (4 InstructIR groups of 3 instances, the FollowIR group of 2), 2
    instances each, one annotator per item; validity: No for the second sampled instance of q-endo."""
    db, _ = demo
    sid = create_study(db, project=get_project(db, "demo"), questions=["validity", "naturalness", "best_passage"],
                       annotators=["ann1", "ann2", "ann3"],
                       settings=StudySettings(group_fraction=1.0, per_group=2, overlap=1, seed=0))["study_id"]
    endo = sorted(i for i in {it["instance_id"] for it in studies.items_of_study(db, sid)}
                  if i.startswith("q-endo"))
    _label(db, sid, lambda inst: "No" if inst == endo[1] else "Yes")
    return db, sid


def test_study_design_is_read_from_the_settings(census_study):
    db, sid = census_study
    d = study_design(db, sid)
    assert d["kind"] == "instances" and d["strata"] == {"": 5}
    assert d["group_units"] == {"q-endo": 3, "q-kohl": 3, "q-run": 3, "q-sol": 3, "f-robot": 2}
    assert "up to 2 instances per group" in d["description"]


def test_benchmark_share_of_valid_instructions_by_hand(census_study):
    db, sid = census_study
    valid = next(e for e in benchmark_estimates(db, sid)["estimates"] if e["question"] == "validity")
    # weights M_g / m_g: 3/2 for the InstructIR groups, 1 for f-robot (N_h = n_h: no first-stage term)
    # R = (1.5 * 1 + 1.5 * 2 * 3 + 1 * 2) / 14 = 25/28
    assert valid["share"] == pytest.approx(25 / 28)
    # only q-endo varies within: V = 1 * 9 * (1 - 2/3) * s2(u) / 2 / 14^2 with s2(u) = 1/2
    se = math.sqrt(9 * (1 / 3) * 0.5 / 2) / 14
    assert valid["se"] == pytest.approx(se)
    # Wilson at n* = R (1 - R) / V = 25.0 (below the cap: Kish's size of 8 items of weight 3/2 and 2 of
    # weight 1 is 14^2 / 20 = 9.8, over 1 - f = 4/14: 34.3), z = t(4) (5 groups - 1 stratum)
    R, n_star, z = 25 / 28, (25 / 28) * (3 / 28) / se**2, stats.t.ppf(0.975, 4)
    centre = (R + z**2 / (2 * n_star)) / (1 + z**2 / n_star)
    half = z * math.sqrt(R * (1 - R) / n_star + z**2 / (4 * n_star**2)) / (1 + z**2 / n_star)
    assert (valid["low"], valid["high"]) == pytest.approx((centre - half, centre + half))
    assert valid["n_items"] == 10 and valid["n_groups"] == 5 and valid["yes_items"] == 9
    assert valid["naive_independent"]["k"] == 9 and valid["naive_independent"]["n"] == 10
    natural = next(e for e in benchmark_estimates(db, sid)["estimates"] if e["question"] == "naturalness")
    assert natural["share"] == 1.0 and natural["se"] == 0.0
    cap = 9.8 * 14 / 4  # every decided item agrees: Wilson at the cap, lower bound n / (n + z^2)
    assert natural["low"] == pytest.approx(cap / (cap + z**2)) and natural["high"] == 1.0


def test_judge_file_through_the_study(census_study, tmp_path):
    db, sid = census_study
    sampled = sorted({it["instance_id"] for it in studies.items_of_study(db, sid)})
    every = ["f-robot-changed", "f-robot-og"] + [f"q-{g}_{k}" for g in ("endo", "kohl", "run", "sol") for k in (1, 2, 3)]
    rows = ["instance_id,question,value"] + [f"{i},validity,Yes" for i in every]
    path = tmp_path / "judge.csv"
    path.write_text("\n".join(rows) + "\n")
    judge = read_judge_labels(path)
    out = benchmark_estimates(db, sid, judge=judge)  # the weight fixed before the data: 1/2
    valid = next(e for e in out["estimates"] if e["question"] == "validity")
    assert "ppi" not in valid and "lam = 0.5 fixed before the data" in out["ppi_method"]
    d = valid["ppi_design"]
    assert d["undefined"] is None and d["n_judged"] == 14 and len(sampled) == 10
    assert d["judge_agreement"]["agreement"] == 0.9  # the judge says Yes where the humans said No once
    # the judge says Yes everywhere (J = 1, yhat = 1): theta = A/2 + (1 + (A - 1))/2 = A, the humans' share
    assert d["lam"] == 0.5 and d["folds"] == 0 and d["share"] == pytest.approx(25 / 28)
    assert d["low"] < d["share"] < d["high"]
    tuned = benchmark_estimates(db, sid, judge=judge, judge_weight=None)
    assert "cross-fitted" in tuned["ppi_method"] and tuned["judge_weight"] is None
    d = next(e for e in tuned["estimates"] if e["question"] == "validity")["ppi_design"]
    # tuned: the judge's answers do not vary, lam = 0 in every fold, and the interval is the human-only one
    assert d["lam"] == 0.0 and d["share"] == pytest.approx(25 / 28)
    assert (d["low"], d["high"]) == pytest.approx((valid["low"], valid["high"]))


@pytest.mark.parametrize("text, line, field", [
    ("instance_id,value\na,Yes\n", 1, "question"),
    ("instance_id,question,value\na,validity,Yes\na,validity,No\n", 3, "instance_id"),
    ("instance_id,question,value\na,validity,\n", 2, "value"),
])
def test_bad_judge_file_names_line_and_field(tmp_path, text, line, field):
    path = tmp_path / "judge.csv"
    path.write_text(text)
    with pytest.raises(ImportFailure) as exc:
        read_judge_labels(path)
    assert "judge.csv" in str(exc.value) and f"line {line}" in str(exc.value) and field in str(exc.value)


def test_monitor_page_shows_the_estimates_live(env_db):
    db, r = env_db
    label_demo(db, r["study_id"])  # validity: 2 Yes, 1 No on each of the 8 items
    at = app("pages/monitor.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    assert not at.exception
    assert not any("Benchmark-wide estimates" in s.value for s in at.subheader)  # in its own tab
    open_tab(at, "Benchmark estimate")
    assert not at.exception
    table = next(d.value for d in at.dataframe if "95% CI (design)" in d.value.columns)
    valid = table[table["Estimate"] == "valid instruction"].iloc[0]
    assert valid["Share"] == "1.000" and valid["Decided items"] == 8
    assert any("Benchmark-wide estimates" in s.value for s in at.subheader)


def test_ifir_strata_and_passage_match_share(db_path):
    from accounts import auth
    from storage.db import connect
    from tests.builders import ifir_bundle, label_ifir

    db = connect(db_path)
    projects.import_bundle(db, "ifir", ifir_bundle(), fmt="ifir")
    for n in range(3):
        auth.add_user(db, f"a{n}", "annotator", "pw")
    sid = create_study(db, project=get_project(db, "ifir"), questions=["passage_match"], annotators=["a0", "a1", "a2"],
                       settings=StudySettings(subset_fraction=0.5, per_group=2, seed=3))["study_id"]
    d = study_design(db, sid)
    assert d["strata"] == {"fiqa": 20, "aila": 10, "pm": 3}  # groups per domain in the population
    values = {}
    for it in studies.items_of_study(db, sid):
        gold = it["payload"]["kind"] == "gold"
        v = ("2" if it["instance_id"].startswith("aila") else "5") if gold else "1"
        values[(it["instance_id"], it["doc_id"], "passage_match")] = [v] * 3
    label_ifir(db, sid, values)
    out = {e["estimand"]: e for e in benchmark_estimates(db, sid)["estimates"]}
    gold = out["passage match >= 4 (gold passages)"]
    # sampled groups: fiqa 10 of 20 (weight 2), aila 5 of 10 (2), pm round(1.5) = 2 of 3 (1.5);
    # every group: 3 gold passages (2 for <q>_1, 1 for <q>_2), match in fiqa and pm only
    assert gold["n_groups"] == 17 and gold["n_strata"] == 3 and gold["n_items"] == 51
    assert gold["share"] == pytest.approx((2 * 30 + 1.5 * 6) / (2 * 30 + 2 * 15 + 1.5 * 6))
    assert out["passage match >= 4 (excluded passages)"]["share"] == 0.0


def test_condition_shares_per_mode(demo):
    from dataclasses import replace

    from formats.readers import parse
    from storage.projects import import_bundle
    from tests.builders import CONDITION_ANSWERS as ANSWERS, DIMENSIONS, INFOSEARCH_FIXTURE as FIXTURE, answer_all

    db, _ = demo
    b = parse("infosearch", [FIXTURE])
    import_bundle(db, "is", replace(b, queries=[replace(q, subset=DIMENSIONS[q.query_id]) for q in b.queries]),
                  fmt="infosearch")
    sid = create_study(db, project=get_project(db, "is"), questions=["condition"], annotators=["ann1", "ann2", "ann3"],
                       settings=StudySettings(group_fraction=1.0))["study_id"]
    answer_all(db, sid, ["ann1", "ann2", "ann3"])
    out = {e["part"]: e for e in benchmark_estimates(db, sid)["estimates"]}
    for mode in ("changed", "reversed"):
        yes = sum(v == "Yes" for (m, _, _), v in ANSWERS.items() if m == mode)
        assert out[mode]["share"] == pytest.approx(yes / 6) and out[mode]["n_items"] == 6
        assert out[mode]["estimand"] == f"condition satisfied ({mode} instruction)"


def test_narrative_change_confirmed_against_the_changed_qrels(demo):
    from annotation.narratives import versions as narrative_versions

    db, _ = demo
    sid = narrative_versions.save_narrative(db, project=get_project(db, "demo"), query_id="f-robot", text="Robots excluded.",
                                            author="expert", annotators=["ann1", "ann2", "ann3"])["study_id"]
    for name in ("ann1", "ann2", "ann3"):
        u = user_row(db, name)
        while (s := workspace.open_screen(db, sid, u)) is not None:
            workspace.submit_screen(db, s, u, {"relevance": {"value": "not relevant"}}, started_at=time.time() - 1)
    (e,) = benchmark_estimates(db, sid)["estimates"]
    changed = projects.qrels(db, studies.get_study(db, sid)["project_id"], "changed")["f-robot"]
    judged = [it["doc_id"] for it in studies.items_of_study(db, sid)]
    # every re-judgment is "not relevant": it agrees where the changed qrels say not relevant
    assert e["share"] == pytest.approx(sum(changed.get(d, 0) == 0 for d in judged) / len(judged))
    assert e["undefined"] == "a single sampled group: no interval"  # one edited query


def test_subsampled_items_add_a_third_stage_by_hand():
    # 10 groups of one instance each, 2 sampled; each instance has 4 excluded passages, 2 sampled:
    # every weight 10/2 * 1 * 4/2 = 10; R = 30 / 40
    r = design_estimate([1, 0, 1, 1], [1] * 4, stratum=[""] * 4, cluster=["g1", "g1", "g2", "g2"],
                        unit=["u1", "u1", "u2", "u2"], unit_items={"u1": 4, "u2": 4},
                        population_groups={"": 10}, group_units={"g1": 1, "g2": 1})
    assert r["share"] == 0.75
    # u = (y - 3/4) / 40; unit totals 4/2 * sum u = -1/40, +1/40 (the group totals too: one unit each)
    # stage 1: 10^2 (1 - 2/10) s2 / 2 with s2 = 2/1600; stage 3: sum_u 5 * 4^2 (1 - 2/4) s2_u / 2 with
    # s2 = 0.5/1600 for u1 and 0 for u2
    assert r["se"] ** 2 == pytest.approx(100 * 0.8 * (2 / 1600) / 2 + 5 * 16 * 0.5 * (0.5 / 1600) / 2)
    every = design_estimate([1, 0, 1, 1], [1] * 4, stratum=[""] * 4, cluster=["g1", "g1", "g2", "g2"],
                            unit=["u1", "u1", "u2", "u2"], population_groups={"": 10}, group_units={"g1": 1, "g2": 1})
    assert every["se"] ** 2 == pytest.approx(100 * 0.8 * (2 / 1600) / 2)  # every passage judged: no third stage


def _simple(n_groups, population=None):
    """One stratum, one instance per group (``M_g = 1``): the design of a simple random sample."""
    groups = [f"g{i}" for i in range(n_groups)]
    return dict(stratum=[""] * n_groups, cluster=groups, population_groups={"": population},
                group_units=dict.fromkeys(groups, 1))


Y = [1, 1, 1, 0, 1, 0, 1, 1, 1, 0, 1, 1]
YHAT = [1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0]


def test_prediction_powered_share_by_hand_and_against_ppi_py():
    y, yhat, J, lam = np.array(Y, float), np.array(YHAT, float), 0.7, 0.6
    r = prediction_powered_share(y, yhat, np.ones(12), J, lam=lam, **_simple(12))
    # the difference estimator: lam J + mean(y - lam yhat); equal weights, infinite population
    z = y - lam * yhat
    assert r["share"] == pytest.approx(lam * J + z.mean())
    assert r["se"] ** 2 == pytest.approx(z.var(ddof=1) / 12)  # n^2 s2(t) / n over X^2 = n^2
    # ppi_py (the reference): the same point estimate when its unlabelled items are the population (share J)
    population = np.array([1.0] * 7 + [0.0] * 3)
    point = ppi_py.ppi_mean_pointestimate(y, yhat, population, lam=lam)
    assert r["share"] == pytest.approx(float(np.ravel(point)[0]))
    # its rectifier variance is ours with n in the denominator (ours n - 1); its imputed part vanishes
    # for a judge share known exactly
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, population, alpha=0.05, lam=lam)
    imputed = lam**2 * population.var() / len(population)
    rectifier = ((hi[0] - lo[0]) / 2 / stats.norm.ppf(0.975)) ** 2 - imputed
    assert rectifier == pytest.approx(r["se"] ** 2 * 11 / 12)
    # with unequal design weights ppi_py needs them (w=): two strata of 10 and 40 groups, 6 sampled each
    design = dict(stratum=["a"] * 6 + ["b"] * 6, cluster=[f"g{i}" for i in range(12)],
                  population_groups={"a": 10, "b": 40}, group_units={f"g{i}": 1 for i in range(12)})
    weighted = prediction_powered_share(y, yhat, np.ones(12), J, lam=lam, **design)
    w = np.array([10 / 6] * 6 + [40 / 6] * 6)
    ref = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, population, lam=lam, w=w))[0])
    assert weighted["share"] == pytest.approx(ref)
    assert weighted["share"] != pytest.approx(r["share"])  # the weights matter here


def test_prediction_powered_interval_by_hand():
    y, yhat, J = np.array(Y, float), np.array(YHAT, float), 0.7
    # lam = 1: J + D with D the share of (human Yes, judge No) minus (human No, judge Yes) = (2 - 1) / 12,
    # and a t interval: variance max(s2(y - yhat) / n, Agresti-Min) with n the Kish size (12)
    one = prediction_powered_share(y, yhat, np.ones(12), J, lam=1.0, **_simple(12))
    d = y - yhat
    b, c = 2 / 12, 1 / 12
    bt, ct = (12 * b + 0.5) / 14, (12 * c + 0.5) / 14
    var = max(d.var(ddof=1) / 12, (bt + ct - (bt - ct) ** 2) / 14)
    half = stats.t.ppf(0.975, 11) * math.sqrt(var)
    assert one["share"] == pytest.approx(J + 1 / 12)
    assert (one["low"], one["high"]) == pytest.approx((J + 1 / 12 - half, 1.0))  # clipped to [0, 1]
    assert J + 1 / 12 + half > 1
    # lam = 0: the humans alone, the design Wilson interval of the same items
    zero = prediction_powered_share(y, yhat, np.ones(12), J, lam=0.0, **_simple(12))
    human = design_estimate(y, np.ones(12), **_simple(12))
    assert (zero["share"], zero["low"], zero["high"]) == pytest.approx((human["share"], human["low"], human["high"]))
    assert zero["human_only"] == pytest.approx({"share": human["share"], "low": human["low"], "high": human["high"]})


def test_the_weight_of_a_fold_never_sees_that_fold():
    rng = np.random.default_rng(0)
    n = 40
    y = (rng.random(n) < 0.8).astype(float)
    yhat = np.where(rng.random(n) < 0.9, y, 1 - y)
    design = _simple(n, population=400)
    folds = group_folds(SampleDesign.build(**design), 5, seed=3)
    assert sorted(np.bincount(folds).tolist()) == [8] * 5
    r = prediction_powered_share(y, yhat, np.ones(n), 0.8, seed=3, lam=None, **design)
    # change every answer of fold 0: its own weight stays, the other folds' weights move
    flipped = np.where(folds == 0, 1 - yhat, yhat)
    again = prediction_powered_share(y, flipped, np.ones(n), 0.8, seed=3, lam=None, **design)
    assert again["lam_folds"][0] == r["lam_folds"][0]
    assert again["lam_folds"][1:] != r["lam_folds"][1:]


def test_no_disagreement_still_gives_an_interval_around_the_share():
    # 97% valid, the judge agrees with every sampled decision: no zero-width interval
    y = np.array([1.0] * 58 + [0.0, 0.0])
    design = dict(stratum=[""] * 60, cluster=[f"g{i // 2}" for i in range(60)], population_groups={"": 300},
                  group_units={f"g{i}": 6 for i in range(30)})
    for lam in (0.5, 1.0, None):  # fixed before the data, plain PPI, tuned
        r = prediction_powered_share(y, y.copy(), np.ones(60), 0.96, lam=lam, **design)
        assert r["low"] < r["share"] < r["high"] and r["high"] - r["low"] > 0.01, lam
    # tuned, each fold's weight: 1 where the other folds hold a No (the judge agrees there), else 0 (its
    # answers do not vary there)
    assert set(r["lam_folds"]) <= {0.0, 1.0} and 1.0 in r["lam_folds"]


def test_an_informative_judge_narrows_the_interval():
    # 300 groups of 6 alike within; a judge right 92% of the time on a 75% share; 60 groups x 2 sampled
    rng = np.random.default_rng(11)
    truth = (rng.random((300, 6)) < rng.beta(3, 1, 300)[:, None]).astype(float)
    judge = np.where(rng.random((300, 6)) < 0.92, truth, 1 - truth)
    picks = [(g, i) for g in rng.choice(300, 60, replace=False) for i in rng.choice(6, 2, replace=False)]
    y, yhat = [truth[g, i] for g, i in picks], [judge[g, i] for g, i in picks]
    design = dict(stratum=[""] * 120, cluster=[str(g) for g, _ in picks], population_groups={"": 300},
                  group_units={str(g): 6 for g, _ in picks})
    r = prediction_powered_share(y, yhat, np.ones(120), float(judge.mean()), **design)
    assert r["low"] <= truth.mean() <= r["high"] and r["lam"] == 0.5
    assert r["high"] - r["low"] < 0.8 * (r["human_only"]["high"] - r["human_only"]["low"])
    tuned = prediction_powered_share(y, yhat, np.ones(120), float(judge.mean()), lam=None, **design)
    assert tuned["low"] <= truth.mean() <= tuned["high"] and 0.5 < tuned["lam"] <= 1
    assert tuned["high"] - tuned["low"] < 0.8 * (r["human_only"]["high"] - r["human_only"]["low"])


def test_the_cross_fitted_weights_own_error_by_hand():
    from annotation.survey.prediction_powered import weight_noise

    # 4 groups of one instance, infinite population: V(R(yhat)) = s2(yhat) / n with yhat = 1, 1, 0, 1
    design = SampleDesign.build(**_simple(4))
    v_judge = np.var([1, 1, 0, 1], ddof=1) / 4
    # fold weights 0.2, 0.4, 0.6: their spread (a jackknife over folds) 0.04 + 0 + 0.04
    assert weight_noise(design, [1, 1, 0, 1], [1] * 4, [0.2, 0.4, 0.6]) == pytest.approx(0.08 * v_judge)
    assert weight_noise(design, [1, 1, 0, 1], [1] * 4, [0.5]) == 0.0  # a weight fixed in advance
