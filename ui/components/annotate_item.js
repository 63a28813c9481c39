// The annotate page's item, answered in the browser (a Streamlit v2 component; ui/annotate_screen.py
// mounts it). It draws the item (its texts in boxes that scroll, its questions, their options and
// reason boxes, Submit / Skip / Back) and holds the item's answers: a key highlights its option at
// once, with no server run; Ctrl+Enter sends ONE message carrying the item and every answer, and
// the server's reply (the next item) arrives as new data. A draft goes when the keys pause
// (DRAFT_MS), never per key.
//
// Keys belong to the item, and to the box, they were typed on, in order: after a No, printable
// keys go to its reason box from the very next key; keys typed after a Ctrl+Enter (or s, b) wait,
// in order, and are applied to the item that opens next; a key that cannot be applied is named
// in a lasting note on the item.
//
// Every text from the data is set with textContent (never parsed as HTML); text runs in its own
// direction (dir="auto": Persian and Arabic right to left).

const DRAFT_MS = 600;        // a draft when the keys pause this long (never per key)
const DRAFT_MAX_MS = 3000;   // and at least this often while they do not
const RESEND_MS = 5000;      // a message not answered by then is sent again (same seq: done once)
const STATE = "__ifjudgeAnnotateItem";

const S = window[STATE] || (window[STATE] = {
  host: null,          // the element the item is drawn in
  data: null,          // the newest data from the server
  send: null,          // setTriggerValue of the newest render
  token: undefined,    // the item drawn (null: none, as on "All done")
  view: null,          // the texts' mode as drawn ("plain" | "marked")
  answers: {},         // token -> {question id: {value, reason}}: the answers as chosen here
  keymap: {},          // key -> {qid, value} on the item drawn
  seq: 0,              // the newest message's number
  inflight: null,      // the message on its way (one at a time)
  sentAt: 0,
  outbox: [],          // messages waiting for it
  locked: false,       // Ctrl+Enter, s, b, n sent: keys wait for the next item
  later: [],           // the keys typed meanwhile, in order
  replayReason: null,  // while replaying them: the question whose reason box takes printable keys
  shownResult: 0,      // the newest server result drawn (its seq)
  lastResult: null,    // and that result, drawn again when the item is drawn again
  notes: [],           // lasting notes on the item drawn
  draftTimer: null,
  dirtySince: 0,       // when the answers first changed since the last draft
  installed: false,
});

// ---------------------------------------------------------------------------------------------
// drawing (textContent only)

function el(tag, props, children) {
  const e = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === null || v === undefined || v === false) { continue; }
      if (k === "text") { e.textContent = v; }
      else if (k === "cls") { e.className = v; }
      else { e.setAttribute(k, v === true ? "" : String(v)); }
    }
  }
  for (const c of children || []) { if (c) { e.appendChild(c); } }
  return e;
}

// a text from the data: a string, or (highlighted) a list whose odd members are marked words
function textNode(t) {
  const box = el("div", {cls: "ifj-text", dir: "auto"});
  if (Array.isArray(t)) {
    t.forEach((part, i) => box.appendChild(i % 2 ? el("mark", {cls: "ifj-mark", text: part}) : document.createTextNode(part)));
  } else {
    box.textContent = t || "";
  }
  return box;
}

function labelled(label, t, boxClass, name) {
  return el("div", {cls: "ifj-field"}, [
    el("div", {cls: "ifj-label", text: label}),
    el("div", {cls: "ifj-box " + boxClass, "data-name": name}, [textNode(t)]),
  ]);
}

function answersOf(token) {
  if (!S.answers[token]) { S.answers[token] = {}; }
  return S.answers[token];
}

function item() { return S.data && S.data.item; }

function question(qid) {
  return (item() ? item().questions : []).find((q) => q.id === qid);
}

function optionButton(q, opt, extra) {
  const b = el("button", {type: "button", cls: "ifj-opt", "aria-pressed": "false", "data-q": q.id,
                          "aria-keyshortcuts": opt.key || null}, [
    el("span", {text: opt.label}),
    opt.key ? el("kbd", {text: opt.key.toUpperCase(), "aria-hidden": "true"}) : null,
  ]);
  b.dataset.value = opt.value;
  b.addEventListener("click", () => { if (!S.locked) { choose(q.id, opt.value, true, true); } });
  if (extra) { b.classList.add(extra); }
  return b;
}

