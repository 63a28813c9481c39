"""The annotate page in the browser: every key counts, every item opens at its top, long texts
keep the question in view, right-to-left text reads right to left.

Streamlit binds a button's ``shortcut`` with one global key binding per key, dropped and bound
again whenever a button is drawn anew: on a new item the old item's button can drop the binding
the new one has just made, and a key pressed while the page reruns then does nothing (issue 20:
2 of 10 items saved while an evaluation job ran). :data:`ITEM_JS` therefore takes the answer keys
itself, before Streamlit sees them, on the annotate page only:

- a key that names a button (the key printed on it) clicks that button; the page is then *busy*
  until the run that the click started has drawn its end marker (:func:`ready_marker`);
- keys typed while busy are queued with the item they were typed on and pressed in order once the
  run is over, if that item is still shown; if a new item was opened meanwhile (a submit), they
  are refused in a notice that names them ("press them again"): a key never lands on another item;
- a new item (its container key, :func:`item_key`, changes) is scrolled to its top, and so is every
  box that scrolls a long text (Streamlit's text element centres its content: ``ITEM_CSS`` makes it
  a block, so that a box opens at its first word); a box that scrolls is a named region the
  keyboard reaches (``tabindex="0"``, "Passage 2 (scrolls)"), so the arrow keys, Page Up / Page Down
  and Home / End scroll it;
- a reason box that appears after a "No" takes the focus once the keys pause (250 ms: an answer
  key typed right after the No still answers); Escape leaves it; what is typed in it is handed to
  the server (where it is kept as a draft) after a short pause, without leaving it;
- text elements get ``dir="auto"``: Persian or Arabic text runs right to left;
- a toast ("Saved", "Not saved: ...", drawn by Streamlit as an alertdialog labelled by an element
  that does not exist) is named by its own text, so screen readers announce it and axe-core finds no unnamed dialog.

The script and the style sheet are constants: no user text goes into them. The markers carry only
a hash of the screen id and a run counter.
"""
from __future__ import annotations

import hashlib

import streamlit as st

ITEM_CSS = """
<style>
[class*="st-key-ifj-item-"] [data-testid="stText"], [class*="st-key-ifj-item-"] textarea { unicode-bidi: plaintext; text-align: start; }
[class*="st-key-ifj-item-"] [data-testid="stText"] { overflow-wrap: anywhere; }
/* Streamlit draws st.text as a flex box that centres its one child: a box shorter than its text
   would put the start of the text above its top, where no scrolling reaches. A block starts at the top. */
[class*="st-key-ifj-item-"] [data-testid="stText"] { display: block; }
.st-key-ifj-instruction [data-testid="stText"], .st-key-ifj-query [data-testid="stText"] { max-height: 30vh; overflow-y: auto; }
.st-key-ifj-narrative [data-testid="stText"] { max-height: max(120px, calc(100vh - 440px)); overflow-y: auto; padding-right: 0.3rem; }
[class*="st-key-ifj-passage-"] [data-testid="stText"], [class*="st-key-ifj-passage-"] [data-testid="stMarkdown"]
  { max-height: 34vh; overflow-y: auto; padding-right: 0.3rem; }
.st-key-ifj-document [data-testid="stText"], .st-key-ifj-document [data-testid="stMarkdown"]
  { max-height: max(180px, calc(100vh - 270px)); overflow-y: auto; padding-right: 0.3rem; }
.ifj-scroll:focus-visible { outline: 2px solid rgb(255, 75, 75); outline-offset: 1px; }
[class*="st-key-ifj-item-"] [data-testid="stMarkdownContainer"] { unicode-bidi: plaintext; }
[data-testid="stLayoutWrapper"]:has(> .st-key-ifj-bar) { position: sticky; bottom: 0; z-index: 50; }
.st-key-ifj-bar { background-color: rgb(255, 255, 255); border-top: 1px solid rgba(49, 51, 63, 0.2); padding: 0.35rem 0 0.25rem 0; }
.ifj-ready { display: none; }
#ifj-notice { position: fixed; top: 3.6rem; left: 50%; transform: translateX(-50%); z-index: 1000000;
  background: #fff4e5; color: #663c00; border: 1px solid #ffb74d; border-radius: 0.4rem;
  padding: 0.45rem 0.9rem; font: 0.9rem sans-serif; box-shadow: 0 2px 8px rgba(0,0,0,0.15); }
</style>
"""

