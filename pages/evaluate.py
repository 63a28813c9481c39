"""Evaluate (lead): run retrievers on a project's qrels versions and compare the conclusions."""
from __future__ import annotations

import json
import re
import tempfile
import time
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from evaluation.compare import compare_project, table_frame
from evaluation.measure_registry import GENERIC_MEASURES
from evaluation import jobs as eval_jobs
from evaluation.templates import TEMPLATES, default_template
from formats.trec_io import write_run
from storage import eval_runs, projects
from storage import jobs as job_store
from storage.errors import IFJudgeError
from ui.session import db, pick_project, require_role

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
    st.error(f"Project {proj['name']} has no documents: a retriever has nothing to rank. Import the benchmark's corpus first.")
if not versions:
    st.error(f"Project {proj['name']} has no qrels: no query is judged, nothing can be evaluated.")
for build in {b["version"]: b for b in reversed(projects.qrels_builds(conn, proj["id"]))}.values():
    st.caption(f"{build['version']} (validates {build['base_version']}) built {build['created_at']} from "
               + "; ".join(f"study {s['id']} ({s['name']}): {s['labelled']}/{s['planned']} labels" for s in build["studies"])
               + f"; unresolved: {build['counts'].get('unresolved', 0)} ({build['settings'].get('unresolved') or 'none'})")

with st.form("ev_form"):
    models = st.multiselect("Models", ["bm25", "minilm"], default=["bm25"], key="ev_models",
                            help="bm25 (bm25s) or the bundled all-MiniLM-L6-v2 bi-encoder")
    local = st.text_input("Or a local sentence-transformers model directory", key="ev_local_model")
    templates = st.multiselect("Instruction templates", list(TEMPLATES), default=[default_template(proj["kind"])], key="ev_templates")
    chosen_versions = st.multiselect("Qrels versions", versions, default=versions, key="ev_versions")
    k = st.number_input("Depth k", 10, 1000, 1000, key="ev_k")
    ties = st.selectbox("Ties (p-MRR, WISE, SICR)", ["docid", "run-order"], key="ev_ties",
                        help="docid: doc id descending, trec_eval's and MTEB's rule; run-order: the run's own order (FollowIR's code)")
    go = st.form_submit_button("Run", help="queues one evaluation job per model, template and qrels version")
if go:
    combos = [(m, t, v) for m in models + ([local.strip()] if local.strip() else []) for t in templates for v in chosen_versions]
    if not combos:
        st.error("Models, templates and qrels versions: choose at least one of each.")
    for m, t, v in combos:
        try:
            job, created = eval_jobs.submit_eval(conn, proj, created_by=user["name"], model=m, template=t,
                                                 qrels_version=v, k=int(k), ties=ties)
        except IFJudgeError as exc:
            st.error(f"{m} / {t} / {v}: {exc}")
            continue
        if not created:
            st.info(f"{m} / {t} / {v}: job {job['id']} already runs this evaluation ({job['state']}).")


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
            st.warning(f"No worker has taken job {waiting[-1]['id']} for {NO_WORKER_SECONDS} s: is a worker running? "
                       "`ifjudge serve` starts one; `ifjudge worker --db PATH` starts another.")
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
    st.caption("No evaluation yet.")
    st.stop()
measure = st.selectbox("Measure", list(GENERIC_MEASURES), key="ev_measure")
try:
    comp = compare_project(conn, proj, measure=measure, n_permutations=2000)
except IFJudgeError as exc:
    st.error(str(exc))
    st.stop()
st.subheader("Models x qrels versions")
st.dataframe(table_frame(comp), hide_index=True, key="ev_table")
st.caption("Δ columns compare each version with original on the queries both judge:")
st.dataframe(pd.DataFrame([
    {"system": r["system"], "qrels version": r["qrels_version"], "queries": r["n_queries"],
     "common with original": (r["common_with_original"] or {}).get("n_common"),
     "left out (original only)": ", ".join((r["common_with_original"] or {}).get("left_out_original", [])[:20]),
     "left out (this version only)": ", ".join((r["common_with_original"] or {}).get("left_out_version", [])[:20])}
    for r in comp["table"] if r["qrels_version"] != "original"]), hide_index=True, key="ev_common")
for pair in comp["published_vs_validated"]:
    st.subheader(f"{pair['published']} (published) vs {pair['validated']}: {measure}")
    tau = pair["kendall_tau"]
    st.caption(f"published / validated / delta: on the queries both judge; checked_*: on the "
               f"{pair['n_checked_queries'] if pair['n_checked_queries'] is not None else 'unknown (no build)'} queries "
               f"the study judged; full_*: on every query each version judges (n_* = queries); "
               f"{pair['judgment_flips']} judgments flipped between the two qrels; "
               f"Kendall tau of the leaderboards: {tau['reason'] if tau['tau'] is None else round(tau['tau'], 3)}")
    st.dataframe(pd.DataFrame([{k: (", ".join(v) if isinstance(v, list) and k.startswith("left") else v)
                                for k, v in r.items() if k != "per_query"} for r in pair["systems"]]),
                 hide_index=True, key=f"ev_pv_{pair['validated']}")
    with st.expander(f"Per-query deltas ({pair['validated']})"):
        st.dataframe(pd.DataFrame([{"system": r["system"], **q} for r in pair["systems"] for q in r["per_query"]]),
                     hide_index=True)