function reasonBox(q) {
  const id = "ifj-reason-" + q.id.replace(/[^a-z0-9_-]/gi, "");
  const max = S.data.reason_max;
  const ta = el("textarea", {id: id, dir: "auto", rows: 2, maxlength: max, "data-q": q.id,
                             "aria-describedby": id + "-count"});
  const count = el("div", {cls: "ifj-count", id: id + "-count"});
  ta.addEventListener("input", () => {
    answersOf(S.token)[q.id] = {...(answersOf(S.token)[q.id] || {}), reason: ta.value};
    counter(ta, count);
    markDirty();
  });
  return el("div", {cls: "ifj-reason", hidden: true, "data-q": q.id}, [
    el("label", {for: id, cls: "ifj-reason-label", text: ""}), ta, count,
  ]);
}

function counter(ta, count) {
  const max = S.data.reason_max;
  count.textContent = ta.value.length + " / " + max + " characters";
  count.classList.toggle("ifj-count-near", ta.value.length > 0.9 * max);
}

function questionBlock(q) {
  const block = el("div", {cls: "ifj-question", "data-q": q.id}, [
    el("div", {cls: "ifj-prompt", text: "Q" + q.number + ". " + q.prompt, id: "ifj-prompt-" + q.number}),
  ]);
  if (!q.options.some((o) => o.passage !== null && o.passage !== undefined)) {
    block.appendChild(el("div", {cls: "ifj-options", role: "group", "aria-labelledby": "ifj-prompt-" + q.number},
                         q.options.map((o) => optionButton(q, o))));
  } else {  // best passage: each passage in its box with its button under it
    const grid = el("div", {cls: "ifj-passages" + (q.options.length > 4 ? " ifj-stacked" : ""), role: "group",
                            "aria-labelledby": "ifj-prompt-" + q.number});
    grid.style.setProperty("--ifj-columns", String(Math.min(q.options.length, 4)));
    q.options.forEach((o, i) => grid.appendChild(el("div", {cls: "ifj-card"}, [
      el("div", {cls: "ifj-box ifj-passage", "data-name": "Passage " + (i + 1)}, [textNode(o.passage)]),
      optionButton(q, o),
    ])));
    block.appendChild(grid);
  }
  if (q.reason_for.length) { block.appendChild(reasonBox(q)); }
  block.appendChild(el("div", {cls: "ifj-problem", role: "alert", hidden: true}));
  return block;
}

function changesBlock(changes) {
  const body = el("div", {cls: "ifj-changes", dir: "auto"});
  changes.forEach(([op, text]) => {
    body.appendChild(op === "insert" ? el("ins", {text: text}) : op === "delete" ? el("del", {text: text})
                     : document.createTextNode(text));
  });
  return el("details", {cls: "ifj-details"}, [
    el("summary", {text: "Changes from the original narrative (added in green, removed struck through)"}), body,
  ]);
}

function documentBlock(doc) {
  return el("div", {cls: "ifj-field"}, [
    el("div", {cls: "ifj-label", text: doc.caption}),
    el("div", {cls: "ifj-box ifj-document", "data-name": "Document"}, [textNode(doc.text)]),
  ]);
}

function questionsArea(it) {
  const area = el("div", {cls: "ifj-questions"});
  const short = it.questions.filter((q) => !q.passages && q.options.length <= 3);
  const row = short.length >= 2 ? el("div", {cls: "ifj-row"}, short.map(questionBlock)) : null;
  if (row) { area.appendChild(row); }
  it.questions.filter((q) => !(row && short.includes(q))).forEach((q) => area.appendChild(questionBlock(q)));
  return area;
}

function bar(it) {
  const submit = el("button", {type: "button", cls: "ifj-btn ifj-primary", "aria-keyshortcuts": "Control+Enter"}, [
    el("span", {text: "Submit"}), el("kbd", {text: "Ctrl + Enter", "aria-hidden": "true"})]);
  submit.addEventListener("click", () => { if (!S.locked) { submit_(); } });
  const parts = [el("span", {cls: "ifj-summary", dir: "auto"}), submit];
  if (it.can_skip) {
    const skip = el("button", {type: "button", cls: "ifj-btn", "aria-keyshortcuts": "s"}, [
      el("span", {text: "Skip for now"}), el("kbd", {text: "S", "aria-hidden": "true"})]);
    skip.addEventListener("click", () => { if (!S.locked) { leave("skip"); } });
    parts.push(skip);
  }
  parts.push(backButton(it.can_back, "Open the previous item you submitted, to change an answer"));
  parts.push(el("span", {cls: "ifj-status", role: "status", "aria-live": "polite"}));
  return el("div", {cls: "ifj-bar"}, parts);
}

