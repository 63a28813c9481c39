"""What the annotate page relies on: validation, no double labels, going back keeps history."""
import time

import pytest

from annotation import workspace
from annotation.workspace import shown_order
from storage import studies
from storage.errors import InvalidAnswer, PermissionDenied

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL


def ann(db, name):
    row = db.execute("SELECT id, name, role FROM users WHERE name = ?", [name]).fetchone()
    return dict(zip(("id", "name", "role"), row))


def answers(screen, nat="Yes", reason=""):
    bp = next(it for it in screen.items if it.question.id == "best_passage")
    return {"validity": {"value": "Yes"}, "naturalness": {"value": nat, "reason": reason},
            "best_passage": {"value": bp.passages[1]["doc_id"]}}


def test_screen_shows_instance_and_three_shuffled_passages_with_the_target(demo):
    db, r = demo
    u = ann(db, "ann1")
    s = workspace.open_screen(db, r["study_id"], u)
    assert [it.question.id for it in s.items] == ["validity", "naturalness", "best_passage"]
    bp = s.items[2]
    item = studies.screen_items(db, r["study_id"], s.screen)[2]
    assert sorted(p["doc_id"] for p in bp.passages) == item["payload"]["candidates"]
    assert item["payload"]["gold"] in item["payload"]["candidates"]
    # the order is stable for this (item, annotator) across reloads
    again = workspace.open_screen(db, r["study_id"], u, s.screen)
    assert [p["doc_id"] for p in again.items[2].passages] == [p["doc_id"] for p in bp.passages]


def test_shown_order_is_seeded_per_item_and_annotator():
    c = ["a", "b", "c", "d", "e"]
    assert shown_order(c, seed=0, item_id=1, user_id=1) == shown_order(c, seed=0, item_id=1, user_id=1)
    orders = {tuple(shown_order(c, seed=0, item_id=i, user_id=u)) for i in range(10) for u in range(3)}
    assert len(orders) > 5


def test_no_without_reason_is_refused_and_nothing_is_written(demo):
    db, r = demo
    u = ann(db, "ann1")
    s = workspace.open_screen(db, r["study_id"], u)
    with pytest.raises(InvalidAnswer, match=r"Q2 “Is the instruction natural for the given query\?”: a reason is required when the answer is No"):
        workspace.submit_screen(db, s, u, answers(s, nat="No", reason="   "), started_at=time.time())
    with pytest.raises(InvalidAnswer, match="not one of"):
        workspace.submit_screen(db, s, u, {**answers(s), "validity": {"value": "Maybe"}}, started_at=None)
    with pytest.raises(InvalidAnswer, match="please answer"):
        workspace.submit_screen(db, s, u, {k: v for k, v in answers(s).items() if k != "validity"}, started_at=None)
    assert studies.current_labels(db, r["study_id"]) == []


def test_double_submit_and_second_tab_store_one_label(demo):
    db, r = demo
    u = ann(db, "ann1")
    tab1 = workspace.open_screen(db, r["study_id"], u)
    tab2 = workspace.open_screen(db, r["study_id"], u)  # same claimed screen in another tab
    assert tab1.screen == tab2.screen
    workspace.submit_screen(db, tab1, u, answers(tab1), started_at=time.time() - 2)
    with pytest.raises(studies.StaleSubmission):
        workspace.submit_screen(db, tab1, u, answers(tab1), started_at=None)  # double click
    with pytest.raises(studies.StaleSubmission):
        workspace.submit_screen(db, tab2, u, answers(tab2, nat="No", reason="x"), started_at=None)
    rows = studies.current_labels(db, r["study_id"])
    assert len(rows) == 3 and {x["value"] for x in rows if x["question"] == "naturalness"} == {"Yes"}
    assert all(x["duration_ms"] >= 2000 for x in rows)
    assert workspace.progress(db, r["study_id"], u) == (1, 8)


def test_going_back_appends_a_label_and_keeps_history(demo):
    db, r = demo
    u = ann(db, "ann2")
    s = workspace.open_screen(db, r["study_id"], u)
    workspace.submit_screen(db, s, u, answers(s), started_at=None)
    back = workspace.open_screen(db, r["study_id"], u, workspace.history(db, r["study_id"], u)[-1])
    assert back.items[1].current["value"] == "Yes"
    workspace.submit_screen(db, back, u, answers(back, nat="No", reason="on reflection, generic"), started_at=None)
    current = {x["question"]: x for x in studies.current_labels(db, r["study_id"])}
    assert current["naturalness"]["value"] == "No"
    history = [h for h in studies.label_history(db, r["study_id"]) if h["item"] == current["naturalness"]["item"]]
    assert [h["value"] for h in history] == ["Yes", "No"] and history[1]["supersedes"] == history[0]["id"]
    assert len(studies.current_labels(db, r["study_id"])) == 3  # the superseded label is not current
    assert studies.current_values(db, r["study_id"])[current["naturalness"]["item"]] == ["No"]
    assert workspace.progress(db, r["study_id"], u) == (1, 8)  # a screen counts once


