"""Set up a study: questions, sample, annotators, seed, guidelines.

After a study is created the form is emptied (a second click cannot create a duplicate: it has no
annotator) and the page says in words what the study holds, with a warning for a question that
got no item."""
from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from annotation.judges import strata as judge_strata
from annotation.questions.study import GUIDELINES, INSTANCE_QUESTIONS
from annotation.instfol_study import create_instfol_study
from annotation.questions.own import questions_from_text
from annotation.glossary import SCALES, label, page_message
from annotation.studies import (StudySettings, creation_summary, create_study, domain_sizes, questions_for_kind,
                                 sample_overlap)
from storage import eval_runs, projects, users
from storage.errors import IFJudgeError
from ui.markdown import md_escape
from ui.session import db, open_on_last_project, remember_project, require_role

lead = require_role("lead")
conn = db()
st.title("Set up a study")
plist = projects.list_projects(conn)
if not plist:
    st.info("Import a project first.")
    st.stop()
d = StudySettings()
CREATED = "study_setup_created"
PENDING = "study_setup_pending"  # a submitted study whose sample overlaps another study: waits for the lead
JUDGE_PENDING = "study_setup_judge_pending"  # a judge-stratified study: its width shown, waits for the lead
KIND_NAMES = {"instructir": "InstructIR", "followir": "FollowIR", "ifir": "IFIR", "infosearch": "InfoSearch",
              "generic": "generic"}
RATES = {"same": "the same fraction in every domain", "table": "one fraction per domain (table)",
         "proportional": "Fraction of groups, in proportion to the domains' sizes",
         "neyman": "Fraction of groups, Neyman allocation (anticipated shares in the table)"}


def report_created(section: str) -> None:
    """The summary of the study created by the previous run in ``section`` (kept across the rerun
    that empties the form), once, where its form is."""
    if (st.session_state.get(CREATED) or (None, None))[0] != section:
        return
    _, summary = st.session_state.pop(CREATED)
    (st.warning if summary.warnings else st.success)(md_escape(summary.text))
    for w in summary.warnings:
        st.warning(w)
    if summary.notes:
        with st.expander(f"Notes from the sampler ({len(summary.notes)})"):
            st.text("\n".join(summary.notes))
    st.caption("Next step: the annotators sign in and find their screens under Annotate; watch progress and "
               "agreement under Monitor, settle disagreements under Adjudicate.")


# The forms' starting values, set through session state (not the widgets' own defaults) so that
# they can be set again after a creation: assigning a widget's state before it is drawn is what
# empties it in the browser too.
STUDY_FORM = {
    "study_name": "", "study_remaining": False,
    "study_fraction": float(d.group_fraction), "study_per_group": d.per_group, "study_overlap": d.overlap,
    "study_passages": d.passages, "study_seed": d.seed, "study_stratify": False, "study_subset_fraction": 0.1,
    "study_max_excluded": -1, "study_annotators": [], "study_goal": "", "study_check_share": 0.0, "study_rates": "same",
    "study_own_text": "", "study_own_format": "toml",
    **{f"study_guideline_{q}": GUIDELINES[q] for q in INSTANCE_QUESTIONS},
}
INSTFOL_FORM = {"instfol_top_k": 10, "instfol_fraction": 1.0, "instfol_per_group": 3, "instfol_overlap": d.overlap,
                "instfol_seed": d.seed, "instfol_annotators": []}
RESET = "study_setup_reset"
reset = st.session_state.pop(RESET, None)
for section, form in (("study", STUDY_FORM), ("instfol", INSTFOL_FORM)):
    for k, v in form.items():
        if section == reset or k not in st.session_state:
            st.session_state[k] = list(v) if isinstance(v, list) else v


