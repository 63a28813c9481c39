"""Evaluate (lead): run retrievers on a project's qrels versions and compare the conclusions."""
from __future__ import annotations

import json
import re
import time

import altair as alt
import pandas as pd
import streamlit as st

from annotation.glossary import cell, header_help, measure_help, page_message, when
from evaluation.compare import common_queries, compare_project
from evaluation.measure_registry import GENERIC_MEASURES
from evaluation.results import TABLE2_MODES, load_run, protocol_of, same_as, table2_records, without_ties
from evaluation import jobs as eval_jobs
from evaluation.protocols import PROTOCOLS, WISE_VERSIONS
from evaluation.protocols import resolve as resolve_protocol
from evaluation.templates import TEMPLATES
from evaluation.undefined import UNDEFINED, show, show_why
from exports.verdict import project_verdict
from formats.trec_io import run_lines
from storage import eval_runs, projects
from storage import jobs as job_store
from storage.errors import IFJudgeError
from ui.markdown import md_escape
from ui.session import db, pick_project, require_role

BY_PROTOCOL = "the protocol's"  # a template or tie rule left to the protocol chosen
PROTOCOL_LABELS = {"mteb": "mteb (MTEB 2.26, default)", "paper": "paper (the benchmark's own code)"}
JOBS_REFRESH_SECONDS = 1.0
NO_WORKER_SECONDS = 30
RECENT_FAILURES_SECONDS = 24 * 3600  # failed and cancelled jobs shown for a day
user = require_role("lead")
conn = db()
st.title("Evaluate")
proj = pick_project(conn, key="ev_project")
versions = projects.qrels_versions(conn, proj["id"])
counts = projects.project_counts(conn, proj["id"])
if counts["documents"] == 0:
    st.error(f"Project {md_escape(proj['name'])} has no documents: a retriever has nothing to rank. Add the benchmark's corpus to it "
             "(Projects page, import section: Add to an existing project; or `ifjudge import --add corpus`).")
if not versions:
    st.error(f"Project {md_escape(proj['name'])} has no qrels: no query is judged, nothing can be evaluated.")
for build in {b["version"]: b for b in reversed(projects.qrels_builds(conn, proj["id"]))}.values():
    st.caption(f"{build['version']} (validates {build['base_version']}) built {when(build['created_at'])} from "
               + "; ".join(f"study {s['id']} ({md_escape(s['name'])}): {s['labelled']}/{s['planned']} labels" for s in build["studies"])
               + f"; unresolved: {build['counts'].get('unresolved', 0)} ({build['settings'].get('unresolved') or 'none'})")

# every version is preselected; one built since the page was last drawn (a *-validated build) is
# added to the choice, while the lead's other choices stay
seen = st.session_state.get("ev_versions_seen")
if seen is None or seen[0] != proj["id"] or "ev_versions" not in st.session_state:
    st.session_state["ev_versions"] = list(versions)
else:
    kept = [v for v in st.session_state["ev_versions"] if v in versions]
    st.session_state["ev_versions"] = kept + [v for v in versions if v not in seen[1] and v not in kept]