function backButton(enabled, title) {
  const back = el("button", {type: "button", cls: "ifj-btn", "aria-keyshortcuts": "b", disabled: !enabled, title: title}, [
    el("span", {text: "Back"}), el("kbd", {text: "B", "aria-hidden": "true"})]);
  back.addEventListener("click", () => { if (!S.locked) { leave("back"); } });
  return back;
}

function render(data) {
  const host = S.host;
  host.replaceChildren();
  S.notes = [];
  S.keymap = {};
  host.appendChild(el("div", {cls: "ifj-notes", role: "status"}));
  host.appendChild(el("div", {cls: "ifj-result"}));
  const it = data.item;
  if (!it) {  // "All done"
    const done = data.done || {};
    host.appendChild(el("div", {cls: "ifj-done"}, [
      el("div", {cls: "ifj-success", role: "status", text: done.message || ""}),
      done.others ? el("div", {cls: "ifj-info", text: done.others}) : null,
      el("div", {cls: "ifj-bar ifj-bar-done"}, [backButton(done.can_back, "Open the last item you submitted, to change an answer"),
                                               el("span", {cls: "ifj-status", role: "status", "aria-live": "polite"})]),
    ]));
    return;
  }
  if (it.revising) {
    host.appendChild(el("div", {cls: "ifj-info", text: "You are changing an answer you already submitted; the earlier answer stays in the history."}));
  }
  const t = it.texts;
  if (t.narrative !== null && t.narrative !== undefined) {  // re-judging: query and narrative beside the document
    const left = el("div", {cls: "ifj-side"}, [
      labelled("Query", t.query, "ifj-query", "Query"),
      labelled("Narrative", t.narrative, "ifj-narrative", "Narrative"),
      t.changes ? changesBlock(t.changes) : null,
      questionsArea(it),
    ]);
    host.appendChild(el("div", {cls: "ifj-rejudge"}, [left, t.document ? documentBlock(t.document) : el("div")]));
  } else {  // InstructIR Fig. 9b: the instruction, then the query, then the questions
    host.appendChild(el("div", {cls: "ifj-row"}, [
      labelled("Instruction", t.instruction, "ifj-instruction", "Instruction"),
      labelled("Query", t.query, "ifj-query", "Query"),
    ]));
    if (t.document) { host.appendChild(documentBlock(t.document)); }
    host.appendChild(questionsArea(it));
  }
  host.appendChild(bar(it));
  it.questions.forEach((q) => q.options.forEach((o) => { if (o.key) { S.keymap[o.key.toLowerCase()] = {qid: q.id, value: o.value}; } }));
  if (!S.answers[S.token]) {  // first drawn: the answers it opens with (a draft, or the current ones going back)
    S.answers[S.token] = {};
    for (const [qid, a] of Object.entries(it.answers || {})) { S.answers[S.token][qid] = {value: a.value, reason: a.reason || ""}; }
  }
  const answers = answersOf(S.token);
  it.questions.forEach((q) => {
    const a = answers[q.id];
    if (a && a.value !== null && a.value !== undefined) { choose(q.id, a.value, null, false); }
    const ta = host.querySelector('textarea[data-q="' + cssId(q.id) + '"]');
    if (ta) { ta.value = (a && a.reason) || ""; counter(ta, ta.parentElement.querySelector(".ifj-count")); }
  });
  S.replayReason = null;
  summary();
  requestAnimationFrame(markBoxes);
}

