"""The outcome table (annotation.outcomes.table) and the monitor pieces read from it: the same
decisions as annotation.outcomes.items.item_outcomes, and hand-computed figures on a small study with a
replaced answer, a single label, an adjudication and known durations."""
from __future__ import annotations

import pytest

from annotation import workspace
from annotation.monitoring import monitor
from annotation.agreement.report import agreement_report
from annotation.outcomes.table import outcome_table
from annotation.outcomes.items import item_outcomes, labels_frame
from annotation.monitoring.overview import study_progress
from annotation.studies import StudySettings, create_study
from storage import studies
from storage.errors import IFJudgeError
from tests.builders import published_rejudged_demo, user_row
from storage.projects import get_project

pytestmark = pytest.mark.both_engines  # each test on SQLite and on PostgreSQL (the reads use json_extract)


def _answer(db, sid, name, screen, validity, naturalness, *, seconds, replace=False):
    """``name`` answers ``screen``: the best passage is always the dataset's target."""
    u = user_row(db, name)
    s = workspace.open_screen(db, sid, u, screen)
    gold = studies.screen_items(db, sid, screen)[2]["payload"]["gold"]
    workspace.submit_screen(db, s, u, {
        "validity": {"value": validity, "reason": "" if validity == "Yes" else "vague"},
        "naturalness": {"value": naturalness, "reason": "" if naturalness == "Yes" else "odd"},
        "best_passage": {"value": gold}}, started_at=1000.0, now=1000.0 + seconds, replace=replace)


@pytest.fixture
def small(demo):
    """Screen 0: ann1 Yes/Yes (2 s), ann2 No/Yes (4 s), ann3 No/No (9 s). Screen 1: ann1 Yes/Yes
    (6 s), ann2 No/No (5 s) replaced by Yes/Yes (3 s). Screen 2: ann1 Yes/Yes (1 s) only, its
    validity adjudicated No. Every best passage answer is the target."""
    db, r = demo
    sid = r["study_id"]
    order = [it["screen"] for it in studies.items_of_study(db, sid, "validity")]
    _answer(db, sid, "ann1", order[0], "Yes", "Yes", seconds=2)
    _answer(db, sid, "ann2", order[0], "No", "Yes", seconds=4)
    _answer(db, sid, "ann3", order[0], "No", "No", seconds=9)
    _answer(db, sid, "ann1", order[1], "Yes", "Yes", seconds=6)
    _answer(db, sid, "ann2", order[1], "No", "No", seconds=5)
    _answer(db, sid, "ann2", order[1], "Yes", "Yes", seconds=3, replace=True)
    _answer(db, sid, "ann1", order[2], "Yes", "Yes", seconds=1)
    items = {(it["screen"], it["question"]): it["id"] for it in studies.items_of_study(db, sid)}
    studies.add_adjudication(db, items[order[2], "validity"], "No", "lead")
    return db, sid, order, items


def test_decisions_by_hand(small):
    db, sid, order, items = small
    t = outcome_table(db, sid)
    row = {int(i): j for j, i in enumerate(t.item)}

    def at(screen, question):
        j = row[items[order[screen], question]]
        return t.value[j], t.provenance[j], t.label_counts([j])[0], int(t.n_labels[j]), float(t.disagreement[j])

    # counts in the order the labels give them (annotators by name): ann1's Yes first
    assert at(0, "validity") == ("No", "majority", {"Yes": 1, "No": 2}, 3, 1 - 2 / 3)
    assert at(0, "naturalness") == ("Yes", "majority", {"Yes": 2, "No": 1}, 3, 1 - 2 / 3)
    assert at(1, "validity") == ("Yes", "unanimous", {"Yes": 2}, 2, 0.0)  # ann2's replaced No is history
    assert at(2, "naturalness") == (None, "unresolved", {"Yes": 1}, 1, 0.0)  # one label of three planned
    assert at(2, "validity") == ("No", "adjudicated", {"Yes": 1}, 1, 0.0)
    assert at(3, "validity") == (None, "unresolved", {}, 0, 0.0)
    gold = studies.screen_items(db, sid, order[0])[2]["payload"]["gold"]
    assert at(0, "best_passage")[:3] == (gold, "unanimous", {gold: 3})


def test_same_decisions_as_item_outcomes(small, labelled):
    for db, sid in (small[:2], labelled[:2]):
        t = outcome_table(db, sid)
        outs = item_outcomes(db, sid)
        counts = t.label_counts(range(len(outs)))
        got = [(int(t.item[j]), t.instance[j], t.question[j], t.doc_id[j], t.gold[j], t.value[j], t.provenance[j],
                list(counts[j].items()), float(t.disagreement[j])) for j in range(len(outs))]
        assert got == [(o.item_id, o.instance_id, o.question, o.doc_id, o.gold, o.value, o.provenance,
                        list(o.label_counts.items()), o.disagreement) for o in outs]


