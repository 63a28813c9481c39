"""Accessibility: axe-core (Deque, 4.x, installed by scripts/axe.sh into .cache/axe) finds no
serious or critical violation on the pages a lead and an annotator use, at 1280x720, with data
on them (labels given, a retriever evaluated): colour contrast, names of controls and toasts,
text alternatives of charts; and every element that scrolls takes the keyboard, on those pages and
in every state of the annotate page (long texts, highlighted, refused, stale, re-judging, all done)."""
from __future__ import annotations

import json
import time

import pytest
from playwright.sync_api import expect

from annotation import workspace
from annotation.demo import load_demo
from storage.db import connect
from tests.e2e.conftest import ROOT, SHOTS, Server, answer_by_keyboard, settle, sign_in
from storage.projects import get_project

pytestmark = pytest.mark.e2e

AXE = ROOT / ".cache" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")


def _user(db, name):
    row = db.execute("SELECT id, name, role FROM users WHERE name = ?", [name]).fetchone()
    return dict(zip(("id", "name", "role"), row))


@pytest.fixture
def busy_server(tmp_path):
    """The demo with ann1 and ann2 done (ann3 has work left), its validated qrels stored, and BM25 with
    three templates evaluated on the original, changed and validated qrels."""
    path = tmp_path / "axe.db"
    db = connect(path)
    r = load_demo(db)
    for name, v in (("ann1", "Yes"), ("ann2", "No")):
        u = _user(db, name)
        while (s := workspace.open_screen(db, r["study_id"], u)) is not None:
            workspace.submit_screen(db, s, u, {
                "validity": {"value": v, "reason": "" if v == "Yes" else "not a user's need"},
                "naturalness": {"value": "Yes"}, "best_passage": {"value": s.items[2].passages[0]["doc_id"]},
            }, started_at=time.time() - 2)
    from annotation.outcomes.qrels_builds import store_versions
    from storage import projects
    from evaluation.runner import run_eval
    # validated qrels from the unfinished study (unresolved items keep their published judgment), so that
    # the Evaluate page's verdict has a ranking to compare
    store_versions(db, projects.get_project(db, "demo"), [r["study_id"]], unresolved="keep-published", allow_incomplete=True, created_by="lead")
    for template in ("query", "instruction_query", "query_instruction"):
        for version in ("original", "changed", "validated"):
            run_eval(db, projects.get_project(db, "demo"), model="bm25", template=template, qrels_version=version)
    s = Server(path)
    s.start()
    yield s
    s.stop()


# every element that scrolls (its content taller than its box) is one the keyboard reaches: itself
# focusable, or holding something focusable (axe-core's scrollable-region-focusable, checked here
# on every element, not only on those axe-core samples). A Streamlit table (Glide Data Grid) scrolls
# a ``dvn-scroller`` beside its focusable canvas, whose arrow keys move the selection and scroll it.
UNREACHABLE_SCROLLERS_JS = """() => Array.from(document.querySelectorAll('body *')).filter(e => {
  const s = getComputedStyle(e);
  if (!['auto', 'scroll'].includes(s.overflowY) || e.scrollHeight <= e.clientHeight + 1 || e.clientHeight === 0) { return false; }
  if (e.tabIndex >= 0) { return false; }
  if (e.classList.contains('dvn-scroller') && e.parentElement.querySelector('canvas[tabindex="0"]')) { return false; }
  return !e.querySelector('a[href], button:not([disabled]), input, select, textarea, [tabindex]:not([tabindex="-1"])');
}).map(e => (e.getAttribute('data-testid') || '') + '.' + String(e.className).slice(0, 60))"""


def _axe(page) -> list[dict]:
    """The serious and critical violations axe-core finds, and every element that scrolls without
    the keyboard reaching it (:data:`UNREACHABLE_SCROLLERS_JS`)."""
    unreachable = page.evaluate(UNREACHABLE_SCROLLERS_JS)
    return _axe_core(page) + ([{"page": page.url, "id": "unreachable-scroller", "nodes": unreachable}] if unreachable else [])


