"""A lead sees the Table 7 view and a heatmap with its numbers, adjudicates one item, builds the
export on request, downloads the validated TREC qrels, and the file reflects the adjudicated value."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.monitoring import monitor
from formats.trec_io import read_qrels
from storage.db import connect
from tests.e2e.conftest import Server, choose, settle, sign_in
from tests.builders import IMPORTER_FIXTURES, label_demo, zipped
from storage.projects import get_project

pytestmark = pytest.mark.e2e


@pytest.fixture
def labelled_server(demo_db):
    db = connect(demo_db)
    label_demo(db, 1)  # validity: ann1, ann2 Yes; ann3 No -> every instance kept by majority
    s = Server(demo_db)
    s.start()
    yield s
    s.stop()


def test_lead_monitor_adjudicate_download(page, labelled_server, artifacts, tmp_path):
    server = labelled_server
    sign_in(page, server.url, "lead", "lead-demo")
    page.get_by_role("link", name="Monitor").click()
    expect(page.get_by_text("Human verification (InstructIR Table 7)")).to_be_visible(timeout=20_000)
    expect(page.get_by_text("Pairwise Cohen kappa").or_(page.locator("[data-testid='stVegaLiteChart']")).first).to_be_visible()
    assert page.locator("[data-testid='stVegaLiteChart']").count() >= 1
    # each heatmap cell prints its value (SVG text): "—" where kappa is undefined (ann1 and ann2 both
    # said Yes to every item), 0.000 for ann1/ann3
    heat = page.locator("[data-testid='stVegaLiteChart']").filter(has_text="Pairwise Cohen kappa")
    expect(heat.locator("svg text", has_text="—")).to_have_count(2)
    expect(heat.locator("svg text", has_text="0.000")).to_have_count(4)
    heat.scroll_into_view_if_needed()
    heat.screenshot(path=str(artifacts / "monitor-heatmap.png"))
    page.screenshot(path=str(artifacts / "monitor-page.png"), full_page=True)

    validity = next(d for d in monitor.disagreements(connect(server.db_path), 1) if d["question"] == "validity")
    page.get_by_role("link", name="Adjudicate").click()
    majority = page.get_by_role("radio", name=re.compile(r"^Decided by majority"))
    expect(majority).to_be_visible(timeout=20_000)
    settle(page)
    majority.click()  # 2 Yes / 1 No: a majority item
    choose(page, "Item", f"item {validity['item']}: ")
    expect(page.get_by_role("combobox", name="Item")).to_have_value(re.compile(f"^item {validity['item']}: "))
    settle(page)
    page.keyboard.press("2")  # the second option: No
    expect(page.locator('[data-testid="stBaseButton-primary"]:has(kbd[aria-label="Shortcut 2"])')).to_be_visible(timeout=10_000)
    page.get_by_label("Note (optional, kept with the decision)").fill("the instruction names no user context")
    settle(page)
    page.get_by_role("button", name="Record and next").click()
    expect(page.get_by_text(f"Recorded No for item {validity['item']}.")).to_be_visible(timeout=20_000)

    page.get_by_role("link", name="Export").click()
    expect(page.get_by_text("Studies to build the validated qrels from (one study or several)")).to_be_visible(timeout=20_000)
    choose(page, "Format", "trec")
    # built only on request
    expect(page.get_by_role("button", name="Build the export")).to_be_visible(timeout=20_000)
    expect(page.get_by_role("button", name="Download TREC qrels export (zip)")).to_have_count(0)
    settle(page)
    page.get_by_role("button", name="Build the export").click()
    # no study is chosen by default: only the published qrels, no validated download
    expect(page.get_by_role("button", name="Download TREC qrels export (zip)")).to_be_visible(timeout=20_000)
    expect(page.get_by_role("button", name="Download validated TREC qrels")).to_have_count(0)
    expect(page.get_by_text("What the export holds", exact=False)).to_be_visible()

    def download_validated(name):
        choose(page, "Studies to build the validated qrels from (one study or several)", "1: demo: InstructIR validation")
        page.keyboard.press("Escape")
        settle(page)
        # the choices changed: the earlier build is withdrawn until the lead builds again
        expect(page.get_by_role("button", name="Download TREC qrels export (zip)")).to_have_count(0)
        page.get_by_role("button", name="Build the export").click()
        with page.expect_download(timeout=20_000) as dl:
            page.get_by_role("button", name="Download validated TREC qrels").click()
        path = tmp_path / name
        dl.value.save_as(path)
        return path

    path = download_validated("validated.qrels")
    q = read_qrels(path)
    assert validity["instance"] not in q  # adjudicated invalid: left out of the validated qrels
    assert len(q) == 12  # 12 InstructIR-style instances + the FollowIR query, minus the adjudicated one
    expect(page.get_by_text(re.compile(r"Built from: study 1 \(demo: InstructIR validation\): \d+/\d+ labels"))
           ).to_be_visible()

    # a second, unlabelled study on the same project changes nothing the first one validated
    from annotation.studies import StudySettings, create_study

    create_study(db := connect(server.db_path), project=get_project(db, "demo"), questions=["validity", "naturalness"],
                 annotators=["ann1", "ann2", "ann3"], name="second", settings=StudySettings(group_fraction=1.0, seed=1))
    sign_in(page, server.url, "lead", "lead-demo")  # a fresh session
    page.get_by_role("link", name="Export").click()
    expect(page.get_by_text("Studies to build the validated qrels from (one study or several)")).to_be_visible(timeout=20_000)
    choose(page, "Format", "trec")
    again = download_validated("validated-again.qrels")
    assert again.read_text() == path.read_text()


MONITOR_TAB_HEADINGS = {  # each tab of the Monitor and the heading its section starts with
    "Agreement": "Human verification (InstructIR Table 7)", "Benchmark estimate": "Benchmark-wide estimates (design-aware 95%)",
    "Annotators": "Annotators", "Disagreements": "Disagreements", "Reasons": "Reasons",
    "Judge": "Automatic judge vs the humans"}


def test_monitor_tabs_open_their_section_and_the_address_keeps_the_tab(page, labelled_server, artifacts):
    """The Monitor's sections are tabs: each tab shows its own section (and only it), the open tab is
    in the address, so that a reload (or a shared link) opens the same tab; at 1280x720 the tab bar
    and the first tab's heading are in view."""
    from urllib.parse import parse_qs, urlparse

    page.set_viewport_size({"width": 1280, "height": 720})
    sign_in(page, labelled_server.url, "lead", "lead-demo")
    page.get_by_role("link", name="Monitor").click()

    def heading(tab):
        return page.get_by_role("heading", name=MONITOR_TAB_HEADINGS[tab], exact=True)

    def opened(tab):
        expect(page.get_by_role("tab", name=tab, exact=True)).to_have_attribute("aria-selected", "true", timeout=20_000)
        expect(heading(tab)).to_be_visible(timeout=20_000)
        settle(page)
        for other in MONITOR_TAB_HEADINGS:  # the closed tabs' sections are not drawn
            if other != tab:
                expect(heading(other)).to_have_count(0)

    def address_tab():
        return parse_qs(urlparse(page.url).query).get("mon_tab")

    opened("Agreement")
    assert address_tab() is None  # the first tab: a clean address
    for tab in MONITOR_TAB_HEADINGS:
        expect(page.get_by_role("tab", name=tab, exact=True)).to_be_in_viewport()
    expect(heading("Agreement")).to_be_in_viewport()  # the first tab's section starts in view
    page.wait_for_timeout(1000)  # the tables and charts draw after the script ends
    page.screenshot(path=str(artifacts / "monitor-tab-agreement-1280x720.png"))
    for tab in list(MONITOR_TAB_HEADINGS)[1:]:
        page.get_by_role("tab", name=tab, exact=True).click()
        opened(tab)
        assert address_tab() == [tab], page.url
        if tab == "Annotators":
            expect(page.locator("[data-testid='stVegaLiteChart']")).to_have_count(2, timeout=20_000)  # over time
            page.wait_for_timeout(1000)
            page.screenshot(path=str(artifacts / "monitor-tab-annotators-1280x720.png"))
    page.get_by_role("tab", name="Annotators", exact=True).click()
    opened("Annotators")
    page.reload()  # the same address: the same tab
    opened("Annotators")
    assert address_tab() == ["Annotators"]
    page.get_by_role("tab", name="Agreement", exact=True).click()
    opened("Agreement")
    expect(page.locator("[data-testid='stVegaLiteChart']").filter(has_text="Pairwise Cohen kappa")).to_have_count(1)
    assert address_tab() is None