def test_outsider_cannot_open_or_submit(demo):
    from accounts import auth

    db, r = demo
    auth.add_user(db, "mallory", "annotator", "pw")
    m = ann(db, "mallory")
    with pytest.raises(PermissionDenied):
        workspace.open_screen(db, r["study_id"], m)


def test_labels_csv_has_the_documented_columns(demo):
    db, r = demo
    u = ann(db, "ann3")
    s = workspace.open_screen(db, r["study_id"], u)
    workspace.submit_screen(db, s, u, answers(s, nat="No", reason='says "nothing", really'), started_at=None)
    lines = workspace.labels_csv(db, r["study_id"]).splitlines()
    assert lines[0] == "item,instance,question,annotator,value,reason,shown_order,shown_position,submitted_at"
    assert len(lines) == 4
    assert [line.split(",")[-2] for line in lines[1:]] == ["1", "1", "1"]  # ann3's first item
    assert '"says ""nothing"", really"' in lines[2]


def test_every_missing_answer_is_reported_by_its_wording_not_its_id(demo):
    db, r = demo
    u = ann(db, "ann1")
    s = workspace.open_screen(db, r["study_id"], u)
    with pytest.raises(workspace.ScreenRefused) as exc:
        workspace.submit_screen(db, s, u, {"naturalness": {"value": "No", "reason": ""}}, started_at=None)
    problems = exc.value.problems
    assert list(problems) == ["validity", "naturalness", "best_passage"]  # all three, in the screen's order
    assert problems["validity"] == "Q1 “Is the instruction valid for the search user?”: please answer this question"
    assert problems["naturalness"].endswith(": a reason is required when the answer is No")
    assert problems["best_passage"].startswith("Q3 “Which passage")
    assert "validity" not in str(exc.value) and str(exc.value).count("\n") == 2
    assert studies.current_labels(db, r["study_id"]) == []


def test_annotators_land_on_the_study_with_most_work_left(demo):
    db, r = demo
    u = ann(db, "ann1")
    work = workspace.my_studies(db, u)
    assert [(w.done, w.total) for w in work] == [(0, 8)]
    assert work[0].label() == f"{r['study_id']}: demo: InstructIR validation · 8 of 8 left"
    s = workspace.open_screen(db, r["study_id"], u)
    workspace.submit_screen(db, s, u, answers(s), started_at=None)
    assert workspace.my_studies(db, u)[0].label().endswith("7 of 8 left")
    done = workspace.StudyWork({"id": 9, "name": "old"}, 4, 4)
    assert done.label() == "9: old · all done"
    assert workspace.most_work_left([done, *workspace.my_studies(db, u)]) == 1
    assert workspace.most_work_left([]) is None


def test_going_back_lists_submitted_items_by_their_query(demo):
    db, r = demo
    u = ann(db, "ann1")
    s = workspace.open_screen(db, r["study_id"], u)
    workspace.submit_screen(db, s, u, answers(s), started_at=None)
    [(screen, text)] = workspace.recent_history(db, r["study_id"], u)
    assert screen == s.screen and text.startswith(s.query + " — ") and s.instance_id not in text


def test_a_stale_tab_is_refused_and_the_stored_answer_stays_current(demo):
    """One current answer per item and annotator: tab 2 opened the screen before tab 1 answered
    it; tab 2's submission is refused with a message that says so, and only an explicit replace
    makes its answer the current one (the history keeps both)."""
    db, r = demo
    sid, u = r["study_id"], ann(db, "ann1")
    tab1 = workspace.open_screen(db, sid, u)
    tab2 = workspace.open_screen(db, sid, u, tab1.screen)
    workspace.submit_screen(db, tab1, u, answers(tab1), started_at=None, now=1000.0)
    with pytest.raises(studies.AlreadyAnswered, match="already answered this item") as refused:
        workspace.submit_screen(db, tab2, u, answers(tab2, nat="No", reason="too generic"), started_at=None)
    assert refused.value.submitted_at == 1000.0
    naturalness = lambda: [x for x in studies.current_labels(db, sid) if x["question"] == "naturalness"]  # noqa: E731
    assert [(x["value"], x["reason"]) for x in naturalness()] == [("Yes", "")]
    assert len(studies.label_history(db, sid)) == 3
    # the explicit "replace my answer": stored, superseding tab 1's label
    workspace.submit_screen(db, tab2, u, answers(tab2, nat="No", reason="too generic"), started_at=None, replace=True)
    assert [(x["value"], x["reason"]) for x in naturalness()] == [("No", "too generic")]
    history = [h for h in studies.label_history(db, sid) if h["item"] == naturalness()[0]["item"]]
    assert [h["value"] for h in history] == ["Yes", "No"] and history[1]["supersedes"] == history[0]["id"]
    assert workspace.progress(db, sid, u) == (1, 8)


def test_replace_still_needs_the_screen_to_be_assigned(demo):
    db, r = demo
    sid = r["study_id"]
    s = workspace.open_screen(db, sid, ann(db, "ann1"))
    with pytest.raises(PermissionDenied):  # an id that holds no assignment of this screen
        workspace.submit_screen(db, s, {"id": 999, "name": "ann1", "role": "annotator"}, answers(s),
                                started_at=None, replace=True)
