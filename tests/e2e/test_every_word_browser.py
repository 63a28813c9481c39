"""Every word of a long text can be read (issue 28, item 1): in 1,000-word passages and documents,
English and Persian, and in a long instruction and narrative, the first word is in view when the
item opens and the last one can be brought into view by the keyboard (Tab to the box, then End) and
by the mouse wheel, with the plain text and with "Highlight query terms"; the re-judging screen shows
its narrative once and fits the document and its answers at 1280x720.

"In view" is geometry, not scrollTop: the word's own rectangle lies inside its box's visible
rectangle and inside the window, and the element drawn at its centre is the box's (not the answer
bar over it)."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.narratives import versions as narrative_versions
from storage import studies
from storage.db import connect
from tests.e2e.conftest import Server, settle, sign_in
from storage.projects import get_project

pytestmark = pytest.mark.e2e

ENGLISH = ("clinic patients hormone thyroid insulin records scheduling laboratory therapy visit doctor measures "
           "growth results treatment diabetes glands specialist care").split()
PERSIAN = "درمانگاه بیماران هورمون تیروئید انسولین پرونده نوبت آزمایشگاه درمان پزشک رشد نتایج دیابت غدد مراقبت".split()
LETTERS = "ابپتثجچحخدذرزژسشصضطظعغفقکگلمنوهی"


def first_last(n: int, persian: bool) -> tuple[str, str]:
    """The unique first and last word of text number ``n``."""
    if persian:
        return f"سرآغاز{LETTERS[n]}", f"پایان{LETTERS[n]}"
    return f"Alphastart{n}x", f"Omegaend{n}x"


def long_text(n: int, persian: bool, words: int = 1000) -> str:
    first, last = first_last(n, persian)
    pool = PERSIAN if persian else ENGLISH
    return " ".join([first, *(pool[(i * 7 + n) % len(pool)] for i in range(words - 2)), last])


# where a word is and whether it can be read: its rectangle inside its scrolling box's and the window's
WORD_JS = """(word) => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    const at = node.data.indexOf(word);
    if (at < 0) { continue; }
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + word.length);
    const r = range.getBoundingClientRect();
    let box = node.parentElement;
    while (box && box !== document.body) {
      const s = getComputedStyle(box);
      if ((s.overflowY === 'auto' || s.overflowY === 'scroll') && box.scrollHeight > box.clientHeight + 1) { break; }
      box = box.parentElement;
    }
    if (!box || box === document.body) { return {found: true, box: false}; }
    const b = box.getBoundingClientRect();
    const inside = r.width > 0 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1 && r.left >= b.left - 1 && r.right <= b.right + 1
      && r.top >= 0 && r.bottom <= window.innerHeight && r.left >= 0 && r.right <= window.innerWidth;
    const hit = inside && document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
    return {found: true, box: true, visible: Boolean(inside && hit && box.contains(hit)),
            focusable: box.tabIndex >= 0, focused: document.activeElement === box, name: box.getAttribute('aria-label') || '',
            scrollTop: box.scrollTop, center: [(b.left + b.right) / 2, (b.top + b.bottom) / 2]};
  }
  return {found: false};
}"""


def where(page, word: str) -> dict:
    return page.evaluate(WORD_JS, word)


def visible(page, word: str) -> bool:
    w = where(page, word)
    return bool(w.get("visible"))


def eventually(page, check, timeout: float = 10_000) -> bool:
    """Whether ``check()`` becomes true within ``timeout`` ms (checked every 50 ms)."""
    for _ in range(int(timeout / 50) + 1):
        if check():
            return True
        page.wait_for_timeout(50)
    return False


def wheel_to(page, word: str, step: int) -> bool:
    """Turn the mouse wheel over the box of ``word`` until the word is in view."""
    for _ in range(80):
        w = where(page, word)
        if w.get("visible"):
            return True
        page.mouse.move(*w["center"])
        page.mouse.wheel(0, step)
        page.wait_for_timeout(30)
    return False


def check_box(page, first: str, last: str, *, keyboard: bool = True) -> None:
    """``first`` in view as the item opens; ``last`` reached by the wheel, and (``keyboard``) by Tab
    to the box then End; Home brings the first word back."""
    assert eventually(page, lambda: visible(page, first), 20_000), (first, where(page, first))
    w = where(page, last)
    assert w["found"] and w["box"] and not w["visible"], (last, w)  # a long text: its end is further down
    assert w["focusable"] and w["name"], w  # a scrolling region the keyboard reaches, under a name
    assert wheel_to(page, last, 400), f"{last!r} not reached by the wheel"
    assert wheel_to(page, first, -400), f"{first!r} not reached again by the wheel"
    if keyboard:
        page.evaluate("document.activeElement && document.activeElement.blur()")
        for _ in range(80):  # Tab from the top of the page to the box that holds the word
            page.keyboard.press("Tab")
            if where(page, first).get("focused"):
                break
        else:
            raise AssertionError(f"the box of {first!r} is not reached by Tab")
        page.keyboard.press("End")
        assert eventually(page, lambda: visible(page, last), 20_000)
        page.keyboard.press("Home")
        assert eventually(page, lambda: visible(page, first), 20_000), (first, where(page, first))
        page.evaluate("document.activeElement && document.activeElement.blur()")


@pytest.fixture
def words_server(demo_db):
    """The demo with every document 1,000 words long (every second one Persian), each with its own
    first and last word; the instructions of study 1 and the published changed narrative 300 words
    long; ann1 has read the guidelines of both studies. Yields (server, doc id -> text number,
    re-judging study id)."""
    db = connect(demo_db)
    docs = [r[0] for r in db.execute("SELECT doc_id FROM documents ORDER BY doc_id")]
    with db.conn:
        for n, d in enumerate(docs):
            db.execute("UPDATE documents SET text = ? WHERE doc_id = ?", [long_text(n, n % 2 == 1), d])
        db.execute("UPDATE instances SET instruction = ? WHERE instance_id IN (SELECT instance_id FROM items WHERE study_id = 1)",
                   [long_text(len(LETTERS) - 1, False, 300)])
    rejudge = narrative_versions.rejudge_published(db, project=get_project(db, "demo"), author="lead", annotators=["ann1", "ann2", "ann3"])
    version = db.execute("SELECT DISTINCT narrative_version_id FROM items WHERE study_id = ?",
                         [rejudge["study_id"]]).fetchone()[0]
    with db.conn:
        db.execute("UPDATE narrative_versions SET text = ? WHERE id = ?", [long_text(len(LETTERS) - 2, False, 300), version])
    uid = db.execute("SELECT id FROM users WHERE name = 'ann1'").fetchone()[0]
    for sid in (1, rejudge["study_id"]):
        studies.acknowledge_guidelines(db, sid, uid)
    doc_n = {d: n for n, d in enumerate(docs)}
    db.conn.close()
    s = Server(demo_db)
    s.start()
    yield s, doc_n, rejudge["study_id"]
    s.stop()


def shown_passages(page, doc_n: dict[str, int]) -> list[int]:
    """The text numbers of the passages on screen (by their first words)."""
    return [n for n in doc_n.values() if where(page, first_last(n, n % 2 == 1)[0])["found"]]


def test_every_word_of_long_passages_instructions_documents_and_narratives_is_readable(page, words_server, artifacts):
    server, doc_n, rejudge_sid = words_server
    page.set_viewport_size({"width": 1280, "height": 720})
    sign_in(page, server.url, "ann1", "ann1-demo")
    expect(page.get_by_text("0 of 8", exact=True)).to_be_visible(timeout=30_000)
    settle(page)
    shown = shown_passages(page, doc_n)
    assert len(shown) == 3 and any(n % 2 for n in shown), shown  # English and Persian
    page.screenshot(path=str(artifacts / "every-word-passages.png"))
    # the instruction (300 words) and the three 1,000-word passages
    check_box(page, *first_last(len(LETTERS) - 1, False))
    for n in shown:
        check_box(page, *first_last(n, n % 2 == 1))

    # the same with the query terms highlighted (the passages drawn as Markdown)
    page.get_by_text("Highlight query terms").click()
    settle(page)
    expect(page.locator("mark, .stMarkdownColoredBackground, [class*=ColoredBackground]").first).to_be_visible(timeout=20_000)
    for n in shown:
        check_box(page, *first_last(n, n % 2 == 1), keyboard=False)
    page.screenshot(path=str(artifacts / "every-word-highlighted.png"))

    # a passage scrolled to its end, then the next item: its passages open at their first words
    last_box = where(page, first_last(shown[0], shown[0] % 2 == 1)[1])
    page.mouse.move(*last_box["center"])
    page.mouse.wheel(0, 100_000)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    for key in ("1", "3", "5"):
        page.keyboard.press(key)
        page.wait_for_timeout(150)
    page.keyboard.press("Control+Enter")
    expect(page.get_by_text("1 of 8", exact=True)).to_be_visible(timeout=30_000)
    settle(page)
    nxt = shown_passages(page, doc_n)
    assert len(nxt) == 3
    for n in nxt:
        assert eventually(page, lambda: visible(page, first_last(n, n % 2 == 1)[0]), 20_000), n

    # re-judging: the narrative once, the 1,000-word document and its answers on one 1280x720 screen
    page.get_by_role("combobox", name="Study").click()
    page.get_by_role("option", name=f"{rejudge_sid}: ", exact=False).click()
    expect(page.get_by_text("0 of 5", exact=True)).to_be_visible(timeout=30_000)
    settle(page)
    page.get_by_text("Highlight query terms").click()  # back to plain text
    settle(page)
    n_first, n_last = first_last(len(LETTERS) - 2, False)
    assert page.evaluate("(w) => document.body.innerText.split(w).length - 1", n_first) == 1  # shown once
    check_box(page, n_first, n_last)
    docs_shown = shown_passages(page, doc_n)
    assert len(docs_shown) == 1
    d_first, d_last = first_last(docs_shown[0], docs_shown[0] % 2 == 1)
    for name in ("Relevant", "Not relevant", "Submit"):  # in the window, and not under the answer bar
        button = page.get_by_role("button", name=re.compile(f"^{name}")).first
        expect(button).to_be_in_viewport(ratio=1)
        assert button.evaluate("b => { const r = b.getBoundingClientRect(); "
                               "return b.contains(document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2)); }"), name
    page.screenshot(path=str(artifacts / "every-word-rejudging.png"))
    check_box(page, d_first, d_last)
