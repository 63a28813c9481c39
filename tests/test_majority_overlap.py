"""How many labels decide an item follows the study's planned overlap, an adjudicated item takes
the lead's value, and ties are items with two or more labels: the same in the item outcomes,
Table 7, ``ifjudge agreement --db`` and the validated qrels (annotation.agreement.majority is the one rule)."""
from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from annotation import workspace
from annotation.monitoring import monitor
from annotation.agreement.report import agreement_report
from annotation.agreement.bootstrap import observed_statistics
from annotation.agreement.data import encode_labels
from annotation.agreement.majority import decide, majority_index
from annotation.outcomes.items import item_outcomes
from annotation.outcomes.qrels_builds import build_validated
from annotation.studies import StudySettings, create_study
from storage import projects, studies
from storage.errors import IFJudgeError
from tests.builders import user_row
from storage.projects import get_project


# ----------------------------------------------------------------------------- the rule itself

def test_overlap_sets_how_many_labels_decide():
    assert decide(["Yes"], overlap=1).value == "Yes"
    assert decide(["Yes"], overlap=1).provenance == "unanimous"
    assert decide(["Yes"], overlap=3).reason == "awaiting labels"
    assert decide(["Yes"]).reason == "awaiting labels"  # overlap unknown: two labels, as before
    assert decide(["Yes", "No"], overlap=1).reason == "tie"  # more labels than planned: still a tie
    assert decide(["Yes", "Yes", "No"], overlap=3).value == "Yes"
    assert majority_index([[1, 0], [1, 0], [1, 1]], overlap=[1, 2, 1]).tolist() == [0, -1, -1]
    assert majority_index([[1, 1], [0, 0]], adjudicated=[1, 0]).tolist() == [1, 0]


# ----------------------------------------------------------------------------- the report

def _one_label_each(values):
    return pd.DataFrame({"item": [f"i{k}" for k in range(len(values))], "annotator": "a", "label": values})


def test_overlap_one_study_every_label_yes_is_100_percent_yes():
    labels = _one_label_each(["Yes"] * 4)
    r = agreement_report(labels, ["Yes", "No"], overlap=1)
    assert r["majority_shares"] == {"Yes": 1.0, "No": 0.0}
    assert r["n_items_no_majority"] == 0
    assert r["randolph_kappa"] is None  # no item has two labels: agreement is undefined, said so
    # planned for 2 annotators, one label each: nothing is decided yet (the old behaviour everywhere)
    r2 = agreement_report(labels, ["Yes", "No"], overlap=2)
    assert r2["majority_shares"]["Yes"] == 0.0 and r2["n_items_no_majority"] == 4
    # a per-item overlap: only the item planned for one annotator is decided
    r3 = agreement_report(labels, ["Yes", "No"], overlap={"i0": 1, "i1": 3, "i2": 3, "i3": 3})
    assert r3["majority_shares"]["Yes"] == 0.25


BEST = pd.DataFrame([
    ("i1", "a", "1"), ("i1", "b", "1"),   # majority 1, gold 1: correct
    ("i2", "a", "1"), ("i2", "b", "2"),   # tie, adjudicated 1, gold 1: correct
    ("i3", "a", "2"), ("i3", "b", "3"),   # tie, not adjudicated
    ("i4", "a", "2"),                     # one label of two planned: awaiting, not a tie
    ("i5", "a", "3"), ("i5", "b", "3"),   # majority 3, gold 2: wrong
], columns=["item", "annotator", "label"])
GOLD = {"i1": "1", "i2": "1", "i3": "1", "i4": "2", "i5": "2"}


