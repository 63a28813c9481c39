"""Monitor a study (lead): Table 7 view, extrapolation, annotators, agreement charts, disagreements, reasons."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from annotation import monitor
from annotation.glossary import label
from annotation.scale_summary import scale_summary
from annotation.qrels_builds import study_completeness
from ui.markdown import md_escape
from storage import studies
from ui.session import db, pick_study, require_role

require_role("lead")
conn = studies.share_reads(db())  # read-only page: the study's labels are read once per run
st.title("Monitor")
study = pick_study(conn, key="mon_study")
sid = study["id"]
n_boot = st.select_slider("Bootstrap replicates for the intervals", [0, 200, 1000], value=200, key="mon_boot")
if st.button("Refresh", key="mon_refresh"):
    st.rerun()

done = study_completeness(conn, sid)
st.caption(f"Completeness: {done['labelled']} of {done['planned']} planned labels"
           + ("" if done["complete"] else " (unfinished: missing labels count as unresolved in exports)"))
st.subheader("Human verification (InstructIR Table 7)" if "relevance" not in study["questions"]
             else "Re-judging agreement (Randolph, Fleiss, percent agreement)")
t7 = pd.DataFrame(monitor.table7(conn, sid, n_boot=n_boot, seed=study["settings"].get("seed", 0)))
st.dataframe(t7, hide_index=True, key="mon_table7")

extra = monitor.extrapolation(conn, sid)
if extra:
    st.subheader("Extrapolation to the whole benchmark (Wilson 95%)")
    st.dataframe(pd.DataFrame([{"estimate": k.replace("_", " "), **v} for k, v in extra.items()]), hide_index=True,
                 key="mon_extra")

scales = scale_summary(conn, sid, n_boot=n_boot)
if not scales.empty:
    st.subheader("Mean scores (IFIR Table 2)")
    st.dataframe(scales, hide_index=True, key="mon_scales")

st.subheader("Annotators")
st.dataframe(pd.DataFrame(monitor.annotator_table(conn, sid)), hide_index=True, key="mon_annotators")

question = st.selectbox("Question", study["questions"], key="mon_question", format_func=label)
rep = monitor.question_report(conn, sid, question)
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
        defined = base.transform_filter("isValid(datum.kappa)").mark_rect().encode(
            color=alt.Color("kappa:Q", scale=alt.Scale(domain=[-1, 1], scheme="redblue"), title="Cohen kappa"))
        missing = base.transform_filter("!isValid(datum.kappa)").mark_rect(color="#e6e6e6")
        numbers = base.mark_text(fontSize=14).encode(
            text="text:N",
            color=alt.condition("isValid(datum.kappa) && abs(datum.kappa) > 0.6", alt.value("white"), alt.value("black")),
        )
        heat = (missing + defined + numbers).properties(title="Pairwise Cohen kappa", height=alt.Step(36))
        left.altair_chart(heat, key="mon_heatmap")
    dist = pd.DataFrame([{"label": k, "share": v} for k, v in rep["label_shares"].items()])
    right.altair_chart(alt.Chart(dist).mark_bar().encode(x=alt.X("label:N", title="Answer"),
                                                         y=alt.Y("share:Q", title="Share of labels"))
                       .properties(title="Label distribution"), key="mon_distribution")
    st.markdown(f"**Agreement on this question** ({rep['n_items']} items, {rep['n_labels']} labels, "
                f"{rep['n_annotators']} annotators)")
    st.dataframe(pd.DataFrame(monitor.report_rows(rep)), hide_index=True, key="mon_report")
    for note in rep.get("notes", []):
        st.caption(md_escape(note))

st.subheader("Disagreements")
dis = pd.DataFrame(monitor.disagreements(conn, sid))
if dis.empty:
    st.caption("No disagreement so far.")
else:
    qf = st.multiselect("Filter by question", sorted(dis["question"].unique()), key="mon_dis_filter")
    st.dataframe(dis[dis["question"].isin(qf)] if qf else dis, hide_index=True, key="mon_disagreements")

st.subheader("Reasons")
rs = pd.DataFrame(monitor.reasons(conn, sid))
if rs.empty:
    st.caption("No reason given so far.")
else:
    text = st.text_input("Filter reasons containing", key="mon_reason_filter")
    shown = rs[rs["reason"].str.contains(text, case=False, regex=False)] if text else rs
    st.dataframe(shown, hide_index=True, key="mon_reasons")
