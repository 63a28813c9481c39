"""The monitor's "Benchmark-wide estimates" section: each question's share over the whole
benchmark with its design-aware 95% interval, the design effect, the effective sample size and the
labels that would halve the interval (:func:`annotation.estimates.benchmark.benchmark_estimates`), beside the
naive independent (Wilson) interval; and, with the project's finished judge runs the lead picks, the
prediction-powered estimate from the stored judge labels (no file to produce) beside the judge's
name and its measured agreement with the humans. Self-contained: the monitor page calls
:func:`render_estimates`."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from annotation.estimates.benchmark import benchmark_estimates
from annotation.glossary import ESTIMATES, header_help
from annotation.judges.agreement import measured_runs, runs_for_study
from evaluation.judges.stored import estimate_answers
from storage import judge_labels
from storage.errors import IFJudgeError
from evaluation.undefined import UNDEFINED, show, show_why
from ui.markdown import md_escape

PPI_HELP = {
    "Estimate": "The share estimated (its question and part).",
    "Prediction-powered share": "The judge's share over every item it answered, corrected by the humans' sample in the "
                                "study's design (docs/statistics.md, Prediction-powered estimates).",
    "95% CI (prediction-powered)": "The prediction-powered 95% interval: narrower than the design-aware one when the "
                                   "judge agrees with the humans, the same when it does not.",
    "Judge's share": "The share of Yes among the judge's answers over the population.",
    "Judge": "The judge run: its model and prompt version.",
    "Cohen kappa [95% CI]": "The judge's agreement with the human outcome on the items both judged in this study, with "
                            "its bootstrap interval over query groups.",
}
PPI_SHORT = {"Prediction-powered share": "PP share", "95% CI (prediction-powered)": "95% CI (PP)"}
PPI_WIDTHS = {"Estimate": 150, "Prediction-powered share": 75, "95% CI (prediction-powered)": 115, "Judge's share": 85,
              "Judge": 230, "Cohen kappa [95% CI]": 150}


def _fig(value, fmt: str) -> str:
    """A figure as the monitor shows it: formatted, or "—" when undefined (never None or NaN)."""
    return show(value, fmt)


def estimate_rows(result: dict) -> list[dict]:
    """The table the section shows, one row per estimate (figures as text; "—" where undefined).

    >>> estimate_rows({"estimates": [{"estimand": "valid instruction", "share": 0.5, "low": 0.2, "high": 0.8,
    ...     "undefined": None, "naive_independent": {"low": 0.3, "high": 0.7}, "deff": 2.0, "n_effective": 5.0,
    ...     "n_items": 10, "n_groups": 5, "to_halve": {"further_labels": 45}}]})[0]["95% CI (design)"]
    '[0.200, 0.800]'
    """
    rows = []
    for e in result["estimates"]:
        naive = e.get("naive_independent") or {}
        rows.append({ESTIMATES[k]: v for k, v in {
            "estimand": e["estimand"], "share": _fig(e["share"], ".3f"),
            "interval": (f"[{e['low']:.3f}, {e['high']:.3f}]" if e.get("low") is not None
                         else show_why(None, e.get('undefined') or 'no interval')),
            "naive_independent": (f"[{naive['low']:.3f}, {naive['high']:.3f}]" if naive else UNDEFINED),
            "deff": _fig(e["deff"], ".2f"), "n_effective": _fig(e["n_effective"], ".1f"),
            "n_items": e["n_items"], "n_groups": e["n_groups"],
            "to_halve": _fig(e["to_halve"]["further_labels"], "d"),
        }.items()})
    return rows


def finished_runs(conn, study_id: int) -> list[dict]:
    """The judge runs of the study's questions (:func:`annotation.judges.agreement.runs_for_study`)
    that answered every item they were given (none left to judge), newest first."""
    return [r for r in runs_for_study(conn, study_id)
            if r["answers"] and r["labels"] >= judge_labels.item_count(conn, r["id"])]


def ppi_rows(result: dict, measured: list[dict]) -> list[dict]:
    """The prediction-powered table: per estimate with a judge, its share and interval, the judge's
    share, the judge (run, model, prompt version) and its kappa on this study.

    >>> ppi_rows({"estimates": [{"estimand": "valid instruction", "question": "validity", "ppi_design": {
    ...     "share": 0.9, "low": 0.85, "high": 0.95, "judge_share": 0.88, "undefined": None}}]},
    ...     [{"id": 4, "question": "validity", "model": "m", "prompt_version": "v1", "agreement": [
    ...      {"kappa": 0.6, "kappa_low": 0.2, "kappa_high": 0.9, "undefined": None}]}])[0]["Cohen kappa [95% CI]"]
    '0.60 [0.20, 0.90]'
    """
    by_question = {r["question"]: r for r in measured}
    rows = []
    for e in result["estimates"]:
        d, run = e.get("ppi_design"), by_question.get(e["question"])
        if d is None or run is None:
            continue
        a = (run["agreement"] or [{}])[0]
        kappa = (f"{a['kappa']:.2f} [{_fig(a['kappa_low'], '.2f')}, {_fig(a['kappa_high'], '.2f')}]"
                 if a.get("kappa") is not None else show_why(None, a.get('undefined') or 'no item both judged'))
        rows.append({"Estimate": e["estimand"], "Prediction-powered share": _fig(d.get("share"), ".3f"),
                     "95% CI (prediction-powered)": (f"[{d['low']:.3f}, {d['high']:.3f}]" if not d.get("undefined")
                                                     else show_why(None, d['undefined'])),
                     "Judge's share": _fig(d.get("judge_share"), ".3f"),
                     "Judge": f"run {run['id']}: {run['model']}, prompt {run['prompt_version'] or '(default)'}",
                     "Cohen kappa [95% CI]": kappa})
    return rows


def render_estimates(conn, study_id: int) -> None:
    """Show the section for one study (read live from the database on every run)."""
    runs = finished_runs(conn, study_id)
    st.subheader("Benchmark-wide estimates (design-aware 95%)")
    chosen = []
    if runs:
        named = {r["id"]: f"run {r['id']}: {r['question']}, {r['judge']} {r['model']}"
                          + (f", prompt {r['prompt_version']}" if r["prompt_version"] else "") + f" ({r['answers']} answers)"
                 for r in runs}
        chosen = st.multiselect("Prediction-powered with the judge's stored labels (one run per question)", list(named),
                                key="mon_estimates_judge", format_func=named.get,
                                help="A finished judge run of the project answers every item of the benchmark; the "
                                     "humans' sample corrects its bias. Its labels are never shown to annotators.")
    try:
        judge = estimate_answers(conn, chosen) if chosen else None
    except IFJudgeError as exc:
        st.error(md_escape(str(exc)))
        judge, chosen = None, []
    result = benchmark_estimates(conn, study_id, judge=judge)
    st.caption(md_escape(f"Design: {result['design']['description']}."))
    for note in result["design"].get("notes") or []:
        st.caption(md_escape(f"Note: {note}."))
    if not result["estimates"]:
        st.caption("No question of this study has a benchmark-wide estimate.")
        return
    frame = pd.DataFrame(estimate_rows(result))
    main = [ESTIMATES[k] for k in ("estimand", "share", "interval", "naive_independent", "n_items", "n_groups")]
    details = [ESTIMATES[k] for k in ("estimand", "deff", "n_effective", "to_halve")]
    short = {ESTIMATES["naive_independent"]: "Naive CI (comparison)"}
    widths = {ESTIMATES["estimand"]: 240, ESTIMATES["share"]: 60, ESTIMATES["interval"]: 120,
              ESTIMATES["naive_independent"]: 150, ESTIMATES["n_items"]: 100, ESTIMATES["n_groups"]: 70,
              ESTIMATES["deff"]: 110, ESTIMATES["n_effective"]: 100, ESTIMATES["to_halve"]: 220}

    def config(names):
        return {c: st.column_config.Column(short.get(c, c), help=header_help(c), width=widths.get(c)) for c in names}

    st.dataframe(frame, hide_index=True, key="mon_estimates", column_order=main, column_config=config(main))
    with st.expander("Design effect, effective sample size, labels to halve the interval"):
        st.dataframe(frame, hide_index=True, key="mon_estimates_design", column_order=details, column_config=config(details))
        st.caption(md_escape(f"Method: {result['method']}. The naive interval treats sampled instances as independent "
                             "(too narrow when instances of a query group are alike)."))
    if chosen:
        rows = ppi_rows(result, measured_runs(conn, chosen, [study_id]))
        st.dataframe(pd.DataFrame(rows, columns=list(PPI_HELP)), hide_index=True, key="mon_estimates_ppi",
                     column_config={c: st.column_config.Column(PPI_SHORT.get(c, c), help=h, width=PPI_WIDTHS[c])
                                    for c, h in PPI_HELP.items()})
        st.caption(md_escape(f"Prediction-powered: {result.get('ppi_method') or ''}."))
