"""IFIR studies (issue 11, item 4): gold and excluded passage_match items, per-domain sampling,
and the IFIR Table 2 summary (mean and bootstrap interval per question, kind, level, domain)."""
import json
from collections import Counter

import numpy as np
import pytest

from accounts import auth
from annotation.monitoring.scales import mean_interval, scale_summary
from annotation.studies import StudySettings, create_study
from storage import projects, studies
from storage.errors import IFJudgeError
from tests.builders import label_ifir, open_tab, signed_in_page
from storage.projects import get_project

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL



def test_stratified_sampling_takes_a_fraction_of_each_domain_and_at_least_one(ifir_db):
    r = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["naturalness"], annotators=["a0", "a1", "a2"],
                     settings=StudySettings(subset_fraction=0.1, per_group=2, naturalness="likert", seed=5))
    sampled = {it["instance_id"] for it in studies.items_of_study(ifir_db, r["study_id"])}
    per_domain = Counter(i.rstrip("_0123456789").rstrip("0123456789") for i in {s.split("_")[0] for s in sampled})
    # round(0.1 * 20) = 2 fiqa queries, round(0.1 * 10) = 1 aila, round(0.1 * 3) = 0 -> at least 1 pm
    assert per_domain == {"fiqa": 2, "aila": 1, "pm": 1}
    assert not any(i.endswith("_0") for i in sampled)  # the bare query is never judged
    assert len(sampled) == 8  # 2 instructed instances per sampled query
    again = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["naturalness"], annotators=["a0", "a1", "a2"],
                         settings=StudySettings(subset_fraction=0.1, per_group=2, naturalness="likert", seed=5))
    assert {it["instance_id"] for it in studies.items_of_study(ifir_db, again["study_id"])} == sampled
    stored = studies.get_study(ifir_db, r["study_id"])["settings"]
    assert stored["subset_fraction"] == 0.1


def test_subset_fraction_is_validated(ifir_db):
    with pytest.raises(IFJudgeError, match=r"subset fraction must be in \(0, 1\], got 1.5"):
        create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["naturalness"], annotators=["a0"],
                     settings=StudySettings(subset_fraction=1.5, overlap=1))


def test_passage_match_items_for_gold_and_excluded_passages(ifir_db):
    r = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["passage_match"], annotators=["a0", "a1", "a2"],
                     settings=StudySettings(subset_fraction=0.1, per_group=2))
    items = studies.items_of_study(ifir_db, r["study_id"], "passage_match")
    by_inst: dict[str, dict[str, list[str]]] = {}
    for it in items:
        by_inst.setdefault(it["instance_id"], {}).setdefault(it["payload"]["kind"], []).append(it["doc_id"])
    for iid, kinds in by_inst.items():
        qid = iid.split("_")[0]
        if iid.endswith("_1"):
            assert kinds == {"gold": [f"{qid}c0", f"{qid}c1"], "excluded": [f"{qid}c2", f"{qid}c3"]}
        else:
            assert kinds == {"gold": [f"{qid}c0"], "excluded": [f"{qid}c1", f"{qid}c2", f"{qid}c3"]}
    assert r["items_by_kind"] == {"excluded": 4 * (2 + 3), "gold": 4 * (2 + 1)}
    capped = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["passage_match"], annotators=["a0", "a1", "a2"],
                          settings=StudySettings(subset_fraction=0.1, per_group=2, max_excluded=1))
    assert capped["items_by_kind"] == {"excluded": 8, "gold": 12}