function cssId(s) { return String(s).replace(/["\\]/g, "\\$&"); }

// a box that scrolls is a named region the keyboard reaches (Tab; arrows, Page Up / Down, Home / End)
function markBoxes() {
  if (!S.host) { return; }
  S.host.querySelectorAll(".ifj-box").forEach((b) => {
    const scrolls = b.scrollHeight > b.clientHeight + 1;
    if (scrolls) {
      b.setAttribute("tabindex", "0");
      b.setAttribute("role", "region");
      b.setAttribute("aria-label", b.dataset.name + " (scrolls)");
    } else {
      ["tabindex", "role", "aria-label"].forEach((a) => b.removeAttribute(a));
    }
  });
}

function summary() {
  const it = item();
  const s = S.host && S.host.querySelector(".ifj-summary");
  if (!it || !s) { return; }
  const answers = answersOf(S.token);
  s.textContent = it.questions.map((q) => {
    const v = answers[q.id] && answers[q.id].value;
    const opt = q.options.find((o) => o.value === v);
    return "Q" + q.number + " " + (opt ? opt.label : "\u2014");
  }).join(" \u00b7 ");
}

function status(text) {
  const s = S.host && S.host.querySelector(".ifj-status");
  if (s) { s.textContent = text; }
}

function note(text) {  // a lasting note on the item drawn
  S.notes.push(text);
  const box = S.host && S.host.querySelector(".ifj-notes");
  if (box) { box.appendChild(el("div", {cls: "ifj-note", text: text})); }
}

// what the server said of the last message (refused answers, a stale tab, an error, a notice)
function showResult(data, again) {
  const r = again ? S.lastResult : data.result;
  if (!r || (!again && r.seq <= S.shownResult)) { return; }
  S.shownResult = r.seq;
  S.lastResult = r;
  const box = S.host.querySelector(".ifj-result");
  box.replaceChildren();
  S.host.querySelectorAll(".ifj-problem").forEach((p) => { p.hidden = true; p.textContent = ""; });
  if (r.status === "refused" || r.status === "stale") { requestAnimationFrame(() => box.scrollIntoView({block: "nearest"})); }
  if (r.status === "refused") {
    box.appendChild(el("div", {cls: "ifj-error", role: "alert"}, [
      el("div", {text: "Not saved yet. Please fix:"}),
      el("ul", null, Object.values(r.problems || {}).map((m) => el("li", {text: m}))),
    ]));
    // a reason to write: its box takes the cursor (unless the keyboard is somewhere else already)
    const empty = Object.keys(r.problems || {}).map((qid) => S.host.querySelector(
      '.ifj-reason[data-q="' + cssId(qid) + '"]:not([hidden]) textarea')).find((ta) => ta && !ta.value.trim());
    if (empty && !again && (!document.activeElement || document.activeElement === document.body)) {
      requestAnimationFrame(() => { if (!S.locked) { empty.focus(); } });
    }
    for (const [qid, m] of Object.entries(r.problems || {})) {
      const p = S.host.querySelector('.ifj-question[data-q="' + cssId(qid) + '"] > .ifj-problem');
      if (p) {
        p.replaceChildren(el("span", {"aria-hidden": "true", text: "\u2191 "}), el("span", {text: m.includes("\u201d: ") ? m.slice(m.indexOf("\u201d: ") + 3) : m}));
        p.hidden = false;
      }
    }
  } else if (r.status === "stale") {
    const next = el("button", {type: "button", cls: "ifj-btn ifj-primary", "aria-keyshortcuts": "n"}, [
      el("span", {text: "Next item"}), el("kbd", {text: "N", "aria-hidden": "true"})]);
    next.addEventListener("click", () => { if (!S.locked) { leave("next"); } });
    const replace = el("button", {type: "button", cls: "ifj-btn",
                                  title: "Store the answers on this page as your current ones; the history keeps the earlier answer"},
                       [el("span", {text: "Replace my answer with these"})]);
    replace.addEventListener("click", () => { if (!S.locked) { leave("replace", collect()); } });
    box.appendChild(el("div", {cls: "ifj-warning", role: "alert"}, [el("div", {text: r.message}),
                                                                      el("div", {cls: "ifj-actions"}, [next, replace])]));
  } else if (r.message && ["notice", "error", "gone"].includes(r.status)) {
    box.appendChild(el("div", {cls: r.status === "error" ? "ifj-error" : "ifj-warning", role: "alert", text: r.message}));
  }
}

// ---------------------------------------------------------------------------------------------
// answering

function choose(qid, value, live, byKey) {
  const q = question(qid);
  if (!q) { return; }
  const answers = answersOf(S.token);
  answers[qid] = {value: value, reason: (answers[qid] && answers[qid].reason) || ""};
  S.host.querySelectorAll('.ifj-opt[data-q="' + cssId(qid) + '"]').forEach((b) => {
    const on = b.dataset.value === value;
    b.setAttribute("aria-pressed", on ? "true" : "false");
    b.classList.toggle("ifj-chosen", on);
  });
  const wrap = S.host.querySelector('.ifj-reason[data-q="' + cssId(qid) + '"]');
  if (wrap) {
    const needs = q.reason_for.includes(value);
    wrap.hidden = !needs;
    if (needs) {
      wrap.querySelector("label").textContent = "Reason (required when the answer is " + value + ")";
      const ta = wrap.querySelector("textarea");
      if (byKey && live) { ta.focus(); ta.setSelectionRange(ta.value.length, ta.value.length); }
      else if (byKey) { S.replayReason = qid; }
    }
  }
  summary();
  if (live !== null) { markDirty(); }
}

function collect() {
  const it = item();
  const answers = answersOf(S.token);
  const out = {};
  (it ? it.questions : []).forEach((q) => {
    const a = answers[q.id] || {};
    const v = a.value === undefined ? null : a.value;
    out[q.id] = {value: v, reason: v !== null && q.reason_for.includes(v) ? (a.reason || "") : ""};
  });
  return out;
}

function lockTexts(on) {
  if (!S.host) { return; }
  S.host.querySelectorAll("textarea").forEach((ta) => { ta.readOnly = on; if (on) { ta.blur(); } });
}

function submit_() {
  if (!item()) { return false; }
  leave("submit", collect());
  return true;
}

// a message that leaves the item (or, refused, stays on it): keys typed from now on wait for the next item
function leave(kind, answers) {
  S.locked = true;
  S.replayReason = null;
  lockTexts(true);
  if (S.draftTimer) { clearTimeout(S.draftTimer); S.draftTimer = null; }
  S.dirtySince = 0;
  S.outbox = S.outbox.filter((m) => m.kind !== "draft");  // the message carries every answer
  status(kind === "submit" || kind === "replace" ? "Saving\u2026" : "Opening\u2026");
  enqueue({kind: kind, answers: answers || null});
}

// a draft once the keys pause for DRAFT_MS (a burst of keys and its Ctrl+Enter send no draft),
// and at least every DRAFT_MAX_MS while they do not
function markDirty() {
  if (!item()) { return; }
  if (!S.dirtySince) { S.dirtySince = Date.now(); }
  if (S.draftTimer) { clearTimeout(S.draftTimer); }
  S.draftTimer = setTimeout(flushDraft, Date.now() - S.dirtySince > DRAFT_MAX_MS ? 0 : DRAFT_MS);
}

function flushDraft() {
  S.draftTimer = null;
  S.dirtySince = 0;
  if (!item() || S.locked) { return; }
  S.outbox = S.outbox.filter((m) => m.kind !== "draft");
  enqueue({kind: "draft", answers: collect()});
}

function enqueue(msg) {
  const d = S.data || {};
  msg.token = S.token;
  msg.study = d.study;
  msg.screen = item() ? item().screen : null;
  S.outbox.push(msg);
  pump();
}

function pump() {
  if (S.inflight || !S.outbox.length || !S.send) { return; }
  const m = S.outbox.shift();
  m.seq = ++S.seq;
  S.inflight = m;
  S.sentAt = Date.now();
  S.send("msg", m);
}

// ---------------------------------------------------------------------------------------------
// keys

const LEAVING = ["submit", "skip", "back", "next", "replace"];

function keyOf(e) {
  return {key: e.key, ctrl: e.ctrlKey, meta: e.metaKey, alt: e.altKey, shift: e.shiftKey};
}

function isSubmitKey(k) { return k.key === "Enter" && (k.ctrl || k.meta); }
function printable(k) { return k.key.length === 1 && !k.ctrl && !k.meta && !k.alt; }
function named(k) { return isSubmitKey(k) ? "Ctrl + Enter" : k.key === " " ? "Space" : k.key; }

function isField(t) {
  if (!t || !t.tagName) { return false; }
  if (t.isContentEditable || t.tagName === "TEXTAREA" || t.tagName === "SELECT") { return true; }
  return t.tagName === "INPUT" && !["radio", "checkbox", "button", "submit"].includes(t.type);
}

// one key on the item: true when it was taken. ``reasonTa``: the reason box it was typed in (live)
function dispatch(k, reasonTa, live) {
  if (isSubmitKey(k)) {
    if (reasonTa) { answersOf(S.token)[reasonTa.dataset.q].reason = reasonTa.value; }
    return submit_();
  }
  const inReason = live ? reasonTa : S.replayReason;
  if (inReason) {
    if (k.key === "Escape") {
      if (live) { reasonTa.blur(); } else { S.replayReason = null; }
      return true;
    }
    if (live) { return false; }  // the browser types it
    return typeInto(S.replayReason, k);
  }
  if (k.ctrl || k.meta || k.alt) { return false; }
  const key = k.key.length === 1 ? k.key.toLowerCase() : k.key;
  const it = item();
  const d = S.data || {};
  const opt = S.keymap[key];
  if (opt && it) { choose(opt.qid, opt.value, live, true); return true; }
  if (key === "s" && it && it.can_skip) { leave("skip"); return true; }
  if (key === "b" && (it ? it.can_back : d.done && d.done.can_back)) { leave("back"); return true; }
  if (key === "n" && it && S.host.querySelector(".ifj-warning [aria-keyshortcuts='n']")) { leave("next"); return true; }
  if (key === "g") { enqueue({kind: "guidelines"}); return true; }
  if (key === "a" && d.guidelines && !d.guidelines.acknowledged) { enqueue({kind: "acknowledge"}); return true; }
  return false;
}

function typeInto(qid, k) {  // a key typed while the reason box was not drawn yet
  const ta = S.host.querySelector('textarea[data-q="' + cssId(qid) + '"]');
  if (!ta) { return false; }
  let v = ta.value;
  if (k.key === "Backspace") { v = v.slice(0, -1); }
  else if (k.key === "Enter") { v += "\n"; }
  else if (printable(k)) { v += k.key; }
  else { return false; }
  ta.value = v.slice(0, S.data.reason_max);
  answersOf(S.token)[qid].reason = ta.value;
  counter(ta, ta.parentElement.querySelector(".ifj-count"));
  markDirty();
  return true;
}

function queueable(k) {
  return printable(k) || isSubmitKey(k) || ["Enter", "Backspace", "Escape"].includes(k.key);
}

function onKeyDown(e) {
  if (!S.host || !S.host.isConnected || e.isComposing || e.keyCode === 229) { return; }
  const t = e.target;
  const ours = Boolean(t && t.nodeType === 1 && S.host.contains(t));
  if (isField(t) && !ours) { return; }  // typing in another box (a select box's filter)
  const k = keyOf(e);
  if (S.locked) {  // typed after Ctrl+Enter (or s, b): it belongs to the next item
    if (!queueable(k)) { return; }
    e.preventDefault();
    e.stopImmediatePropagation();
    S.later.push(k);
    return;
  }
  if (e.repeat && !(ours && t.tagName === "TEXTAREA")) {  // a held answer key answers once
    if (printable(k) && S.keymap[k.key.toLowerCase()]) { e.preventDefault(); e.stopImmediatePropagation(); }
    return;
  }
  const reasonTa = ours && t.tagName === "TEXTAREA" ? t : null;
  if (dispatch(k, reasonTa, true)) {
    e.preventDefault();
    e.stopImmediatePropagation();
    window.__ifjudgeKeyAt = e.timeStamp;  // when the page took its last key (bench/bench_submit_latency.py)
  } else if (!reasonTa && printable(k) && /[\p{L}\p{N}]/u.test(k.key) && !isField(t)) {
    status("\u201c" + k.key + "\u201d is not a key of this item");
  }
}

// the keys typed while the last message was on its way, applied in order to the item now drawn
function replay() {
  const keys = S.later;
  S.later = [];
  S.replayReason = null;
  const missed = [];
  for (let i = 0; i < keys.length; i++) {
    if (S.locked) { S.later = keys.slice(i); break; }  // a Ctrl+Enter in the burst: the rest is the next item's
    const k = keys[i];
    if (!dispatch(k, null, false) && k.key !== "Escape") { missed.push(named(k)); }
  }
  if (S.replayReason && !S.locked) {  // typing a reason: it goes on in its box
    const ta = S.host.querySelector('textarea[data-q="' + cssId(S.replayReason) + '"]');
    if (ta) { ta.focus(); ta.setSelectionRange(ta.value.length, ta.value.length); }
  }
  S.replayReason = null;
  if (missed.length) {
    note("Not applied (typed before this item opened; no answer here has that key): " + missed.join(", "));
  }
}

// ---------------------------------------------------------------------------------------------
// Streamlit's own elements on the page

function decorate() {
  // a toast is an alertdialog labelled by an element that does not exist: named by its own text
  document.querySelectorAll('[role="dialog"], [role="alertdialog"]').forEach((d) => {
    if (d.getAttribute("aria-label")) { return; }
    const by = (d.getAttribute("aria-labelledby") || "").split(/\s+/).filter((id) => {
      const x = id && document.getElementById(id);
      return x && (x.textContent || "").trim();
    });
    const text = (d.textContent || "").trim();
    if (!by.length && text) { d.setAttribute("aria-label", text.slice(0, 120)); }
  });
  document.querySelectorAll('[data-testid="stText"], [data-testid="stCaptionContainer"], [data-testid="stMarkdownContainer"]')
    .forEach((x) => { if (!x.hasAttribute("dir")) { x.setAttribute("dir", "auto"); } });
  // the guidelines' box scrolls: the keyboard reaches it
  document.querySelectorAll('[class*="st-key-guidelines-"]').forEach((g) => {
    if (g.scrollHeight > g.clientHeight + 1 && !g.hasAttribute("tabindex")) {
      g.setAttribute("tabindex", "0");
      g.setAttribute("role", "region");
      g.setAttribute("aria-label", "Guidelines (scrolls)");
    }
  });
  if (S.inflight && Date.now() - S.sentAt > RESEND_MS && S.send) {  // no answer: once more (the server does it once)
    S.sentAt = Date.now();
    S.send("msg", S.inflight);
  }
}

function install() {
  if (S.installed) { return; }
  S.installed = true;
  window.addEventListener("keydown", onKeyDown, true);
  window.addEventListener("resize", markBoxes);
  document.addEventListener("focusin", (e) => {  // a box taken by the keyboard is brought whole into view
    const t = e.target;
    if (t && t.classList && t.classList.contains("ifj-box")) { t.scrollIntoView({block: "nearest"}); }
  });
  document.addEventListener("visibilitychange", () => { if (document.hidden && S.draftTimer) { clearTimeout(S.draftTimer); flushDraft(); } });
  setInterval(decorate, 250);
}

// ---------------------------------------------------------------------------------------------
// each render: the server's data (an answer to the last message, the next item, or a rerun)

export default function (component) {
  const {data, parentElement, setTriggerValue} = component;
  install();
  const host = parentElement.querySelector(".ifj-item");
  const fresh = host !== S.host;
  S.host = host;
  S.send = setTriggerValue;
  S.data = data;
  let acked = null;
  if (S.inflight && data.ack >= S.inflight.seq) { acked = S.inflight; S.inflight = null; }
  const newItem = data.token !== S.token;
  if (fresh || newItem || data.view !== S.view) {
    const notes = newItem ? [] : S.notes;
    S.token = data.token;
    S.view = data.view;
    render(data);
    notes.forEach(note);
    if (!newItem) { showResult(data, true); } else { S.lastResult = null; }
    if (newItem) {
      const main = document.querySelector('[data-testid="stMain"]');
      if (main) { main.scrollTop = 0; }
      const shown = S.token;  // when the new item is on screen (bench/bench_submit_latency.py)
      requestAnimationFrame(() => { window.__ifjudgeShown = {token: shown, at: performance.now()}; });
      for (const t of Object.keys(S.answers)) { if (t !== S.token && !S.outbox.some((m) => m.token === t)) { delete S.answers[t]; } }
    }
  }
  showResult(data);
  if (acked && LEAVING.includes(acked.kind)) {
    S.locked = false;
    lockTexts(false);
    status("");
    if (newItem) {
      replay();
    } else if (S.later.length) {  // refused: the item stays, and the keys meant for the next one are not applied to it
      note("Not applied, because this item was not saved (typed after " + (acked.kind === "submit" ? "Ctrl + Enter" : "leaving it") +
           "): " + S.later.map(named).join(", "));
      S.later = [];
    }
  }
  pump();
}