def _axe_core(page) -> list[dict]:
    if not AXE.exists():
        pytest.fail(f"axe-core is not installed ({AXE} missing): run `bash scripts/axe.sh` (npm install of axe-core@4)")
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [{"page": page.url, "id": v["id"], "impact": v["impact"], "help": v["help"],
             "nodes": [n["target"] for n in v["nodes"]][:5],
             "summary": [n.get("failureSummary", "")[:200] for n in v["nodes"]][:2]}
            for v in result["violations"] if v["impact"] in BLOCKING]


def _open(page, link: str, heading: str) -> None:
    page.get_by_role("link", name=link, exact=True).click()
    if heading == "Adjudicate":  # a compact page without a title: its queue's first item
        expect(page.get_by_text("Record and next", exact=False).first).to_be_visible(timeout=30_000)
    else:
        expect(page.get_by_role("heading", name=heading, exact=True, level=1)).to_be_visible(timeout=30_000)
    settle(page)
    page.wait_for_timeout(1500)  # charts and tables draw after the script ends


def test_no_serious_or_critical_axe_violation_on_the_main_pages(page, busy_server, artifacts):
    page.set_viewport_size({"width": 1280, "height": 720})
    found: dict[str, list[dict]] = {}
    sign_in(page, busy_server.url, "ann3", "ann3-demo")
    expect(page.get_by_text("0 of 8", exact=True)).to_be_visible(timeout=30_000)
    settle(page)
    found["Annotate"] = _axe(page)
    # after a save: the "Saved" toast is on screen
    page.get_by_role("button", name="I have read the guidelines").click()
    settle(page)
    answer_by_keyboard(page, ["1", "3", "5"])
    page.keyboard.press("Control+Enter")
    expect(page.get_by_text("1 of 8", exact=True)).to_be_visible(timeout=20_000)
    settle(page)  # the run that drew the next item is over (a stale, dimmed element fails contrast)
    expect(page.locator("[data-testid='stToast']")).to_be_visible(timeout=10_000)
    found["Annotate, saved"] = _axe(page)
    sign_in(page, busy_server.url, "lead", "lead-demo")
    expect(page.get_by_role("heading", name="Projects", exact=True, level=1)).to_be_visible(timeout=30_000)
    settle(page)
    found["Home"] = _axe(page)
    page.screenshot(path=str(SHOTS / "projects-1280x720.png"))
    for link, heading in (("Set up a study", "Set up a study"), ("Monitor", "Monitor"), ("Adjudicate", "Adjudicate"),
                          ("Evaluate", "Evaluate"), ("Export", "Export"), ("Narratives", "Narratives"), ("Users", "Users")):
        _open(page, link, heading)
        found[heading] = _axe(page)
        if heading not in ("Adjudicate", "Export", "Narratives", "Users"):  # Adjudicate's come from test_adjudicate_browser.py
            page.screenshot(path=str(SHOTS / f"{heading.lower().replace(' ', '-')}-1280x720.png"))
        for tab, section in (("Annotators", "Annotators"), ("Benchmark estimate", "Benchmark-wide estimates (design-aware 95%)")
                             ) if heading == "Monitor" else ():  # its first tab above; two others, with charts and tables
            page.get_by_role("tab", name=tab, exact=True).click()
            expect(page.get_by_role("heading", name=section, exact=True)).to_be_visible(timeout=30_000)
            settle(page)
            page.wait_for_timeout(1500)
            found[f"Monitor, tab {tab}"] = _axe(page)
    (artifacts / "axe-violations.json").write_text(json.dumps(found, indent=1), encoding="utf-8")
    assert sorted(found) == ["Adjudicate", "Annotate", "Annotate, saved", "Evaluate", "Export", "Home", "Monitor",
                             "Monitor, tab Annotators", "Monitor, tab Benchmark estimate", "Narratives", "Set up a study",
                             "Users"]
    bad = {(k, v["id"]) for k, vs in found.items() for v in vs}
    # (Streamlit draws st.toast as a dialog without a name: the annotate page's key script names it
    # by its text, so "Annotate, saved" is checked like every other state)
    assert not bad, json.dumps(found, indent=1)


