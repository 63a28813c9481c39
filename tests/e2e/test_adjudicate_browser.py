"""A lead settles three tied items with the keyboard only: a key per option, Ctrl+Enter records
and opens the next item; each decision is stored and stays readable after the page moved on."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.outcomes import adjudication
from storage import studies
from storage.db import connect
from tests.e2e.conftest import SHOTS, Server, settle, sign_in
from tests.builders import label_all

pytestmark = pytest.mark.e2e


@pytest.fixture
def tied_server(demo_db):
    db = connect(demo_db)
    label_all(db, 1, {"ann1": "Yes", "ann2": "Yes", "ann3": "No"}, {"ann1": "Yes", "ann2": "No", "ann3": "Yes"})
    with db.conn:  # without ann3's naturalness labels every naturalness item is a 1-1 tie
        db.execute("DELETE FROM labels WHERE user_id = (SELECT id FROM users WHERE name = 'ann3') AND item_id IN"
                   " (SELECT id FROM items WHERE study_id = 1 AND question = 'naturalness')")
    s = Server(demo_db)
    s.start()
    yield s
    s.stop()


def test_adjudicate_three_items_with_keys_only(page, tied_server):
    server = tied_server
    db = connect(server.db_path)
    queue = [r["item"] for r in adjudication.queue(db, 1)]
    assert len(queue) == 8
    page.set_viewport_size({"width": 1280, "height": 720})
    sign_in(page, server.url, "lead", "lead-demo")
    page.get_by_role("link", name="Adjudicate").click()
    expect(page.get_by_role("button", name="Record and next")).to_be_visible(timeout=20_000)
    expect(page.get_by_role("radio", name="Unresolved (8)")).to_be_visible()
    expect(page.get_by_text("{")).to_have_count(0)  # votes as tables and words, never dicts
    settle(page)
    page.screenshot(path=str(SHOTS / "adjudicate-1280x720.png"))
    decided = []
    for n, key in enumerate(["2", "1", "2"], start=1):
        item = queue[n - 1]
        expect(page.get_by_role("combobox", name="Item")).to_have_value(re.compile(rf"^item {item}: "), timeout=20_000)
        settle(page)
        page.keyboard.press(key)
        expect(page.locator('[data-testid="stBaseButton-primary"]:has(kbd[aria-label="Shortcut %s"])' % key)).to_be_visible(timeout=10_000)
        page.keyboard.press("Control+Enter")
        value = "No" if key == "2" else "Yes"
        expect(page.get_by_text(f"Recorded {value} for item {item}.")).to_be_visible(timeout=20_000)
        decided.append((item, value))
    adj = studies.adjudications(db, 1)
    assert [(i, a["value"], a["lead"]) for i, a in adj.items()] == [(i, v, "lead") for i, v in decided]
    expect(page.get_by_role("radio", name="Unresolved (5)")).to_be_visible()
    page.screenshot(path=str(SHOTS / "adjudicate-after-1280x720.png"))
