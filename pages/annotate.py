"""Annotate: one screen per instance (all the study's questions, as in InstructIR Fig. 9b),
keyboard first. Every submission is committed before the next screen is shown.

The item is answered in the browser (ui.annotate_screen: one component holding the texts, the
questions, their options and keys, the reason boxes, Submit / Skip / Back): a key highlights its
option at once; Ctrl+Enter sends one message with every answer, which this page checks and commits
(ui.annotate_flow, over annotation.workspace) before anything is drawn, so the next item is drawn
in the same run, as the reply. Keys: the key printed on an option answers it; Ctrl+Enter submits, s
skips, b goes back to the previous submitted item, g shows the guidelines, a acknowledges them.

One current answer per item: the screen shown is kept as it was opened (with the answers that were
current then), so a tab that opened an item before another tab answered it is refused
(``AlreadyAnswered``) and offered the next item or an explicit "replace my answer".
"""
from __future__ import annotations

import time

import streamlit as st

from annotation import workspace
from ui import annotate_screen
from ui.annotate_flow import LEAVING, BadMessage, Tab, parse_message
from ui.highlight import terms
from ui.keys import keep_keys_on_item
from ui.layout import compact_page
from ui.session import db, require_role

require_role("annotator", "expert", "lead")
compact_page()
keep_keys_on_item()  # a study chosen with the mouse leaves the select box: the next key answers


def shown_items() -> tuple:
    """What the counts depend on in this tab: the item shown in each study, and the study chosen."""
    return (tuple(sorted((k, v) for k, v in st.session_state.items()
                         if isinstance(k, str) and k.startswith("ann_screen:") and isinstance(v, str))),
            st.session_state.get("ann_study_pick"))


def my_work(conn, user, *, fresh: bool = False) -> list[workspace.StudyWork]:
    """The annotator's studies and their counts, read again when the item shown changes (a submit,
    skip, going back, another study), not on every run."""
    cached = st.session_state.get("ann_work")
    if fresh or cached is None or cached[0] != shown_items():
        cached = st.session_state["ann_work"] = (shown_items(), workspace.my_studies(conn, user))
    return cached[1]


def handle_messages(conn, user, studies_shown: set[int], sid: int) -> tuple[list[tuple], bool, bool]:
    """The item component's messages since the last run, each done once: a submission is committed
    to the database before anything is drawn. Returns (toasts to show, whether counts changed,
    whether a message that leaves the item was answered)."""
    toasts, changed, answered = [], False, False
    for raw in annotate_screen.take_messages():
        try:
            msg = parse_message(raw)
        except BadMessage:
            continue  # not a message the page's component sends: nothing is done with it
        result = Tab(conn, user, msg.study if msg.study in studies_shown else sid, st.session_state).handle(msg)
        if result is None:
            continue
        answered |= msg.kind in LEAVING
        changed |= result.status in ("saved", "notice") or msg.kind in ("skip", "next")
        if result.status == "saved":
            toasts.append((result.message, {}))
        elif result.status == "refused":  # in view wherever the page is scrolled (the item says which)
            n = len(result.problems)
            toasts.append((f"Not saved: {n} question{'s' if n > 1 else ''} to fix, marked in red",
                           {"icon": ":material/error:", "duration": "long"}))
    return toasts, changed, answered


def submitted(conn, user, sid: int, done: int, changed: bool) -> list[str]:
    """The submitted items, in order: read again only after a submission (here or, by its count,
    elsewhere)."""
    key = f"ann_past:{sid}"
    cached = st.session_state.get(key)
    if cached is None or cached[0] != done or changed:
        cached = st.session_state[key] = (done, workspace.history(conn, sid, user))
    return cached[1]


