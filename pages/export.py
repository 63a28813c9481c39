"""Export (lead): validated qrels and layouts, JSONL with provenance, the report — as downloads.

Only the formats this project can be written in are offered, each with what it holds
(:func:`exports.offered.export_formats`). The validated versions are built only from the studies
the lead picks (no study is chosen by default); the rules shown are those of the picked studies'
questions; an unfinished study asks for a confirmation, and unresolved judgments are listed and
block the export until the lead chooses how to treat them. The export is built when the lead
presses "Build the export" (a report runs 1,000 bootstrap replicates), not on every rerun; what
was built is offered for download until an input changes. Messages name this page's controls.
"""
from __future__ import annotations

import re
import tempfile

import pandas as pd
import streamlit as st

from annotation.glossary import label, page_message, table
from annotation.outcomes.items import ValidationRules
from annotation.outcomes.qrels_builds import UNRESOLVED_POLICIES, IncompleteStudy, UnresolvedJudgments, store_versions
from annotation.questions.study import study_questions
from exports.archive import zip_folder
from exports.offered import export_formats
from exports.report import BOOTSTRAP as REPORT_BOOTSTRAP
from exports.validated import export_project, left_out_lines, study_choices
from storage import projects, studies
from storage.errors import IFJudgeError
from ui.markdown import md_escape
from ui.session import db, pick_project, require_role

CHOOSE = "(choose)"
POLICY_WORDS = {"keep-published": "keep the published judgment", "drop": "leave it out",
                "relevant": "make it relevant (document judgments)", "not-relevant": "make it not relevant (document judgments)"}
REPORT_FILES = {"report.md": ("Markdown", "text/markdown"), "report.csv": ("CSV", "text/csv"),
                "report.tex": ("LaTeX", "application/x-tex")}

user = require_role("lead")
conn = db()
st.title("Export")
proj = pick_project(conn, key="exp_project")
project = proj["name"]

# which formats this project can be written in: checked once per project and import (a dry run of each writer)
offer_key = (proj["id"], tuple(sorted(projects.project_counts(conn, proj["id"]).items())))
if st.session_state.get("exp_offer", (None,))[0] != offer_key:
    st.session_state["exp_offer"] = (offer_key, export_formats(conn, proj))
formats = st.session_state["exp_offer"][1]
offered = {f["format"]: f for f in formats if f["offered"]}

choices = {c["id"]: c for c in study_choices(conn, proj)}
picked = st.multiselect(
    "Studies to build the validated qrels from (one study or several)", list(choices), default=[], key="exp_studies",
    format_func=lambda i: f"{i}: {choices[i]['name']} ({choices[i]['labelled']}/{choices[i]['planned']} labels)",
    help="Nothing is chosen by default: without a study only the published qrels are exported.",
)
if picked:
    st.dataframe(pd.DataFrame(table([{k: choices[i][k] for k in ("id", "name", "kind", "labelled", "planned", "complete")}
                                     for i in picked])), hide_index=True, key="exp_study_table")
unfinished = [choices[i] for i in picked if not choices[i]["complete"]]
allow_incomplete = False
if unfinished:
    names = "; ".join(f"study {s['id']} “{s['name']}” ({s['labelled']} of {s['planned']} labels given)" for s in unfinished)
    st.warning(md_escape(f"Unfinished studies: {names}. Their missing labels count as unresolved."))
    allow_incomplete = st.checkbox("I confirm: export from unfinished studies", key="exp_allow_incomplete")

fmt = st.selectbox("Format", list(offered), key="exp_format", format_func=lambda f: f"{offered[f]['label']} ({f})",
                   help="\n".join(f"- **{f['label']}**: {f['holds']}" for f in offered.values()))
st.caption(md_escape(f"{offered[fmt]['label']}: {offered[fmt]['holds']}."))
cannot = [f for f in formats if not f["offered"]]
if cannot:
    with st.expander(f"Formats this project cannot be written in ({len(cannot)})"):
        for f in cannot:
            st.caption(md_escape(f"{f['label']}: {page_message(f['why'])}"))
