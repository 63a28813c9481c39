"""Annotate: one screen per instance (all the study's questions, as in InstructIR Fig. 9b),
keyboard first. Every submission is committed before the next screen is shown.

Keys: each answer button shows its key (Streamlit prints a button's shortcut on it); Ctrl+Enter
submits, s skips, b goes back to the previous submitted item, g shows the guidelines, a
acknowledges them. After a choice in a select box the focus leaves it (ui.keys), so the answer keys
never type into it. ui.annotate_screen takes the keys on this page (none lost, none on another
item), opens each item at its top and keeps the answer bar in view.

One current answer per item: the screen shown is kept as it was opened (with the answers that were
current then), so a tab that opened an item before another tab answered it is refused
(``AlreadyAnswered``) and offered the next item or an explicit "replace my answer".
"""
from __future__ import annotations

import time

import streamlit as st

from annotation import workspace
from ui.markdown import diff_markdown
from annotation.questions import screen_shortcuts
from storage import studies
from storage.errors import IFJudgeError, PermissionDenied
from ui import annotate_screen
from ui.keys import keep_keys_on_item
from ui.layout import compact_page
from ui.highlight import highlight_markdown, terms
from ui.markdown import md_escape
from ui.session import db, require_role
from ui.text import literal

user = require_role("annotator", "expert", "lead")
conn = db()
compact_page()
keep_keys_on_item()
annotate_screen.install()

# the studies and their counts, read again when the item shown changes (a submit, skip, going back,
# another study), not on every key: a choice reruns the page without reading them
def shown_items() -> tuple:
    """What the counts depend on in this tab: the item shown in each study, and the study chosen."""
    return (tuple(sorted((k, v) for k, v in st.session_state.items()
                         if isinstance(k, str) and k.startswith("ann_screen:") and isinstance(v, str))),
            st.session_state.get("ann_study_pick"))


cached_work = st.session_state.get("ann_work")
if cached_work is not None and cached_work[0] == shown_items():
    work = cached_work[1]
else:
    work = workspace.my_studies(conn, user)
    st.session_state["ann_work"] = (shown_items(), work)
if not work:
    st.info("You have no study assigned yet.")
    annotate_screen.ready_marker(None)
    st.stop()
by_id = {w.study["id"]: w for w in work}
ids = list(by_id)
# land on the study with the most work left; afterwards keep the annotator's own choice (the
# labels carry counts that change with every submission, so the choice is remembered by id)
picked = st.session_state.get("ann_study_pick")
if picked not in by_id:
    picked = ids[workspace.most_work_left(work)]


def remember_study(key: str) -> None:
    st.session_state["ann_study_pick"] = st.session_state[key]


top_left, top_right = st.columns([3, 2], vertical_alignment="bottom")
# the study is known before its selector is drawn (the selector comes after the submit branch, so
# its counts include the screen just submitted)
sid = picked
study = by_id[sid].study
state_key = f"ann_screen:{sid}"
shown_key = f"ann_screen_obj:{sid}"  # the Screen as it was opened: its answers current at that time
stale_key = f"ann_stale:{sid}"

answer_key = lambda screen_id, q: f"ans:{sid}:{screen_id}:{q}"  # noqa: E731


def current_screen():
    """The screen in progress (UI state); a new one is claimed when there is none. A screen is read
    once, when it is opened, and kept: its ``based_on`` (the answers current then) is what a
    submission from this tab is checked against, and a rerun does no reading."""
    if st.session_state.get(state_key) is None:
        opened = workspace.open_screen(conn, sid, user)
        if opened is not None:
            st.session_state[state_key] = opened.screen
            st.session_state[f"started:{sid}:{opened.screen}"] = time.time()
        st.session_state[shown_key] = opened
        return opened
    kept = st.session_state.get(shown_key)
    if kept is None or kept.screen != st.session_state[state_key]:
        kept = st.session_state[shown_key] = workspace.open_screen(conn, sid, user, st.session_state[state_key])
    return kept


