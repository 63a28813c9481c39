"""Monitor a study (lead): Table 7 view, benchmark-wide estimates, each annotator's habits,
agreement per question, disagreements and reasons; every header explains itself on hover.

The sections are tabs; only the open tab's section is computed in a run (a lazy ``st.tabs``), and
the open tab is kept in the address (``?mon_tab=Annotators``) so that a reload keeps it."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from annotation import check_items, study_lifecycle
from annotation.monitoring import monitor
from annotation.monitoring import view
from annotation.gc_pause import paused_gc
from annotation.glossary import STATISTIC_HELP, header_help, label, when
from annotation.monitoring.habits import annotator_habits
from annotation.monitoring.scales import scale_summary
from annotation.outcomes.qrels_builds import study_completeness
from annotation.questions.study import study_questions
from evaluation.undefined import UNDEFINED, show
from ui.markdown import md_escape
from storage import projects, studies
from storage.errors import IFJudgeError
from ui.estimates_view import render_estimates
from ui.judge_view import render_judge_section
from ui.session import db, pick_study, require_role
from ui.text import literal


def page_picker(part: dict, what: str, *, key: str) -> None:
    """Under a paged table: how many rows there are and which are shown, and the page number."""
    if part["pages"] == 1:
        return
    st.caption(f"Rows {part['start'] + 1:,}-{part['start'] + len(part['rows']):,} of {part['total']:,} {what} "
               f"(page {part['page']} of {part['pages']:,}); filter above or choose a page.")
    st.session_state[key] = part["page"]  # the filter may have left fewer pages
    st.number_input("Page", min_value=1, max_value=part["pages"], step=1, key=key)


def columns(frame: pd.DataFrame, widths: dict | None = None, helps: dict | None = None) -> dict:
    """column_config for every column of ``frame``: its definition on hover (the glossary's, or
    ``helps``) and its width (pixels or a name), so that no column is cut at 1280 px."""
    out = {}
    for c in frame.columns:
        out[c] = st.column_config.Column(c, help=(helps or {}).get(c) or header_help(c), width=(widths or {}).get(c))
    return out


# the choices made in the tabs' widgets, kept while their tab is closed (Streamlit forgets the value of a
# widget not drawn in a run unless it is assigned again)
KEPT = ("mon_question", "mon_dis_filter", "mon_dis_page", "mon_dis_item", "mon_reason_filter", "mon_reason_page",
        "mon_estimates_judge")


def keep_choices() -> None:
    """Assign each tab's widget values to themselves, so that a closed tab's choices survive the run."""
    for key in list(st.session_state):
        if key in KEPT or str(key).startswith("mon_judge_run_"):
            st.session_state[key] = st.session_state[key]


def agreement_section(conn, sid: int, study: dict, kind: str, declared: dict, n_boot: int, seed: int) -> None:
    """The benchmark's agreement table (InstructIR Table 7 or its kind's), then one question's report."""
    st.subheader(view.heading(kind, list(declared.values())))
    reports = {q: monitor.question_report(conn, sid, q, n_boot=n_boot, seed=seed) for q in study["questions"]}
    t7_raw = monitor.table7(conn, sid, n_boot=n_boot, seed=seed)
    t7 = view.table7_rows(t7_raw, reports)
    if t7:
        meanings = "\n".join(f"- **{r['Statistic']}**: {r['What it means']}" for r in
                             {r["Statistic"]: r for r in t7 if r["What it means"]}.values())
        frame = pd.DataFrame(t7).drop(columns=["What it means"])
        if not frame["Why undefined"].any():
            frame = frame.drop(columns=["Why undefined"])
        st.dataframe(frame, hide_index=True, key="mon_table7", height="content", column_config=columns(
            frame, {"Question": 140, "Statistic": 220, "Value": 60, "95% interval": 110, "Band": 110, "Over": 130,
                    "Why undefined": 150},
            {"Question": view.question_help(list(declared.values())),
             "Statistic": meanings or None, "Value": meanings or None,
             "95% interval": view.interval_help(t7_raw)}))
        shares = [q.positive_words for q in declared.values()
                  if any(key in ("yes_share", "positive_share") for _, key in q.monitor_rows)]
        if shares:
            words = " / ".join(dict.fromkeys(shares))
            st.caption(md_escape(f"Proportion of {words} response (as InstructIR's Table 7) counts the items whose "
                                 f"majority says {words} among every labelled item, undecided ones included; the "
                                 "benchmark-wide share (tab “Benchmark estimate”) counts decided instances only, "
                                 "weighted by how they were sampled."))
    else:
        st.caption("These questions have no agreement table; see each question's report below.")

    question = st.selectbox("Question", study["questions"], key="mon_question", format_func=lambda q: declared[q].title)
    rep = reports.get(question)
    if rep is None:
        st.info("No labels for this question yet.")
    else:
        left, right = st.columns(2)
        cells = pd.DataFrame(monitor.kappa_cells(rep))
        if not cells.empty:
            # each cell shows its value; an undefined kappa shows "—" on grey, its reason on hover
            base = alt.Chart(cells).encode(
                x=alt.X("a:N", title="Annotator"), y=alt.Y("b:N", title="Annotator"),
                tooltip=[alt.Tooltip("a:N", title="Annotator"), alt.Tooltip("b:N", title="and annotator"),
                         alt.Tooltip("text:N", title="Cohen kappa"), alt.Tooltip("items:Q", title="Shared items"),
                         alt.Tooltip("why:N", title="Why undefined")],
            )
            defined = base.transform_filter("isValid(datum.kappa)").mark_rect(aria=False).encode(
                color=alt.Color("kappa:Q", scale=alt.Scale(domain=[-1, 1], scheme="redblue"), title="Cohen kappa"))
            # the cells' marks are not read one by one (aria=False): the chart's description says them all
            missing = base.transform_filter("!isValid(datum.kappa)").mark_rect(color="#e6e6e6", aria=False)
            numbers = base.mark_text(fontSize=14, aria=False).encode(
                text="text:N",
                color=alt.condition("isValid(datum.kappa) && abs(datum.kappa) > 0.6", alt.value("white"), alt.value("black")),
            )
            heat = (missing + defined + numbers).properties(
                title="Pairwise Cohen kappa", height=alt.Step(36),
                description="Heatmap of Cohen kappa per pair of annotators: " + "; ".join(
                    f"{c['a']} and {c['b']}: {c['text']}" for c in cells.to_dict("records") if c["a"] < c["b"]))
            left.altair_chart(heat, key="mon_heatmap")
            left.caption("Cohen's kappa of each pair over the items both labelled: 1 they always agree, 0 no more "
                         "than chance; — when undefined (hover the cell for why).")
        dist = pd.DataFrame([{"label": k, "share": v} for k, v in rep["label_shares"].items()])
        right.altair_chart(alt.Chart(dist).mark_bar().encode(x=alt.X("label:N", title="Answer"),
                                                             y=alt.Y("share:Q", title="Share of labels"))
                           .properties(title="Label distribution", description="Bar chart of the share of each answer: "
                                       + "; ".join(f"{r['label']}: {r['share']:.0%}" for r in dist.to_dict("records"))),
                           key="mon_distribution")
        right.caption("Share of all labels given to this question that are each answer (labels, not decided items).")
        st.markdown(f"**Agreement on this question** ({rep['n_items']} items, {rep['n_labels']} labels, "
                    f"{rep['n_annotators']} annotators)")
        rows = view.question_rows(declared[question], rep)
        keys = {label(k): k for k in STATISTIC_HELP}
        meanings = "\n".join(f"- **{r['Statistic']}**: {STATISTIC_HELP[keys[r['Statistic']]]}"
                             for r in rows if r["Statistic"] in keys)
        frame = pd.DataFrame(rows)
        if not frame["Why undefined"].any():
            frame = frame.drop(columns=["Why undefined"])
        st.dataframe(frame, hide_index=True, key="mon_report", height="content", column_config=columns(
            frame, {"Statistic": 240, "Value": 60, "Band": 100, "Report": 190, "Why undefined": 180},
            {"Statistic": meanings or None}))
        st.caption("Report: the coefficient the benchmark's own paper reports for this question (put it in your "
                   "paper); the others are shown for comparison, to see that the conclusion does not hang on one "
                   "coefficient.")
        for note in rep.get("notes", []):
            st.caption(md_escape(view.readable_note(note)))