def study_bar(work, by_id, sid: int) -> None:
    """The study selector (with what is left in each) and the progress in the one chosen."""
    ids = list(by_id)

    def remember_study(key: str) -> None:
        st.session_state["ann_study_pick"] = st.session_state[key]

    left, right = st.columns([3, 2], vertical_alignment="bottom")
    # keyed by the counts too: a new count redraws the selector (a kept widget would show its old label)
    study_key = "ann_study:" + ",".join(f"{w.study['id']}-{w.done}" for w in work)
    left.selectbox("Study", ids, index=ids.index(sid), format_func=lambda i: by_id[i].label(), key=study_key,
                   on_change=remember_study, args=(study_key,),
                   label_visibility="collapsed" if len(work) == 1 else "visible")
    done, total = by_id[sid].done, by_id[sid].total
    right.progress(done / total if total else 1.0, text=f"{done} of {total}")


def guidelines_box(conn, user, sid: int, guide: workspace.Guidelines) -> None:
    """InstructIR Fig. 9a: the project goal and the labeler instructions come before the first item
    (until the annotator acknowledges them) and are one key (g) away afterwards."""
    show_key = f"show_guidelines:{sid}"
    if guide.acknowledged_at is not None and not st.session_state.get(show_key):
        return
    # a box of its own height: the first item shows below it, not a screen further down
    with st.container(border=True, key=f"guidelines:{sid}", height=300):
        st.subheader("Project goal")
        st.text(guide.goal, width="stretch")
        st.subheader("Instructions for the data labeler")
        st.text(guide.instructions, width="stretch")
        st.markdown("**About the questions**")
        for _, prompt, text in guide.questions:
            st.caption(prompt)
            st.text(text, width="stretch")
    if guide.acknowledged_at is None:
        with st.container(horizontal=True, gap="small", vertical_alignment="center"):
            if st.button("I have read the guidelines", key=f"guidelines_ack:{sid}", type="primary", shortcut="a"):
                workspace.acknowledge_guidelines(conn, sid, user)
                st.session_state[show_key] = False
                st.session_state.pop(f"ann_guidelines:{sid}", None)
                st.rerun()
            st.caption("Scroll the box to read them all. Your first item follows below; press g at any time "
                       "to see these guidelines again.")
    else:
        st.caption("Press g (or the Guidelines button) to hide them.")


def sidebar(conn, user, sid: int, past: list[str]) -> None:
    """The guidelines button, the highlighting switch, the keys, and the submitted items to go back to."""
    show_key = f"show_guidelines:{sid}"

    def toggle_guidelines() -> None:
        st.session_state[show_key] = not st.session_state.get(show_key, False)

    def open_back(key: str) -> None:
        target = st.session_state.get(key)
        if target is not None:
            Tab(db(), user, sid, st.session_state).open(target)
            st.session_state[key] = None

    with st.sidebar:
        st.button("Guidelines", key=f"guidelines_toggle:{sid}", shortcut="g", on_click=toggle_guidelines,
                  help="Show or hide the project goal and the instructions")
        st.toggle("Highlight query terms", key="ann_highlight",
                  help="Mark the words of the query and the instruction where they occur in the passages")
        st.caption("Keys: the key printed on an answer chooses it; Ctrl+Enter submits; s skips; b goes back to "
                   "the previous item; g shows the guidelines, a acknowledges them. A No opens its reason box "
                   "with the cursor in it: what you type next is the reason; Escape leaves the box.")
        if past:
            # what the list shows changes only with a submission: read once per submitted state
            recent_key = f"ann_recent:{sid}"
            cached = st.session_state.get(recent_key)
            if cached is None or cached[0] != tuple(past[-20:]):
                cached = st.session_state[recent_key] = (tuple(past[-20:]), dict(workspace.recent_history(conn, sid, user)))
            recent = cached[1]
            st.selectbox("Go back to", [None, *recent], key=f"back:{sid}",
                         format_func=lambda s: "(choose a submitted item)" if s is None else recent[s])
            st.button("Open", key=f"open_back:{sid}", on_click=open_back, args=(f"back:{sid}",),
                      disabled=st.session_state.get(f"back:{sid}") is None)