ITEM_JS = """
<script>
(function () {
  if (window.__ifjudgeItem) { return; }
  window.__ifjudgeItem = true;
  var busy = false, busyRun = null, busyItem = null, busySince = 0, queue = [];
  var lastItem = null, seenRun = null, known = {}, watch = null, noticeTimer = null, typingTimer = null;
  var MAX_BUSY_MS = 8000, PAUSE_MS = 250, lastKeyAt = 0;

  function newest() {
    var best = null;
    document.querySelectorAll(".ifj-ready").forEach(function (m) {
      if (!best || Number(m.dataset.run) > Number(best.dataset.run)) { best = m; }
    });
    return best;
  }
  function typing(el) {
    if (!el || !el.tagName) { return false; }
    if (el.isContentEditable || el.tagName === "TEXTAREA" || el.tagName === "SELECT") { return true; }
    return el.tagName === "INPUT" && ["radio", "checkbox", "button", "submit"].indexOf(el.type) < 0;
  }
  function itemBox() {  // the item shown: while a run draws a new item, the one drawn by this run
    var pick = null;
    document.querySelectorAll('[class*="st-key-ifj-item-"]').forEach(function (b) {
      if (!pick || b.querySelector('[data-stale="false"]')) { pick = b; }
    });
    return pick;
  }
  function shownItem() {
    var b = itemBox(), m = b ? /st-key-(ifj-item-[0-9a-f]+)/.exec(b.className) : null;
    return m ? m[1] : "none";
  }
  function labelOf(e) {  // as Streamlit prints a shortcut on its button: "Shortcut Ctrl + Enter", "Shortcut 5"
    var base = e.key === "Enter" ? "Enter" : (e.key && e.key.length === 1 ? e.key.toUpperCase() : null);
    if (!base || e.altKey || (e.shiftKey && base !== "Enter")) { return null; }
    if (e.ctrlKey || e.metaKey) { return ["Shortcut Ctrl + " + base, "Shortcut \u2318 + " + base]; }
    return ["Shortcut " + base];
  }
  function buttonFor(labels) {
    for (var i = 0; i < labels.length; i++) {
      var kbd = document.querySelector('button kbd[aria-label="' + labels[i] + '"]');
      if (kbd) { return kbd.closest("button"); }
    }
    return null;
  }
  function reasons() {
    var box = itemBox(), out = {};
    if (box) {  // by the widget's key (its element's st-key class): one per question
      box.querySelectorAll("textarea").forEach(function (t) {
        var keyed = t.closest('[class*="st-key-ans"]');
        out[keyed ? keyed.className : t.id] = t;
      });
    }
    return out;
  }
  function notice(text) {
    var n = document.getElementById("ifj-notice");
    if (!n) { n = document.createElement("div"); n.id = "ifj-notice"; n.setAttribute("role", "alert"); document.body.appendChild(n); }
    n.textContent = text;
    if (noticeTimer) { clearTimeout(noticeTimer); }
    noticeTimer = setTimeout(function () { n.remove(); }, 6000);
  }
  function fire(labels, item) {
    var btn = buttonFor(labels);
    if (!btn || btn.disabled) { return false; }
    var r = newest();
    busy = true; busyRun = r ? r.dataset.run : null; busyItem = item; busySince = Date.now();
    if (!watch || watch.item !== item) { watch = {before: reasons(), item: item}; }  // as before the first of a run of keys
    watch.until = Infinity;
    known = {};
    document.querySelectorAll("button kbd[aria-label]").forEach(function (k) { known[k.getAttribute("aria-label")] = true; });
    btn.click();
    return true;
  }
  function names(keys) { return keys.map(function (k) { return k.labels[0].replace("Shortcut ", ""); }).join(", "); }
  function scrollTop() {
    document.querySelectorAll('[data-testid="stMain"], [data-testid="stAppViewContainer"], section.main')
      .forEach(function (el) { el.scrollTop = 0; });
    window.scrollTo(0, 0);
    markBoxes(true);
  }
  // the boxes that scroll a long text: each opens at its first word (an element kept from the
  // last item keeps its scroll position otherwise) and, while it scrolls, takes the keyboard's
  // focus (Tab; then the arrow keys, Page Up / Page Down, Home / End) under its name
  var BOXES = '.st-key-ifj-instruction [data-testid="stText"], .st-key-ifj-query [data-testid="stText"], ' +
    '.st-key-ifj-narrative [data-testid="stText"], [class*="st-key-ifj-passage-"] [data-testid="stText"], ' +
    '[class*="st-key-ifj-passage-"] [data-testid="stMarkdown"], .st-key-ifj-document [data-testid="stText"], ' +
    '.st-key-ifj-document [data-testid="stMarkdown"], [class*="st-key-guidelines-"] [data-testid="stVerticalBlock"]';
  var NAMES = [["st-key-ifj-instruction", "Instruction"], ["st-key-ifj-query", "Query"], ["st-key-ifj-narrative", "Narrative"],
               ["st-key-ifj-document", "Document"], ["st-key-guidelines-", "Guidelines"]];
  function boxName(el) {
    var keyed = el.closest('[class*="st-key-ifj-"], [class*="st-key-guidelines-"]'), cls = keyed ? keyed.className : "";
    var passage = /st-key-ifj-passage-([0-9]+)/.exec(cls);
    if (passage) { return "Passage " + passage[1]; }
    for (var i = 0; i < NAMES.length; i++) { if (cls.indexOf(NAMES[i][0]) >= 0) { return NAMES[i][1]; } }
    return "Text";
  }
  function markBoxes(reset) {
    document.querySelectorAll(BOXES).forEach(function (el) {
      if (reset) { el.scrollTop = 0; }
      var style = getComputedStyle(el);
      var scrolls = (style.overflowY === "auto" || style.overflowY === "scroll") && el.scrollHeight > el.clientHeight + 1;
      if (scrolls && !el.classList.contains("ifj-scroll")) {
        el.classList.add("ifj-scroll");
        el.setAttribute("tabindex", "0");
        el.setAttribute("role", "region");
        el.setAttribute("aria-label", boxName(el) + " (scrolls)");
      } else if (!scrolls && el.classList.contains("ifj-scroll")) {
        el.classList.remove("ifj-scroll");
        ["tabindex", "role", "aria-label"].forEach(function (a) { el.removeAttribute(a); });
      }
    });
  }
  function setDirections() {
    document.querySelectorAll('[data-testid="stText"], [data-testid="stCaptionContainer"], textarea, [data-testid="stMarkdownContainer"]')
      .forEach(function (el) { if (!el.hasAttribute("dir")) { el.setAttribute("dir", "auto"); } });
  }

  function nameDialogs() {  // Streamlit draws a toast as an alertdialog labelled by an element that does not exist
    document.querySelectorAll('[role="dialog"], [role="alertdialog"]').forEach(function (d) {
      if (d.getAttribute("aria-label")) { return; }
      var by = (d.getAttribute("aria-labelledby") || "").split(/\s+/).filter(function (id) {
        var el = id && document.getElementById(id);
        return el && (el.textContent || "").trim();
      });
      var text = (d.textContent || "").trim();
      if (!by.length && text) { d.setAttribute("aria-label", text.slice(0, 120)); }
    });
  }

  function tick() {
    nameDialogs();
    var r = newest();
    if (!r) {  // between pages, or a run that has not reached its end yet (it drew over the old marker)
      if (busy && Date.now() - busySince > MAX_BUSY_MS) { busy = false; queue = []; }
      return;
    }
    var run = r.dataset.run, item = r.dataset.item;
    if (run !== seenRun) {  // a run has ended: its text gets its direction (and once more, for late widgets)
      seenRun = run;
      setDirections();
      setTimeout(setDirections, 400);
    }
    if (item !== lastItem) {  // a new item (or none: all done): from its top, with its instruction in view
      lastItem = item;
      scrollTop();
    }
    var finished = busy && run !== busyRun;
    if (busy && !finished && Date.now() - busySince > MAX_BUSY_MS) { finished = true; }  // a click that ran nothing
    if (!finished) { return; }
    busy = false;
    if (watch) { watch.until = Date.now() + PAUSE_MS + 1500; }  // a reason box may still be loading
    var refused = [];
    while (queue.length && !busy) {  // in the order typed, each on the item it was typed on
      var k = queue.shift();
      if (k.item !== item) { refused.push(k); continue; }  // typed on the item just submitted or left
      if (!fire(k.labels, k.item)) { notice("Not taken: " + names([k]) + " does nothing here."); }
    }
    if (refused.length) { notice("Not taken: " + names(refused) + " (typed on the item before this one). Press again."); }
  }
  function focusNewReason() {  // a reason box that has just appeared ("No") takes the focus
    // once the keys pause: an answer key typed right after the No still answers its question
    if (!watch || busy || queue.length || Date.now() - lastKeyAt < PAUSE_MS) { return; }
    if (shownItem() !== watch.item || Date.now() > watch.until) { watch = null; return; }
    var now = reasons();
    for (var name in now) {
      if (!(name in watch.before)) {
        watch = null;
        if (!typing(document.activeElement)) { now[name].focus(); }
        return;
      }
    }
  }
  setInterval(function () { tick(); focusNewReason(); }, 20);
  setInterval(function () { markBoxes(false); }, 250);

  window.addEventListener("keydown", function (e) {
    if ((!newest() && !busy) || e.isComposing) { return; }
    var target = e.target;
    if (typing(target)) {
      if (target.tagName === "TEXTAREA" && itemBox() && itemBox().contains(target)) {
        if (e.key === "Escape") { target.blur(); e.preventDefault(); return; }
        if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {  // submit from the reason box: its text first
          var labels = labelOf(e);
          var here = shownItem();
          if (busy) { e.preventDefault(); e.stopImmediatePropagation(); target.blur(); queue.push({labels: labels, item: here}); return; }
          if (buttonFor(labels)) { e.preventDefault(); e.stopImmediatePropagation(); target.blur(); fire(labels, here); }
        }
      }
      return;
    }
    var labels = labelOf(e);
    // not a key of this page: Streamlit's own (while busy, a key of the page as it was at the click)
    if (!labels || !(buttonFor(labels) || (busy && labels.some(function (l) { return known[l]; })))) { return; }
    e.preventDefault();
    e.stopImmediatePropagation();
    if (e.repeat) { return; }
    window.__ifjudgeKeyAt = e.timeStamp;  // when the last key was taken (bench/bench_submit_latency.py)
    lastKeyAt = Date.now();
    var item = shownItem();  // the item the annotator sees as the key is typed
    if (busy) { queue.push({labels: labels, item: item}); return; }
    fire(labels, item);
  }, true);

  // what is typed in a reason box reaches the server after a pause (kept there as a draft), so a
  // reload keeps it: the box is left and entered again, which hands its text to Streamlit
  document.addEventListener("input", function (e) {
    var t = e.target;
    if (!t || t.tagName !== "TEXTAREA" || !itemBox() || !itemBox().contains(t)) { return; }
    if (typingTimer) { clearTimeout(typingTimer); }
    typingTimer = setTimeout(function () {
      if (document.activeElement === t) {
        var a = t.selectionStart, b = t.selectionEnd;
        t.blur(); t.focus();
        try { t.setSelectionRange(a, b); } catch (err) { /* the box was redrawn */ }
      }
    }, 700);
  }, true);
})();
</script>
"""


def item_key(study_id: int, screen: str) -> str:
    """The key of the container that holds one item: a hash of its study and screen id (the screen
    id can be anything an import brought, so it never goes into a key or a class as such)."""
    return "ifj-item-" + hashlib.sha1(f"{study_id}\x1f{screen}".encode()).hexdigest()[:16]


def install() -> None:
    """The style sheet and the key script (installed once per tab; in the sidebar, where the
    script's empty element takes no room)."""
    st.html(ITEM_CSS)
    with st.sidebar:
        st.html(ITEM_JS, unsafe_allow_javascript=True)


def ready_marker(item: str | None) -> None:
    """The last element of a run: tells the key script that this run is over and which item it
    shows (``item``: :func:`item_key`, or None when no item is shown)."""
    run = st.session_state["ifj_run"] = st.session_state.get("ifj_run", 0) + 1
    st.html(f'<span class="ifj-ready" data-run="{int(run)}" data-item="{item or "none"}"></span>')
