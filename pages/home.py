"""Projects (the lead's landing page): every study with its progress, the projects with their
counts, and import from the browser (same validation as the CLI)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from annotation.monitoring.overview import study_progress
from formats import readers as importers
from formats.readers.upload import materialize
from annotation.imports import Upload, add_files, import_files
from storage import projects, studies
from storage.errors import IFJudgeError
from annotation.glossary import label, page_message
from annotation.questions.builtin import BUILTIN_QUESTIONS
from ui.markdown import md_escape
from ui.session import db, require_role

NEXT_AFTER_IMPORT = ("Next step: set up a study under Set up a study (the questions follow the project's benchmark), "
                     "or run retrievers on the published qrels under Evaluate.")

require_role("lead")
conn = db()
st.title("Projects")

st.subheader("Studies")
overview = study_progress(conn)
if overview:
    st.dataframe(
        pd.DataFrame([{  # progress first: it stays in view on a 1280 px screen
            "Study": f"{r['id']}: {r['study']}",
            "Done": 100 * r["share_done"] if r["share_done"] is not None else 0.0,
            "Answers": f"{r['answers_given']} of {r['answers_needed']}", "Awaiting labels": r["awaiting_labels"],
            "Ties": r["ties"],
            "Project": r["project"], "Annotators": r["annotators"],
            "Questions": ", ".join(BUILTIN_QUESTIONS[q].short if q in BUILTIN_QUESTIONS else label(q) for q in r["questions"]),
        } for r in overview]),
        hide_index=True, key="studies_overview",
        column_config={
            "Study": st.column_config.TextColumn(width=185),
            "Done": st.column_config.ProgressColumn("Done", format="%.0f%%", min_value=0, max_value=100, width=70,
                                                    help="answers given / answers needed (0% when nothing is assigned)"),
            "Answers": st.column_config.TextColumn(width=90, help="answers given of answers needed (one per item and "
                                                                 "annotator, check items included)"),
            "Awaiting labels": st.column_config.NumberColumn(
                width=100, help="items some of whose planned labels are not given yet: more labels may decide them"),
            "Ties": st.column_config.NumberColumn(
                width=40, help="items with every planned label given and no majority: a lead settles them under "
                               "Adjudicate"),
            "Project": st.column_config.TextColumn(width=105),
            "Annotators": st.column_config.NumberColumn(width=75),
            "Questions": st.column_config.TextColumn(width=155, help="Valid: Q1 valid instruction; Natural: Q2 natural "
                                                                   "instruction; Passage: Q3 most natural passage"),
        },
    )
    if any(r["share_done"] == 1 for r in overview):
        st.caption("Next step for a finished study: settle its disagreements under Adjudicate, then export the "
                   "validated data under Export and re-run retrievers on it under Evaluate.")
else:
    st.info("No study yet: set one up under Set up a study.")

st.subheader("Projects")
projects_slot = st.container()  # filled last: an import below shows up in it at once

st.subheader("Import")
flash = st.session_state.pop("import_flash", None)
if flash:  # what the last import did (the form below is empty again, ready for the next one)
    for kind, text in flash:
        getattr(st, kind)(text)
upload_round = st.session_state.setdefault("import_round", 0)  # a new uploader (empty) after each import
with st.form("import_form", enter_to_submit=False):
    name = st.text_input("Project name", key="import_project")
    fmt = st.selectbox("Format", importers.CHOICES, key="import_format",
                       help="auto recognises the published layouts of InstructIR, FollowIR, InfoSearch, IFIR, MTEB, BEIR and TREC")
    files = st.file_uploader(
        "Files: one .zip of the benchmark folder (keeps folders such as qrels_og/ and qrels_changed/), "
        "or the files themselves (keep their names: corpus.jsonl, queries.jsonl, qrels .tsv ...)",
        accept_multiple_files=True, key=f"import_files:{upload_round}",
    )
    c1, c2 = st.columns(2)
    qrels_dir = c1.text_input("Folder of loose .tsv qrels files (BEIR: qrels)", value="qrels", key="import_qrels_dir")
    subset = c2.text_input("Subset (optional)", key="import_subset",
                           help="the part of the release these files are: an IFIR domain (fiqa, ...) or an InfoSearch "
                                "dimension (Language, ...), when the file names do not say it")
    go = st.form_submit_button("Import")
if go:
    if not name.strip():
        st.error("Project name: please give the project a name.")
    elif not files:
        st.error("Files: please choose the files to import.")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            # what is said and stored names the uploaded files, never this temporary folder
            upload = Upload(Path(tmp), files[0].name if len(files) == 1 and files[0].name.lower().endswith(".zip") else "")
            try:
                root = materialize([(f.name, f.getvalue()) for f in files], Path(tmp), qrels_dir=qrels_dir)
                result = import_files(conn, name.strip(), [root], fmt=fmt, upload=upload, subset=subset.strip() or None)
            except IFJudgeError as exc:  # the page names its own boxes, never a command-line option
                st.error(md_escape(page_message(upload.shown(str(exc)))))
            else:
                counts = result.counts
                said = ", ".join(f"{v} {label(k).lower()}" for k, v in counts.items() if v)
                empty = [label(k).lower() for k in ("documents", "queries", "instances") if k in counts and not counts[k]]
                out = []
                where = md_escape(f"{name.strip()} from {', '.join(f.name for f in files)}")
                if empty:  # partial data is said out loud, not under a green success
                    out.append(("warning", f"Imported into {where}: {said}. No {' and no '.join(empty)} "
                                           "in these files: studies and evaluations need them; import them before setting "
                                           "up a study."))
                else:
                    out.append(("success", f"Imported into {where}: {said}"))
                if result.detected:
                    out.append(("caption", md_escape(f"Recognised as {result.format}: {result.detected}")))
                out += [("warning", md_escape(page_message(note))) for note in result.notes]
                out.append(("caption", NEXT_AFTER_IMPORT))
                st.session_state["import_flash"] = out
                st.session_state["import_round"] = upload_round + 1
                st.rerun()


st.markdown("**Add to an existing project**")
st.caption("A further file of its layout, e.g. the corpus a release ships apart (InstructIR's corpus.jsonl). "
           "Nothing is added unless every judged document is then in the corpus.")
stored = [p["name"] for p in projects.list_projects(conn)]
with st.form("add_form"):
    add_to = st.selectbox("Existing project", stored, key="add_project", index=None,
                          placeholder="choose a project" if stored else "no project yet")
    role = st.selectbox("What to add", importers.PART_ROLES, key="add_role",
                        help="corpus: corpus.jsonl ({_id, title, text}); qrels: a qrels .tsv, .jsonl or TREC file; "
                             "top_ranked: top_ranked.jsonl (candidate lists)")
    add_version = st.selectbox("Qrels version (qrels only)", ["original", "changed", "reversed"], key="add_version")
    add_subset = st.text_input("Subset whose own corpus this is (corpus only; optional)", key="add_subset")
    add_files_up = st.file_uploader("Files", accept_multiple_files=True, key="add_files")
    add_go = st.form_submit_button("Add")
if add_go:
    if not add_to:
        st.error("Existing project: please choose the project to add to.")
    elif not add_files_up:
        st.error("Files: please choose the files to add.")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            upload = Upload(Path(tmp))
            try:
                root = materialize([(f.name, f.getvalue()) for f in add_files_up], Path(tmp), qrels_dir="")
                added = add_files(conn, add_to, role, sorted(p for p in root.iterdir() if p.is_file()),
                                  subset=add_subset.strip() or None, version=add_version, upload=upload)
            except IFJudgeError as exc:
                st.error(md_escape(upload.shown(str(exc))))
            else:
                st.success(f"Added to {md_escape(add_to)}: " + ", ".join(
                    f"{v} {label(k).lower()}" for k, v in added.counts.items() if v))


def show_projects() -> None:
    rows = []
    for p in projects.list_projects(conn):
        c = p["counts"]
        rows.append({
            "Project": p["name"], "Kind": p["kind"], "Instances": c["instances"], "Groups": c["groups"],
            "Queries": c["queries"], "Documents": c["documents"],
            **{label(k): v for k, v in c.items() if k.startswith("qrels_")},
            "Studies": len(studies.list_studies(conn, p["id"])),
        })
    if rows:
        st.dataframe(pd.DataFrame(rows).fillna(0), hide_index=True, key="projects_table")
    else:
        st.info("No project yet: import one below.")


with projects_slot:
    show_projects()