def estimate_section(conn, sid: int, declared: dict, n_boot: int) -> None:
    """The benchmark-wide estimates, then the IFIR Table 2 means of the scored questions."""
    # THE benchmark-wide estimate: design-aware (stratified two-stage) intervals, the naive independent
    # (Wilson) interval beside them only as a labelled comparison column
    render_estimates(conn, sid)

    scales = scale_summary(conn, sid, n_boot=n_boot)
    if not scales.empty:
        st.subheader("Mean scores (IFIR Table 2)")
        frame = pd.DataFrame([{
            "Question": declared[r["question"]].title, "Statistic": r["statistic"], "Passages": r["kind"] or UNDEFINED,
            "By": r["by"], "Group": r["group"], "Items": r["items"], "Labels": r["labels"],
            "Mean": show(r["mean"], ".2f"),
            "95% interval": UNDEFINED if pd.isna(r["ci_low"]) else f"{r['ci_low']:.2f} to {r['ci_high']:.2f}",
        } for r in scales.to_dict("records")])
        st.dataframe(frame, hide_index=True, key="mon_scales", column_config=columns(frame, {
            "Question": 120, "Statistic": 190, "Passages": 70, "By": 60, "Group": 80, "Items": 50, "Labels": 50,
            "Mean": 50, "95% interval": 110}, {
            "Passages": "Gold: the passages the dataset marks relevant; excluded: those the instruction rules out.",
            "By": "How the rows are broken down: overall, by instruction level, by domain.",
            "Group": "The level or domain of the row.", "Items": "Items scored.", "Labels": "Scores given.",
            "Mean": "Mean of the items' mean scores (each item weighs the same).",
            "95% interval": "Percentile bootstrap 95% interval, query groups resampled within domains."}))


