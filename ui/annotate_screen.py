"""The annotate page's item: one custom component (Streamlit's components v2, no build step: its
script and style sheet ship in ``ui/components/``) that draws the item and takes its answers in
the browser.

- :func:`item_data` is everything it is given: the item's texts (each literal: the component sets
  them with ``textContent``), its questions with their options and keys, the answers it opens with
  (a draft, or the current ones when going back), and what came of the last message
  (:class:`ui.annotate_flow.Result`, with ``ack``, the newest message done).
- :func:`mount` draws it; what it sends (one message per submit, skip, back, draft, ...) is kept by
  its callback and read with :func:`take_messages` at the top of the next run, before anything is
  drawn: the page commits a submission and draws the next item in the same run, whose data is the
  reply.

The component itself (``ui/components/annotate_item.js``) holds the answers while they are chosen
(a key highlights its option with no server run), sends a draft at most every 600 ms while the
annotator answers or types, and keeps the keys on the item and the box they were typed on (see
the script's header).
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from annotation import workspace
from annotation.questions.study import screen_shortcuts
from annotation.narratives.diff import join_tokens
from ui.annotate_flow import Result
from ui.highlight import highlight_parts

ASSETS = Path(__file__).resolve().parent / "components"
#: after a new item is sent, the page waits this long before drawing the rest of itself (see pages/annotate.py)
PAINT_PAUSE_S = 0.05
KEY = "ifj_item"  # one key for every item and study: the component stays mounted, the browser keeps its keys
INBOX = "ann_inbox"  # the messages its callback kept, read by take_messages (tests put theirs here too)

_component = st.components.v2.component(
    "ifjudge_annotate_item",
    html='<div class="ifj-item" data-testid="ifjItem"></div>',
    css=(ASSETS / "annotate_item.css").read_text(encoding="utf-8"),
    js=(ASSETS / "annotate_item.js").read_text(encoding="utf-8"),
    isolate_styles=False,  # in the page's own DOM: found by text, by label, and by axe-core like the rest
)


def _keep_message() -> None:
    """The component sent a message: keep it for this run (a callback only keeps it)."""
    value = (st.session_state.get(KEY) or {}).get("msg")
    if value is not None:
        st.session_state.setdefault(INBOX, []).append(value)


def take_messages() -> list:
    """The messages sent since the last run, in order (each as the browser sent it)."""
    return st.session_state.pop(INBOX, [])


def mount(data: dict) -> None:
    _component(key=KEY, data=data, on_msg_change=_keep_message)


def _text(text: str, marked: set[str] | None) -> str | list[str]:
    return highlight_parts(text, marked) if marked else text


def _changes(spans: list | None) -> list[list[str]] | None:
    """The narrative's word diff as ``[op, text]`` pieces (None when nothing changed)."""
    if not spans or all(s.op == "equal" for s in spans):
        return None
    out = []
    for k, s in enumerate(spans):
        body, space = join_tokens(s.tokens, s.spaces)
        out.append([s.op, (" " if space and k else "") + body])
    return out


def item_of(screen: workspace.Screen, *, answers: dict[str, dict], can_back: bool,
            marked: set[str] | None) -> dict:
    """One screen as the component draws it."""
    passages = max((len(it.passages) for it in screen.items if it.passages), default=0)
    keys = screen_shortcuts([it.question for it in screen.items], passages)
    questions = []
    for number, it in enumerate(screen.items, start=1):
        q = it.question
        if q.answers_are_passages:
            options = [{"value": p["doc_id"], "label": f"Passage {i}", "key": key, "passage": _text(p["text"], marked)}
                       for i, (p, key) in enumerate(zip(it.passages, keys[q.id]), start=1)]
        else:
            options = [{"value": v, "label": q.label(v), "key": key, "passage": None}
                       for v, key in zip(q.categories, keys[q.id])]
        questions.append({"id": q.id, "number": number, "prompt": q.prompt, "passages": q.answers_are_passages,
                          "reason_for": list(q.reason_required_for), "options": options})
    doc = screen.document
    revising = any(it.current for it in screen.items)
    return {
        "screen": screen.screen,
        "revising": revising,
        "can_skip": not revising,
        "can_back": can_back,
        "texts": {
            "instruction": None if screen.narrative is not None else screen.instruction,
            "query": screen.query,
            "narrative": screen.narrative,
            "changes": _changes(screen.narrative_changes),
            "document": None if doc is None else {
                "caption": f"Document {doc['doc_id']}" + (f": {doc['title']}" if doc.get("title") else ""),
                "text": _text(doc["text"], marked)},
        },
        "questions": questions,
        "answers": answers,
    }


def item_data(*, study_id: int, token: str | None, ack: int, result: Result | None, item: dict | None,
              done: dict | None, guidelines_acknowledged: bool, marked: bool) -> dict:
    """Everything the component is given in one run (JSON)."""
    return {
        "v": 1,
        "study": study_id,
        "token": token,
        "ack": ack,
        "result": result.as_data() if result is not None else None,
        "item": item,
        "done": done,
        "view": "marked" if marked else "plain",
        "guidelines": {"acknowledged": guidelines_acknowledged},
        "reason_max": workspace.REASON_MAX_CHARS,
    }
