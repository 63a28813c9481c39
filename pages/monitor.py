"""Monitor a study (lead): Table 7 view, benchmark-wide estimates, annotators, agreement charts, disagreements, reasons."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from annotation import monitor
from annotation import monitor_view as view
from annotation.gc_pause import paused_gc
from annotation.glossary import STATISTIC_HELP, label
from annotation.scale_summary import scale_summary
from annotation.qrels_builds import study_completeness
from ui.markdown import md_escape
from storage import projects, studies
from ui.estimates_view import render_estimates
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


require_role("lead")
# a read-only run over a large study's rows (no reference cycles): the cyclic collector waits for its end
with paused_gc():
    conn = studies.share_reads(db())  # read-only page: the study's labels are read once per run
    st.title("Monitor")
    study = pick_study(conn, key="mon_study")
    sid = study["id"]
    n_boot = st.select_slider("Bootstrap replicates for the intervals", [0, 200, 1000], value=200, key="mon_boot")
    if st.button("Refresh", key="mon_refresh"):
        st.rerun()

    kind = projects.get_project_by_id(conn, study["project_id"])["kind"]
    done = study_completeness(conn, sid)
    st.caption(f"Completeness: {done['labelled']} of {done['planned']} planned labels"
               + ("" if done["complete"] else " (unfinished: missing labels count as unresolved in exports)"))
    st.subheader(view.heading(kind, study["questions"]))
    seed = study["settings"].get("seed", 0)
    t7_raw = monitor.table7(conn, sid, n_boot=n_boot, seed=seed)
    t7 = view.table7_rows(t7_raw)
    if t7:
        meanings = "\n".join(f"- **{r['Statistic']}**: {r['What it means']}" for r in
                             {r["Statistic"]: r for r in t7 if r["What it means"]}.values())
        st.dataframe(pd.DataFrame(t7).drop(columns=["What it means"]), hide_index=True, key="mon_table7",
                     column_config={
                         "Question": st.column_config.TextColumn(help="\n".join(
                             f"- **{label(q)}**: {monitor.PROMPTS.get(q, q)}" for q in study["questions"])),
                         "Statistic": st.column_config.TextColumn(width="large", help=meanings or None),
                         "Value": st.column_config.TextColumn(width="small", help=meanings or None),
                         "95% interval": st.column_config.TextColumn(help=view.interval_help(t7_raw)),
                         "Band": st.column_config.TextColumn(help="Landis & Koch (1977) band of a kappa"),
                     })
    else:
        st.caption("These questions have no agreement table; see the tables below.")

    # THE benchmark-wide estimate: design-aware (stratified two-stage) intervals, the naive independent
    # (Wilson) interval beside them only as a labelled comparison column
    render_estimates(conn, sid)

    scales = scale_summary(conn, sid, n_boot=n_boot)
    if not scales.empty:
        st.subheader("Mean scores (IFIR Table 2)")
        st.dataframe(pd.DataFrame([{
            "Question": label(r["question"]), "Statistic": r["statistic"], "Passages": r["kind"] or "—",
            "By": r["by"], "Group": r["group"], "Items": r["items"], "Labels": r["labels"],
            "Mean": "—" if pd.isna(r["mean"]) else f"{r['mean']:.2f}",
            "95% interval": "—" if pd.isna(r["ci_low"]) else f"{r['ci_low']:.2f} to {r['ci_high']:.2f}",
        } for r in scales.to_dict("records")]), hide_index=True, key="mon_scales",
            column_config={"Statistic": st.column_config.TextColumn(width="medium"),
                           "95% interval": st.column_config.TextColumn(help="bootstrap percentile interval, items resampled")})

    st.subheader("Annotators")
    st.dataframe(pd.DataFrame(view.annotator_rows(monitor.annotator_table(conn, sid))), hide_index=True,
                 key="mon_annotators")

    question = st.selectbox("Question", study["questions"], key="mon_question", format_func=label)
    rep = monitor.question_report(conn, sid, question, n_boot=n_boot, seed=seed)  # Table 7's report: computed once
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
        dist = pd.DataFrame([{"label": k, "share": v} for k, v in rep["label_shares"].items()])
        right.altair_chart(alt.Chart(dist).mark_bar().encode(x=alt.X("label:N", title="Answer"),
                                                             y=alt.Y("share:Q", title="Share of labels"))
                           .properties(title="Label distribution", description="Bar chart of the share of each answer: "
                                       + "; ".join(f"{r['label']}: {r['share']:.0%}" for r in dist.to_dict("records"))),
                           key="mon_distribution")
        st.markdown(f"**Agreement on this question** ({rep['n_items']} items, {rep['n_labels']} labels, "
                    f"{rep['n_annotators']} annotators)")
        rows = monitor.report_rows(rep)
        keys = {label(k): k for k in STATISTIC_HELP}
        meanings = "\n".join(f"- **{r['Statistic']}**: {STATISTIC_HELP[keys[r['Statistic']]]}"
                             for r in rows if r["Statistic"] in keys)
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="mon_report",
                     column_config={"Statistic": st.column_config.TextColumn(width="large", help=meanings or None),
                                    "Why undefined": st.column_config.TextColumn(width="large")})
        for note in rep.get("notes", []):
            st.caption(md_escape(view.readable_note(note)))

    st.subheader("Disagreements")
    questions = view.disagreement_questions(conn, sid)
    if not questions:
        st.caption("No disagreement so far.")
    else:
        qf = st.multiselect("Filter by question", questions, key="mon_dis_filter")
        part = view.disagreement_page(conn, sid, questions=qf, page=st.session_state.get("mon_dis_page", 1))
        shown = part["rows"]
        st.dataframe(pd.DataFrame([{k: v for k, v in r.items() if k not in ("item", "full")} for r in shown]),
                     hide_index=True, key="mon_disagreements",
                     column_config={
                         "Instruction": st.column_config.TextColumn(width="medium"),
                         "Passage": st.column_config.TextColumn(width="medium"),
                         "Votes": st.column_config.TextColumn(help="each answer and how many annotators gave it"),
                         "Disagreement": st.column_config.NumberColumn(format="%.2f", help=STATISTIC_HELP["disagreement"]),
                     })
        page_picker(part, "disagreements", key="mon_dis_page")
        pick = st.selectbox("Read an item in full", list(range(len(shown))), key="mon_dis_item",
                            format_func=lambda i: f"{shown[i]['Question']}: {shown[i]['Instruction'][:60]}")
        if pick is not None and pick < len(shown):
            full = shown[pick]["full"]
            literal("Instruction", full["instruction"] or "—")
            literal("Query", full["query"] or "—")
            if full["passage"]:
                literal(f"Passage ({full['document']})", full["passage"])
            for doc_id, text in full["voted"]:
                literal(f"Voted passage {doc_id}", text or "— not in the corpus")
            st.caption(md_escape(f"Instance {full['instance']}; votes: {shown[pick]['Votes']}"))

    st.subheader("Reasons")
    if not monitor.reasons(conn, sid):
        st.caption("No reason given so far.")
    else:
        text = st.text_input("Filter reasons containing", key="mon_reason_filter")
        part = view.reason_page(conn, sid, contains=text, page=st.session_state.get("mon_reason_page", 1))
        if not part["total"]:
            st.caption(md_escape(f"No reason contains “{text}”."))
        st.dataframe(pd.DataFrame(part["rows"]), hide_index=True, key="mon_reasons",
                     column_config={"Reason": st.column_config.TextColumn(width="medium"),
                                    "Instruction": st.column_config.TextColumn(width="large")})
        page_picker(part, "reasons", key="mon_reason_page")
