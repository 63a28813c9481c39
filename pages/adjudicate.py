"""Adjudicate (lead): the queue of disagreement items, all labels and reasons, a final value and a note."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from annotation import monitor, workspace
from annotation.questions import question
from storage import projects, studies
from storage.errors import IFJudgeError
from ui.session import db, pick_study, require_role
from ui.text import literal

lead = require_role("lead")
conn = db()
st.title("Adjudicate")
study = pick_study(conn, key="adj_study")
if flash := st.session_state.pop("adj_flash", None):
    st.success(flash)
queue = monitor.disagreements(conn, study["id"])
if not queue:
    st.success("No disagreement to settle.")
    st.stop()
st.dataframe(pd.DataFrame(queue), hide_index=True, key="adj_queue")
by_item = {r["item"]: r for r in queue}
# the options are item ids, so the choice survives a rerun in which an item's labels or
# provenance (and with them its label in the list) change
entry = by_item[st.selectbox(
    "Item", list(by_item), key="adj_item",
    format_func=lambda i: f"item {i}: {by_item[i]['instance']} / {by_item[i]['question']} "
                          f"({by_item[i]['provenance']}, labels {by_item[i]['labels']})",
)]
item = next(i for i in studies.items_of_study(conn, study["id"], entry["question"]) if i["id"] == entry["item"])
inst = projects.get_instance(conn, study["project_id"], item["instance_id"])
literal("Query", inst["query"])
if item["narrative_version_id"]:
    literal("Narrative (the version judged)", workspace.narrative_with_changes(conn, item["narrative_version_id"])[0])
else:
    literal("Instruction", inst["instruction"])
docs = projects.documents_by_id(conn, study["project_id"], set(item["payload"].get("candidates", [])) | {item["doc_id"]} - {None})
s = study["settings"]
if entry["question"] == "best_passage":
    options = item["payload"]["candidates"]
    for d in options:
        literal(f"Passage {d}" + (" (dataset target)" if d == item["payload"].get("gold") else ""), docs[d]["text"])
else:
    options = list(question(entry["question"], naturalness=s.get("naturalness", "yesno"),
                            relevance=s.get("relevance", "binary")).categories)
    if item["doc_id"]:
        literal(f"Document {item['doc_id']}", docs[item["doc_id"]]["text"])
labels = [r for r in studies.current_labels(conn, study["id"], entry["question"]) if r["item"] == item["id"]]
st.dataframe(pd.DataFrame([{"annotator": r["annotator"], "value": r["value"], "reason": r["reason"]} for r in labels]),
             hide_index=True, key="adj_labels")
with st.form(f"adj_form_{item['id']}", clear_on_submit=True):  # one form per item: no answer carries over
    value = st.selectbox("Final value", options, key=f"adj_value_{item['id']}")
    note = st.text_area("Note", key=f"adj_note_{item['id']}")
    go = st.form_submit_button("Record decision")
if go:
    try:
        studies.add_adjudication(conn, item["id"], value, lead["name"], note)
    except IFJudgeError as exc:
        st.error(str(exc))
    else:  # committed: redraw the queue with the new provenance and say what was recorded
        st.session_state["adj_flash"] = f"Recorded {value} for item {item['id']}."
        st.rerun()