def annotators_section(conn, sid: int, declared: dict) -> None:
    """Each annotator's counts, speed and agreement, their flags, and their agreement over time."""
    st.subheader("Annotators")
    table = monitor.annotator_table(conn, sid)
    habits = annotator_habits(conn, sid, seconds={r["annotator"]: r["median_seconds_per_screen"] for r in table})
    checks = check_items.accuracy(conn, sid)
    rows = view.habit_rows(table, habits, list(declared.values()), checks or None)
    frame = pd.DataFrame(rows)
    if not checks:
        frame = frame.drop(columns=["Checks right"])
    answer_names = {q.short or q.title: q for q in declared.values()}
    st.dataframe(frame, hide_index=True, key="mon_annotators", column_config=columns(
        frame, {"Annotator": 80, "Done": 70, "Median s": 65, **dict.fromkeys(answer_names, 80), "Agreement": 90,
                "Checks right": 90, "Flag": 130},
        {name: view.answer_help(q) for name, q in answer_names.items()}))
    for h in habits["annotators"]:  # one box per flagged annotator, each flag on its own line
        if h["flags"]:
            st.warning(f"**{md_escape(h['annotator'])}**\n" + "\n".join(f"- {md_escape(f)}." for f in h["flags"]),
                       icon=":material/flag:")
    timeline = pd.DataFrame([r for r in habits["timeline"] if r["share"] is not None])
    if not timeline.empty:
        left, right = st.columns(2)
        for slot, measure, title in ((left, "agrees with the others' majority", "Agreement with the others' majority"),
                                     (right, "agrees pairwise", "Agreement with each other annotator")):
            part = timeline[timeline["measure"] == measure]
            if part.empty:
                continue
            slot.altair_chart(
                alt.Chart(part).mark_line(point=True).encode(
                    x=alt.X("labels:Q", title="Labels given so far"),
                    y=alt.Y("share:Q", title="Share agreeing", scale=alt.Scale(domain=[0, 1])),
                    color=alt.Color("annotator:N", title="Annotator"),
                    tooltip=[alt.Tooltip("annotator:N", title="Annotator"), alt.Tooltip("labels:Q", title="Labels given"),
                             alt.Tooltip("share:Q", title="Share agreeing", format=".0%")])
                .properties(title=f"{title}, over time", height=260, description=(
                    f"Line chart of each annotator's {measure} share per window of their labels in the order given: "
                    + "; ".join(f"{a}: {', '.join(f'{s:.0%}' for s in g['share'])}" for a, g in part.groupby("annotator")))),
                key=f"mon_time_{'majority' if 'majority' in measure else 'pairs'}")
        st.caption("Each point: one window of an annotator's labels in their queue order (the order the study hands "
                   "screens out, which is the order they answer them but for skips). Majority: the share "
                   "equal to the majority of the other annotators of the item; each other: the share of pairs (this "
                   "label, another label of the item) that agree. A line that falls: the annotator drifts.")


