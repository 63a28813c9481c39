"""Untrusted text is shown literally: script tags, an <img onerror>, Markdown, LaTeX and a
5,000-character word in an instruction, a passage and a user name never run, never become
elements, and are visible as the literal strings."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts import auth
from annotation import workspace
from storage import users
from storage.db import connect
from tests.e2e.conftest import Server, answer_by_keyboard, sign_in

pytestmark = pytest.mark.e2e

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
MARKDOWN = ["**bold**", "# head", "[link](http://x)"]
LATEX = "$x^2$"
LONG_WORD = "W" * 5000
HOSTILE = f"{SCRIPT} {IMG} {MARKDOWN[0]} {MARKDOWN[2]} {LATEX}"
HOSTILE_NAME = "<b>x</b><img_src=x_onerror=alert(1)>**eve**$x^2$"  # no spaces: names are space-free
PASSWORD = "hostile-pw"


@pytest.fixture
def hostile_server(demo_db):
    """The demo database with hostile text written into it BEFORE the server starts: ann1's first
    instance (in ann1's own order; claimed for them here) gets a hostile instruction, all its
    candidate passages get hostile text, and a user with a hostile name joins the demo study."""
    db = connect(demo_db)
    first = [workspace.open_screen(db, 1, users.get_user(db, "ann1")).instance_id]
    payload = db.execute("SELECT payload FROM items WHERE study_id = 1 AND instance_id = ? AND question = 'best_passage'",
                         [first[0]]).fetchone()[0]
    instruction = f"{HOSTILE}\n# head\n{LONG_WORD}"
    passage = f"{HOSTILE}\n# head\n{LONG_WORD}"
    with db.conn:
        db.execute("UPDATE instances SET instruction = ? WHERE instance_id = ?", [instruction, first[0]])
        db.execute("UPDATE documents SET text = ? WHERE doc_id IN (SELECT value FROM json_each(?))",
                   [passage, db.execute("SELECT json_extract(?, '$.candidates')", [payload]).fetchone()[0]])
    uid = auth.add_user(db, HOSTILE_NAME, "annotator", PASSWORD)
    with db.conn:
        db.execute("INSERT INTO study_annotators (study_id, user_id) VALUES (1, ?)", [uid])
        # the hostile user gets the same first screen, as a fourth annotator (caps raised to match)
        db.execute("UPDATE items SET cap = cap + 1 WHERE study_id = 1 AND instance_id = ?", [first[0]])
        db.execute("INSERT INTO assignments (item_id, user_id, state, claimed_at, position)"
                   " SELECT id, ?, 'pending', NULL, position FROM items WHERE study_id = 1 AND instance_id = ?",
                   [uid, first[0]])
    changed = db.execute("SELECT COUNT(*) FROM documents WHERE text = ?", [passage]).fetchone()[0]
    assert changed == 3, changed
    db.conn.close()
    s = Server(demo_db)
    s.start()
    yield s
    s.stop()


def watch_dialogs(page) -> list[str]:
    fired: list[str] = []

    def on_dialog(dialog):
        fired.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    return fired


def assert_nothing_injected(page) -> None:
    assert page.locator("img[src='x']").count() == 0
    assert page.locator("script:text('alert(1)')").count() == 0
    assert page.evaluate("Array.from(document.scripts).filter(s => s.textContent.includes('alert(1)')).length") == 0
    assert page.evaluate("document.querySelectorAll('[onerror]').length") == 0
    assert page.locator("a[href='http://x']").count() == 0
    assert page.locator(".katex").count() == 0  # LaTeX not typeset


@pytest.mark.parametrize("who", ["ann1", "hostile"])
def test_hostile_markup_is_shown_literally(page, hostile_server, artifacts, who):
    fired = watch_dialogs(page)
    name, password = ("ann1", "ann1-demo") if who == "ann1" else (HOSTILE_NAME, PASSWORD)
    sign_in(page, hostile_server.url, name, password)
    expect(page.get_by_text("0 of", exact=False).first).to_be_visible(timeout=20_000)
    # the hostile strings are on the page as text: in the instruction and in each of 3 passages
    for literal in (SCRIPT, IMG, MARKDOWN[0], MARKDOWN[2], LATEX):
        expect(page.get_by_text(literal, exact=False).first).to_be_visible(timeout=20_000)
        assert page.get_by_text(literal, exact=False).count() >= 4, literal
    assert page.locator(f"text={LONG_WORD[:200]}").count() >= 4
    body = page.inner_text("body")
    assert body.count(LONG_WORD) >= 4 and body.count("# head") >= 4
    if who == "hostile":
        expect(page.get_by_text(f"Signed in as {HOSTILE_NAME}", exact=False)).to_be_visible()
    assert_nothing_injected(page)
    page.screenshot(path=str(artifacts / f"hostile-markup-{who}.png"), full_page=True)
    # answering and submitting the hostile screen works and renders the next one safely
    answer_by_keyboard(page, ["1", "3", "5"])
    page.keyboard.press("Control+Enter")
    expect(page.get_by_text("1 of", exact=False).first).to_be_visible(timeout=20_000)
    assert_nothing_injected(page)
    assert fired == []