def forget_answers(screen_id: str) -> None:
    for k in [k for k in st.session_state if isinstance(k, str) and k.startswith(f"ans:{sid}:{screen_id}:")]:
        del st.session_state[k]


screen = current_screen()
# answers and reasons changed since the last run (the widgets' callbacks only mark them): kept on
# the server as drafts, one small upsert each, so that a reload or a browser restart shows them
DRAFTS = "ann_drafts_to_save"
for (screen_id, qid), shown in st.session_state.pop(DRAFTS, {}).items():
    reason_key = answer_key(screen_id, qid) + ":reason"
    workspace.save_draft(conn, shown, user, qid, value=st.session_state.get(answer_key(screen_id, qid)),
                         reason=st.session_state.get(reason_key) if reason_key in st.session_state else None)
problems: dict[str, str] = {}
submit_error = notice = None
submitted = False
# The one submit branch, run before anything is drawn, so the next screen shows in this same run:
# the answers are committed to SQLite before it appears.
replacing = screen is not None and bool(st.session_state.get(f"replace:{sid}:{screen.screen}"))
if screen is not None and (st.session_state.get(f"submit:{sid}:{screen.screen}") or replacing):
    answers = {
        it.question.id: {
            "value": st.session_state.get(answer_key(screen.screen, it.question.id)),
            "reason": st.session_state.get(answer_key(screen.screen, it.question.id) + ":reason", ""),
        }
        for it in screen.items
    }
    try:
        workspace.submit_screen(
            conn, screen, user, answers, started_at=st.session_state.get(f"started:{sid}:{screen.screen}"),
            replace=replacing,
        )
    except studies.StaleSubmission as exc:  # answered since in another tab: said, never replaced silently
        st.session_state[stale_key] = (screen.screen, getattr(exc, "submitted_at", None))
    except PermissionDenied:  # the claim expired and the screen went to someone else
        st.session_state[state_key] = None
        notice = ("This item was open too long: its claim expired and it was handed to another annotator, "
                  "so these answers were not stored. Here is your next item.")
        screen = current_screen()
    except workspace.ScreenRefused as exc:
        problems = exc.problems
    except IFJudgeError as exc:
        submit_error = str(exc)
    else:
        forget_answers(screen.screen)
        st.session_state.pop(stale_key, None)
        st.session_state[state_key] = None
        submitted = True
        st.toast("Replaced your earlier answer" if replacing else "Saved")
        screen = current_screen()

if submitted:  # the counts changed
    work = workspace.my_studies(conn, user)
    by_id = {w.study["id"]: w for w in work}
    st.session_state["ann_work"] = (shown_items(), work)
# keyed by the counts too: a new count redraws the selector (a kept widget would show its old label)
study_key = "ann_study:" + ",".join(f"{w.study['id']}-{w.done}" for w in work)
sid = top_left.selectbox(
    "Study", ids, index=ids.index(sid), format_func=lambda i: by_id[i].label(), key=study_key,
    on_change=remember_study, args=(study_key,), label_visibility="collapsed" if len(work) == 1 else "visible",
)
st.session_state["ann_study_pick"] = sid
done, total = by_id[sid].done, by_id[sid].total
top_right.progress(done / total if total else 1.0, text=f"{done} of {total}")
if notice:
    st.warning(notice)
if problems:  # the banner, at the top of the item: every refused answer, as the annotator reads it
    # and a toast, in view wherever the page is scrolled (a long screen)
    st.toast(f"Not saved: {len(problems)} question{'s' if len(problems) > 1 else ''} to fix, marked in red",
             icon=":material/error:", duration="long")
    st.error("Not saved yet. Please fix:\n\n" + "\n\n".join(f"- {m}" for m in problems.values()), icon=":material/error:")
if submit_error:
    st.error(md_escape(submit_error))  # an error may quote a URL or a name: shown literally


def next_item(screen_id: str) -> None:
    """Leave a screen answered in another tab for the next one (its answers here are dropped)."""
    forget_answers(screen_id)
    st.session_state.pop(stale_key, None)
    st.session_state[state_key] = None