def disagreements_section(conn, sid: int) -> None:
    """The items the annotators disagree on, most disagreed first, each readable in full."""
    st.subheader("Disagreements")
    questions = view.disagreement_questions(conn, sid)
    if not questions:
        st.caption("No disagreement so far.")
    else:
        qf = st.multiselect("Filter by question", questions, key="mon_dis_filter")
        part = view.disagreement_page(conn, sid, questions=qf, page=st.session_state.get("mon_dis_page", 1))
        shown = part["rows"]
        frame = pd.DataFrame([{k: v for k, v in r.items() if k not in ("item", "full")} for r in shown])
        st.dataframe(frame, hide_index=True, key="mon_disagreements", column_config={
            **columns(frame, {"Question": 130, "Votes": 190, "Disagreement": 90, "Decision": 160, "Instruction": 200}),
            "Disagreement": st.column_config.NumberColumn(format="%.2f", help=header_help("Disagreement"), width=90)})
        page_picker(part, "disagreements", key="mon_dis_page")
        pick = st.selectbox("Read an item in full", list(range(len(shown))), key="mon_dis_item",
                            format_func=lambda i: f"{shown[i]['Question']}: {shown[i]['Instruction'][:60]}")
        if pick is not None and pick < len(shown):
            full = shown[pick]["full"]
            literal("Instruction", full["instruction"] or UNDEFINED)
            literal("Query", full["query"] or UNDEFINED)
            if full["passage"]:
                literal(f"Passage ({full['document']})", full["passage"])
            for doc_id, text in full["voted"]:
                literal(f"Voted passage {doc_id}", text or f"{UNDEFINED} not in the corpus")
            st.caption(md_escape(f"Instance {full['instance']}; votes: {shown[pick]['Votes']}"))


def reasons_section(conn, sid: int) -> None:
    """The reasons the annotators gave, filtered by their words."""
    st.subheader("Reasons")
    if not monitor.reasons(conn, sid):
        st.caption("No reason given so far.")
    else:
        text = st.text_input("Filter reasons containing", key="mon_reason_filter")
        part = view.reason_page(conn, sid, contains=text, page=st.session_state.get("mon_reason_page", 1))
        if not part["total"]:
            st.caption(md_escape(f"No reason contains “{text}”."))
        frame = pd.DataFrame(part["rows"])
        st.dataframe(frame, hide_index=True, key="mon_reasons", column_config=columns(
            frame, {"Question": 130, "Annotator": 80, "Answer": 60, "Reason": 280, "Instruction": 220},
            {"Question": "The question the reason answers."}))
        page_picker(part, "reasons", key="mon_reason_page")