@pytest.fixture
def long_annotate_server(tmp_path):
    """The demo with 1,000-word documents (every second one Persian) and a re-judging study."""
    from annotation.narratives import versions as narrative_versions

    path = tmp_path / "axe-long.db"
    db = connect(path)
    load_demo(db)
    words = ["clinic", "solar", "kohlrabi", "running", "cost", "درمانگاه", "بیماران", "هورمون"]  # with query words
    for n, (d,) in enumerate(db.execute("SELECT doc_id FROM documents").fetchall()):
        with db.conn:
            db.execute("UPDATE documents SET text = ? WHERE doc_id = ?",
                       [" ".join(words[(i + n % 2 * 4) % len(words)] for i in range(1000)), d])
    narrative_versions.rejudge_published(db, project=get_project(db, "demo"), author="lead", annotators=["ann1", "ann2", "ann3"])
    s = Server(path)
    s.start()
    yield s
    s.stop()


def test_every_state_of_the_annotate_page_passes_axe_and_every_scroller_takes_the_keyboard(page, long_annotate_server):
    page.set_viewport_size({"width": 1280, "height": 720})
    found: dict[str, list] = {}

    def check(state: str) -> None:
        settle(page)
        page.wait_for_timeout(600)  # the item marks its scrolling boxes after it is drawn
        found[state] = _axe(page)

    sign_in(page, long_annotate_server.url, "ann1", "ann1-demo")
    expect(page.get_by_text("0 of 8", exact=True)).to_be_visible(timeout=30_000)
    check("guidelines and long passages")
    page.keyboard.press("a")
    expect(page.get_by_role("button", name="I have read the guidelines")).to_have_count(0, timeout=20_000)
    page.get_by_text("Highlight query terms").click()
    expect(page.locator(".ifj-item mark").first).to_be_visible(timeout=20_000)
    check("highlighted")
    answer_by_keyboard(page, ["5", "2"])  # Q1 No without a reason, Q2 unanswered
    # Ctrl+Enter and a key after it, in one go (so typed while the submission is on its way): not
    # applied to the refused item, said in a note
    page.evaluate("""() => [["Enter", true], ["3", false]].forEach(([key, ctrl]) =>
        document.body.dispatchEvent(new KeyboardEvent("keydown", {key, ctrlKey: ctrl, bubbles: true, cancelable: true})))""")
    expect(page.get_by_text("Not saved yet. Please fix:")).to_be_visible(timeout=20_000)
    expect(page.locator(".ifj-note")).to_be_visible(timeout=10_000)
    check("refused, with a reason box and a note")
    other = page.context.new_page()  # a second tab answers the item: this one is stale
    other.goto(long_annotate_server.url)
    expect(other.get_by_text("0 of 8", exact=True)).to_be_visible(timeout=30_000)
    answer_by_keyboard(other, ["1", "3", "5"])
    other.keyboard.press("Control+Enter")
    expect(other.get_by_text("1 of 8", exact=True)).to_be_visible(timeout=30_000)
    other.close()
    page.bring_to_front()
    page.get_by_label("Reason (required when the answer is No)").fill("too vague")
    answer_by_keyboard(page, ["3"])
    page.keyboard.press("Control+Enter")
    expect(page.get_by_text("you already answered this item in another tab", exact=False)).to_be_visible(timeout=20_000)
    check("stale")
    page.get_by_role("combobox", name="Study").click()
    page.get_by_role("option", name="2: ", exact=False).click()
    expect(page.get_by_text("0 of 5", exact=True)).to_be_visible(timeout=30_000)
    page.keyboard.press("a")
    expect(page.get_by_role("button", name="I have read the guidelines")).to_have_count(0, timeout=20_000)
    page.get_by_text("Changes from the original narrative", exact=False).click()
    check("re-judging, changes open")
    for _ in range(5):
        answer_by_keyboard(page, ["1"])
        page.keyboard.press("Control+Enter")
        page.wait_for_timeout(300)
    expect(page.get_by_text("All done", exact=False)).to_be_visible(timeout=30_000)
    check("all done")
    bad = {state: v for state, v in found.items() if v}
    assert not bad, json.dumps(bad, indent=1)
