"""Humans where the judge is likely wrong: a study drawn per judge stratum (the groups the judge
says No to over-sampled), its design read back and weighted by every estimate (a hand value), the
width it buys shown before it is created (CLI), and over repeated draws on a 2,000-instance
benchmark its interval covers the truth at 95%, narrower than a plain sample of the same size,
while the same sample without its weights is far off."""
from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import pytest

from annotation import workspace
from annotation.judges import strata as judge_strata
from annotation.estimates.benchmark import benchmark_estimates
from annotation.studies import StudySettings, create_study
from annotation.estimates.sampling import study_design
from storage import judge_labels, studies
from storage.db import connect
from storage.errors import IFJudgeError
from tests.builders import make_project, user_row
from storage.projects import get_project

pytestmark = pytest.mark.both_engines
ROOT = Path(__file__).resolve().parents[1]
FLAGGED = [f"g{g}" for g in range(6)]  # the judge says No to instance _0 of these groups
MISSED = "g20_0"                        # a No the judge passed


def _judge_run(db, values: dict[str, str], scores: dict[str, float] | None = None, key: str = "k") -> int:
    run, _ = judge_labels.find_or_create_run(
        db, project_id=1, question="validity", judge="chat", model="judge-7b", base_url="http://127.0.0.1:9/v1",
        prompt_version="instructir-fig9a-q1", prompt_hash="abc", prompt={}, parameters={"scale": "yesno"},
        config_key=key, created_by="test")
    judge_labels.add_items(db, run["id"], [{"instance_id": i, "question": "validity"} for i in values])
    judge_labels.store_labels(db, run["id"], [{"instance_id": i, "question": "validity", "value": v, "raw": v,
                                               "score": (scores or {}).get(i)} for i, v in values.items()])
    return run["id"]


@pytest.fixture
def judged(db_path):
    """Project p (40 groups of 2 instances) and a judge run saying No to instance _0 of 6 groups."""
    db = connect(db_path)
    make_project(db, n_groups=40, per_group=2)
    run = _judge_run(db, {f"g{g}_{j}": ("No" if f"g{g}" in FLAGGED and j == 0 else "Yes")
                          for g in range(40) for j in range(2)})
    return db, run


def test_the_study_over_samples_the_judges_no_and_every_estimate_weights_it(judged):
    db, run = judged
    p = judge_strata.plan(db, project=get_project(db, "p"), run_id=run, group_fraction=0.1,
                          fractions={judge_strata.NO: 1.0, judge_strata.YES: 0.25})
    assert [(s["stratum"], s["groups"], s["sampled"]) for s in p["strata"]] == [("judge No", 6, 6), ("judge Yes", 34, 8)]
    assert p["preview"]["width_ratio"] < 1 and "plain random sample of the same 14 groups" in p["text"]
    sid = create_study(db, project=get_project(db, "p"), questions=["validity"], annotators=["a0"],
                       settings=StudySettings(per_group=2, overlap=1, seed=3, judge_strata=p["settings"]))["study_id"]
    sampled = {it["instance_id"] for it in studies.items_of_study(db, sid)}
    groups = {i.split("_")[0] for i in sampled}
    assert set(FLAGGED) <= groups and len(groups) == 14 and len(sampled) == 28
    d = study_design(db, sid)
    assert d["strata"] == {"judge No": 6, "judge Yes": 34} and d["interval"] == "stratified-wilson"
    assert f"judge run {run} (validity, model judge-7b" in d["description"]
    u = user_row(db, "a0")  # the humans: No where the judge said No, and on MISSED
    while (s := workspace.open_screen(db, sid, u)) is not None:
        no = s.screen in {f"{g}_0" for g in FLAGGED} | {MISSED}
        workspace.submit_screen(db, s, u, {"validity": {"value": "No" if no else "Yes", "reason": "vague" if no else ""}},
                                started_at=time.time() - 1)
    (e,) = benchmark_estimates(db, sid)["estimates"]
    # hand value: judge No stratum (all 6 groups, weight 1): 6 Yes of 12; judge Yes stratum (8 of 34 groups,
    # weight 34/8): 16 items, Yes but MISSED if it was drawn
    yes_rest = 16 - (MISSED in sampled)
    assert e["share"] == pytest.approx((6 + 34 / 8 * yes_rest) / (12 + 34 / 8 * 16))
    assert e["naive_independent"]["share"] == pytest.approx((6 + yes_rest) / 28)  # unweighted: far lower
    # the No stratum is a census (no uncertainty), the Yes one unanimous or nearly: the interval reaches down
    assert e["low"] < e["share"] - 0.02 and e["share"] <= e["high"]