stale = st.session_state.get(stale_key)
if screen is not None and stale and stale[0] == screen.screen:
    when = f" at {time.strftime('%H:%M:%S', time.localtime(stale[1]))}" if stale[1] else ""
    with st.container(border=True, key=f"stale_box:{sid}"):
        st.warning(f"Not saved: you already answered this item in another tab or window{when}. That answer is "
                   "kept as your current one; the answers on this page were not stored.", icon=":material/tab:")
        with st.container(horizontal=True, gap="small"):
            st.button("Next item", key=f"stale_next:{sid}:{screen.screen}", type="primary", shortcut="n",
                      on_click=next_item, args=(screen.screen,))
            st.button("Replace my answer with these", key=f"replace:{sid}:{screen.screen}",
                      help="Store the answers on this page as your current ones; the history keeps the earlier answer")

# the guidelines, once acknowledged, do not change for this session: read them once
guide_cache = f"ann_guidelines:{sid}"
guide = st.session_state.get(guide_cache) or workspace.guidelines(conn, sid, user)
if guide.acknowledged_at is not None:
    st.session_state[guide_cache] = guide
show_key = f"show_guidelines:{sid}"


def toggle_guidelines() -> None:
    st.session_state[show_key] = not st.session_state.get(show_key, False)


# the submitted items, in order: read again only after a submission (here or, by its count, elsewhere)
past_key = f"ann_past:{sid}"
cached_past = st.session_state.get(past_key)
if cached_past is None or cached_past[0] != done or submitted:
    cached_past = st.session_state[past_key] = (done, workspace.history(conn, sid, user))
past = cached_past[1]


def open_screen(target: str) -> None:
    st.session_state[state_key] = target
    st.session_state[f"started:{sid}:{target}"] = time.time()


def previous_screen() -> str | None:
    """The submitted item before the one shown (the newest submitted one from a fresh item)."""
    shown = st.session_state.get(state_key)
    if shown in past:
        i = past.index(shown)
        return past[i - 1] if i > 0 else None
    return past[-1] if past else None


with st.sidebar:
    st.button("Guidelines", key=f"guidelines_toggle:{sid}", shortcut="g", on_click=toggle_guidelines,
              help="Show or hide the project goal and the instructions")
    st.toggle("Highlight query terms", key="ann_highlight",
              help="Mark the words of the query and the instruction where they occur in the passages")
    st.caption("Keys: the key printed on a button answers it; Ctrl+Enter submits; s skips; b goes back to "
               "the previous item; g shows the guidelines, a acknowledges them. A No opens its reason box with "
               "the cursor in it; Escape leaves it (keys do nothing while you type in it).")
    if past:
        # what the list shows changes only with a submission: read once per submitted state
        recent_key = f"ann_recent:{sid}"
        cached = st.session_state.get(recent_key)
        if cached is None or cached[0] != tuple(past[-20:]):
            cached = st.session_state[recent_key] = (tuple(past[-20:]), dict(workspace.recent_history(conn, sid, user)))
        recent = cached[1]
        back = st.selectbox("Go back to", [None, *recent], key=f"back:{sid}",
                            format_func=lambda s: "(choose a submitted item)" if s is None else recent[s])
        if back is not None and st.button("Open", key=f"open_back:{sid}"):
            open_screen(back)
            st.session_state.pop(f"back:{sid}", None)
            st.rerun()

# InstructIR Fig. 9a: the project goal and the labeler instructions come before the first item
# (until the annotator acknowledges them) and are one key (g) away afterwards.
if guide.acknowledged_at is None or st.session_state.get(show_key):
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
                st.session_state.pop(guide_cache, None)
                st.rerun()
            st.caption("Scroll the box to read them all. Your first item follows below; press g at any time "
                       "to see these guidelines again.")
    else:
        st.caption("Press g (or the Guidelines button) to hide them.")