def test_table2_means_by_hand(ifir_db):
    r = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["naturalness", "passage_match"],
                     annotators=["a0", "a1", "a2"], groups=["fiqa0", "aila0"],
                     settings=StudySettings(group_fraction=1.0, per_group=1, naturalness="likert", seed=1))
    sid = r["study_id"]
    chosen = sorted({it["instance_id"] for it in studies.items_of_study(ifir_db, sid)})
    fiqa, aila = [i for i in chosen if i.startswith("fiqa")][0], [i for i in chosen if i.startswith("aila")][0]
    gold = lambda iid: f"{iid.split('_')[0]}c0"  # noqa: E731  (gold for level1 and level2)
    label_ifir(ifir_db, sid, {
        (fiqa, None, "naturalness"): ["5", "4", "4"],       # 13/3
        (aila, None, "naturalness"): ["3", "3", "3"],       # 3
        (fiqa, gold(fiqa), "passage_match"): ["5", "4", "5"],  # 14/3
        (aila, gold(aila), "passage_match"): ["3", "3", "4"],  # 10/3
        (fiqa, f"{fiqa.split('_')[0]}c3", "passage_match"): ["1", "2", "1"],  # excluded: 4/3
    })
    t = scale_summary(ifir_db, sid, n_boot=500)
    row = lambda q, kind, by, group: t[(t.question == q) & (t.kind == kind) & (t.by == by) & (t.group == group)  # noqa: E731
                                       & ~t.statistic.str.startswith("Excluded passage score")].iloc[0]
    assert row("naturalness", "", "all", "all")["mean"] == pytest.approx((13 / 3 + 3) / 2)
    assert row("passage_match", "gold", "all", "all")["mean"] == pytest.approx(4.0)
    assert row("passage_match", "gold", "domain", "fiqa")["mean"] == pytest.approx(14 / 3)
    assert row("passage_match", "gold", "domain", "aila")["mean"] == pytest.approx(10 / 3)
    ex = row("passage_match", "excluded", "all", "all")
    assert ex["mean"] == pytest.approx(4 / 3) and ex["items"] == 1 and ex["labels"] == 3
    assert ex["ci_low"] is None or ex["ci_low"] != ex["ci_low"]  # one item: no interval
    flipped = t[t.statistic == "Excluded passage score (6 - match)"]
    assert flipped[flipped.by == "all"].iloc[0]["mean"] == pytest.approx(6 - 4 / 3)
    g = row("passage_match", "gold", "all", "all")
    assert g["ci_low"] < 4.0 < g["ci_high"] and 10 / 3 <= g["ci_low"] and g["ci_high"] <= 14 / 3
    levels = set(t[(t.by == "level")]["group"])
    assert levels <= {"level1", "level2"} and levels
    # seeded: the same call gives the same intervals
    assert scale_summary(ifir_db, sid, n_boot=500).equals(t)


def test_table2_interval_resamples_query_groups_within_domains():
    # two groups, one domain: each Rao-Wu replicate draws one group (weight 2): its mean, 4.5 or 1.5
    assert mean_interval([5, 4, 2, 1], groups=["q1", "q1", "q2", "q2"], n_boot=200) == (3.0, 1.5, 4.5)
    # a domain with one group keeps it in every replicate: q2 (sum 3 over 2) with twice q1 or twice q3
    _, low, high = mean_interval([5, 4, 2, 1, 3, 3], groups=["q1", "q1", "q2", "q2", "q3", "q3"],
                                 strata=list("aabbaa"), n_boot=500)
    assert (low, high) == (pytest.approx(15 / 6), pytest.approx(21 / 6))
    # domains with one sampled group each are collapsed into one, not held fixed (no interval of width 0)
    assert mean_interval([5, 4, 2, 1], groups=["q1", "q1", "q2", "q2"], strata=list("aabb"), n_boot=200) == (3.0, 1.5, 4.5)
    # groups scored alike: resampling items is too narrow, resampling groups is not
    rng = np.random.default_rng(0)
    scores = np.repeat(rng.integers(1, 6, 30), 4).astype(float)
    queries = np.repeat([f"q{i}" for i in range(30)], 4)
    _, glo, ghi = mean_interval(scores, groups=queries, n_boot=2000, seed=1)
    _, ilo, ihi = mean_interval(scores, n_boot=2000, seed=1)
    assert (ghi - glo) > 1.6 * (ihi - ilo)  # design effect 4: twice as wide
    assert mean_interval([3.0], groups=["q1"], n_boot=100) == (3.0, None, None)  # one group: no interval


def test_mean_interval_is_the_percentile_bootstrap_of_the_mean():
    mean, low, high = mean_interval([1, 2, 3, 4, 5], n_boot=2000, seed=3)
    assert mean == 3.0 and 1.0 < low < 3.0 < high < 5.0
    assert mean_interval([1, 2, 3, 4, 5], n_boot=2000, seed=3) == (mean, low, high)
    assert mean_interval([], n_boot=10) == (None, None, None)


