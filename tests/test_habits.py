"""Each annotator's habits (annotation/monitoring/habits.py) on the demo study labelled by builders.PLAN, and a
straight-liner: the figures worked out by hand from the labels, the flag raised for an annotator
who answers Yes to everything while the others do not, and no flag when everyone agrees."""
from __future__ import annotations

import time

import numpy as np
import pytest

from annotation import workspace
from annotation.monitoring.habits import annotator_habits, others_agreement
from tests.builders import PLAN, label_all, user_row
from storage.projects import get_project


def test_answer_shares_and_pairs_by_hand(labelled):
    db, sid, _ = labelled  # PLAN: 8 screens x (validity, naturalness, best passage) x ann1..ann3
    h = {a["annotator"]: a for a in annotator_habits(db, sid)["annotators"]}
    # validity: ann1 Yes x8; ann2 Yes, No, Yes x6; naturalness: ann3 No, No, Yes x6
    assert h["ann1"]["answers"]["validity"] == {"Yes": 1.0}
    assert h["ann2"]["answers"]["validity"] == {"Yes": 7 / 8, "No": 1 / 8}
    assert h["ann3"]["answers"]["naturalness"] == {"Yes": 6 / 8, "No": 2 / 8}
    assert "best_passage" not in h["ann1"]["answers"]  # doc ids say nothing: the position does
    assert sum(h["ann1"]["positions"].values()) == pytest.approx(1.0)
    # 24 labels, each item has 2 other labels: 48 pairs
    assert h["ann1"]["labels"] == 24 and h["ann1"]["pairs"] == 48


def test_others_agreement_on_a_small_table():
    # item 0: A A B (two agree); item 1: A B C (all differ); item 2: A A A; item 3: A B (2 labels)
    row = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3])
    v = np.array([0, 0, 1, 0, 1, 2, 0, 0, 0, 0, 1])
    n = np.array([3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2])
    same, agree = others_agreement(row, v, n)
    assert same.tolist() == [1, 1, 0, 0, 0, 0, 2, 2, 2, 0, 0]
    # item 0: each A sees (A, B): a tie, undefined; B sees (A, A): the others' majority is A -> 0
    # item 1: every label sees two different answers: undefined; item 2: each sees (A, A) -> 1
    # item 3: one other label only: undefined
    assert np.isnan(agree[[0, 1, 3, 4, 5, 9, 10]]).all()
    assert agree[[2, 6, 7, 8]].tolist() == [0.0, 1.0, 1.0, 1.0]


def _straight(db, sid, liner: str, answer: str = "Yes"):
    """Every screen of ``liner`` answered ``answer`` / ``answer`` / the first passage shown; the
    others by PLAN's answers."""
    u = user_row(db, liner)
    while (s := workspace.open_screen(db, sid, u)) is not None:
        workspace.submit_screen(db, s, u, {"validity": {"value": answer, "reason": "r"},
                                           "naturalness": {"value": answer, "reason": "r"},
                                           "best_passage": {"value": s.items[2].passages[0]["doc_id"]}},
                                started_at=time.time() - 1)


@pytest.fixture
def ten_screens(demo):
    """A study of the demo's 12 instances x 3 annotators (every annotator sees every screen)."""
    from annotation.studies import StudySettings, create_study
    from storage import projects
    db, _ = demo
    groups = sorted({i["group_id"] for i in projects.instances(db, 1) if "_" in i["instance_id"]})
    sid = create_study(db, project=get_project(db, "demo"), questions=["validity", "naturalness", "best_passage"],
                       annotators=["ann1", "ann2", "ann3"], name="all", groups=groups,
                       settings=StudySettings(group_fraction=1.0, per_group=3, overlap=3, seed=4))["study_id"]
    return db, sid


def test_a_straight_liner_is_flagged_and_the_others_are_not(ten_screens):
    db, sid = ten_screens
    _straight(db, sid, "ann1")
    for name, answers in (("ann2", ["Yes", "No"]), ("ann3", ["No", "Yes"])):
        u = user_row(db, name)
        k = 0
        while (s := workspace.open_screen(db, sid, u)) is not None:
            a = answers[k % 2]
            k += 1
            workspace.submit_screen(db, s, u, {"validity": {"value": a, "reason": "r"},
                                               "naturalness": {"value": a, "reason": "r"},
                                               "best_passage": {"value": s.items[2].passages[k % 3]["doc_id"]}},
                                    started_at=time.time() - 1)
    h = {a["annotator"]: a for a in annotator_habits(db, sid)["annotators"]}
    flags = h["ann1"]["flags"]
    assert any(f.startswith("Straight-lining on Valid instruction: “Yes” to all 12 items (the others: 50%") for f in flags)
    assert any(f.startswith("Straight-lining on Most natural passage: always the first passage shown 12 items")
               for f in flags)
    assert h["ann2"]["flags"] == [] and h["ann3"]["flags"] == []
    assert h["ann1"]["positions"] == {1: 1.0}


def test_no_flag_when_everyone_answers_alike(ten_screens):
    db, sid = ten_screens
    yes = {n: "Yes" for n in ("ann1", "ann2", "ann3")}
    label_all(db, sid, yes, yes)  # everyone Yes, Yes and the target: a question all agree on is no sign
    h = annotator_habits(db, sid)["annotators"]
    assert all(not any(f.startswith("Straight-lining on Valid") for f in a["flags"]) for a in h)


def test_fast_is_a_flag_against_the_study_median(labelled):
    db, sid, _ = labelled
    h = annotator_habits(db, sid, seconds={"ann1": 1.0, "ann2": 30.0, "ann3": 40.0})
    assert len(PLAN["ann1"]) == 8
    assert h["annotators"][0]["flags"] == []  # 8 screens: under the 10 a flag needs


def test_timeline_windows(labelled):
    db, sid, _ = labelled
    t = annotator_habits(db, sid)["timeline"]
    ann1 = [r for r in t if r["annotator"] == "ann1" and r["measure"] == "agrees pairwise"]
    # 24 labels in windows of max(5, ceil(24 / 8)) = 5: 5, 10, 15, 20, 24 labels given
    assert [r["labels"] for r in ann1] == [5, 10, 15, 20, 24]
    assert all(0 <= r["share"] <= 1 for r in ann1)