def test_lead_imports_a_followir_zip_in_the_browser(page, server, tmp_path):
    from storage import projects

    sign_in(page, server.url, "lead", "lead-demo")
    expect(page.get_by_role("button", name="Import")).to_be_visible(timeout=20_000)
    page.get_by_label("Project name").fill("fir")
    choose(page, "Format", "followir")
    page.locator("[data-testid='stFileUploader'] input[type=file]").first.set_input_files(
        files=[{"name": "followir.zip", "mimeType": "application/zip", "buffer": zipped(IMPORTER_FIXTURES / "followir")}])
    expect(page.get_by_text("followir.zip")).to_be_visible(timeout=20_000)
    settle(page)
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_text(re.compile(r"^Imported into fir from followir\.zip: "))).to_be_visible(timeout=20_000)
    expect(page.get_by_text(re.compile(r"^Next step: set up a study"))).to_be_visible()
    # what the page says names the upload, never the server's temporary folder
    main = page.locator("[data-testid='stMain']").inner_text()
    assert "/tmp" not in main and "followir.zip" in main
    # after an import the uploader is empty: the same upload again needs choosing the file again
    uploader = page.locator("[data-testid='stFileUploader'] input[type=file]").first
    expect(page.get_by_text("followir.zip", exact=True)).to_have_count(0, timeout=20_000)  # no file in the uploader
    uploader.set_input_files(
        files=[{"name": "followir.zip", "mimeType": "application/zip", "buffer": zipped(IMPORTER_FIXTURES / "followir")}])
    expect(page.get_by_text("followir.zip", exact=True)).to_be_visible(timeout=20_000)
    # the same upload again under the same name: the project exists, what to do, nothing imported
    settle(page)
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_text(re.compile(r"A project named “fir” already exists"))).to_be_visible(timeout=20_000)
    expect(page.get_by_text(re.compile(r"Import under a new project name \(e\.g\. “fir-2”\)"))).to_be_visible()
    expect(page.get_by_text("UNIQUE", exact=False)).to_have_count(0)
    db = connect(server.db_path)
    pid = projects.get_project(db, "fir")["id"]
    assert {"original", "changed"} <= set(projects.qrels_versions(db, pid))
    # a second .zip added to the same upload: one clear message, nothing imported
    settle(page)
    page.get_by_label("Project name").fill("broken")
    page.locator("[data-testid='stFileUploader'] input[type=file]").first.set_input_files(
        files=[{"name": "broken.zip", "mimeType": "application/zip", "buffer": b"PK not a zip"}])
    expect(page.get_by_text("broken.zip")).to_be_visible(timeout=20_000)
    settle(page)
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_text(re.compile("upload a .zip alone"))).to_be_visible(timeout=20_000)
    assert [p["name"] for p in projects.list_projects(db)] == ["demo", "fir"]
    # a further file added to the stored project: its corpus grows by the new passage
    choose(page, "Existing project", "fir")
    choose(page, "What to add", "corpus")
    page.locator("[data-testid='stFileUploader'] input[type=file]").nth(1).set_input_files(
        files=[{"name": "more.jsonl", "mimeType": "application/json",
                "buffer": b'{"_id": "NEW-1", "title": "", "text": "a passage added later"}\n'}])
    expect(page.get_by_text("more.jsonl")).to_be_visible(timeout=20_000)
    settle(page)
    page.get_by_role("button", name="Add", exact=True).click()
    expect(page.get_by_text("Added to fir: 1 documents")).to_be_visible(timeout=20_000)
    assert "NEW-1" in projects.StoredDocuments(db, pid)