def test_cli_creates_a_stratified_ifir_study_and_prints_table2(ifir_db, db_path, run_cli):
    code, out, err = run_cli("study", "create", "--db", str(db_path), "--project", "ifir",
                             "--questions", "naturalness,passage_match", "--annotators", "a0,a1,a2",
                             "--naturalness", "likert", "--subset-fraction", "0.1", "--max-excluded", "2",
                             "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["instances"] == 8 and r["items_by_kind"] == {"excluded": 16, "gold": 12}
    sid = r["study_id"]
    code, out, err = run_cli("summary", "--db", str(db_path), "--study", str(sid), "--json")
    assert code == 2 and "no label on a 1-5 or 0-3 question yet" in err
    items = studies.items_of_study(ifir_db, sid, "passage_match")
    gold = [it for it in items if it["payload"]["kind"] == "gold"][:2]
    label_ifir(ifir_db, sid, {(it["instance_id"], it["doc_id"], "passage_match"): v
                          for it, v in zip(gold, (["5", "5", "4"], ["2", "3", "4"]))})
    code, out, err = run_cli("summary", "--db", str(db_path), "--study", str(sid), "--json", "--bootstrap", "100")
    assert code == 0, err
    rows = json.loads(out)
    overall = [r for r in rows if r["kind"] == "gold" and r["by"] == "all"][0]
    assert overall["statistic"] == "Gold passage matching score"
    assert overall["mean"] == pytest.approx((14 / 3 + 3) / 2) and overall["items"] == 2 and overall["labels"] == 6


def test_report_has_the_table2_section(ifir_db, tmp_path):
    from exports.report import write_report

    r = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["passage_match"], annotators=["a0", "a1", "a2"],
                     groups=["pm0"], settings=StudySettings(group_fraction=1.0, per_group=1))
    it = studies.items_of_study(ifir_db, r["study_id"])[0]
    label_ifir(ifir_db, r["study_id"], {(it["instance_id"], it["doc_id"], "passage_match"): ["4", "4", "5"]})
    write_report(ifir_db, r["study_id"], tmp_path, n_boot=50)
    md = (tmp_path / "report.md").read_text()
    assert "## Mean scores (IFIR Table 2" in md
    assert "| Gold passage matching score | all | all | 4.33 |" in md
    assert "| Gold passage matching score | domain | pm | 4.33 |" in md


def test_study_setup_page_samples_per_domain(ifir_db, db_path, monkeypatch):
    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    auth.add_user(ifir_db, "lead", "lead", "pw")
    at = signed_in_page(ifir_db, "pages/study_setup.py", "lead")
    at.multiselect(key="study_questions").set_value(["passage_match"])
    at.multiselect(key="study_annotators").set_value(["a0", "a1", "a2"])
    at.checkbox(key="study_stratify").check()
    at.number_input(key="study_subset_fraction").set_value(0.1)
    at.number_input(key="study_max_excluded").set_value(1)
    at.button(key="FormSubmitter:study_form-Create study").click().run()
    assert not at.exception and not at.error
    s = studies.list_studies(ifir_db)[-1]
    assert s["settings"]["subset_fraction"] == 0.1 and s["settings"]["max_excluded"] == 1
    # 4 queries: level1 has 2 gold, level2 1 gold; each instance 1 excluded (capped)
    assert studies.item_counts(ifir_db, s["id"])["screens"] == 4 * (2 + 1) + 8 * 1


def test_monitor_page_shows_the_table2_means(ifir_db, db_path, monkeypatch):
    r = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["passage_match"], annotators=["a0", "a1", "a2"],
                     groups=["pm0"], settings=StudySettings(group_fraction=1.0, per_group=1))
    it = studies.items_of_study(ifir_db, r["study_id"])[0]
    label_ifir(ifir_db, r["study_id"], {(it["instance_id"], it["doc_id"], "passage_match"): ["4", "4", "5"]})
    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    auth.add_user(ifir_db, "lead", "lead", "pw")
    at = signed_in_page(ifir_db, "pages/monitor.py", "lead")
    assert not at.exception
    open_tab(at, "Benchmark estimate")  # with the benchmark-wide estimates
    assert not at.exception and "Mean scores (IFIR Table 2)" in [h.value for h in at.subheader]
    table = next(d.value for d in at.dataframe if "Statistic" in d.value.columns and "By" in d.value.columns)
    overall = table[(table["By"] == "all") & (table["Passages"] == "gold")].iloc[0]
    assert overall["Statistic"] == "Gold passage matching score" and overall["Mean"] == "4.33"  # 13 / 3