def domain_rates(stratify: bool, rates: str, subset_fraction: float, table, names: list[str]) -> dict:
    """The StudySettings fields of the per-domain controls: none without sampling per domain, else the
    same fraction, the table's fractions, or an allocation of the Fraction of groups (Neyman: the
    table's anticipated shares)."""
    if not stratify:
        return {}
    if rates == "same":
        return {"subset_fraction": subset_fraction}
    if rates == "proportional":
        return {"allocation": "proportional"}
    column = "Fraction" if rates == "table" else "Anticipated share of Yes"
    values = {h: float(v) for h, v in zip(names, table[column])}
    if rates == "table":
        return {"domain_fractions": values}
    return {"allocation": "neyman", "anticipated_shares": values}


def create(request: dict) -> None:
    """Create the study of a submitted form (``create_study``'s arguments); an error is shown under the form."""
    try:
        result = create_study(conn, created_by=lead["name"], **request)
    except IFJudgeError as exc:
        st.error(md_escape(page_message(str(exc))))
    else:
        created("study", result)


def created(section: str, result: dict) -> None:
    """Remember the summary, empty the section's form on the next run (its widgets start over) and rerun."""
    st.session_state[CREATED] = (section, creation_summary(conn, result))
    st.session_state[RESET] = section
    st.rerun()


def own_questions_section() -> list:
    """The lead's own questions, typed as a TOML or YAML declaration (docs/questions.md): validated
    on every run, each shown as it will be asked, or the refusal naming the line and the field."""
    with st.expander("Your own questions", expanded=bool(st.session_state.get("study_own_text"))):
        st.caption("Declare questions of your own (Yes/No, a list of answers or a scale; per instance, per relevant "
                   "passage or about the target), in TOML or YAML. The study keeps the declaration as asked: later "
                   "edits change no stored label. Fields and two worked examples: docs/questions.md.")
        fmt = st.radio("Format", ["toml", "yaml"], horizontal=True, key="study_own_format", format_func=str.upper)
        text = st.text_area("Declaration", key="study_own_text", height=220,
                            placeholder='id = "negation"\nwording = "Does the passage respect what the instruction '
                                        'excludes?"\ncategories = ["Respects", "Violates", "Unclear"]\n'
                                        'positive = ["Respects"]\nasked_per = "passage"')
        if not text.strip():
            return []
        try:
            found = questions_from_text(text, fmt, "Declaration")
        except IFJudgeError as exc:
            st.error(md_escape(page_message(str(exc))))
            return []
        st.dataframe(pd.DataFrame([{
            "Id": q.id, "Answers": " / ".join(q.categories), "Positive": " / ".join(q.positive),
            "Asked per": q.asked_per, "Agreement": "ordinal" if q.scale == "ordinal" else "nominal",
            "Outcome": "; ".join(f"{a} -> {act}" for a, act in q.on_outcome) or "measured only",
            "Keys": " ".join(q.keys) or "free digits",
        } for q in found]), hide_index=True, key="study_own_table")
        return found


report_created("study")
open_on_last_project(conn, "study_project", {p["id"]: p["name"] for p in plist})
project = st.selectbox("Project", [p["name"] for p in plist], key="study_project",
                       help="the questions offered follow the project's benchmark")
proj = next(p for p in plist if p["name"] == project)  # its row (and counts): what the library takes
remember_project(conn, proj["id"])
kq = questions_for_kind(proj["kind"], has_documents=bool(proj["counts"]["documents"]))
if st.session_state.get("study_questions_for") != project or reset == "study":
    # a new project (or a fresh form): its benchmark's questions and scale, preselected
    st.session_state["study_questions"] = list(kq.preselected)
    st.session_state["study_naturalness"] = kq.naturalness
    st.session_state["study_questions_for"] = project
if kq.note:
    st.info(md_escape(kq.note))
