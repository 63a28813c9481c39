"""Drafts: answers chosen on a screen but not submitted survive a reload (a new session), and are
gone once the screen is submitted or skipped. Library calls and the annotate page (AppTest)."""
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from annotation import workspace
from storage import drafts, studies, users
from storage.db import SCHEMA_VERSION, connect
from storage.errors import InvalidAnswer
from tests.builders import item_shown, passage_id, send

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL

ROOT = Path(__file__).resolve().parents[1]


def test_a_draft_is_per_user_and_screen_and_keeps_the_part_not_given(demo):
    db, r = demo
    ann1, ann2 = users.get_user(db, "ann1"), users.get_user(db, "ann2")
    s1 = workspace.open_screen(db, r["study_id"], ann1)
    s2 = workspace.open_screen(db, r["study_id"], ann2)
    workspace.save_draft(db, s1, ann1, "naturalness", value="No")
    workspace.save_draft(db, s1, ann1, "naturalness", reason="reads like a template")
    workspace.save_draft(db, s1, ann1, "naturalness", value="Yes")  # the reason stays
    assert workspace.draft(db, s1, ann1) == {"naturalness": {"value": "Yes", "reason": "reads like a template"}}
    assert workspace.draft(db, s2, ann2) == {}
    assert SCHEMA_VERSION >= 6 and "drafts" in db.table_names()


def test_a_draft_outside_the_screen_or_its_choices_is_refused_or_dropped(demo):
    db, r = demo
    ann1 = users.get_user(db, "ann1")
    s = workspace.open_screen(db, r["study_id"], ann1)
    with pytest.raises(InvalidAnswer, match="'relevance' is not on screen"):
        workspace.save_draft(db, s, ann1, "relevance", value="1")
    drafts.save(db, r["study_id"], ann1["id"], s.screen, "validity", value="Maybe", reason="r")
    assert workspace.draft(db, s, ann1) == {"validity": {"value": None, "reason": "r"}}


def test_submitting_or_skipping_clears_the_draft(demo):
    db, r = demo
    ann1 = users.get_user(db, "ann1")
    s = workspace.open_screen(db, r["study_id"], ann1)
    workspace.save_draft(db, s, ann1, "validity", value="Yes")
    workspace.skip(db, s, ann1)
    assert workspace.draft(db, s, ann1) == {}
    s = workspace.open_screen(db, r["study_id"], ann1)
    workspace.save_draft(db, s, ann1, "validity", value="Yes")
    with pytest.raises(workspace.ScreenRefused):  # refused: the draft is kept
        workspace.submit_screen(db, s, ann1, {"validity": {"value": "Yes"}}, started_at=None)
    assert workspace.draft(db, s, ann1)["validity"]["value"] == "Yes"
    workspace.submit_screen(db, s, ann1, {
        "validity": {"value": "Yes"}, "naturalness": {"value": "Yes"},
        "best_passage": {"value": s.items[2].passages[0]["doc_id"]}}, started_at=time.time() - 1)
    assert workspace.draft(db, s, ann1) == {}
    assert db.execute("SELECT COUNT(*) FROM drafts").fetchone()[0] == 0


def test_a_database_at_version_5_gains_the_drafts_table(tmp_path):
    import sqlite3

    from storage.db import MIGRATIONS

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    for version, name, sql in MIGRATIONS[:5]:
        conn.executescript(sql)
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?, '')", [version, name])
    conn.commit()
    conn.close()
    db = connect(path)
    assert "drafts" in db.table_names()
    assert db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == SCHEMA_VERSION


def _page(db, name):
    at = AppTest.from_file(str(ROOT / "pages/annotate.py"), default_timeout=30)
    row = db.execute("SELECT id, name, role FROM users WHERE name = ?", [name]).fetchone()
    at.session_state["user"] = dict(zip(("id", "name", "role"), row))
    return at.run()


def test_the_annotate_page_shows_the_draft_after_a_reload_and_submits_exactly_it(demo, db_path, monkeypatch):
    db, r = demo
    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    sid = r["study_id"]
    at = _page(db, "ann2")
    screen = at.session_state[f"ann_screen:{sid}"]
    chosen = {"validity": "Yes", "naturalness": ("No", "too generic"), "best_passage": passage_id(at, 2)}
    send(at, "draft", {"validity": "Yes"})  # what the browser sends while the annotator answers
    send(at, "draft", chosen)
    assert workspace.draft(db, workspace.open_screen(db, sid, users.get_user(db, "ann2"), screen),
                           users.get_user(db, "ann2")) == {
        "validity": {"value": "Yes", "reason": ""}, "naturalness": {"value": "No", "reason": "too generic"},
        "best_passage": {"value": passage_id(at, 2), "reason": ""}}

    again = _page(db, "ann2")  # a reload: a new session, nothing in its state
    assert again.session_state[f"ann_screen:{sid}"] == screen
    assert item_shown(again)["item"]["answers"] == {  # the item opens with the draft
        "validity": {"value": "Yes", "reason": ""}, "naturalness": {"value": "No", "reason": "too generic"},
        "best_passage": {"value": passage_id(at, 2), "reason": ""}}
    shown = workspace.open_screen(db, sid, users.get_user(db, "ann2"), screen)
    send(again, "submit", chosen)
    labels = {x["question"]: x for x in studies.current_labels(db, sid) if x["annotator"] == "ann2"}
    assert {q: (x["value"], x["reason"]) for q, x in labels.items()} == {
        "validity": ("Yes", ""), "naturalness": ("No", "too generic"),
        "best_passage": (shown.items[2].passages[1]["doc_id"], "")}
    assert db.execute("SELECT COUNT(*) FROM drafts").fetchone()[0] == 0
    nxt = _page(db, "ann2")
    assert nxt.session_state[f"ann_screen:{sid}"] != screen and item_shown(nxt)["item"]["answers"] == {}  # empty


def test_a_second_tab_submitting_a_stored_screen_drops_its_draft(demo):
    db, r = demo
    ann1 = users.get_user(db, "ann1")
    tab1 = workspace.open_screen(db, r["study_id"], ann1)
    tab2 = workspace.open_screen(db, r["study_id"], ann1)  # the same claimed screen in another tab
    full = {"validity": {"value": "Yes"}, "naturalness": {"value": "Yes"},
            "best_passage": {"value": tab1.items[2].passages[0]["doc_id"]}}
    workspace.submit_screen(db, tab1, ann1, full, started_at=None)
    workspace.save_draft(db, tab2, ann1, "validity", value="No")  # chosen in the stale tab
    with pytest.raises(studies.StaleSubmission):
        workspace.submit_screen(db, tab2, ann1, full, started_at=None)
    assert workspace.draft(db, tab2, ann1) == {}