def test_adjudicated_tie_counts_with_the_leads_value_and_ties_need_two_labels():
    r = agreement_report(BEST, ["1", "2", "3"], gold=GOLD, overlap=2, adjudications={"i2": "1"})
    assert r["n_majority_ties"] == 1            # i3 only (i2 adjudicated, i4 has one label)
    assert r["n_items_awaiting_labels"] == 1    # i4
    assert r["n_items_adjudicated"] == 1
    assert r["top1_accuracy_ties_count_as_wrong"] == pytest.approx(2 / 5)  # i1, i2 of 5 with gold
    assert r["top1_accuracy_excluding_ties"] == pytest.approx(2 / 3)       # of i1, i2, i5 (decided)
    # majority vs gold on i1 (1,1), i2 (1,1), i5 (3,2): p_o = 2/3, p_e = 2/3 * 2/3 = 4/9
    assert r["cohen_kappa_majority_vs_gold_excluding_ties"] == pytest.approx((2 / 3 - 4 / 9) / (1 - 4 / 9))
    assert r["majority_shares"] == pytest.approx({"1": 2 / 5, "2": 0.0, "3": 1 / 5})
    # without the adjudication, i2 is a tie: 2 ties, 1 correct of 5, of the 2 decided
    r0 = agreement_report(BEST, ["1", "2", "3"], gold=GOLD, overlap=2)
    assert r0["n_majority_ties"] == 2 and r0["n_items_awaiting_labels"] == 1
    assert r0["top1_accuracy_ties_count_as_wrong"] == pytest.approx(1 / 5)
    assert r0["top1_accuracy_excluding_ties"] == pytest.approx(1 / 2)
    # the bootstrap's formulas on the observed data give the same values (intervals are built on them)
    enc = encode_labels(BEST, ("1", "2", "3"), gold=GOLD, overlap=2, adjudications={"i2": "1"})
    obs = observed_statistics(enc, ordinal=False, values=None)
    assert float(obs["top1_accuracy_excluding_ties"][0]) == pytest.approx(2 / 3)
    assert float(obs["cohen_kappa_majority_vs_gold_excluding_ties"][0]) == pytest.approx(0.4)
    boot = agreement_report(BEST, ["1", "2", "3"], gold=GOLD, overlap=2, adjudications={"i2": "1"}, n_boot=50)
    assert boot["intervals"]["top1_accuracy_excluding_ties"]["n_boot"] == 50


def test_bad_adjudication_or_overlap_is_refused_with_the_row():
    with pytest.raises(IFJudgeError, match="adjudications row 0: label '9'"):
        agreement_report(BEST, ["1", "2", "3"], adjudications={"i2": "9"})
    with pytest.raises(IFJudgeError, match="overlap row 0: .* >= 1, got 0"):
        agreement_report(BEST, ["1", "2", "3"], overlap={"i1": 0})


# ----------------------------------------------------------------------------- from the database

def _answer_all(db, study_id, name, validity, passage_index):
    u = user_row(db, name)
    while (s := workspace.open_screen(db, study_id, u)) is not None:
        answers = {"validity": {"value": validity, "reason": "no"}, "naturalness": {"value": "Yes"}}
        for it in s.items:  # Q3: the passages sorted by doc id, whatever order was shown
            if it.question.id == "best_passage":
                answers["best_passage"] = {"value": sorted(p["doc_id"] for p in it.passages)[passage_index]}
        workspace.submit_screen(db, s, u, answers, started_at=time.time() - 1)


def _stat(rows, prefix, statistic):
    return next(r["value"] for r in rows if r["question"].startswith(prefix) and r["statistic"] == statistic)