st.session_state["ev_versions_seen"] = (proj["id"], list(versions))
runs = eval_runs.list_eval_runs(conn, proj["id"])
run_box = st.expander("Run an evaluation", expanded=not runs)
with run_box, st.form("ev_form", enter_to_submit=False):
    models = st.multiselect("Models", ["bm25", "minilm"], default=["bm25"], key="ev_models",
                            help="bm25 (bm25s) or the bundled all-MiniLM-L6-v2 bi-encoder")
    local = st.text_input("Or a local sentence-transformers model directory", key="ev_local_model")
    protocol = st.selectbox("Protocol", PROTOCOLS, key="ev_protocol", format_func=PROTOCOL_LABELS.get,
                            help="mteb: MTEB 2.26's task classes (the default); paper: the benchmark's own evaluation "
                                 "code (InstructIR 'instruction [SEP] query', FollowIR's and InfoSearch's tie order). "
                                 "Every result says which one produced it.")
    templates = st.multiselect("Instruction templates", [BY_PROTOCOL, *TEMPLATES], default=[BY_PROTOCOL], key="ev_templates")
    chosen_versions = st.multiselect("Qrels versions", versions, key="ev_versions")
    k = st.number_input("Depth k", 10, 1000, 1000, key="ev_k")
    ties = st.selectbox("Ties (p-MRR, WISE, SICR)", [BY_PROTOCOL, "docid", "run-order"], key="ev_ties",
                        help="docid: doc id descending, trec_eval's and MTEB's rule; run-order: a score-only stable sort "
                             "(FollowIR's and InfoSearch's code; over candidate lists, the lists' order)")
    wise = st.selectbox("WISE version", WISE_VERSIONS, key="ev_wise", help="paper: InfoSearch's eq. 7; evaluator: its "
                        "official evaluator's (1 - sqrt(R_ori - R_ins)/20)/sqrt(R_ins)") if proj["kind"] == "infosearch" else "paper"
    go = st.form_submit_button("Run", help="queues one evaluation job per model, template and qrels version")
if go:
    run_box.caption("Queued: the evaluation runs in the background; its progress shows below.")
    combos = [(m, t, v) for m in models + ([local.strip()] if local.strip() else []) for t in templates for v in chosen_versions]
    if not combos:
        st.error("Models, templates and qrels versions: choose at least one of each.")
    for m, t, v in combos:
        try:
            job, created = eval_jobs.submit_eval(conn, proj, created_by=user["name"], model=m,
                                                 template=None if t == BY_PROTOCOL else t, qrels_version=v, k=int(k),
                                                 ties=None if ties == BY_PROTOCOL else ties, protocol=protocol,
                                                 wise_version=wise)
        except IFJudgeError as exc:
            shown = resolve_protocol(proj["kind"], protocol).template if t == BY_PROTOCOL else t
            st.error(md_escape(f"{m} / {shown} / {v}: {page_message(str(exc))}"))
            continue
        if not created:
            st.info(f"{m} / {job['parameters']['template']} / {v}: job {job['id']} already runs this evaluation ({job['state']}).")


def _md(text: str) -> str:
    """A progress bar's label is Markdown: a model path or reason shown there is escaped to read literally."""
    return re.sub(r"([\\`*_\[\]{}()#+\-.!|~<>$:])", r"\\\1", text)


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA: after the first step"
    return f"ETA {int(seconds) // 60} min {int(seconds) % 60:02d} s" if seconds >= 60 else f"ETA {seconds:.0f} s"


def show_jobs(project_id: int) -> None:
    """The project's queued and running jobs with live progress, re-read from the database every
    few seconds; the whole page reruns when one of them ends, to show its results."""
    fconn = db()
    active = eval_jobs.active_jobs(fconn, project_id)
    seen = st.session_state.setdefault("ev_active_jobs", [])
    ended = [j for j in seen if j not in {a["id"] for a in active}]
    st.session_state["ev_active_jobs"] = [a["id"] for a in active]
    if ended:
        st.rerun(scope="app")
    for job in reversed(active):  # oldest first: the order the worker takes them
        label = f"job {job['id']}: {_md(eval_jobs.describe(job))}"
        if job["state"] == "queued":
            st.progress(0.0, text=f"{label}: queued" + (f" ({_md(job['error'])})" if job["error"] else ""))
        else:
            frac = job["done"] / job["total"] if job["total"] else 0.0
            text = f"{label}: {_md(job['message'])} {job['done']}/{job['total']}, {_eta(eval_jobs.eta_seconds(job))}"
            if job["cancel_requested"]:
                text += " (cancelling)"
            st.progress(min(max(frac, 0.0), 1.0), text=text)
        if not job["cancel_requested"] and st.button("Cancel", key=f"ev_cancel_{job['id']}"):
            after = eval_jobs.cancel(fconn, job["id"], by=user["name"])
            st.caption(f"job {job['id']}: " + ("cancelled" if after["state"] == "cancelled" else "cancel requested"))
    if active:
        st.caption(f"{len(active)} evaluation job(s) queued or running; a worker runs them even if you leave this page.")
        waiting = [j for j in active if j["state"] == "queued" and time.time() - j["created_at"] > NO_WORKER_SECONDS]
        if waiting and not any(j["state"] == "running" for j in active):
            st.warning(f"No worker has taken job {waiting[-1]['id']} for {NO_WORKER_SECONDS} s: the evaluation worker "
                       "that runs beside the app server seems to be stopped. Whoever runs the server can start it "
                       "again (the deployment guide, docs/deployment.md, says how).")
    recent = time.time() - RECENT_FAILURES_SECONDS
    for job in job_store.list_jobs(fconn, project_id=project_id, states=["failed", "cancelled"], limit=5):
        if (job["finished_at"] or 0) >= recent:  # reasons shown literally: they may quote the data
            st.text(f"job {job['id']} {job['state']}: {eval_jobs.describe(job)}\n{job['error'] or job['state']}")


