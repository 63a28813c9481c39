"""Narratives (FollowIR, Weller et al. 2024, §3): a lead starts the re-judging of the PUBLISHED
changed instruction (validates the published ``changed`` qrels: ``changed-validated``); an expert
makes a query's narrative more specific or adds a negation, each save a new version whose
re-judging builds ``edited-validated`` (a new instruction version); the lead reads how many flipped
and stores the qrels."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from annotation.narratives import versions as narrative_versions, rejudging
from annotation.outcomes import qrels_builds
from annotation.narratives.diff import diff_counts, diff_rows, word_diff
from ui.markdown import diff_markdown, md_escape
from storage import narratives as store
from storage import projects, studies, users
from storage.errors import IFJudgeError
from annotation.glossary import SCALES, UNDEFINED, page_message, when
from ui.keys import keep_keys_on_item
from ui.session import db, open_on_last_project, remember_project, require_role
from ui.text import literal

user = require_role("expert", "lead")
conn = db()
keep_keys_on_item()
st.title("Narratives")

plist = store.projects_with_narratives(conn)
if not plist:
    st.info("No project has narratives yet: import a FollowIR project or TREC topics with narratives.")
    st.stop()
names = [p["name"] for p in plist]
open_on_last_project(conn, "nar_project", {p["id"]: p["name"] for p in plist})
project = st.selectbox("Project", names, key="nar_project", label_visibility="collapsed" if len(names) == 1 else "visible")
proj = next(p for p in plist if p["name"] == project)
pid = proj["id"]
remember_project(conn, pid)
qtext = projects.queries(conn, pid)
query_id = st.selectbox("Query", store.narrative_queries(conn, pid), key=f"nar_query:{pid}",
                        format_func=lambda q: f"{q}: {qtext.get(q, '')}")
state = narrative_versions.narrative_state(conn, proj, query_id)
root, newest, versions = state["original"], state["newest"], state["versions"]

flash = st.session_state.pop("nar_flash", None)
if flash:
    (st.success if flash[0] == "ok" else st.info)(flash[1])

literal("Query", state["query"])
literal(f"Original narrative (v1, {root['author']}, {when(root['created_at'])})", root["text"])

n_rel = len(state["relevant"])
st.subheader(f"Documents relevant under the original narrative: {n_rel}")
for d in state["relevant"]:
    doc = state["documents"].get(d)
    with st.expander(md_escape(f"{d}: {doc['title'] if doc else '(not in the corpus)'}")):
        st.text(doc["text"] if doc else "", width="stretch")

st.subheader("Versions")
st.dataframe(
    pd.DataFrame([
        {"version": f"v{v['number']}" + (" (original)" if v["number"] == 1 else ""),
         "started from": f"v{v['parent_number']}" if v["parent_number"] else UNDEFINED, "author": v["author"],
         "saved": when(v["created_at"]), "tokens added": v["added"], "tokens removed": v["removed"]}
        for v in versions
    ]),
    hide_index=True, key=f"nar_versions:{pid}:{query_id}",
)
by_id = {v["id"]: v for v in versions}
shown = st.selectbox("Read a version", list(reversed(by_id)), key=f"nar_read:{pid}:{query_id}:{newest['id']}",
                     format_func=lambda i: f"v{by_id[i]['number']} by {by_id[i]['author']} ({when(by_id[i]['created_at'])})")
with st.expander(f"Version v{by_id[shown]['number']}", expanded=False):
    st.text(by_id[shown]["text"], width="stretch")
    st.caption("Against the original narrative")
    st.markdown(diff_markdown(word_diff(root["text"], by_id[shown]["text"])))

st.subheader("Edit")
left, right = st.columns([3, 2])
with right:
    st.info(narrative_versions.GUIDANCE)
    if n_rel:
        st.caption(f"{n_rel} documents are relevant now: aim for about {n_rel // 2 or 1} of them to become non-relevant.")
with left:
    base_id = st.selectbox("Start from", list(reversed(by_id)), key=f"nar_base:{pid}:{query_id}:{newest['id']}",
                           format_func=lambda i: f"v{by_id[i]['number']} by {by_id[i]['author']}"
                           + (" (newest)" if i == newest["id"] else ""))
    text = st.text_area("Modified narrative", by_id[base_id]["text"], height=180,
                        key=f"nar_text:{pid}:{query_id}:{newest['id']}:{base_id}")
    spans = word_diff(root["text"], text)
    counts = diff_counts(spans)
    st.caption(f"Changes against the original narrative: {counts['added']} tokens added (green), "
               f"{counts['removed']} removed (red, struck through)")
    with st.container(border=True, key="nar_diff"):
        st.markdown(diff_markdown(spans))
    with st.expander("Changes as a table"):
        st.dataframe(pd.DataFrame(diff_rows(spans), columns=["change", "text"]), hide_index=True,
                     key=f"nar_diff_table:{pid}:{query_id}")

study_id = store.rejudge_study_id(conn, pid)
study = studies.get_study(conn, study_id) if study_id else None
settings = study["settings"] if study else {}
st.markdown("**Re-judging**" + (f" (study {study_id})" if study else " (a re-judging study is created on the first save)"))
pool = sorted({u["name"] for u in users.list_users(conn, "annotator")} | set(study["annotators"] if study else []))
c1, c2, c3, c4 = st.columns([4, 1, 1, 2])
chosen = c1.multiselect("Who re-judges this save", pool, default=[], key=f"nar_annotators:{pid}",
                        help="who re-judges the documents of the saved version (nobody is chosen for you)")
overlap = c2.number_input("Per document", 1, 50, int(settings.get("overlap", 3)), key=f"nar_overlap:{pid}")
controls = c3.number_input("Controls", 0, 1000, 0, key=f"nar_controls:{pid}",
                           help="also re-judge this many originally non-relevant documents (seeded sample)")
scale = c4.radio("Relevance", ["binary", "graded"], horizontal=True, key=f"nar_scale:{pid}", format_func=SCALES.get,
                 index=["binary", "graded"].index(settings.get("relevance", "binary")), disabled=study is not None)

if st.button("Save as a new version", type="primary", key=f"nar_save:{pid}:{query_id}"):
    try:
        result = narrative_versions.save_narrative(
            conn, project=proj, query_id=query_id, text=text, author=user["name"], base_version_id=base_id,
            expected_newest_id=newest["id"], annotators=chosen, overlap=int(overlap), controls=int(controls),
            relevance=None if study else scale,
        )
    except IFJudgeError as exc:
        st.error(md_escape(page_message(str(exc))))
    else:
        if result["created"]:
            number = store.version_numbers(conn, pid).get(result["version_id"], "?")
            st.session_state["nar_flash"] = ("ok", (
                f"Saved version v{number} of query {query_id}: {result['items']} documents to re-judge "
                f"({result['controls']} controls), {result['assignments']} assignments in study {result['study_id']}."
                + "".join(f" Note: {n}." for n in result["notes"])))
        else:
            st.session_state["nar_flash"] = ("info", f"Nothing saved: {result['reason']}.")
        st.rerun()

if user["role"] == "lead":
    st.subheader("Re-judge the published changed instruction")
    st.caption("Validates the published changed qrels: the documents relevant under the original narrative (and "
               "optional controls) are judged under the changed instruction as published, with no edit. The outcome "
               "is qrels changed-validated, compared with the published changed qrels judgment by judgment.")
    pub_sid = store.rejudge_study_id(conn, pid, store.PUBLISHED_PURPOSE)
    started = set(store.round_version_ids(conn, pub_sid)) if pub_sid else set()
    open_queries = []
    for q in store.narrative_queries(conn, pid):
        pv = narrative_versions.published_changed_version(store.versions(conn, pid, q))
        if pv is not None and pv["id"] not in started:
            open_queries.append(q)
    if not open_queries:
        st.info("Every query with a published changed instruction is being re-judged"
                + (f" (study {pub_sid})." if pub_sid else "; this project has none."))
    else:
        with st.form(key=f"nar_pub_form:{pid}", enter_to_submit=False):
            pub_queries = st.multiselect("Queries", open_queries, default=open_queries, key=f"nar_pub_queries:{pid}")
            p1, p2, p3 = st.columns([4, 1, 1])
            pub_annotators = p1.multiselect("Annotators", pool, default=[], key=f"nar_pub_annotators:{pid}",
                                            help="who re-judges (nobody is chosen for you)")
            pub_overlap = p2.number_input("Per document", 1, 50, 3, key=f"nar_pub_overlap:{pid}")
            pub_controls = p3.number_input("Controls", 0, 1000, 0, key=f"nar_pub_controls:{pid}",
                                           help="per query, also judge this many originally non-relevant documents "
                                                "(seeded); reported beside the qrels, never written into them")
            start_published = st.form_submit_button("Start re-judging the published instruction")
        if start_published:
            try:
                res = narrative_versions.rejudge_published(
                    conn, project=proj, author=user["name"], annotators=pub_annotators, query_ids=pub_queries,
                    overlap=int(pub_overlap), controls=int(pub_controls))
            except IFJudgeError as exc:
                st.error(md_escape(page_message(str(exc))))
            else:
                st.session_state["nar_flash"] = ("ok", (
                    f"Re-judging of the published changed instruction started in study {res['study_id']}: "
                    f"{len(res['queries'])} queries, {res['items']} documents to judge ({res['controls']} controls), "
                    f"{res['assignments']} assignments." + "".join(f" Note: {n}." for n in res["notes"])))
                st.rerun()

st.subheader("Re-judging results")
have = [k for k in rejudging.KINDS if store.rejudge_study_id(conn, pid, rejudging.PURPOSES[k]) is not None]
if not have:
    st.info("No re-judging yet: start the re-judging of the published changed instruction, or save a modified "
            "narrative.")
    st.stop()
KIND_LABELS = {"published": "the published changed instruction (changed-validated)",
               "edit": "expert edits: a new instruction version (edited-validated)"}
kind = st.radio("Re-judging of", have, format_func=KIND_LABELS.get, horizontal=True, key=f"nar_kind:{pid}")
summary = rejudging.rejudge_summary(conn, projects.get_project_by_id(conn, pid), kind=kind)
numbers = store.version_numbers(conn, pid)  # versions as a lead reads them: per query, v1 the original


def pct(v):
    """A share in words; an undefined one (0/0) as "—" (the reason is in the column's or metric's help)."""
    return UNDEFINED if v is None else f"{v:.0%}"


ov = summary["overall"]
m1, m2, m3, m4 = st.columns(4)
m1.metric("Flipped to non-relevant", f"{ov['flipped']} of {ov['relevant_original']}", help="FollowIR aimed at about half")
m2.metric("Share flipped", pct(ov["share_flipped"]),
          help=f"{UNDEFINED} : undefined, no document was relevant under the original narrative" if ov["share_flipped"] is None else None)
m3.metric("Percent agreement", pct(ov["agreement"]["percent_agreement"]),
          help=ov["agreement"]["undefined_reason"] or "pairwise, over documents with two or more judgments")
m4.metric("Unresolved", ov["unresolved"], help="ties and documents without judgments keep their original relevance")
st.dataframe(
    pd.DataFrame([
        {"query": q["query_id"], "version": f"v{numbers.get(q['version_id'], '?')}", "relevant (original)": q["relevant_original"],
         "re-judged": q["rejudged"], "resolved": q["resolved"], "flipped": q["flipped"],
         "share flipped": pct(q["share_flipped"]), "unresolved": q["unresolved"], "ties": q["ties"],
         "adjudicated": q["adjudicated"], "controls": q["controls"],
         "controls judged relevant": q["controls_judged_relevant"],
         "percent agreement": pct(q["agreement"]["percent_agreement"]),
         **({"agree with published": q["agree_published"], "differ from published": q["disagree_published"]}
            if kind == "published" else {})}
        for q in summary["queries"]
    ]),
    hide_index=True, key=f"nar_summary:{kind}",
    column_config={
        "share flipped": st.column_config.TextColumn(help="— : undefined, no document was relevant under the original narrative"),
        "percent agreement": st.column_config.TextColumn(help="— : undefined, no document has two or more judgments"),
    },
)
docs = [d for d in summary["documents"] if d["query_id"] == query_id]
if docs:
    st.caption(f"Documents of {md_escape(query_id)} (newest round, version v{numbers.get(docs[0]['version_id'], '?')})")
    st.dataframe(
        pd.DataFrame([
            {"doc": d["doc_id"], "title": d["title"], "control": d["control"], "original": d["original"],
             **({"published changed": d["published"]} if kind == "published" else {}),
             "judgments": ", ".join(f"{a}: {v}" for a, v in sorted(d["labels"].items())),
             "adjudication": d["adjudication"] or UNDEFINED, "status": d["status"], "changed": d["changed"]}
            for d in docs
        ]),
        hide_index=True, key=f"nar_docs:{pid}:{query_id}:{kind}",
    )
if ov["controls"]:
    st.caption(f"Controls: {ov['controls_judged_relevant']} of {ov['controls']} control documents judged relevant under "
               + ("the published changed instruction" if kind == "published" else "the edited narratives")
               + " (reported here, never written into the qrels).")
if user["role"] == "lead":
    from annotation.outcomes.qrels_builds import UNRESOLVED_POLICIES

    policy = st.selectbox("Unresolved documents (ties, single labels)", ["(choose when there are some)", *UNRESOLVED_POLICIES],
                          key=f"nar_unresolved:{pid}")
    incomplete = st.checkbox("Use the round even if some assignments are not labelled yet", key=f"nar_incomplete:{pid}")
    version = rejudging.KIND_VERSIONS[kind]
    store_fn = qrels_builds.store_changed_qrels if kind == "published" else qrels_builds.store_edited_qrels
    if st.button(f"Store {version} qrels", key=f"nar_store:{pid}:{kind}"):
        try:
            stored = store_fn(conn, projects.get_project_by_id(conn, pid), allow_incomplete=incomplete, created_by=user["name"],
                              unresolved=None if policy.startswith("(") else policy)
        except IFJudgeError as exc:
            st.error(md_escape(page_message(str(exc))))
        else:
            st.success(f"Stored qrels '{stored['version']}': {stored['rows']} rows for {stored['queries']} re-judged "
                       f"queries ({stored['unresolved']} unresolved); {stored['changed']} differ from the "
                       + ("published changed label" if kind == "published" else "original label")
                       + "; the published qrels are unchanged.")
