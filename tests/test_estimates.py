"""Benchmark-wide estimates: the design-aware interval against a hand-computed two-stage variance,
the study's design read from its settings, prediction-powered estimates equal to ppi_py's on the
same arrays, and a judge with a known bias."""
from __future__ import annotations

import json
import math
import time

import numpy as np
import ppi_py
import pytest
from scipy import stats

from annotation import workspace
from annotation.estimates import (benchmark_estimates, design_estimate, design_ppi_estimate, estimate_json,
                                  labels_to_halve, ppi_estimate, read_judge_labels, study_design)
from annotation.studies import StudySettings, create_study
from evaluation.undefined import Undefined
from storage import projects, studies
from storage.errors import ImportFailure
from tests.builders import app, label_demo, user_row


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
    # Korn-Graubard: n* = 1/4 / V * (t_{7} / t_{2})^2 = 12 * 0.5408...; Clopper-Pearson at n*, k = n*/2
    n_star = 0.25 / (12 / 576) * (stats.t.ppf(0.025, 7) / stats.t.ppf(0.025, 2)) ** 2
    assert (r["low"], r["high"]) == pytest.approx((stats.beta.ppf(0.025, n_star / 2, n_star / 2 + 1),
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
    # every decided item says Yes: the design effect is 0/0, the interval the exact one of the 4 items
    agree = design_estimate([1, 1, 1, 1], [1] * 4, stratum=[""] * 4, cluster=["a", "a", "b", "b"],
                            population_groups={"": 10}, group_units={"a": 2, "b": 2})
    assert agree["deff"] == agree["n_effective"] == Undefined("every decided item agrees (share 0 or 1): 0/0")
    assert agree["high"] == 1.0 and agree["low"] == pytest.approx(0.025 ** (1 / 4))  # Clopper-Pearson, 4 of 4


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
    sid = create_study(db, project="demo", questions=["validity", "naturalness", "best_passage"],
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
    n_star = (25 / 28) * (3 / 28) / se**2 * (stats.t.ppf(0.025, 9) / stats.t.ppf(0.025, 4)) ** 2  # 10 items, df 4
    k = 25 / 28 * n_star
    assert (valid["low"], valid["high"]) == pytest.approx((stats.beta.ppf(0.025, k, n_star - k + 1),
                                                           stats.beta.ppf(0.975, k + 1, n_star - k)))
    assert valid["n_items"] == 10 and valid["n_groups"] == 5 and valid["yes_items"] == 9
    assert valid["naive_independent"]["k"] == 9 and valid["naive_independent"]["n"] == 10
    natural = next(e for e in benchmark_estimates(db, sid)["estimates"] if e["question"] == "naturalness")
    assert natural["share"] == 1.0 and natural["se"] == 0.0
    assert natural["low"] == pytest.approx(stats.beta.ppf(0.025, 10, 1))  # exact interval when all agree


def test_ppi_equals_ppi_py_on_the_same_arrays():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 60)
    yhat = np.where(rng.random(60) < 0.8, y, 1 - y)
    yu = rng.integers(0, 2, 500)
    r = ppi_estimate(y, yhat, yu)
    lo, hi = ppi_py.ppi_mean_ci(y.astype(float), yhat.astype(float), yu.astype(float), alpha=0.05)
    assert (r["ppi"]["low"], r["ppi"]["high"]) == pytest.approx((lo[0], hi[0]))
    clo, chi = ppi_py.ppi_mean_ci(y.astype(float), yhat.astype(float), yu.astype(float), alpha=0.05, lam=0)
    assert (r["human_only"]["low"], r["human_only"]["high"]) == pytest.approx((clo[0], chi[0]))
    assert r["human_only"]["share"] == pytest.approx(y.mean())


def test_biased_judge_is_corrected_and_the_interval_is_narrower():
    rng = np.random.default_rng(7)
    truth = (rng.random(5000) < 0.3).astype(float)  # the whole benchmark: 30% Yes
    judge = np.where((truth == 0) & (rng.random(5000) < 0.15), 1.0, truth)  # says Yes too often
    sample = rng.choice(5000, 300, replace=False)
    rest = np.setdiff1d(np.arange(5000), sample)
    r = ppi_estimate(truth[sample], judge[sample], judge[rest])
    assert judge.mean() - truth.mean() > 0.08  # the judge alone is biased
    assert r["ppi"]["low"] <= truth.mean() <= r["ppi"]["high"]
    assert r["ppi"]["high"] - r["ppi"]["low"] < r["human_only"]["high"] - r["human_only"]["low"]
    assert r["reported_method"] == "prediction-powered (PPI++)"


def test_judge_file_through_the_study(census_study, tmp_path):
    db, sid = census_study
    sampled = sorted({it["instance_id"] for it in studies.items_of_study(db, sid)})
    every = ["f-robot-changed", "f-robot-og"] + [f"q-{g}_{k}" for g in ("endo", "kohl", "run", "sol") for k in (1, 2, 3)]
    rows = ["instance_id,question,value"] + [f"{i},validity,Yes" for i in every]
    path = tmp_path / "judge.csv"
    path.write_text("\n".join(rows) + "\n")
    judge = read_judge_labels(path)
    valid = next(e for e in benchmark_estimates(db, sid, judge=judge)["estimates"] if e["question"] == "validity")
    p = valid["ppi"]
    assert p["n_labelled"] == len(sampled) == 10 and p["n_unlabelled"] == 4
    assert p["judge_agreement"]["agreement"] == 0.9  # the judge says Yes where the humans said No once
    y = np.array([1.0] * 9 + [0.0])
    lo, hi = ppi_py.ppi_mean_ci(y, np.ones(10), np.ones(4), alpha=0.05)
    assert (p["ppi"]["low"], p["ppi"]["high"]) == pytest.approx((lo[0], hi[0]))
    d = valid["ppi_design"]  # the judge says Yes everywhere: its share 1, corrected by the humans' one No
    assert d["undefined"] is None and d["n_judged"] == 14
    assert d["share"] == pytest.approx(d["lam"] * 1.0 + (25 / 28 - d["lam"] * 1.0))


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
    table = next(d.value for d in at.dataframe if "95% CI (design)" in d.value.columns)
    valid = table[table["Estimate"] == "valid instruction"].iloc[0]
    assert valid["Share"] == "1.000" and valid["Decided items"] == 8
    assert any("Benchmark-wide estimates" in s.value for s in at.subheader)


def test_ifir_strata_and_passage_match_share(db_path):
    from annotation import auth
    from storage.db import connect
    from tests.builders import ifir_bundle, label_ifir

    db = connect(db_path)
    projects.import_bundle(db, "ifir", ifir_bundle(), fmt="ifir")
    for n in range(3):
        auth.add_user(db, f"a{n}", "annotator", "pw")
    sid = create_study(db, project="ifir", questions=["passage_match"], annotators=["a0", "a1", "a2"],
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
    sid = create_study(db, project="is", questions=["condition"], annotators=["ann1", "ann2", "ann3"],
                       settings=StudySettings(group_fraction=1.0))["study_id"]
    answer_all(db, sid, ["ann1", "ann2", "ann3"])
    out = {e["part"]: e for e in benchmark_estimates(db, sid)["estimates"]}
    for mode in ("changed", "reversed"):
        yes = sum(v == "Yes" for (m, _, _), v in ANSWERS.items() if m == mode)
        assert out[mode]["share"] == pytest.approx(yes / 6) and out[mode]["n_items"] == 6
        assert out[mode]["estimand"] == f"condition satisfied ({mode} instruction)"


def test_narrative_change_confirmed_against_the_changed_qrels(demo):
    from annotation import narrative_versions

    db, _ = demo
    sid = narrative_versions.save_narrative(db, project="demo", query_id="f-robot", text="Robots excluded.",
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


def test_design_aware_ppi_corrects_a_biased_judge_on_clustered_samples():
    # 100 seeded populations of 400 groups x 6 instances, alike within a group; the judge says Yes
    # too often; each sample: 60 groups x 2 instances
    covered, narrower, widths, human_widths = 0, 0, [], []
    for seed in range(100):
        rng = np.random.default_rng(seed)
        rates = rng.beta(1.5, 1.5, 400)
        truth = (rng.random((400, 6)) < rates[:, None]).astype(float)
        judge = np.where((truth == 0) & (rng.random((400, 6)) < 0.2), 1.0, truth)
        picks = [(g, i) for g in rng.choice(400, 60, replace=False) for i in rng.choice(6, 2, replace=False)]
        y, yhat = [truth[g, i] for g, i in picks], [judge[g, i] for g, i in picks]
        cluster = [str(g) for g, _ in picks]
        r = design_ppi_estimate(y, yhat, [1] * len(y), float(judge.mean()), stratum=[""] * len(y), cluster=cluster,
                                population_groups={"": 400}, group_units={c: 6 for c in cluster})
        covered += r["low"] <= truth.mean() <= r["high"]
        narrower += r["se"] <= r["human_only_se"] + 1e-12
        widths.append(r["high"] - r["low"])
        human_widths.append(r["human_only"]["high"] - r["human_only"]["low"])
        assert judge.mean() - truth.mean() > 0.05  # the judge alone is biased
    assert covered >= 88  # nominal 95 of 100 (measured: 94 of 100 over these seeds)
    assert narrower == 100  # lam minimises the same linearised variance: never wider than lam = 0
    assert np.mean(widths) < 0.7 * np.mean(human_widths)


def test_design_aware_ppi_with_lam_zero_is_the_human_only_estimate():
    y, yhat = [1, 0, 1, 1, 0, 1], [0, 0, 0, 0, 0, 0]  # a judge that says nothing: lam = 0
    kw = dict(stratum=[""] * 6, cluster=list("aabbcc"), population_groups={"": 50}, group_units=dict.fromkeys("abc", 4))
    r = design_ppi_estimate(y, yhat, [1] * 6, 0.0, **kw)
    human = design_estimate(y, [1] * 6, **kw, interval="wald")
    assert r["lam"] == 0.0 and r["share"] == pytest.approx(human["share"]) and r["se"] == pytest.approx(human["se"])
