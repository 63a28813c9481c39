"""Answers chosen but not submitted survive a reload: the annotator picks answers by keys, types a
reason (without leaving its box), reloads; the same choices and reason are back, Submit stores exactly them, and the draft
is gone afterwards."""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from storage import studies
from storage.db import connect
from tests.e2e.conftest import answer_by_keyboard, settle, sign_in, wait_progress

pytestmark = pytest.mark.e2e

REASON = "Reason (required when the answer is No)"


def chosen_keys(page) -> set[str]:
    """The keys of the options shown as chosen."""
    return {b.get_attribute("aria-keyshortcuts") for b in page.locator('.ifj-item [aria-pressed="true"]').all()}


def test_choices_survive_a_reload_and_submit_stores_them(page, server, artifacts):
    page.set_viewport_size({"width": 1280, "height": 720})
    sign_in(page, server.url, "ann1", "ann1-demo")
    wait_progress(page, "0 of 8")
    page.get_by_role("button", name="I have read the guidelines").click()
    settle(page)
    answer_by_keyboard(page, ["1", "6", "4"])  # Yes, passage 2, No
    box = page.get_by_label(REASON)
    expect(box).to_be_focused(timeout=10_000)  # the No put the cursor in its reason box
    page.keyboard.type("it names no user", delay=20)  # typed, never left: kept after a short pause
    page.wait_for_timeout(1200)
    settle(page)
    expect(box).to_be_focused()  # still typing there
    before = chosen_keys(page)

    page.reload()
    page.get_by_text("Signed in as ann1").wait_for(timeout=20_000)
    wait_progress(page, "0 of 8")
    expect(page.get_by_label(REASON)).to_have_value("it names no user", timeout=20_000)
    settle(page)
    assert before == {"1", "4", "6"} and chosen_keys(page) == before
    page.screenshot(path=str(artifacts / "annotate-draft-after-reload.png"))

    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("Control+Enter")
    wait_progress(page, "1 of 8")
    db = connect(server.db_path)
    rows = {r["question"]: r for r in studies.current_labels(db, 1) if r["annotator"] == "ann1"}
    assert (rows["validity"]["value"], rows["naturalness"]["value"], rows["naturalness"]["reason"]) == (
        "Yes", "No", "it names no user")
    assert json.loads(rows["best_passage"]["shown_order"]).index(rows["best_passage"]["value"]) == 1  # key 6
    assert db.execute("SELECT COUNT(*) FROM drafts").fetchone()[0] == 0
    # the next item starts empty
    page.reload()
    wait_progress(page, "1 of 8")
    settle(page)
    assert chosen_keys(page) == set()