if kq.offered:
    st.caption(f"{md_escape(project)} is a {KIND_NAMES.get(proj['kind'], proj['kind'])} project: "
               + ", ".join(label(q) for q in kq.offered) + " can be asked.")
    # outside the form: the settings below follow the questions chosen
    questions = st.multiselect("Questions", kq.offered, key="study_questions", format_func=label,
                               help="condition (InfoSearch) is asked alone: one Yes/No item per query, mode "
                                    "(changed, reversed) and originally relevant document; the fraction applies "
                                    "to queries" if "condition" in kq.offered else None)
    own = own_questions_section()
    chosen = set(questions) | {q.id for q in own}
    per_instance = bool(chosen - {"condition"})
    has_subsets = bool(set(projects.query_subsets(conn, proj["id"]).values()) - {""})
    runs = {r["id"]: f"run {r['id']}: {label(r['question'])}, {r['judge']} {r['model']} ({r['answers']} answers)"
            for r in judge_strata.stratifying_runs(conn, proj["id"])} if per_instance else {}
    judge_run = (st.selectbox("Draw per judge stratum (more groups where the judge says No)", [None, *runs],
                              key="study_judge_run", format_func=lambda r: "no: groups at random" if r is None else runs[r],
                              help="the query groups a judge run says No to are sampled more, by Neyman allocation of "
                                   "the Fraction of groups; every estimate weights each stratum by its rate. The "
                                   "interval width this buys against a plain sample is shown before the study is "
                                   "created (docs/judges.md).")
                 if runs else None)
    with st.form("study_form", enter_to_submit=False):
        name = st.text_input("Study name", key="study_name")
        naturalness = (st.radio("Naturalness answer", ["yesno", "likert"], horizontal=True, key="study_naturalness",
                                format_func=lambda s: SCALES.get(s, s)) if "naturalness" in chosen
                       else st.session_state.get("study_naturalness", kq.naturalness))
        boxes = [("fraction", "Fraction of queries" if not per_instance else "Fraction of groups", True),
                 ("per_group", "Instances per group", per_instance), ("overlap", "Annotators per item", True),
                 ("passages", "Passages (best passage)", "best_passage" in chosen), ("seed", "Seed", True)]
        shown = [(k, text) for k, text, show in boxes if show]
        cols = dict(zip([k for k, _ in shown], st.columns(len(shown))))
        fraction = cols["fraction"].number_input(shown[0][1], 0.001, 1.0, key="study_fraction",
                                                 help="the share of the project's query groups (queries) sampled; "
                                                      "InstructIR validated 8%")
        per_group = (cols["per_group"].number_input("Instances per group", 1, 100, key="study_per_group")
                     if "per_group" in cols else d.per_group)
        overlap = cols["overlap"].number_input("Annotators per item", 1, 50, key="study_overlap")
        passages = (cols["passages"].number_input("Passages (best passage)", 2, 10, key="study_passages",
                                                  help="passages shown for the most natural passage, the target among "
                                                       "them")
                    if "passages" in cols else d.passages)
        seed = cols["seed"].number_input("Seed", 0, 2**31 - 1, key="study_seed",
                                         help="the same seed draws the same sample: a second study needs another seed "
                                              "or 'Only items no other study asks'")
        stratify, subset_fraction, rates, domains, sizes = False, 0.1, "same", None, {}
        if has_subsets and per_instance:
            s1, s2 = st.columns(2)
            stratify = s1.checkbox("Sample per domain (subset)", key="study_stratify",
                                   help="IFIR: 10% of the queries of each domain, at least one per domain; the "
                                        "estimates weight each domain by the rate it was sampled at")
            subset_fraction = s2.number_input("Fraction of each domain", 0.001, 1.0, key="study_subset_fraction")
            rates = st.selectbox("Rates per domain (when sampling per domain)", list(RATES), key="study_rates",
                                 format_func=RATES.get)
            sizes = domain_sizes(conn, proj)
            domains = st.data_editor(
                pd.DataFrame({"Domain": [h or "(no domain)" for h in sizes], "Groups": list(sizes.values()),
                              "Fraction": [0.1] * len(sizes), "Anticipated share of Yes": [0.9] * len(sizes)}),
                key=f"study_domains_{project}", hide_index=True, disabled=["Domain", "Groups"],
                column_config={"Fraction": st.column_config.NumberColumn(
                                   min_value=0.001, max_value=1.0, step=0.01,
                                   help="one fraction per domain: its groups sampled"),
                               "Anticipated share of Yes": st.column_config.NumberColumn(
                                   min_value=0.0, max_value=1.0, step=0.01,
                                   help="Neyman allocation: more groups where the answers vary most")})
        max_excluded = (st.number_input("Excluded passages per instance (passage match; -1: all)", -1, 1000,
                                        key="study_max_excluded") if "passage_match" in chosen else -1)
        check_share = (st.number_input(
            "Check items (share of the screens)", 0.0, 0.5, step=0.05, key="study_check_share",
            help="Screens whose answers are known, mixed into each annotator's queue and never marked on screen; "
                 "the Monitor shows each annotator's accuracy on them; they count in no estimate, agreement or "
                 "export. Known answers: decisions of earlier studies of this project (a lead's, or unanimous), "
                 "and for the best passage the target beside passages of other query groups. 0: none.")
                       if per_instance else 0.0)
        remaining = st.checkbox("Only items no other study of this project asks", key="study_remaining",
                                help="sample from the instances (condition: queries) that no other study asks "
                                     "the chosen questions about")
        annotators = st.multiselect("Annotators", [u["name"] for u in users.list_users(conn, "annotator")],
                                    key="study_annotators")
        goal = st.text_area("Project goal shown to annotators before their first item (empty: the default for the "
                            "project's kind; InstructIR Fig. 9a)", key="study_goal")
        guidelines = {}
        for q in [q for q in INSTANCE_QUESTIONS if q in chosen]:
            with st.expander(f"Guidelines: {label(q)}"):
                text = st.text_area(label(q), key=f"study_guideline_{q}", label_visibility="collapsed")
                if text != GUIDELINES[q]:  # unchanged: the default (which knows the study's scale) applies
                    guidelines[q] = text
        go = st.form_submit_button("Create study")
    if go:
        st.session_state.pop(PENDING, None)
        request = dict(
            project=proj, questions=questions, annotators=annotators, name=name or None, own_questions=own,
            settings=StudySettings(group_fraction=fraction, per_group=int(per_group), overlap=int(overlap),
                                   passages=int(passages), naturalness=naturalness, seed=int(seed),
                                   guidelines=guidelines, goal=goal.strip(),
                                   max_excluded=None if int(max_excluded) < 0 else int(max_excluded),
                                   skip_covered=bool(remaining), check_share=float(check_share),
                                   **domain_rates(stratify, rates, float(subset_fraction), domains, list(sizes))),
        )
        try:
            if judge_run is not None:  # the plan and the width it buys, shown before anything is created
                plan = judge_strata.plan(conn, project=proj, run_id=judge_run, group_fraction=float(fraction))
                request["settings"].judge_strata = plan["settings"]
            found = None if remaining or not chosen or not annotators else sample_overlap(
                conn, project=proj, questions=[*questions, *(q.id for q in own)], settings=request["settings"])
        except IFJudgeError as exc:
            st.error(md_escape(page_message(str(exc))))
        else:
            if judge_run is not None:
                st.session_state[JUDGE_PENDING] = (request, plan["text"], found.text if found else "")
            elif found is not None and found.covered:
                st.session_state[PENDING] = (request, found)  # the lead chooses below; nothing created yet
            else:
                create(request)
    judge_pending = st.session_state.get(JUDGE_PENDING)
    if judge_pending:
        request, text, overlap_text = judge_pending
        st.info(md_escape(text))
        if overlap_text:
            st.warning(md_escape(overlap_text))
        j1, j2 = st.columns(2)
        if j1.button("Create this judge-stratified study", key="study_judge_create", type="primary"):
            st.session_state.pop(JUDGE_PENDING, None)
            create(request)
        if j2.button("Change the settings", key="study_judge_cancel"):
            st.session_state.pop(JUDGE_PENDING, None)
            st.rerun()
    pending = st.session_state.get(PENDING)
    if pending:
        request, found = pending
        st.warning(md_escape(found.text))
        b1, b2, b3 = st.columns(3)
        choice = None
        if found.new_seed is not None and b1.button(f"Use seed {found.new_seed} ({found.new_seed_covered} already "
                                                    "asked)", key="study_use_seed"):
            choice = replace(request["settings"], seed=found.new_seed)
        if found.remaining and b2.button(f"Only the {found.remaining} {found.unit} no study asks",
                                         key="study_use_remaining"):
            choice = replace(request["settings"], skip_covered=True)
        if b3.button("Create anyway (ask them again)", key="study_create_anyway"):
            choice = request["settings"]
        if choice is not None:
            st.session_state.pop(PENDING, None)
            create({**request, "settings": choice})