def test_monitor_pieces_by_hand(small):
    db, sid, order, items = small
    rows = {r["annotator"]: r for r in monitor.annotator_table(db, sid)}
    # the newest duration of each screen: ann1 2, 6, 1 s; ann2 4 s and 3 s (the replacement); ann3 9 s
    assert [rows[a]["median_seconds_per_screen"] for a in ("ann1", "ann2", "ann3")] == [2.0, 3.5, 9.0]
    assert [(rows[a]["done"], rows[a]["total"]) for a in ("ann1", "ann2", "ann3")] == [(3, 8), (2, 8), (1, 8)]
    # labels of items decided with >= 2 labels (screens 0 and 1): ann1 differs on screen 0's validity,
    # ann3 on screen 0's naturalness; every best passage answer is the target
    assert [rows[a]["agreement_with_majority"] for a in ("ann1", "ann2", "ann3")] == [5 / 6, 1.0, 2 / 3]
    assert [rows[a]["agreement_with_gold"] for a in ("ann1", "ann2", "ann3")] == [1.0, 1.0, 1.0]
    e = monitor.extrapolation(db, sid)  # validity No, Yes, adjudicated No; naturalness Yes, Yes
    assert [(e[k]["k"], e[k]["n"]) for k in ("invalid", "unnatural", "majority_differs_from_target")] == [(2, 3), (0, 2), (0, 2)]
    dis = monitor.disagreements(db, sid)
    assert [(r["item"], r["labels"], r["disagreement"], r["decision"]) for r in dis] == [
        (items[order[0], "validity"], {"Yes": 1, "No": 2}, 0.333333, "No"),
        (items[order[0], "naturalness"], {"Yes": 2, "No": 1}, 0.333333, "Yes")]
    assert [(r["item"], r["annotator"], r["reason"]) for r in monitor.reasons(db, sid)] == [
        (items[order[0], "validity"], "ann2", "vague"), (items[order[0], "validity"], "ann3", "vague"),
        (items[order[0], "naturalness"], "ann3", "odd")]


def test_labels_frame_codes_best_passage_by_position(small):
    db, sid, order, items = small
    frame, categories, gold = labels_frame(db, sid, "best_passage")
    assert categories == ["1", "2", "3"] and len(frame) == 6  # 3 + 2 + 1 current labels
    # everyone chose the target: each label is the target's position among the item's candidates
    assert all(row.label == gold[row.item] for row in frame.itertuples())
    first = studies.screen_items(db, sid, order[0])[2]["payload"]
    assert gold[items[order[0], "best_passage"]] == str(first["candidates"].index(first["gold"]) + 1)
    frame, categories, _ = labels_frame(db, sid, "validity")
    assert sorted(frame["annotator"]) == ["ann1", "ann1", "ann1", "ann2", "ann2", "ann3"]


def test_one_planned_annotator_decides_alone(demo):
    db, _ = demo
    sid = create_study(db, project=get_project(db, "demo"), questions=["validity", "naturalness", "best_passage"], annotators=["ann1"],
                       name="solo", settings=StudySettings(group_fraction=1.0, per_group=1, overlap=1, seed=1))["study_id"]
    screen = studies.items_of_study(db, sid, "best_passage")[0]["screen"]  # an InstructIR screen
    _answer(db, sid, "ann1", screen, "No", "Yes", seconds=1)
    t = outcome_table(db, sid)
    j = [i for i, q in enumerate(t.question) if q == "validity" and t.n_labels[i]][0]
    assert (t.value[j], t.provenance[j]) == ("No", "unanimous")


def test_one_overlap_for_every_item_is_checked():
    labels = [("i1", "a", "Yes"), ("i1", "b", "No")]
    with pytest.raises(IFJudgeError, match=r"overlap row 0: planned annotators must be a whole number >= 1, got 0"):
        agreement_report(labels, ["Yes", "No"], overlap=0)
    assert agreement_report(labels, ["Yes", "No"], overlap=1)["n_items"] == 1


def test_table7_takes_the_leads_best_passage(small):
    db, sid, order, items = small
    item = items[order[2], "best_passage"]  # one label of three planned: awaiting labels
    payload = studies.screen_items(db, sid, order[2])[2]["payload"]
    assert monitor.question_report(db, sid, "best_passage")["top1_accuracy_excluding_ties"] == 1.0  # 2 of 2 decided
    studies.add_adjudication(db, item, "not-a-candidate", "lead")  # not one of the item's passages: the vote stands
    assert monitor.question_report(db, sid, "best_passage")["top1_accuracy_excluding_ties"] == 1.0
    other = next(c for c in payload["candidates"] if c != payload["gold"])
    studies.add_adjudication(db, item, other, "lead")  # the lead decides another passage: 2 of 3 right
    report = monitor.question_report(db, sid, "best_passage")
    assert report["top1_accuracy_excluding_ties"] == 2 / 3 and report["top1_accuracy_ties_count_as_wrong"] == 2 / 3


def test_overview_counts_unresolved_items(small):
    db, sid, _, _ = small
    row = next(r for r in study_progress(db) if r["id"] == sid)
    # 24 items: screens 0 and 1 decided (6), screen 2's validity adjudicated, its other two awaiting
    # labels, screens 3-7 without a label (15)
    assert (row["unresolved"], row["answers_given"], row["answers_needed"]) == (17, 18, 72)


def test_storage_reads_agree_with_the_payloads(demo):
    """item_parts, item_candidates and label_vote_columns read what the decoded payloads and
    current_labels say, on a re-judging study ({"control": false} and {"control": true} items)."""
    db, _ = demo
    sid = published_rejudged_demo(db)["study_id"]
    items = studies.items_of_study(db, sid)
    parts = studies.item_parts(db, sid)
    controls = [it["payload"].get("control") for it in items]
    assert parts["control"] == controls and set(controls) == {False, True}
    assert parts["kind"] == parts["mode"] == [None] * len(items)
    votes = studies.label_vote_columns(db, sid)
    current = studies.current_labels(db, sid)
    uid = {u: user_row(db, u)["id"] for u in ("ann1", "ann2", "ann3")}
    assert sorted(zip(votes["item"], votes["user"], votes["value"])) == sorted(
        (r["item"], uid[r["annotator"]], r["value"]) for r in current)
    demo_sid = demo[1]["study_id"]
    assert studies.item_candidates(db, demo_sid) == {
        it["id"]: it["payload"]["candidates"] for it in studies.items_of_study(db, demo_sid, "best_passage")}