# refresh every second while a job of this project is queued or running (the worker may be on
# another machine; the state is in the database, so a reload or a return to the page finds it)
has_active = bool(job_store.list_jobs(conn, project_id=proj["id"], states=job_store.ACTIVE, limit=1))
st.fragment(run_every=JOBS_REFRESH_SECONDS if has_active else None)(show_jobs)(proj["id"])

runs = eval_runs.list_eval_runs(conn, proj["id"])
if not runs:
    st.info("No evaluation yet: run one above (open “Run an evaluation”), on the published qrels and, once a study "
            "has validated them, on the validated ones.")
    st.stop()
measure = st.selectbox("Measure", list(GENERIC_MEASURES), key="ev_measure",
                       help="The measure of the verdict and of every table below; hover a column's header for its "
                            "definition.")
try:
    comp = compare_project(conn, proj, measure=measure, n_permutations=2000)
except IFJudgeError as exc:
    st.error(md_escape(page_message(str(exc))))
    st.stop()
VERDICT_BOOTSTRAP = 1000


def verdict_for(project: dict, comparison: dict, measure: str) -> dict:
    """The verdict (exports.verdict), computed once per project, measure, evaluation and build: its
    bootstrap takes a moment, and the page reruns on every click."""
    builds = tuple(b["id"] for b in projects.qrels_builds(conn, project["id"]))
    key = (project["id"], measure, max(r["id"] for r in runs), builds)
    kept = st.session_state.get("ev_verdict")
    if kept is None or kept[0] != key:
        kept = (key, project_verdict(conn, project, comparison=comparison, measure=measure, n_boot=VERDICT_BOOTSTRAP))
        st.session_state["ev_verdict"] = kept
    return kept[1]


with st.container(border=True, key="ev_verdict_box"):
    st.subheader("Verdict")
    st.markdown(md_escape(verdict_for(proj, comp, measure)["text"]))
    st.caption(f"Ranks and Kendall tau over every query each qrels version judges ({VERDICT_BOOTSTRAP:,} bootstrap "
               "replicates over queries); the score change on the queries the study checked; the shares from the "
               "studies the validated qrels come from. The tables below give every figure.")
MIN_TAU_SYSTEMS = 3  # Kendall tau of 2 systems is only +1 or -1
MIN_TEST_QUERIES = 10  # a paired test on fewer queries says little


def num(value, fmt: str = ".4f") -> str:
    """A figure as the tables show it: 4 decimals, or "—" when it was not computed or is undefined
    (:func:`evaluation.undefined.show`; the caption or the hover says why)."""
    return show(value, fmt)


def measure_columns(names) -> dict:
    """column_config for measure columns: the definition, range and sign meaning on hover."""
    return {m: st.column_config.TextColumn(m, help=measure_help(m) or None) for m in names}


def id_list(ids: list[str]) -> str:
    return ", ".join(ids) if ids else "none"


