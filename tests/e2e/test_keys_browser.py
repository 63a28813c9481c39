"""The keyboard stays on the item (issue 13): a study chosen with the mouse, then answers by keys
only, are stored; a No without a reason is refused with the error in view at 1280x720, next to its
question and in a banner naming the question as the annotator reads it."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.studies import StudySettings, create_study
from storage import studies
from storage.db import connect
from tests.e2e.conftest import SHOTS, Server, chosen_option, settle, sign_in
from storage.projects import get_project

pytestmark = pytest.mark.e2e


@pytest.fixture
def two_study_server(demo_db):
    """ann1 has the demo study (8 items) and a smaller second one (2 items); guidelines read."""
    db = connect(demo_db)
    second = create_study(db, project=get_project(db, "demo"), questions=["validity", "naturalness", "best_passage"],
                          annotators=["ann1", "ann2", "ann3"], name="second pass", groups=["q-run"],
                          settings=StudySettings(group_fraction=1.0, per_group=2, overlap=3, passages=3, seed=1))
    uid = db.execute("SELECT id FROM users WHERE name = 'ann1'").fetchone()[0]
    for sid in (1, second["study_id"]):
        studies.acknowledge_guidelines(db, sid, uid)
    s = Server(demo_db)
    s.start()
    yield s, second["study_id"]
    s.stop()


def labels_of(db_path, study_id, name="ann1"):
    return [r for r in studies.current_labels(connect(db_path), study_id) if r["annotator"] == name]


def press_answers(page, keys):
    for k in keys:
        page.keyboard.press(k)
        expect(chosen_option(page, k)).to_be_visible(timeout=10_000)


def test_keys_answer_after_a_study_is_chosen_with_the_mouse(page, two_study_server):
    server, second = two_study_server
    page.set_viewport_size({"width": 1280, "height": 720})
    sign_in(page, server.url, "ann1", "ann1-demo")
    box = page.get_by_role("combobox", name="Study")
    # landed on the study with the most work left; the selector shows what is left in each
    expect(box).to_have_value("1: demo: InstructIR validation · 8 of 8 left", timeout=20_000)
    settle(page)
    box.click()  # the mouse, as a person would
    page.get_by_role("option", name=f"{second}: second pass · 2 of 2 left").click()
    expect(page.get_by_text("0 of 2", exact=True)).to_be_visible(timeout=20_000)
    settle(page)
    press_answers(page, ["1", "3", "5"])  # nothing typed into the study filter: each key answers
    expect(box).to_have_value(f"{second}: second pass · 2 of 2 left")
    page.keyboard.press("Control+Enter")
    expect(page.get_by_text("1 of 2", exact=True)).to_be_visible(timeout=20_000)
    rows = labels_of(server.db_path, second)
    assert sorted((r["question"], r["value"]) for r in rows if r["question"] != "best_passage") == [
        ("naturalness", "Yes"), ("validity", "Yes")]
    assert len(rows) == 3 and labels_of(server.db_path, 1) == []
    expect(box).to_have_value(f"{second}: second pass · 1 of 2 left")  # still on the chosen study


def test_error_in_view_at_1280x720(page, two_study_server):
    server, _ = two_study_server
    page.set_viewport_size({"width": 1280, "height": 720})
    sign_in(page, server.url, "ann1", "ann1-demo")
    expect(page.get_by_text("0 of 8", exact=True)).to_be_visible(timeout=20_000)
    submit = page.get_by_role("button", name="Submit")
    expect(submit).to_be_in_viewport()  # the common InstructIR screen fits: Submit without scrolling
    # the label is never cut off ("Subm...")
    assert submit.evaluate("b => b.scrollWidth <= b.clientWidth + 1 && b.scrollHeight <= b.clientHeight + 1")
    page.evaluate("document.activeElement && document.activeElement.blur()")
    settle(page)
    page.screenshot(path=str(SHOTS / "annotate-1280x720.png"))
    press_answers(page, ["5", "2"])  # Q1 No without a reason; Q2 left unanswered
    expect(page.get_by_label("Reason (required when the answer is No)")).to_be_focused(timeout=10_000)
    page.keyboard.press("Control+Enter")  # from the (empty) reason box
    banner = page.get_by_text("Not saved yet. Please fix:")
    expect(banner).to_be_in_viewport(timeout=20_000)
    expect(page.get_by_text("Not saved: 2 questions to fix, marked in red")).to_be_in_viewport()  # the toast
    # every problem, by the question's wording, in the banner; none by an internal id
    q1 = page.get_by_text("Q1 “Is the instruction valid for the search user?”: a reason is required when the answer is No")
    q2 = page.get_by_text("Q2 “Is the instruction natural for the given query?”: please answer this question")
    expect(q1).to_be_in_viewport()
    expect(q2).to_be_in_viewport()
    expect(page.get_by_text("validity:", exact=False)).to_have_count(0)
    # and next to each question
    expect(page.get_by_text("a reason is required when the answer is No", exact=True)).to_be_in_viewport()
    expect(page.get_by_text("please answer this question", exact=True)).to_be_in_viewport()
    page.screenshot(path=str(SHOTS / "annotate-error-1280x720.png"))
    assert labels_of(server.db_path, 1) == []


def test_reload_keeps_the_sign_in_and_sign_out_ends_it(page, two_study_server):
    server, _ = two_study_server
    sign_in(page, server.url, "ann1", "ann1-demo")
    expect(page.get_by_text("0 of 8", exact=True)).to_be_visible(timeout=20_000)
    # the form is one password managers fill
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("Username")).to_have_attribute("autocomplete", "username", timeout=20_000)
    expect(page.get_by_label("Password", exact=True)).to_have_attribute("autocomplete", "current-password")
    page.reload()  # signed out: the cookie is gone, the form is back
    expect(page.get_by_label("Username")).to_be_visible(timeout=20_000)
    sign_in(page, server.url, "ann1", "ann1-demo")
    expect(page.get_by_text("0 of 8", exact=True)).to_be_visible(timeout=20_000)
    cookie = next(c for c in page.context.cookies() if c["name"] == "ifjudge_session")
    assert cookie["sameSite"] == "Strict" and cookie["expires"] > 0
    page.reload()
    expect(page.get_by_text("Signed in as ann1")).to_be_visible(timeout=20_000)
    expect(page.get_by_text("0 of 8", exact=True)).to_be_visible(timeout=20_000)
    expect(page.get_by_label("Username")).to_have_count(0)
    # a forged token signs nobody in
    page.context.clear_cookies()
    page.context.add_cookies([{**cookie, "value": cookie["value"][:-4] + "0000"}])
    page.reload()
    expect(page.get_by_label("Username")).to_be_visible(timeout=20_000)