if fmt == "report":
    st.caption("The report (Markdown, CSV, LaTeX) opens with the verdict, then InstructIR's Table 7, the "
               "benchmark-wide estimates (design-aware 95% intervals; the naive independent Wilson interval only as a "
               "comparison column) and whether the leaderboard changes on the validated qrels (the project's stored "
               f"evaluations; {REPORT_BOOTSTRAP:,} bootstrap replicates over queries).")

# the rules of the questions the picked studies ask (none without a study): each question names the
# switch of its rule (Question.drop_rule) and IFIR's passage match its thresholds (Question.qrels)
declared = [q for i in picked for q in study_questions(studies.get_study(conn, i)).values()]
switches = {q.drop_rule for q in declared if q.drop_rule}
match_rule = any(q.qrels == "match-score" for q in declared)
rules = ValidationRules()
policy = CHOOSE
if picked:
    c1, c2, c3 = st.columns(3)
    rules = ValidationRules(
        drop_invalid=(c1.checkbox("Drop invalid instances", True, key="exp_drop_invalid")
                      if "drop_invalid" in switches else True),
        drop_unnatural=(c2.checkbox("Drop unnatural instances", True, key="exp_drop_unnatural")
                        if "drop_unnatural" in switches else True),
        drop_best_passage_mismatch=(c3.checkbox("Drop best-passage mismatches", False, key="exp_drop_mismatch")
                                    if "drop_best_passage_mismatch" in switches else False),
        match_gold_max=(c1.number_input("Gold passage not relevant at match score <=", 0, 5, 2, key="exp_match_gold_max",
                                        help="IFIR passage match: median of the 1-5 labels (or the lead's decision); "
                                             "0: never") if match_rule else 2),
        match_excluded_min=(c2.number_input("Excluded passage relevant at match score >=", 1, 6, 4,
                                            key="exp_match_excluded_min", help="6: never")
                            if match_rule else 4),
    )
    policy = st.selectbox("Unresolved judgments (ties, single labels, no labels)", [CHOOSE, *UNRESOLVED_POLICIES],
                          key="exp_unresolved", format_func=lambda p: POLICY_WORDS.get(p, p),
                          help="What an unresolved judgment becomes in the validated qrels: keep the published "
                               "judgment; leave it out (instance validation: the instance); relevant / not relevant "
                               "(document judgments only).")
unresolved = None if policy == CHOOSE else policy

if unfinished and not allow_incomplete:
    st.info("Tick “I confirm: export from unfinished studies” above to build the validated qrels.")
    st.stop()
if fmt == "report" and not picked:
    st.info("The report describes a study: choose one in the “Studies to build the validated qrels from” box above.")
    st.stop()

# what the export depends on: a built export is offered until one of these changes
inputs = repr((proj["id"], tuple(picked), fmt, rules, unresolved, allow_incomplete))
built = st.session_state.get("exp_built")
if built is not None and built["inputs"] != inputs:
    st.session_state.pop("exp_built", None)
    built = None
    st.caption("The choices changed since the last build: build the export again.")
if st.button("Build the export", key="exp_build", type="primary",
             help="Writes the files of the chosen format (a report computes bootstrap intervals: this may take a while)"):
    built = {"inputs": inputs}
    try:
        with st.spinner(f"Building the {offered[fmt]['label']} export..."), tempfile.TemporaryDirectory() as tmp:
            manifest = export_project(conn, proj, fmt, tmp, study_ids=picked, rules=rules, unresolved=unresolved,
                                      allow_incomplete=allow_incomplete)
            # the page keeps only the files it shows or offers alone
            archive, files = zip_folder(tmp, keep=lambda name: name.rsplit("/", 1)[-1] in REPORT_FILES
                                        or name == "qrels.validated.txt")
    except UnresolvedJudgments as exc:
        built["error"] = page_message(str(exc)) + " above (listed below)."
        built["unresolved_rows"] = exc.rows
    except (IncompleteStudy, IFJudgeError) as exc:
        built["error"] = page_message(str(exc))
    else:
        built.update(manifest=manifest, files=files, zip=archive)
    st.session_state["exp_built"] = built