# ------------------------------------------------------------------ ratings correct the qrels (issue 19, item 6)

# pm0_1: gold c0, c1; excluded c2, c3. pm0_2: gold c0; excluded c1, c2, c3 (ifir_bundle)
MATCH_LABELS = {
    ("pm0_1", "pm0c0"): ["5", "5", "4"],  # gold, median 5: stays relevant
    ("pm0_1", "pm0c1"): ["1", "2", "4"],  # gold, median 2 <= 2: not relevant
    ("pm0_1", "pm0c2"): ["4", "5", "3"],  # excluded, median 4 >= 4: relevant
    ("pm0_1", "pm0c3"): ["3", "3", "3"],  # excluded, 3: stays out
    ("pm0_2", "pm0c0"): ["2", "2", "2"],  # gold, median 2, but the lead adjudicates 4: stays relevant
    ("pm0_2", "pm0c1"): ["5", "4", "1"],  # excluded, median 4: relevant
    ("pm0_2", "pm0c2"): ["1", "1", "1"],  # excluded: stays out
    ("pm0_2", "pm0c3"): ["2", "5", "3"],  # excluded, median 3: stays out
}


@pytest.fixture
def rated(ifir_db):
    r = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["passage_match"], annotators=["a0", "a1", "a2"],
                     groups=["pm0"], settings=StudySettings(group_fraction=1.0, per_group=2, seed=3))
    sid = r["study_id"]
    items = studies.items_of_study(ifir_db, sid)
    assert {(it["instance_id"], it["doc_id"]) for it in items} == set(MATCH_LABELS)
    label_ifir(ifir_db, sid, {(i, d, "passage_match"): v for (i, d), v in MATCH_LABELS.items()})
    adj = next(it for it in items if (it["instance_id"], it["doc_id"]) == ("pm0_2", "pm0c0"))
    studies.add_adjudication(ifir_db, adj["id"], "4", "lead")
    return ifir_db, sid


def test_passage_ratings_flip_a_gold_and_excluded_passages_into_the_validated_qrels(rated):
    from annotation.outcomes.items import ValidationRules
    from annotation.outcomes.qrels_builds import build_validated

    db, sid = rated
    pid = projects.get_project(db, "ifir")["id"]
    original = projects.qrels(db, pid, "original")
    b = build_validated(db, projects.get_project_by_id(db, pid), [sid])
    assert b.qrels["pm0_1"] == {"pm0c0": 1, "pm0c1": 0, "pm0c2": 1}
    assert b.qrels["pm0_2"] == {"pm0c0": 1, "pm0c1": 1}
    assert {q: d for q, d in b.qrels.items() if not q.startswith("pm0_")} == {
        q: d for q, d in original.items() if not q.startswith("pm0_")}  # unchecked instances as published
    assert b.settings["passage_match"]["counts"] == {"gold_to_not_relevant": 1, "excluded_to_relevant": 2,
                                                     "unchanged": 5, "undecided": 0}
    prov = {(p["qid"], p["doc_id"]): p for p in b.provenance}
    assert [prov[("pm0_1", "pm0c1")][k] for k in ("published", "relevance", "provenance")] == [1, 0, "majority"]
    assert [prov[("pm0_1", "pm0c2")][k] for k in ("published", "relevance", "provenance")] == [None, 1, "majority"]
    assert [prov[("pm0_2", "pm0c0")][k] for k in ("published", "relevance", "provenance")] == [1, 1, "adjudicated"]
    assert prov[("pm0_1", "pm0c0")]["provenance"] == "majority"
    assert ("pm0_2", "pm0c2") not in prov  # an excluded passage that stays out is no judgment
    assert b.counts["changed"] == 1  # a published judgment changed (pm0_1/c1); the two excluded ones are new
    # the lead's thresholds: gold <= 1, excluded >= 5 -> nothing of these ratings changes a qrel
    strict = build_validated(db, projects.get_project_by_id(db, pid), [sid], rules=ValidationRules(match_gold_max=1, match_excluded_min=5))
    assert {q: strict.qrels[q] for q in ("pm0_1", "pm0_2")} == {"pm0_1": original["pm0_1"], "pm0_2": original["pm0_2"]}
    assert strict.settings["passage_match"]["counts"] == {"gold_to_not_relevant": 0, "excluded_to_relevant": 0,
                                                          "unchanged": 8, "undecided": 0}