for r in comp["table"]:  # the row says its tie rule ('Ties'): p-MRR of either rule in one column
    r["metrics"] = {without_ties(m): v for m, v in r["metrics"].items()}
    r["delta_vs_original"] = {without_ties(m): v for m, v in r["delta_vs_original"].items()}
measures = list(dict.fromkeys(m for r in comp["table"] for m in r["metrics"]))
# p-MRR(qrels='changed') is p-MRR itself when changed is the version compared: one column, not two equal ones
measures = [m for m in measures if not (same_as(m) in measures and all(
    r["metrics"].get(m) == r["metrics"].get(same_as(m)) for r in comp["table"]))]


def helped(frame: pd.DataFrame, widths: dict | None = None) -> dict:
    """column_config of every column of ``frame``: its definition on hover (the glossary)."""
    return {c: st.column_config.Column(c, help=header_help(c), width=(widths or {}).get(c)) for c in frame.columns}


# the views that can move first: the queries the study checked, then every query; the queries both
# versions judge (0 by construction on InstructIR, where validation only drops instances) last
for pair in comp["published_vs_validated"]:
    pub, val = pair["published"], pair["validated"]
    rows = pair["systems"]
    checked_n = pair["n_checked_queries"]
    st.subheader(f"{pub} (published) vs {val}: {measure}")
    if checked_n is None:
        st.caption(f"The {val} qrels were stored without a build: which queries a study checked is not known.")
    else:
        st.caption(f"On the {checked_n} queries the study checked: {pub} over all of them, {val} over those it keeps. "
                   "This is where validation shows when it drops instances.")
        frame = pd.DataFrame([{
            "System": r["system"],
            "Checked: queries (published / validated)": f"{r['checked_n_published']} / {r['checked_n_validated']}",
            f"Checked: {pub}": num(r["checked_published"]), f"Checked: {val}": num(r["checked_validated"]),
            "Change": num(r["checked_delta"], "+.4f")} for r in rows])
        st.dataframe(frame, hide_index=True, key=f"ev_pv_checked_{val}", column_config=helped(
            frame, {"System": 210, "Checked: queries (published / validated)": 260}))
    frame = pd.DataFrame([{
        "System": r["system"],
        "Full set: queries (published / validated)": f"{r['full_n_published']} / {r['full_n_validated']}",
        f"Full set: {pub}": num(r["full_published"]), f"Full set: {val}": num(r["full_validated"]),
        "Change": num(r["full_delta"], "+.4f")} for r in rows])
    st.caption("On every query each version judges:")
    st.dataframe(frame, hide_index=True, key=f"ev_pv_views_{val}", column_config=helped(
        frame, {"System": 210, "Full set: queries (published / validated)": 260}))
    tau = pair["kendall_tau"]
    if len(rows) >= MIN_TAU_SYSTEMS and tau["tau"] is not None:
        st.caption(f"Kendall tau of the two leaderboards: {tau['tau']:.3f} over {len(rows)} systems "
                   "(1: same order, -1: reversed).")
    else:
        st.caption(f"Kendall tau not shown: n = {len(rows)} system(s) evaluated on both, it needs at least "
                   f"{MIN_TAU_SYSTEMS}.")
    n_common = sorted({r["n_common_queries"] for r in rows})
    n_text = str(n_common[0]) if len(n_common) == 1 else "/".join(map(str, n_common))
    with st.expander(f"On the {n_text} queries both versions judge ({pair['judgment_flips']} judgments flipped)"):
        st.caption("These means are on the compared queries only. On InstructIR a kept instance keeps its published "
                   "judgment, so the change here is 0 by construction: the views above are the ones that can move.")
        frame = pd.DataFrame([{
            "System": r["system"], "Compared queries": r["n_common_queries"],
            f"{measure}, {pub} qrels": num(r["published"]), f"{measure}, {val} qrels": num(r["validated"]),
            "Change": num(r["delta"], "+.4f"),
            "Queries whose score changed": r["queries_changed"]} for r in rows])
        st.dataframe(frame, hide_index=True, key=f"ev_pv_{val}", column_config={
            **helped(frame), **measure_columns([f"{measure}, {pub} qrels", f"{measure}, {val} qrels"])})
        for r in rows:
            st.text(f"{r['system']}: {r['n_common_queries']} compared queries: {id_list([q['qid'] for q in r['per_query']])}"
                    f"\nleft out, judged only by {pub}: {id_list(r['left_out_published'])}"
                    f"\nleft out, judged only by {val}: {id_list(r['left_out_validated'])}")
        st.dataframe(pd.DataFrame([{"System": r["system"], "Query": q["qid"], f"{pub}": q["published"],
                                    f"{val}": q["validated"], "Change": q["delta"]}
                                   for r in rows for q in r["per_query"]]), hide_index=True, key=f"ev_pq_{val}")

