"""Check items (annotation/check_items.py): the share the lead asks for is mixed into the queue,
served like any screen, scored per annotator, and left out of every outcome, agreement figure,
estimate and export of the study."""
from __future__ import annotations

import time

import pytest

from annotation import check_items, workspace
from annotation.monitoring import monitor
from annotation.estimates.benchmark import benchmark_estimates
from annotation.outcomes.table import outcome_table
from annotation.monitoring.overview import unresolved_counts
from annotation.outcomes.qrels_builds import study_completeness
from annotation.studies import StudySettings, create_study
from storage import projects, studies
from tests.builders import user_row
from storage.projects import get_project

pytestmark = pytest.mark.both_engines


@pytest.fixture
def with_checks(labelled):
    """A second study of the demo with check items: known answers from the first study (PLAN's
    unanimous items) and constructed best-passage checks."""
    db, first, _ = labelled
    groups = sorted({i["group_id"] for i in projects.instances(db, 1) if "_" in i["instance_id"]})
    r = create_study(db, project=get_project(db, "demo"), questions=["validity", "naturalness", "best_passage"],
                     annotators=["ann1", "ann2", "ann3"], name="checked", groups=groups[:2],
                     settings=StudySettings(group_fraction=1.0, per_group=1, overlap=3, seed=9, check_share=0.5))
    return db, first, r


def test_checks_are_built_mixed_in_and_said(with_checks):
    db, first, r = with_checks
    sid = r["study_id"]
    # 2 regular screens, half of all screens checks: round(0.5 * 2 / 0.5) = 2 check screens
    assert r["check_screens"] == 2 and r["instances"] == 2
    rows = db.execute("SELECT screen, question, is_check, position FROM items WHERE study_id = ? ORDER BY position, id",
                      [sid]).fetchall()
    check_screens = {s for s, _, c, _ in rows if c}
    assert len(check_screens) == 2 and not check_screens & {i["instance_id"] for i in studies.items_of_study(db, sid)}
    # every check screen asks the study's three questions, like the others
    assert all({q for s, q, _, _ in rows if s == cs} == {"validity", "naturalness", "best_passage"} for cs in check_screens)
    known = [a for (a,) in db.execute("SELECT json_extract(payload, '$.check_answer') FROM items WHERE study_id = ?"
                                      " AND is_check = 1", [sid]).fetchall() if a is not None]
    assert known  # at least one known answer per check screen
    # each annotator gets check screens too (planned on top of the balanced regular load)
    for name in ("ann1", "ann2", "ann3"):
        uid = user_row(db, name)["id"]
        got = db.execute("SELECT COUNT(DISTINCT i.screen) FROM assignments a JOIN items i ON i.id = a.item_id"
                         " WHERE i.study_id = ? AND i.is_check = 1 AND a.user_id = ?", [sid, uid]).fetchone()[0]
        assert got == 2


def _answer_all(db, sid, name, value="Yes"):
    u = user_row(db, name)
    served = []
    while (s := workspace.open_screen(db, sid, u)) is not None:
        served.append(s.screen)
        item = studies.screen_items(db, sid, s.screen)[2]
        pick = item["payload"].get("check_answer") or item["payload"]["gold"]
        workspace.submit_screen(db, s, u, {"validity": {"value": value, "reason": "r"},
                                           "naturalness": {"value": value, "reason": "r"},
                                           "best_passage": {"value": pick}}, started_at=time.time() - 1)
    return served


def test_checks_are_served_scored_and_left_out_of_every_figure(with_checks):
    db, first, r = with_checks
    sid = r["study_id"]
    served = {n: _answer_all(db, sid, n, "No" if n == "ann3" else "Yes") for n in ("ann1", "ann2", "ann3")}
    assert all(len(s) == 4 for s in served.values())  # 2 regular + 2 check screens each, like any screen
    assert studies.progress(db, sid, user_row(db, "ann1")["id"]) == (4, 4)
    acc = check_items.accuracy(db, sid)
    # known answers: the first study's unanimous decisions (validity Yes everywhere it was unanimous...) and
    # the constructed best passage (its target, which every annotator picked here)
    known = db.execute("SELECT json_extract(i.payload, '$.check_answer') FROM items i WHERE i.study_id = ? AND "
                       "i.is_check = 1", [sid]).fetchall()
    n_known = sum(a is not None for (a,) in known)
    assert acc["ann1"]["answered"] == n_known and acc["ann1"]["right"] >= 2  # the two passages at least
    assert acc["ann3"]["right"] < acc["ann1"]["right"]  # ann3 said No where the known answer is Yes
    # left out: 2 instances x 3 questions, 3 labels each -> outcomes, agreement, estimates, completeness
    t = outcome_table(db, sid)
    assert len(t.item) == 6 and int(t.n_labels.sum()) == 18
    assert monitor.question_report(db, sid, "validity")["n_items"] == 2
    valid = next(e for e in benchmark_estimates(db, sid)["estimates"] if e["question"] == "validity")
    assert valid["n_items"] == 2
    done = study_completeness(db, sid)
    assert (done["labelled"], done["planned"]) == (18, 18)
    assert unresolved_counts(db, sid) == {"unresolved": 0, "awaiting_labels": 0, "ties": 0}
    regular = {i["instance_id"] for i in studies.items_of_study(db, sid)}
    assert {r["instance"] for r in monitor.disagreements(db, sid)} <= regular
    assert {r["instance"] for r in monitor.reasons(db, sid)} <= regular


def test_mix_in_keeps_screens_together_and_renumbers():
    reg = [{"screen": "a", "position": 0, "question": "v"}, {"screen": "a", "position": 0, "question": "n"},
           {"screen": "b", "position": 1, "question": "v"}]
    out = check_items.mix_in(reg, [{"screen": "c", "position": 0, "question": "v"}], seed=2)
    by_screen = {}
    for it in out:
        by_screen.setdefault(it["screen"], set()).add(it["position"])
    assert all(len(p) == 1 for p in by_screen.values()) and sorted(p.pop() for p in by_screen.values()) == [0, 1, 2]


def test_a_share_outside_the_range_is_refused(demo):
    db, _ = demo
    with pytest.raises(Exception, match="share of check items must be between 0 and 0.5, got 0.8"):
        create_study(db, project=get_project(db, "demo"), questions=["validity"], annotators=["ann1", "ann2", "ann3"],
                     settings=StudySettings(check_share=0.8))