def test_overlap_one_study_decides_every_item_in_table7_outcomes_cli_and_qrels(demo, db_path, run_cli):
    db, r = demo
    study = create_study(db, project=get_project(db, "demo"), questions=["validity", "naturalness", "best_passage"],
                         annotators=["ann1", "ann2", "ann3"], name="one annotator per item",
                         settings=StudySettings(group_fraction=1.0, per_group=2, overlap=1, passages=3, seed=0))
    sid = study["study_id"]
    for name in ("ann1", "ann2", "ann3"):
        _answer_all(db, sid, name, "Yes", 0)
    validity = item_outcomes(db, sid, "validity")
    assert len(validity) == 10 and all(o.value == "Yes" and o.provenance == "unanimous" for o in validity)
    t7 = monitor.table7(db, sid, n_boot=0)
    assert _stat(t7, "Q1.", "Proportion of Yes response") == 1.0  # was 0.0: no item had two labels
    assert _stat(t7, "Q3.", "Number of ties (no majority)") == 0
    assert monitor.extrapolation(db, sid)["invalid"] == monitor.wilson(0, 10)
    code, out, err = run_cli("agreement", "--db", db_path, "--study", sid, "--question", "validity", "--json")
    assert code == 0, err
    assert json.loads(out)["majority_shares"]["Yes"] == 1.0
    project_id = studies.get_study(db, sid)["project_id"]
    build = build_validated(db, projects.get_project_by_id(db, project_id), [sid])
    assert not build.unresolved  # every instance decided by its one label
    kept = set(build.qrels)
    # the lead overrules three validity labels: Table 7, the CLI and the qrels build all follow
    overruled = [o for o in validity if o.instance_id in kept][:3]
    assert len(overruled) == 3
    for o in overruled:
        studies.add_adjudication(db, o.item_id, "No", "lead")
    assert _stat(monitor.table7(db, sid, n_boot=0), "Q1.", "Proportion of Yes response") == pytest.approx(7 / 10)
    code, out, err = run_cli("agreement", "--db", db_path, "--study", sid, "--question", "validity", "--json")
    assert json.loads(out)["majority_shares"]["Yes"] == pytest.approx(7 / 10)
    assert set(build_validated(db, projects.get_project_by_id(db, project_id), [sid]).qrels) == kept - {o.instance_id for o in overruled}


def test_adjudicated_items_count_with_the_leads_value_in_table7(demo, db_path, run_cli):
    db, r = demo
    sid = r["study_id"]  # overlap 3; only ann1 and ann2 answer: every item has two labels
    _answer_all(db, sid, "ann1", "Yes", 0)
    _answer_all(db, sid, "ann2", "No", 1)
    items = {q: studies.items_of_study(db, sid, q) for q in ("validity", "best_passage")}
    n = len(items["validity"])
    assert n == 8
    t7 = monitor.table7(db, sid, n_boot=0)
    assert _stat(t7, "Q1.", "Proportion of Yes response") == 0.0  # every item a Yes/No tie
    assert _stat(t7, "Q3.", "Number of ties (no majority)") == n
    studies.add_adjudication(db, items["validity"][0]["id"], "Yes", "lead")
    bp = items["best_passage"][0]
    studies.add_adjudication(db, bp["id"], bp["payload"]["gold"], "lead")
    t7 = monitor.table7(db, sid, n_boot=0)
    assert _stat(t7, "Q1.", "Proportion of Yes response") == pytest.approx(1 / n)
    assert _stat(t7, "Q3.", "Number of ties (no majority)") == n - 1
    # the adjudicated Q3 item is the only decided one, and it equals the target
    assert _stat(t7, "Q3.", "Top-1 Accuracy excluding ties") == 1.0
    assert _stat(t7, "Q3.", "Top-1 Accuracy") == pytest.approx(1 / n)
    code, out, err = run_cli("agreement", "--db", db_path, "--study", sid, "--question", "validity", "--json")
    assert code == 0, err
    assert json.loads(out)["majority_shares"]["Yes"] == pytest.approx(1 / n)
    assert [o.value for o in item_outcomes(db, sid, "validity")].count("Yes") == 1


def test_rejudging_follows_the_planned_overlap():
    from annotation.narratives.rejudging import resolve

    assert resolve(["relevant"], overlap=1) == ("relevant", "unanimous")
    assert resolve(["relevant"], overlap=3) == (None, "awaiting labels")
    assert resolve(["relevant", "not relevant"], overlap=1) == (None, "tie")


def test_agreement_cli_overlap_for_a_label_file(run_cli, tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("item,annotator,label\ni1,a,Yes\ni2,b,Yes\ni3,a,No\n")
    code, out, err = run_cli("agreement", "--labels", path, "--categories", "Yes,No", "--overlap", "1", "--json")
    assert code == 0, err
    assert json.loads(out)["majority_shares"] == pytest.approx({"Yes": 2 / 3, "No": 1 / 3})
    code, out, _ = run_cli("agreement", "--labels", path, "--categories", "Yes,No", "--json")
    assert json.loads(out)["majority_shares"] == {"Yes": 0.0, "No": 0.0}  # two labels decide by default
    code, _, err = run_cli("agreement", "--labels", path, "--categories", "Yes,No", "--overlap", "0")
    assert code == 2 and "--overlap must be at least 1, got 0" in err