if comp["p_mrr_published_vs_validated"]:
    st.subheader("p-MRR: published vs validated qrels")
    for r in comp["p_mrr_published_vs_validated"]:
        fmt = lambda v: "undefined" if v is None else f"{v:.4f}"  # noqa: E731
        st.text(f"{r['system']}: p-MRR published {fmt(r['published'])} ({r['n_published']} queries), "
                f"validated {fmt(r['validated'])} ({r['n_validated']} queries); on the {r['n_common_queries']} "
                f"common queries {fmt(r['published_on_common'])} vs {fmt(r['validated_on_common'])}")
    st.dataframe(pd.DataFrame([{k: (", ".join(v) if isinstance(v, list) else v) for k, v in r.items()}
                               for r in comp["p_mrr_published_vs_validated"]]), hide_index=True, key="ev_pmrr_pv")
info_rows = []
for r in runs:
    info = r["settings"].get("evaluation", {}).get("infosearch") or {}
    for v, b in info.get("by_qrels", {}).items():
        for dim, row in [*b["by_dimension"].items(), ("overall", b["overall"])]:
            info_rows.append({"eval run": r["id"], "model": r["model"], "qrels": f"original vs {v}", "dimension": dim,
                              "WISE": row["WISE"], "SICR": row["SICR"], "p-MRR": row["p-MRR"], "queries": row["n_queries"]})
if info_rows:
    st.subheader("InfoSearch per dimension (WISE, SICR, p-MRR)")
    st.dataframe(pd.DataFrame(info_rows), hide_index=True, key="ev_infosearch")
long = pd.DataFrame([
    {"system": r["system"], "qrels version": r["qrels_version"], measure: r["metrics"].get(measure)}
    for r in comp["table"] if r["metrics"].get(measure) is not None
])
if not long.empty:
    st.altair_chart(
        alt.Chart(long).mark_bar().encode(x=alt.X("system:N"), xOffset="qrels version:N", y=f"{measure}:Q",
                                          color="qrels version:N", tooltip=list(long.columns)),
        key="ev_chart",
    )
    ranks = long.copy()
    ranks["rank"] = ranks.groupby("qrels version")[measure].rank(ascending=False, method="min")
    st.altair_chart(
        alt.Chart(ranks).mark_line(point=True).encode(x="qrels version:N", y=alt.Y("rank:Q", scale=alt.Scale(reverse=True)),
                                                      color="system:N", tooltip=list(ranks.columns)),
        key="ev_rank_chart",
    )
st.subheader("Did the ranking of models change? (Kendall tau)")
st.dataframe(pd.DataFrame(comp["kendall_tau"]), hide_index=True, key="ev_tau")
with st.expander("Paired tests (Holm-corrected)"):
    for version, tests in comp["paired_tests"].items():
        st.caption(version)
        st.dataframe(pd.DataFrame(tests), hide_index=True)
with st.expander("Biggest per-query changes"):
    if comp["biggest_changes"]:
        st.dataframe(pd.DataFrame([{
            "System": c["system"], "Qrels version": c["qrels_version"], "Query": c["qid"],
            f"{measure} (original)": c["original"], f"{measure} (this version)": c["value"], "Change": c["delta"],
        } for c in comp["biggest_changes"]]), hide_index=True, key="ev_biggest_changes")
    else:
        st.caption("No query changed its score between the qrels versions.")
run_id = st.selectbox("Download a run", [r["id"] for r in runs], key="ev_run_dl",
                      format_func=lambda i: next(f"{r['id']}: {r['model']} / {r['template']} / {r['qrels_version']}" for r in runs if r["id"] == i))
full = eval_runs.load_eval_run(conn, run_id)
with tempfile.TemporaryDirectory() as tmp:
    write_run(full["run"], Path(tmp) / "run.trec", tag=f"ifjudge-{run_id}")
    run_text = (Path(tmp) / "run.trec").read_text(encoding="utf-8")
st.download_button("Download TREC run", run_text, file_name=f"run-{run_id}.trec", key="ev_dl_run")
st.download_button("Download results (JSON)", json.dumps({"metrics": full["metrics"], "per_query": full["per_query"]}),
                   file_name=f"results-{run_id}.json", key="ev_dl_results")