st.subheader("Scores per system and qrels version")
st.caption("Each score is the mean over all the queries that qrels version judges (their number in 'Queries'; "
           "in a project published in subsets, the mean over its subsets), under the protocol in 'Protocol'; "
           "hover a header for its definition.")
frame = pd.DataFrame([{"System": r["system"], "Protocol": r["protocol"], "Ties": r["ties"],
                       "Qrels version": r["qrels_version"], "Queries": r["n_queries"],
                       **{m: num(r["metrics"].get(m)) for m in measures}} for r in comp["table"]])
st.dataframe(frame, hide_index=True, key="ev_table",
             column_config={**helped(frame, {"System": 230}), **measure_columns(measures)})
if any(r["metrics"].get(m) is None for r in comp["table"] for m in measures):
    st.caption(f"{UNDEFINED} : not computed for that qrels version (Robustness needs instruction groups, p-MRR the changed "
               "qrels, WISE and SICR the reversed ones).")
changed = [r for r in comp["table"] if r["qrels_version"] != "original"]
if changed:
    with st.expander("Change of every version against the original qrels, on the queries both judge"):
        st.caption("Each Δ is this version's mean minus original's, on the queries both versions judge (their number "
                   "in 'Compared queries'; the ids below).")
        frame = pd.DataFrame([{
            "System": r["system"], "Qrels version": r["qrels_version"],
            "Compared queries": (r["common_with_original"] or {}).get("n_common", 0),
            **{f"Δ {m}": num(r["delta_vs_original"].get(m), "+.4f") for m in measures}} for r in changed])
        st.dataframe(frame, hide_index=True, key="ev_common", column_config={
            **helped(frame), **{f"Δ {m}": st.column_config.TextColumn(
                f"Δ {m}", help=(measure_help(m) + " Δ > 0: higher on this version than on original.")
                if measure_help(m) else None) for m in measures}})
        for r in changed:
            base = next((x for x in comp["table"] if x["system"] == r["system"] and x["qrels_version"] == "original"), None)
            if base is None:
                st.text(f"{r['system']} / {r['qrels_version']}: no original run to compare with")
                continue
            pq_v = load_run(conn, r["eval_run_id"])["per_query"]
            pq_o = load_run(conn, base["eval_run_id"])["per_query"]
            common, only_o, only_v = common_queries(pq_o, pq_v, measure)
            st.text(f"{r['system']} / {r['qrels_version']} vs original: {len(common)} compared queries: "
                    f"{id_list(common)}\nleft out, judged only by original: {id_list(only_o)}\n"
                    f"left out, judged only by {r['qrels_version']}: {id_list(only_v)}")
if comp["p_mrr_published_vs_validated"]:
    st.subheader("p-MRR: published vs validated qrels")
    for r in comp["p_mrr_published_vs_validated"]:
        fmt = lambda v: show_why(v, "no query with a changed document", "+.4f")  # noqa: E731
        st.text(f"{r['system']}: on the {r['n_common_queries']} queries both judge, p-MRR {fmt(r['published_on_common'])} "
                f"with the changed qrels vs {fmt(r['validated_on_common'])} with the validated ones "
                f"(over all their queries: {fmt(r['published'])} on {r['n_published']}, "
                f"{fmt(r['validated'])} on {r['n_validated']})")
    st.caption(measure_help("p-MRR"))
