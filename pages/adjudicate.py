"""Adjudicate (lead): the queue of unresolved items (majority-decided ones behind a filter), each
item's text and passages beside every vote and reason, one key per option, and "record and next".

Keys: 1, 2, ... choose the final value (the key is printed on each option); Ctrl+Enter records it
and opens the next item; n / p move to the next / previous item without recording.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from annotation.outcomes import adjudication
from storage import studies
from storage.errors import IFJudgeError
from annotation.glossary import PROVENANCE, label, page_message, votes
from evaluation.undefined import UNDEFINED
from annotation.monitoring.view import page_slice
from annotation.questions.study import study_questions
from ui.keys import keep_keys_on_item
from ui.layout import compact_page
from ui.session import db, pick_study, require_role
from ui.markdown import md_escape
from ui.text import literal

lead = require_role("lead")
conn = db()
compact_page()
keep_keys_on_item()
top_left, top_right = st.columns([2, 3], vertical_alignment="bottom")
with top_left:
    study = pick_study(conn, key="adj_study")  # may write the lead's last choice: before the reads are shared
studies.share_reads(conn)  # the queue is asked for each filter: outcomes computed once; a write ends it
sid = study["id"]
declared_names = {q: d.title for q, d in study_questions(study).items()}  # an own question by its declared name


def names(qid: str) -> str:
    return declared_names.get(qid, label(qid))

SHOW_LABELS = {"unresolved": "Unresolved", "majority": "Decided by majority", "decided": "Decided by a lead", "all": "All"}
show_key = f"adj_show:{sid}"
show = st.session_state.get(show_key) or "unresolved"
item_key = f"adj_item:{sid}:{show}"
queue = adjudication.queue(conn, sid, show=show)
ids = [r["item"] for r in queue]
current = st.session_state.get(item_key)
if current not in ids:
    current = ids[0] if ids else None
error = None

# the one write branch, before anything of the item is drawn: record, then open the next item
if current is not None and st.session_state.get(f"adj_record:{sid}:{current}"):
    value = st.session_state.get(f"adj_choice:{sid}:{current}")
    if value is None:
        error = "Choose the final value first (press its key, or click it)."
    else:
        try:
            view = adjudication.item_view(conn, sid, current)
            adjudication.record(conn, sid, current, value, lead=lead["name"],
                                note=st.session_state.get(f"adj_note:{sid}:{current}", ""))
        except IFJudgeError as exc:
            error = page_message(str(exc))
        else:
            studies.share_reads(conn)  # the write ended the sharing; the rest of the run only reads
            nxt = adjudication.next_in_queue(conn, sid, current, show=show)
            st.session_state["adj_flash"] = (
                f"Recorded {view.option_label(value)} for item {current}."
                + (f" Next: item {nxt}." if nxt not in (None, current) else " The queue is empty." if nxt is None else "")
            )
            st.session_state["adj_last"] = current
            queue = adjudication.queue(conn, sid, show=show)
            ids = [r["item"] for r in queue]
            current = nxt if nxt in ids else (ids[0] if ids else None)

counts = {**adjudication.queue_counts(conn, sid), show: len(queue)}
top_right.segmented_control("Show", list(adjudication.SHOW), default="unresolved", key=show_key, required=True,
                     format_func=lambda s: f"{SHOW_LABELS[s]} ({counts[s]})",
                     help="Unresolved: a tie no majority settles. Decided by majority: the labels differ but a "
                          "majority decided; you may overrule it.")
flash = st.session_state.pop("adj_flash", None)
if flash:
    st.success(flash, icon=":material/check:")
if error:
    st.error(error)
last = st.session_state.get("adj_last")
if last is not None and not flash:  # the decision just saved stays readable after the page moved on
    try:
        lv = adjudication.item_view(conn, sid, last)
    except IFJudgeError:
        lv = None
    if lv is not None and lv.decision:
        st.caption(f"Last decision: item {last} ({names(lv.question_id)}) → {md_escape(lv.option_label(lv.decision['value']))}"
                   + (f"; note: {md_escape(lv.decision['note'])}" if lv.decision["note"] else ""))

if current is None:
    st.success({"unresolved": "Nothing to settle: every item with labels has a majority or a decision.",
                "majority": "No item was decided by a majority over differing labels.",
                "decided": "No decision recorded yet.", "all": "No item has differing labels."}[show])
    st.stop()

by_item = {r["item"]: r for r in queue}
st.session_state[item_key] = current
# a queue of thousands: the picker and the queue table hold the QUEUE_ROWS items around the current one
# (Next / Previous walk the whole queue)
_, _, first, stop = page_slice(len(ids), ids.index(current) // adjudication.QUEUE_ROWS + 1, adjudication.QUEUE_ROWS)
window = ids[first:stop]
item_id = st.selectbox(
    "Item", window, key=item_key,
    format_func=lambda i: f"item {i}: {by_item[i]['instance']} · {names(by_item[i]['question'])} · "
                          f"votes {votes(by_item[i]['votes'])}",
)
if len(ids) > len(window):
    st.caption(f"Items {first + 1:,}-{stop:,} of the {len(ids):,} in this queue, most disagreement first; "
               "Next and Previous go on through the others.")
view = adjudication.item_view(conn, sid, item_id)
position = ids.index(item_id)


def go(target: int) -> None:
    st.session_state[item_key] = target


left, right = st.columns(2, gap="medium")
with left:
    literal(view.instruction_label, view.instruction)
    literal("Query", view.query)
    if view.passages:
        for n, p in enumerate(view.passages, start=1):
            literal(f"Passage {n}: {p['doc_id']}" + (" (dataset target)" if p["target"] else ""), p["text"])
    elif view.document:
        literal(f"Document {view.document['doc_id']}: {view.document.get('title', '')}", view.document["text"])
with right:
    st.markdown(f"**{view.prompt}**")
    st.caption(f"{PROVENANCE.get(view.provenance, view.provenance)} · votes {md_escape(votes(view.counts))}"
               + (f" · majority {md_escape(view.option_label(view.majority))}" if view.majority else ""))
    st.dataframe(pd.DataFrame([{"Annotator": v["annotator"], "Answer": v["answer"], "Reason": v["reason"]}
                               for v in view.votes]),
                 hide_index=True, key=f"adj_votes:{sid}:{item_id}")
    if view.decision:
        st.info(f"Decided: {md_escape(view.option_label(view.decision['value']))} by {md_escape(view.decision['lead'])}"
                + (f" (note: {md_escape(view.decision['note'])})" if view.decision["note"] else ""))
    choice_key = f"adj_choice:{sid}:{item_id}"
    chosen = st.session_state.get(choice_key)

    def choose(value: str) -> None:
        st.session_state[choice_key] = value

    st.caption("Final value (its key), then Record and next (Ctrl+Enter)")
    with st.container(horizontal=True, gap="small"):
        for n, (value, text) in enumerate(view.options, start=1):
            st.button(text, key=f"adj_opt:{sid}:{item_id}:{n}", shortcut=str(n) if n <= 9 else None,
                      type="primary" if chosen == value else "secondary",
                      icon=":material/check_circle:" if chosen == value else None, on_click=choose, args=(value,))
    with st.container(horizontal=True, gap="small"):
        st.button("Record and next", key=f"adj_record:{sid}:{item_id}", type="primary", shortcut="ctrl+enter")
        st.button("Previous", key=f"adj_prev:{sid}:{item_id}", shortcut="p", disabled=position == 0,
                  on_click=go, args=(ids[position - 1],))
        st.button("Next", key=f"adj_next:{sid}:{item_id}", shortcut="n", disabled=position == len(ids) - 1,
                  on_click=go, args=(ids[min(position + 1, len(ids) - 1)],))
    st.text_area("Note (optional, kept with the decision)", key=f"adj_note:{sid}:{item_id}", height=68)

with st.expander(f"The queue: {len(queue)} item{'s' if len(queue) != 1 else ''}"):
    st.dataframe(pd.DataFrame([{
        "Item": r["item"], "Instance": r["instance"], "Question": names(r["question"]), "Votes": votes(r["votes"]),
        "How decided": PROVENANCE.get(r["provenance"], r["provenance"]), "Decision": r["decision"] or UNDEFINED,
    } for r in queue[first:stop]]), hide_index=True, key=f"adj_queue:{sid}:{show}")
    if len(ids) > len(window):
        st.caption(f"Items {first + 1:,}-{stop:,} of {len(ids):,}: the part of the queue around the open item.")