if screen is None:
    others = [w for w in work if w.left and w.study["id"] != sid]
    st.success("All done: there is nothing left in your queue for this study. Thank you!")
    if others:
        st.info("Still waiting for you: " + "; ".join(w.label() for w in others) + ". Choose it under Study above.")
    target = previous_screen()
    st.button("Back", key=f"back_btn:{sid}:done", shortcut="b", width="content", disabled=target is None,
              on_click=open_screen, args=(target,), help="Open the last item you submitted, to change an answer")
    annotate_screen.ready_marker(None)
    st.stop()


def choose(shown, qid: str, value: str) -> None:
    """An answer button: the choice, marked to be kept as a draft (written at the top of the run)."""
    st.session_state[answer_key(shown.screen, qid)] = value
    keep_draft(shown, qid)


def keep_draft(shown, qid: str) -> None:
    """A choice or a reason changed: its draft is written on the server at the top of this run
    (:data:`DRAFTS`), so that a reload shows it again."""
    st.session_state.setdefault(DRAFTS, {})[(shown.screen, qid)] = shown


# the answers chosen but not submitted before a reload (drafts), read once per screen and session;
# going back to a submitted screen starts from its current answers
if not st.session_state.get(f"draft_read:{sid}:{screen.screen}"):
    st.session_state[f"draft_read:{sid}:{screen.screen}"] = True
    for qid, d in workspace.draft(conn, screen, user).items():
        if answer_key(screen.screen, qid) not in st.session_state:
            if d["value"] is not None:
                st.session_state[answer_key(screen.screen, qid)] = d["value"]
            st.session_state[answer_key(screen.screen, qid) + ":reason"] = d["reason"]
for it in screen.items:
    if it.current and answer_key(screen.screen, it.question.id) not in st.session_state:
        st.session_state[answer_key(screen.screen, it.question.id)] = it.current["value"]
        st.session_state[answer_key(screen.screen, it.question.id) + ":reason"] = it.current["reason"]

marked = terms(screen.query, screen.instruction or "", screen.narrative or "") if st.session_state.get("ann_highlight") else None


def passage_text(text: str) -> None:
    """A passage or document: literal text, or (the switch on) escaped Markdown with the query's
    and the instruction's words highlighted."""
    if marked:
        st.markdown(highlight_markdown(text, marked))
    else:
        st.text(text, width="stretch")


def draw_texts() -> st.delta_generator.DeltaGenerator:
    """The instruction and query (or the narrative), and the document: each in a box that scrolls
    when long. Returns where the questions go: below the texts, or (re-judging: the query and the
    narrative beside the document) under the narrative, so that the document and its answers fit
    one screen."""
    if screen.narrative:  # the narrative once; what changed from the original one a click away
        left, right = st.columns([2, 3], gap="medium")
        with left:
            literal("Query", screen.query)
            with st.container(key="ifj-narrative"):
                literal("Narrative", screen.narrative)
            if screen.narrative_changes and any(c.op != "equal" for c in screen.narrative_changes):
                with st.expander("Changes from the original narrative (added in green, removed struck through)"):
                    st.markdown(diff_markdown(screen.narrative_changes))  # every token Markdown-escaped
        with right:
            draw_document()
        return left
    # InstructIR Fig. 9b: the instruction, then the query, then the questions and their passages
    left, right = st.columns(2)
    with left.container(key="ifj-instruction"):
        literal("Instruction", screen.instruction)
    with right.container(key="ifj-query"):
        literal("Query", screen.query)
    draw_document()
    return item_box


def draw_document() -> None:
    if screen.document:
        st.caption(md_escape(f"Document {screen.document['doc_id']}: {screen.document['title']}"))
        with st.container(key="ifj-document"):  # a long document scrolls in its box: the questions stay near
            passage_text(screen.document["text"])


revising = any(it.current for it in screen.items)
# the item in one container keyed by (a hash of) its screen: the key script sees a new item by it
item_box = st.container(key=annotate_screen.item_key(sid, screen.screen))
with item_box:
    if revising:
        st.info("You are changing an answer you already submitted; the earlier answer stays in the history.")
    questions_box = draw_texts()

passages = max((len(it.passages) for it in screen.items if it.passages), default=0)
keys = screen_shortcuts([it.question for it in screen.items], passages)
CHECK = ":material/check_circle:"