info_rows = []
for r in runs:
    table2 = (r["settings"].get("evaluation", {}).get("infosearch") or {}).get("table2")
    if not table2:
        continue
    mode_of = {v: m for m, v in table2["qrels"].items()}
    rows_of: dict[str, dict] = {}
    for rec in table2_records(table2, system=r["model"], eval_run_id=r["id"]):
        row = rows_of.setdefault(rec.query_set, {
            "Eval run": r["id"], "Model": r["model"], "Protocol": protocol_of(r), "Dimension": rec.query_set,
            "Queries": rec.n_queries, **{f"{m} {mode[:3]}": num(None) for m in ("nDCG@10", "Robustness@10")
                                         for mode in TABLE2_MODES}, "p-MRR": "", "WISE": "", "SICR": ""})
        column = rec.measure if rec.measure in ("p-MRR", "WISE", "SICR") else f"{rec.measure} {mode_of[rec.qrels_version][:3]}"
        row[column] = num(rec.value)
    info_rows += rows_of.values()
if info_rows:
    st.subheader("InfoSearch Table 2 per dimension")
    st.caption("nDCG@10 and Robustness@10 in the original, instructed and reversed modes (each on its own qrels), "
               "p-MRR, WISE, SICR; the last row of each run is the mean over dimensions, as the paper's Table 2.")
    st.dataframe(pd.DataFrame(info_rows), hide_index=True, key="ev_infosearch",
                 column_config=measure_columns(["WISE", "SICR", "p-MRR"]))
long = pd.DataFrame([
    {"system": r["system"], "qrels version": r["qrels_version"], measure: r["metrics"].get(measure)}
    for r in comp["table"] if r["metrics"].get(measure) is not None
])
if not long.empty:
    bars = (alt.Chart(long).mark_bar().encode(x=alt.X("system:N", title="System"), xOffset="qrels version:N",
                                             y=alt.Y(f"{measure}:Q", title=measure),
                                             color=alt.Color("qrels version:N", title="Qrels version"),
                                             tooltip=list(long.columns))
            .properties(title=f"{measure} per system and qrels version",
                        description=f"Bar chart of {measure} per system and qrels version: " + "; ".join(
                            f"{x['system']} on {x['qrels version']}: {x[measure]:.3f}" for x in long.to_dict("records"))))
    st.altair_chart(bars, key="ev_chart")
    ranks = long.copy()
    ranks["rank"] = ranks.groupby("qrels version")[measure].rank(ascending=False, method="min")
    st.altair_chart(
        alt.Chart(ranks).mark_line(point=True).encode(
            x=alt.X("qrels version:N", title="Qrels version"),
            y=alt.Y("rank:Q", scale=alt.Scale(reverse=True), title="Rank", axis=alt.Axis(tickMinStep=1, format="d")),
            color=alt.Color("system:N", title="System"), tooltip=list(ranks.columns))
        .properties(title=f"Rank of each system by {measure}",
                    description=f"Line chart of each system's rank by {measure} per qrels version: " + "; ".join(
                        f"{x['system']} ranks {int(x['rank'])} on {x['qrels version']}" for x in ranks.to_dict("records"))),
        key="ev_rank_chart",
    )
st.subheader("Did the ranking of models change? (Kendall tau)")
taus = [t for t in comp["kendall_tau"] if t.get("n_systems", 0) >= MIN_TAU_SYSTEMS and t["tau"] is not None]
if taus:
    st.dataframe(pd.DataFrame([{
        "Qrels versions": " vs ".join(t["versions"]), "Kendall tau": t["tau"], "Systems": t["n_systems"],
        "Compared queries": t["n_common_queries"] if isinstance(t["n_common_queries"], int)
        else "/".join(map(str, t["n_common_queries"]))} for t in taus]), hide_index=True, key="ev_tau",
        column_config={"Kendall tau": st.column_config.NumberColumn(format="%.3f", help=measure_help("Kendall tau"))})
