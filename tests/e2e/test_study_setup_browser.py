"""A lead creates a study in the browser: the page names the study and what it holds (a warning,
not a success, when a question got no item), and the form is emptied, so that a second click
creates no duplicate."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from storage import studies
from storage.db import connect
from tests.e2e.conftest import settle, sign_in

pytestmark = pytest.mark.e2e


def test_study_form_is_emptied_after_creation(page, server, artifacts):
    page.set_viewport_size({"width": 1280, "height": 720})
    sign_in(page, server.url, "lead", "lead-demo")
    page.get_by_role("link", name="Set up a study").click()
    name = page.get_by_label("Study name")
    expect(name).to_be_visible(timeout=20_000)
    name.fill("second pilot")
    page.get_by_role("spinbutton", name="Passages (best passage)").fill("10")  # more than a group holds: no best-passage item
    box = page.get_by_role("combobox", name="Annotators")
    box.click()
    for who in ("ann1", "ann2", "ann3"):
        page.keyboard.type(who)
        page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    settle(page)
    page.get_by_role("button", name="Create study").click()
    # the default seed draws the demo study's sample again: held back, with the ways out
    expect(page.get_by_text("This sample would ask again about", exact=False)).to_be_visible(timeout=20_000)
    assert len(studies.list_studies(connect(server.db_path))) == 1
    settle(page)
    page.get_by_role("button", name="Create anyway (ask them again)").click()
    said = page.get_by_text("Study 2 “second pilot” created:", exact=False)
    expect(said).to_be_visible(timeout=20_000)
    expect(page.get_by_text("Most natural passage got 0 items", exact=False)).to_be_visible()
    expect(page.locator("[data-testid='stAlertContentSuccess']")).to_have_count(0)  # a warning, not a success
    page.screenshot(path=str(artifacts / "study-setup-created.png"))
    # the form starts over: no name, no annotator, the default passages
    expect(page.get_by_label("Study name")).to_have_value("")
    expect(page.get_by_role("spinbutton", name="Passages (best passage)")).to_have_value("3")
    settle(page)
    page.get_by_role("button", name="Create study").click()  # a second click: refused, nothing created
    expect(page.locator("[data-testid='stAlertContentError']")).to_contain_text("only 0 annotators", timeout=20_000)
    settle(page)
    assert [s["name"] for s in studies.list_studies(connect(server.db_path))][-1] == "second pilot"
    assert len(studies.list_studies(connect(server.db_path))) == 2


def test_an_own_question_declared_on_the_page(page, server, artifacts):
    from tests.builders import ROOT

    page.set_viewport_size({"width": 1280, "height": 720})
    sign_in(page, server.url, "lead", "lead-demo")
    page.get_by_role("link", name="Set up a study").click()
    expect(page.get_by_label("Study name")).to_be_visible(timeout=20_000)
    page.get_by_text("Your own questions").click()
    area = page.get_by_label("Declaration")
    area.fill((ROOT / "docs" / "examples" / "negation.toml").read_text())
    area.press("Control+Enter")  # the text area's value reaches the page
    expect(page.get_by_text("Respects / Violates / Unclear", exact=False)).to_be_attached(timeout=20_000)  # a grid cell
    settle(page)
    page.get_by_test_id("stDataFrame").first.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "study-setup-own-question.png"))
    area.fill('id = "negation"\nwording = "?"\ncategories = ["A", "A"]\npositive = ["A"]\n')
    area.press("Control+Enter")
    expect(page.locator("[data-testid='stAlertContentError']")).to_contain_text("line 3", timeout=20_000)
    expect(page.locator("[data-testid='stAlertContentError']")).to_contain_text("categories")