def draw_question(number: int, it) -> None:
    q = it.question
    st.markdown(f"**Q{number}. {q.prompt}**")
    chosen = st.session_state.get(answer_key(screen.screen, q.id))
    if q.id == "best_passage":
        cols = st.columns(len(it.passages)) if len(it.passages) <= 4 else [st.container() for _ in it.passages]
        for n, (col, p, key) in enumerate(zip(cols, it.passages, keys[q.id]), start=1):
            picked_here = chosen == p["doc_id"]
            with col.container(border=True, key=f"ifj-passage-{n}"):  # a long passage scrolls in its box
                passage_text(p["text"])
                st.button(
                    f"Passage {n}", key=f"pick:{sid}:{screen.screen}:{n}", shortcut=key,
                    type="primary" if picked_here else "secondary", icon=CHECK if picked_here else None,
                    on_click=choose, args=(screen, q.id, p["doc_id"]),
                )
    else:
        with st.container(horizontal=True, gap="small"):
            for value, key in zip(q.categories, keys[q.id]):
                st.button(
                    q.label(value), key=f"val:{sid}:{screen.screen}:{q.id}:{value}", shortcut=key,
                    type="primary" if chosen == value else "secondary", icon=CHECK if chosen == value else None,
                    on_click=choose, args=(screen, q.id, value),
                )
    if chosen in q.reason_required_for:
        st.text_area(f"Reason (required when the answer is {chosen})", key=answer_key(screen.screen, q.id) + ":reason",
                     height=68, on_change=keep_draft, args=(screen, q.id))
    if q.id in problems:  # next to the question it concerns
        st.error(problems[q.id].split(": ", 1)[-1], icon=":material/arrow_upward:")


numbered = list(enumerate(screen.items, start=1))
short = [(n, it) for n, it in numbered if it.question.id != "best_passage" and len(it.question.categories) <= 3]
if len(short) >= 2:  # two Yes/No questions side by side (InstructIR Q1, Q2): the screen fits without scrolling
    for col, (n, it) in zip(item_box.columns(len(short)), short):
        with col:
            draw_question(n, it)
    rest = [(n, it) for n, it in numbered if (n, it) not in short]
else:
    rest = numbered
with questions_box:
    for n, it in rest:
        draw_question(n, it)


def chosen_text(number: int, it) -> str:
    """``Q3 Passage 2``: a question's current choice, as the answer bar shows it (— when none)."""
    value = st.session_state.get(answer_key(screen.screen, it.question.id))
    if value is None:
        shown = "—"
    elif it.question.id == "best_passage":
        order = [p["doc_id"] for p in it.passages]
        shown = f"Passage {order.index(value) + 1}" if value in order else "—"
    else:
        shown = it.question.label(value)
    return f"Q{number} {shown}"


# the answer bar: sticky at the bottom of the window, so the choices and Submit stay in view on a long item
with st.container(horizontal=True, gap="small", key="ifj-bar", vertical_alignment="center"):
    st.caption(md_escape(" · ".join(chosen_text(n, it) for n, it in numbered)), width="content")
    st.button("Submit", key=f"submit:{sid}:{screen.screen}", type="primary", shortcut="ctrl+enter", width="content")
    if not revising and st.button("Skip for now", key=f"skip:{sid}:{screen.screen}", shortcut="s", width="content"):
        workspace.skip(conn, screen, user)  # its draft is forgotten: the screen comes back empty
        for k in [k for k in st.session_state if isinstance(k, str) and k.startswith(f"ans:{sid}:{screen.screen}:")]:
            del st.session_state[k]
        st.session_state[state_key] = None
        st.rerun()
    target = previous_screen()
    st.button("Back", key=f"back_btn:{sid}:{screen.screen}", shortcut="b", width="content",
              disabled=target is None, on_click=open_screen, args=(target,),
              help="Open the previous item you submitted, to change an answer")
annotate_screen.ready_marker(annotate_screen.item_key(sid, screen.screen))