def test_validate_cli_thresholds_and_the_report_counts(rated, db_path, run_cli, tmp_path):
    from exports.validated import export_project

    db, sid = rated
    pid = projects.get_project(db, "ifir")["id"]
    code, out, err = run_cli("validate", "--db", db_path, "--study", str(sid), "--json")
    assert code == 0, err
    assert projects.qrels(db, pid, "validated")["pm0_1"] == {"pm0c0": 1, "pm0c1": 0, "pm0c2": 1}
    code, out, err = run_cli("validate", "--db", db_path, "--study", str(sid), "--match-excluded-min", "5", "--json")
    assert code == 0, err
    assert projects.qrels(db, pid, "validated")["pm0_2"] == {"pm0c0": 1}  # c1 (median 4) stays out at >= 5
    assert projects.qrels(db, pid, "validated")["pm0_1"] == {"pm0c0": 1, "pm0c1": 0}
    with pytest.raises(SystemExit):  # argparse refuses a score outside 0..5
        run_cli("validate", "--db", db_path, "--study", str(sid), "--match-gold-max", "7")
    export_project(db, projects.get_project(db, "ifir"), "report", tmp_path, study_ids=[sid])
    md = (tmp_path / "report.md").read_text()
    assert "## Qrels version `validated` (validates the published `original`)" in md
    assert "| gold -> not relevant | excluded -> relevant | unchanged | undecided |" in md
    assert "| 1 | 2 | 5 | 0 |" in md


def test_export_page_thresholds_decide_the_stored_validated_qrels(rated, db_path, monkeypatch):
    db, sid = rated
    pid = projects.get_project(db, "ifir")["id"]
    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    auth.add_user(db, "boss", "lead", "pw")
    at = signed_in_page(db, "pages/export.py", "boss")
    at.multiselect(key="exp_studies").set_value([sid]).run()
    at.number_input(key="exp_match_gold_max").set_value(0).run()  # the gold side off
    if any(b.key == "exp_build" for b in at.button):
        at.button(key="exp_build").click().run()
    at.button(key="exp_store").click().run()
    assert not at.exception and not at.error
    stored = projects.qrels(db, pid, "validated")
    # gold pm0_1/c1 (median 2) stays relevant at <= 0; the excluded ones (median 4) still become relevant
    assert (stored["pm0_1"], stored["pm0_2"]) == ({"pm0c0": 1, "pm0c1": 1, "pm0c2": 1}, {"pm0c0": 1, "pm0c1": 1})


def test_an_undecided_passage_blocks_until_the_lead_chooses(rated):
    from annotation.outcomes.qrels_builds import UnresolvedJudgments, build_validated

    db, sid = rated
    pid = projects.get_project(db, "ifir")["id"]
    item = next(it for it in studies.items_of_study(db, sid) if (it["instance_id"], it["doc_id"]) == ("pm0_1", "pm0c0"))
    db.execute("DELETE FROM labels WHERE item_id = ? AND user_id IN (SELECT id FROM users WHERE name IN ('a1', 'a2'))",
               [item["id"]])  # one label left: no score yet
    with pytest.raises(UnresolvedJudgments, match="pm0_1/pm0c0 \\(gold passage: awaiting labels\\)"):
        build_validated(db, projects.get_project_by_id(db, pid), [sid], allow_incomplete=True)
    kept = build_validated(db, projects.get_project_by_id(db, pid), [sid], allow_incomplete=True, unresolved="keep-published")
    assert kept.qrels["pm0_1"] == {"pm0c0": 1, "pm0c1": 0, "pm0c2": 1}
    assert kept.settings["passage_match"]["counts"] == {"gold_to_not_relevant": 1, "excluded_to_relevant": 2,
                                                        "unchanged": 4, "undecided": 1}
    dropped = build_validated(db, projects.get_project_by_id(db, pid), [sid], allow_incomplete=True, unresolved="drop")
    assert dropped.qrels["pm0_1"] == {"pm0c1": 0, "pm0c2": 1}