if built is None:
    st.caption("Nothing built yet for these choices.")
    st.stop()
if "error" in built:
    st.error(md_escape(built["error"]))
    if built.get("unresolved_rows"):
        st.dataframe(pd.DataFrame(table([{k: r.get(k) for k in ("qid", "doc_id", "published", "reason", "label_counts")}
                                         for r in built["unresolved_rows"]])),
                     hide_index=True, key="exp_unresolved_table")
    st.stop()

manifest, files = built["manifest"], built["files"]
st.download_button(f"Download {offered[fmt]['label']} export (zip)", built["zip"], file_name=f"{project}-{fmt}.zip",
                   key="exp_zip", type="primary")
if fmt == "trec" and "qrels.validated.txt" in files:
    st.download_button("Download validated TREC qrels", files["qrels.validated.txt"], file_name=f"{project}-validated.qrels",
                       key="exp_trec_validated")
n_files = len(manifest["files"])
st.markdown(f"**What the export holds** ({n_files} file{'s' if n_files != 1 else ''} and a manifest, "
            f"format {fmt}" + (", built from the published qrels only)" if not manifest["studies"] else ")"))
if manifest["studies"]:
    st.caption("Built from: " + "; ".join(f"study {s['id']} ({md_escape(s['name'])}): {s['labelled']}/{s['planned']} labels"
                                          for s in manifest["studies"]))
st.dataframe(pd.DataFrame([{"What": label(k), "Count": v} for k, v in manifest["counts"].items()]),
             hide_index=True, key="exp_counts")
for entry, line in zip(manifest.get("left_out", []), left_out_lines(manifest)):  # with counts, as the manifest has them
    (st.info if entry.get("by") == "validation" else st.warning)(md_escape(line))
for note in manifest.get("notes", []):
    st.caption(md_escape(page_message(note)))
reports = sorted(n for n in files if n.endswith("report.md"))
for name in reports:  # the report as formatted text (its names are escaped: they are data), and its three files
    folder = name[: -len("report.md")]
    with st.container(border=True, key=f"exp_report:{name}"):
        cols = st.columns(len(REPORT_FILES))
        for col, (file, (kind, mime)) in zip(cols, REPORT_FILES.items()):
            if folder + file in files:
                col.download_button(f"Download {folder}{file} ({kind})", files[folder + file],
                                    file_name=f"{project}-{folder.replace('/', '-')}{file}", mime=mime,
                                    key=f"exp_dl:{folder}{file}")
        # its headings two levels down: the page's own headings stay above it
        st.markdown(re.sub(r"^(#{1,4}) ", r"\1## ", files[name].decode("utf-8"), flags=re.M))
derived = {v: i for v, i in manifest["qrels_versions"].items() if i["built_from"] != "published"}
for v, info in derived.items():
    st.caption(f"{v}: {info['counts']['judgments']} judgments, {info['counts']['left_out']} left out, "
               f"{info['counts']['unresolved']} unresolved ({POLICY_WORDS.get(unresolved, 'none')})")
    if info["unresolved"]:
        st.dataframe(pd.DataFrame(table(info["unresolved"])), hide_index=True, key=f"exp_unres_{v}")
if derived and st.button("Store the validated qrels in the project (for evaluation)", key="exp_store"):
    stored = store_versions(conn, proj, picked, rules=rules, unresolved=unresolved, allow_incomplete=allow_incomplete,
                            created_by=user["name"])
    for v, (_, b) in stored.items():
        st.success(f"Stored {b.counts['judgments']} {v} qrels rows: evaluate on them under Evaluate.")