n_sys = max((t.get("n_systems", 0) for t in comp["kendall_tau"]), default=len(comp["systems"]))
if not taus:
    st.caption(f"Not computed: {n_sys} system(s) are evaluated on two qrels versions; Kendall tau needs at least "
               f"{MIN_TAU_SYSTEMS} systems to say whether the ranking changed (with 2 it can only be +1 or -1). "
               "Evaluate more models.")
with st.expander("Paired tests between systems (Holm-corrected)"):
    shown = False
    for version, tests in comp["paired_tests"].items():
        ok = [t for t in tests if t["n_queries"] >= MIN_TEST_QUERIES]
        few = [t for t in tests if t["n_queries"] < MIN_TEST_QUERIES]
        if ok:
            shown = True
            st.caption(f"Qrels version {version}")
            st.dataframe(pd.DataFrame([{
                "System A": t["a"], "System B": t["b"], "Compared queries": t["n_queries"],
                f"Mean difference ({measure}, A - B)": num(t["mean_diff"], "+.4f"), "t": num(t["t"], ".3f"),
                "p (t-test, Holm)": num(t["t_p_holm"]), "p (permutation, Holm)": num(t["permutation_p_holm"]),
                "Significant at 0.05": cell(t["significant"]), "Why undefined": t["undefined"] or ""} for t in ok]),
                hide_index=True)
        for t in few:
            st.caption(f"{version}: {md_escape(t['a'])} vs {md_escape(t['b'])}: not tested, n = {t['n_queries']} compared queries "
                       f"(a paired test needs at least {MIN_TEST_QUERIES}).")
    if not shown and not any(comp["paired_tests"].values()):
        st.caption("No pair of systems evaluated on the same qrels version yet.")
with st.expander("Biggest per-query changes"):
    if comp["biggest_changes"]:
        st.dataframe(pd.DataFrame([{
            "System": c["system"], "Qrels version": c["qrels_version"], "Query": c["qid"],
            f"{measure} with original qrels": c["original"], f"{measure} with this version": c["value"], "Change": c["delta"],
        } for c in comp["biggest_changes"]]), hide_index=True, key="ev_biggest_changes")
    else:
        st.caption("No query changed its score between the qrels versions.")
run_id = st.selectbox("Download a run", [r["id"] for r in runs], key="ev_run_dl",
                      format_func=lambda i: next(f"{r['id']}: {r['model']} / {r['template']} / {r['qrels_version']} / "
                                                 f"{protocol_of(r)} protocol" for r in runs if r["id"] == i))


def trec_run_text(run_id: int) -> str:
    """The stored run of ``run_id`` as a TREC run file (built when the download is asked for: a
    Robust04-sized run is 52,000 lines)."""
    return "".join(run_lines(load_run(db(), run_id, run=True)["run"], tag=f"ifjudge-{run_id}"))


full = load_run(conn, run_id)
st.download_button("Download TREC run", lambda: trec_run_text(run_id), file_name=f"run-{run_id}.trec",
                   key="ev_dl_run", mime="text/plain")
if "baseline_run" in full["settings"]:  # the bare queries' run: INSTFOL's --bare-run
    st.download_button("Download the bare queries' run (baseline, for INSTFOL)", lambda: "".join(run_lines(
        eval_runs.load_eval_run(db(), run_id, run=False)["settings"]["baseline_run"]["run"], tag=f"ifjudge-{run_id}-bare")),
        file_name=f"run-{run_id}-bare.trec", key="ev_dl_bare", mime="text/plain")
st.download_button("Download results (JSON)", json.dumps({"protocol": protocol_of(full), "metrics": full["metrics"],
                                                          "per_query": full["per_query"]}),
                   file_name=f"results-{run_id}.json", key="ev_dl_results")