def test_an_unsure_band_and_a_pilot_make_their_own_strata_and_shares(judged):
    db, _ = judged
    scores = {"g6_0": 0.55, "g7_1": 0.9}  # Yes answers: g6 inside the band, g7 outside
    run = _judge_run(db, {f"g{g}_{j}": ("No" if g < 2 and j == 0 else "Yes") for g in range(40) for j in range(2)
                          if g != 39}, scores, key="k2")
    gs = judge_strata.group_strata(db, run, unsure=(0.3, 0.7))
    assert gs["g0"] == gs["g1"] == "judge No" and gs["g6"] == "judge unsure" and gs["g7"] == "judge Yes"
    assert gs["g39"] == "not judged"  # the run has no answer for its instances
    p = judge_strata.plan(db, project=get_project(db, "p"), run_id=run, group_fraction=0.25, unsure=(0.3, 0.7),
                          assumed_shares={"judge Yes": 0.95})
    assert {s["stratum"]: s["groups"] for s in p["strata"]} == {"judge No": 2, "judge unsure": 1, "judge Yes": 36,
                                                                "not judged": 1}
    assert {s["stratum"]: s["share_source"] for s in p["strata"]}["judge Yes"] == "given"
    assert sum(s["sampled"] for s in p["strata"]) == 10  # a quarter of the 40 groups, each stratum at least one
    # a pilot: a study whose humans decided the judge's No groups' items
    sid = create_study(db, project=get_project(db, "p"), questions=["validity"], annotators=["a0"],
                       settings=StudySettings(group_fraction=1.0, per_group=2, overlap=1))["study_id"]
    u = user_row(db, "a0")
    while (s := workspace.open_screen(db, sid, u)) is not None:
        workspace.submit_screen(db, s, u, {"validity": {"value": "Yes"}}, started_at=time.time() - 1)
    pilot = judge_strata.pilot_shares(db, run, gs)
    assert pilot["judge No"] == (4, 4) and pilot["judge Yes"] == (72, 72)
    shares, source = judge_strata.expected_shares({"judge No": 2, "judge Yes": 36}, pilot)
    assert shares == {"judge No": 0.5, "judge Yes": 1.0}  # No: 4 outcomes, too few; Yes: measured
    assert source["judge No"] == "assumed; the pilot has only 4 outcomes" and source["judge Yes"].startswith("pilot")


def test_bad_plans_are_refused_with_the_reason(judged):
    db, run = judged
    with pytest.raises(IFJudgeError, match="a rate is needed for every judge stratum.*judge Yes"):
        judge_strata.plan(db, project=get_project(db, "p"), run_id=run, group_fraction=0.1, fractions={judge_strata.NO: 1.0})
    p = judge_strata.plan(db, project=get_project(db, "p"), run_id=run, group_fraction=0.1)
    with pytest.raises(IFJudgeError, match="by the judge's answers or by domain, not both"):
        create_study(db, project=get_project(db, "p"), questions=["validity"], annotators=["a0"],
                     settings=StudySettings(judge_strata=p["settings"], allocation="proportional"))
    likert = judge_labels.find_or_create_run(
        db, project_id=1, question="naturalness", judge="chat", model="m", base_url="", prompt_version="",
        prompt_hash="", prompt={}, parameters={}, config_key="k2", created_by="test")[0]["id"]
    judge_labels.add_items(db, likert, [{"instance_id": "g0_0", "question": "naturalness"}])
    judge_labels.store_labels(db, likert, [{"instance_id": "g0_0", "question": "naturalness", "value": "3", "raw": "3",
                                            "score": None}])
    with pytest.raises(IFJudgeError, match="answers naturalness with 3: a study is stratified by a judge's Yes / No"):
        judge_strata.plan(db, project=get_project(db, "p"), run_id=likert, group_fraction=0.1)


def test_the_cli_shows_the_width_before_it_creates(judged, run_cli, db_path):
    db, run = judged
    base = ["study", "create", "--db", db_path, "--project", "p", "--questions", "validity", "--annotators", "a0",
            "--overlap", "1", "--stratify-by-judge", run, "--judge-rates", "No=1,Yes=0.25"]
    code, out, _ = run_cli(*base, "--dry-run")
    assert code == 0 and "judge No: 6 of 6 groups" in out and "plain random sample" in out
    assert studies.list_studies(db, 1) == []  # nothing created
    code, out, err = run_cli(*base, "--judge-shares", "No=0.5,Yes=0.95", "--json")
    result = json.loads(out)
    assert code == 0 and "Expected 95% interval" in err and result["instances"] == 28
    assert [s["share_source"] for s in result["judge_strata"]["strata"]] == ["given", "given"]
    assert studies.get_study(db, result["study_id"])["settings"]["judge_strata"]["run"] == run
    code, _, err = run_cli(*base, "--allocation", "proportional", "--dry-run")
    assert code != 0 and "by the judge's answers or by domain, not both" in err
    code, _, err = run_cli(*base[:-4], "--judge-rates", "No=1")
    assert code != 0 and "--stratify-by-judge" in err


def _bench():
    spec = importlib.util.spec_from_file_location("bench_judge_strata", ROOT / "bench" / "bench_judge_strata.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, bench)
    spec.loader.exec_module(bench)
    return bench


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)  # no database: once
def test_over_repeated_draws_the_interval_covers_and_is_narrower_than_a_plain_sample(engine):
    reps = 300
    res = _bench().simulate(reps, fraction=0.1, seed=1)
    tol = 3 * res["coverage_se"]  # 0.95 +- 3 binomial SEs of 300 draws: 0.912-0.988
    strat, plain, ignored = (res["designs"][k] for k in ("judge-stratified", "plain", "weights ignored"))
    assert abs(strat["coverage"] - 0.95) <= tol and abs(plain["coverage"] - 0.95) <= tol
    assert strat["width"] < 0.8 * plain["width"]
    assert abs(strat["estimate"] - res["truth"]) < 0.002  # unbiased
    assert ignored["estimate"] - res["truth"] < -0.05 and ignored["coverage"] < 0.2  # the weights matter
    # the preview the lead sees is the width measured
    assert 2 * res["preview"]["half_width"] == pytest.approx(strat["width"], rel=0.15)
