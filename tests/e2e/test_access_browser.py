"""An annotator who types a lead page's address gets their own annotate page, never the lead
page's content; the server decides, not the navigation menu."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import settle

pytestmark = pytest.mark.e2e

LEAD_PAGES = {"projects": "Projects", "study-setup": "Set up a study", "monitor": "Monitor",
              "adjudicate": "Adjudicate", "export": "Export", "evaluate": "Evaluate", "narratives": "Narratives", "users": "Users"}


def test_annotator_typing_lead_urls_sees_only_their_queue(page, server):
    for path, title in LEAD_PAGES.items():
        # a typed address opens a new session; a lead page is not among the annotator's pages (nor
        # the sign-in page's), so Streamlit says "page not found" and runs the default page; the
        # annotator gets the annotate page and never the lead page's content
        page.goto(f"{server.url}/{path}")
        dialog = page.get_by_role("dialog")
        expect(dialog).to_contain_text("Page not found", timeout=20_000)
        page.keyboard.press("Escape")
        expect(dialog).to_have_count(0)
        # signed out the first time; later addresses reuse the sign-in (its cookie survives a reload)
        expect(page.get_by_label("Username").or_(page.get_by_text("Signed in as ann1")).first).to_be_visible(timeout=20_000)
        if page.get_by_label("Username").count():
            page.get_by_label("Username").fill("ann1")
            page.get_by_label("Password", exact=True).fill("ann1-demo")
            page.get_by_role("button", name="Sign in").click()
        page.get_by_text("Signed in as ann1").wait_for(timeout=20_000)
        settle(page)
        expect(page.get_by_text("0 of 8", exact=True)).to_be_visible(timeout=20_000)  # their own progress
        expect(page.get_by_role("heading", name=title, exact=True)).to_have_count(0)
        expect(page.get_by_role("link", name=title, exact=True)).to_have_count(0)
        expect(page.locator("[data-testid='stDataFrame']")).to_have_count(0)  # no lead table, no labels