ifir_projects = [p["name"] for p in plist if p["kind"] == "ifir"]
if not ifir_projects:  # INSTFOL is IFIR's measure: nothing to set up for other benchmarks
    st.stop()
st.subheader("INSTFOL with human judges")
report_created("instfol")
st.caption("Annotators score 0-3 the top-k passages of a bare-query run and of an instructed run (IFIR, App. A.2); "
           "the mean of their labels per passage is INSTFOL's judge. Runs come from the project's stored "
           "evaluations (Evaluate).")
iproject = st.selectbox("Project", ifir_projects, key="instfol_project")
iproj = projects.get_project(conn, iproject)  # its row: what the library takes
ipid = iproj["id"]
runs = {r["id"]: r for r in eval_runs.list_eval_runs(conn, ipid, include_external=True)}
if len(runs) < 1:
    st.info("This project has no stored run yet: run a retriever on the Evaluate page with and without the "
            "instructions first.")
else:
    run_label = lambda i: f"{i}: {runs[i]['model']} ({runs[i]['template']}, {runs[i]['created_at']})"  # noqa: E731
    r1, r2, r3 = st.columns(3)
    bare_id = r1.selectbox("Bare-query run", list(runs), format_func=run_label, key="instfol_bare")
    inst_id = r2.selectbox("Instructed run", list(runs), format_func=run_label, key="instfol_instructed",
                           index=len(runs) - 1)
    top = r3.number_input("Top-k passages per run", 1, 100, key="instfol_top_k")
    c1, c2, c3, c4 = st.columns(4)
    ifraction = c1.number_input("Fraction of groups", 0.001, 1.0, key="instfol_fraction")
    iper_group = c2.number_input("Instances per group", 1, 100, key="instfol_per_group")
    ioverlap = c3.number_input("Annotators per item", 1, 50, key="instfol_overlap")
    iseed = c4.number_input("Seed", 0, 2**31 - 1, key="instfol_seed")
    iannotators = st.multiselect("Annotators", [u["name"] for u in users.list_users(conn, "annotator")],
                                 key="instfol_annotators")
    if st.button("Create INSTFOL study", key="instfol_create"):
        try:
            result = create_instfol_study(
                conn, project=iproj, bare_run=eval_runs.load_eval_run(conn, bare_id)["run"],
                instructed_run=eval_runs.load_eval_run(conn, inst_id)["run"], annotators=iannotators,
                top_k_passages=int(top), created_by=lead["name"],
                settings=StudySettings(group_fraction=float(ifraction), per_group=int(iper_group),
                                       overlap=int(ioverlap), seed=int(iseed)),
                sources={"query": f"eval run {bare_id}", "instructed": f"eval run {inst_id}"},
            )
        except IFJudgeError as exc:
            st.error(md_escape(page_message(str(exc))))
        else:
            created("instfol", result)