def item_for(tab: Tab, screen, work, sid: int, past: list[str]) -> tuple[dict | None, dict | None]:
    """(the item as the component draws it, or None and what "All done" says)."""
    can_back = tab.previous(past) is not None
    if screen is None:
        others = [w for w in work if w.left and w.study["id"] != sid]
        return None, {"message": "All done: there is nothing left in your queue for this study. Thank you!",
                      "others": ("Still waiting for you: " + "; ".join(w.label() for w in others)
                                 + ". Choose it under Study above.") if others else None,
                      "can_back": can_back}
    marked = None
    if st.session_state.get("ann_highlight"):
        marked = terms(screen.query, screen.instruction or "", screen.narrative or "")
    initial_key = f"ann_initial:{sid}"  # the answers the item opens with: read once per opening
    initial = st.session_state.get(initial_key)
    if initial is None or initial[0] != tab.token:
        initial = st.session_state[initial_key] = (tab.token, tab.initial_answers(screen))
    return annotate_screen.item_of(screen, answers=initial[1], can_back=can_back, marked=marked), None


@st.fragment
def annotate() -> None:
    """The page's body. A message of the item component reruns only this (not the router, not the
    page's set-up), and the item is sent first, before the rest of the page: the next item is
    drawn as soon as the submission is committed."""
    user = require_role("annotator", "expert", "lead")
    conn = db()  # one connection per run (a run may be another thread)
    work = my_work(conn, user)
    if not work:
        st.info("You have no study assigned yet.")
        return
    by_id = {w.study["id"]: w for w in work}
    # land on the study with the most work left; afterwards keep the annotator's own choice (the
    # labels carry counts that change with every submission, so the choice is remembered by id)
    sid = st.session_state.get("ann_study_pick")
    if sid not in by_id:
        sid = list(by_id)[workspace.most_work_left(work)]
    st.session_state["ann_study_pick"] = sid
    toasts, changed, answered = handle_messages(conn, user, set(by_id), sid)
    tab = Tab(conn, user, sid, st.session_state)
    screen = tab.current()
    past = submitted(conn, user, sid, by_id[sid].done, changed)
    if changed and screen is None:  # "All done" names the studies with work left
        work, changed = my_work(conn, user, fresh=True), False
        by_id = {w.study["id"]: w for w in work}
    # the guidelines, once acknowledged, do not change for this session: read them once
    guide = st.session_state.get(f"ann_guidelines:{sid}") or workspace.guidelines(conn, sid, user)
    if guide.acknowledged_at is not None:
        st.session_state[f"ann_guidelines:{sid}"] = guide

    header, guide_area = st.container(), st.container()  # drawn above the item, filled after it
    item, done_info = item_for(tab, screen, work, sid, past)
    annotate_screen.mount(annotate_screen.item_data(
        study_id=sid, token=tab.token, ack=tab.ack, result=tab.result, item=item, done=done_info,
        guidelines_acknowledged=guide.acknowledged_at is not None, marked=bool(st.session_state.get("ann_highlight"))))
    if answered or st.session_state.get("ann_sent_token") != tab.token:
        # the browser draws the item before the rest of the page's updates arrive: sent together,
        # they are drawn together (bench/README.md: Ctrl+Enter to the next item drawn, median 121 ->
        # 77 ms at load 7 on 2 cores with this pause)
        time.sleep(annotate_screen.PAINT_PAUSE_S)
    st.session_state["ann_sent_token"] = tab.token
    if changed:  # the counts changed: read once the item is on its way
        work = my_work(conn, user, fresh=True)
        by_id = {w.study["id"]: w for w in work}
    with header:
        study_bar(work, by_id, sid)
    with guide_area:
        guidelines_box(conn, user, sid, guide)
    for text, kwargs in toasts:
        st.toast(text, **kwargs)
    sidebar(conn, user, sid, past)


annotate()