user = require_role("lead")
# a read-only run over a large study's rows (no reference cycles): the cyclic collector waits for its end
with paused_gc():
    conn = db()
    st.title("Monitor")
    deleted = st.session_state.pop("mon_deleted", None)
    if deleted:
        st.success(md_escape(f"Deleted study “{deleted[0]}”: its rows are kept in backup {deleted[1]} (download it "
                             "under “Backups of deleted studies” at the end of this page)."))
    study = pick_study(conn, key="mon_study")  # may write the lead's last choice: before the reads are shared
    # read-only from here: the study's labels are read once, and kept across runs while unchanged
    studies.share_reads(conn, across_runs=True)
    sid = study["id"]
    kind = projects.get_project_by_id(conn, study["project_id"])["kind"]
    done = study_completeness(conn, sid)
    top_left, top_right = st.columns([5, 1], vertical_alignment="center")
    top_left.caption(f"Completeness: {done['labelled']:,} of {done['planned']:,} planned labels"
                     + ("" if done["complete"] else " (unfinished: missing labels count as unresolved in exports)")
                     + (" · closed: no new screens are handed out" if study_lifecycle.is_closed(study) else ""))
    if top_right.button("Refresh", key="mon_refresh"):
        st.rerun()
    with st.expander("Advanced: precision of the intervals"):
        n_boot = st.select_slider("Bootstrap replicates for the intervals", [0, 200, 1000], value=200, key="mon_boot",
                                  help="More replicates: steadier 95% intervals, a slower page. 0: no intervals.")
    seed = study["settings"].get("seed", 0)

    declared = study_questions(study)  # each question's declaration: names, wording, rows
    keep_choices()
    sections = {  # one tab per section, the first open by default; a section is computed only while its tab is open
        "Agreement": lambda: agreement_section(conn, sid, study, kind, declared, n_boot, seed),
        "Benchmark estimate": lambda: estimate_section(conn, sid, declared, n_boot),
        "Annotators": lambda: annotators_section(conn, sid, declared),
        "Disagreements": lambda: disagreements_section(conn, sid),
        "Reasons": lambda: reasons_section(conn, sid),
        # an automatic judge measured against the human outcomes (its labels shown to the lead only)
        "Judge": lambda: render_judge_section(conn, sid, n_boot=n_boot, seed=seed),
    }
    # the open tab is in the address (?mon_tab=Annotators): a reload or a shared link opens the same tab
    for name, tab in zip(sections, st.tabs(list(sections), key="mon_tab", on_change="rerun", bind="query-params")):
        with tab:
            if tab.open:
                sections[name]()

    with st.expander("Close or delete this study"):
        closed = study_lifecycle.is_closed(study)
        if closed:
            st.caption(f"Closed since {when(study['closed_at'])}: annotators get no new screen of it.")
            if st.button("Open the study again", key=f"mon_reopen:{sid}"):
                study_lifecycle.reopen(conn, sid)
                st.rerun()
        else:
            st.caption("Closing stops handing out screens of this study (an annotator may still submit the screen "
                       "open in front of them); its labels, Monitor and exports stay. You can open it again.")
            if st.button("Close the study", key=f"mon_close:{sid}"):
                study_lifecycle.close(conn, sid)
                st.rerun()
        st.divider()
        st.caption("Deleting removes the study, its items, assignments, labels and decisions. All of them are first "
                   "kept in a backup (a JSON file you can download below). Qrels already built from it keep their "
                   "provenance.")
        with st.form(f"mon_delete_form:{sid}", enter_to_submit=False):
            typed = st.text_input(md_escape(f"Type the study's name to confirm: {study['name']}"),
                                  key=f"mon_delete_name:{sid}")
            gone = st.form_submit_button("Delete the study (after a backup)")
        if gone:
            try:
                backup = study_lifecycle.delete(conn, sid, by=user["name"], confirm=typed)
            except IFJudgeError as exc:
                st.error(md_escape(str(exc)))
            else:
                st.session_state["mon_deleted"] = (study["name"], backup)
                st.session_state.pop("mon_study", None)
                st.rerun()

backups = studies.study_backups(conn)
if backups:
    with st.expander(f"Backups of deleted studies ({len(backups)})"):
        for b in backups:
            st.download_button(md_escape(f"Backup {b['id']}: study {b['study_id']} “{b['name']}”, deleted "
                                         f"{when(b['deleted_at'])} by {b['deleted_by']} (JSON)"),
                               lambda i=b["id"]: studies.study_backup(db(), i),
                               file_name=f"study-{b['study_id']}-backup-{b['id']}.json", mime="application/json",
                               key=f"mon_backup:{b['id']}")
