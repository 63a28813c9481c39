"""An annotator judges three instances with the keyboard only, is refused a No without a reason,
reloads mid-way and continues; the database then holds exactly the expected labels."""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from annotation.questions.study import PROJECT_GOAL_INSTRUCTIR
from storage import studies
from storage.db import connect
from tests.e2e.conftest import answer_by_keyboard, settle, sign_in, wait_progress

pytestmark = pytest.mark.e2e


def current_screen_labels(db_path, name):
    db = connect(db_path)
    return [r for r in studies.current_labels(db, 1) if r["annotator"] == name]


def _acked(db_path, name):
    db = connect(db_path)
    uid = db.execute("SELECT id FROM users WHERE name = ?", [name]).fetchone()[0]
    return studies.guidelines_acknowledged(db, 1, uid)


def test_annotator_keyboard_flow(page, server, artifacts):
    sign_in(page, server.url, "ann1", "ann1-demo")
    wait_progress(page, "0 of 8")
    # InstructIR Fig. 9: the project goal and the labeler instructions come before the first item
    goal = page.get_by_text(PROJECT_GOAL_INSTRUCTIR, exact=True)
    expect(goal).to_be_visible(timeout=20_000)
    expect(page.get_by_text("offering a flawless fit", exact=False)).to_be_visible()
    instruction = page.get_by_text("Instruction", exact=True).first
    query = page.get_by_text("Query", exact=True).first
    # Fig. 9b's order: the instruction, then the query (side by side, the instruction first)
    assert goal.bounding_box()["y"] < instruction.bounding_box()["y"] <= query.bounding_box()["y"]
    assert instruction.bounding_box()["x"] < query.bounding_box()["x"]
    page.screenshot(path=str(artifacts / "annotate-page.png"), full_page=True)
    page.get_by_role("button", name="I have read the guidelines").click()
    expect(goal).to_have_count(0, timeout=20_000)
    assert _acked(server.db_path, "ann1") is not None
    # one key away: g shows them again, and hides them
    for visible in (1, 0):
        settle(page)
        page.evaluate("document.activeElement && document.activeElement.blur()")
        page.keyboard.press("g")
        expect(page.get_by_text(PROJECT_GOAL_INSTRUCTIR, exact=True)).to_have_count(visible, timeout=20_000)

    # Instance 1: Yes, Yes, passage 1, submit
    answer_by_keyboard(page, ["1", "3", "5"])
    page.keyboard.press("Control+Enter")
    wait_progress(page, "1 of 8")

    # Instance 2: a No without a reason is refused by the server
    answer_by_keyboard(page, ["1", "6", "4"])
    box = page.get_by_label("Reason (required when the answer is No)")
    expect(box).to_be_focused(timeout=10_000)  # the No put the cursor in its reason box
    page.keyboard.press("Escape")  # left empty
    expect(box).not_to_be_focused()
    page.keyboard.press("Control+Enter")
    expect(page.get_by_text("a reason is required when the answer is No", exact=True)).to_be_visible(timeout=10_000)
    assert len(current_screen_labels(server.db_path, "ann1")) == 3

    # reload mid-way: still signed in, the same screen is back and nothing submitted is lost
    page.reload()  # the sign-in survives the reload (a signed, expiring cookie): no second sign-in
    page.get_by_text("Signed in as ann1").wait_for(timeout=20_000)
    expect(page.get_by_label("Username")).to_have_count(0)
    wait_progress(page, "1 of 8")
    answer_by_keyboard(page, ["1", "6", "4"])
    box = page.get_by_label("Reason (required when the answer is No)")
    box.fill("the instruction repeats the query")
    box.press("Control+Enter")
    wait_progress(page, "2 of 8")

    # Instance 3: the reason typed right after the No, at once; Escape leaves the box
    answer_by_keyboard(page, ["2"])
    page.keyboard.type("no user context")
    expect(page.get_by_label("Reason (required when the answer is No)")).to_have_value("no user context")
    page.keyboard.press("Escape")
    answer_by_keyboard(page, ["3", "7"])
    page.keyboard.press("Control+Enter")
    wait_progress(page, "3 of 8")

    rows = current_screen_labels(server.db_path, "ann1")
    assert len(rows) == 9
    by_screen: dict[str, dict[str, dict]] = {}
    for r in rows:
        by_screen.setdefault(r["screen"], {})[r["question"]] = r
    assert len(by_screen) == 3
    answers = [
        (s["validity"]["value"], s["naturalness"]["value"], s["naturalness"]["reason"])
        for s in sorted(by_screen.values(), key=lambda s: s["validity"]["submitted_at"])
    ]
    assert answers == [
        ("Yes", "Yes", ""),
        ("Yes", "No", "the instruction repeats the query"),
        ("No", "Yes", ""),
    ]
    picks = [
        (json.loads(s["best_passage"]["shown_order"]), s["best_passage"]["value"])
        for s in sorted(by_screen.values(), key=lambda s: s["validity"]["submitted_at"])
    ]
    assert [order.index(value) for order, value in picks] == [0, 1, 2]  # keys 5, 6, 7
    assert all(r["duration_ms"] is not None and r["duration_ms"] > 0 for r in rows)
