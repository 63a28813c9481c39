"""The monitor's "Automatic judge vs the humans" section: for each question of the study that a
judge run answers, the judge's Cohen kappa with the human outcome on the items both judged (with
its interval resampling query groups), per domain, the confusion table, the judge's share of each
answer against the humans', and the items they disagree on, with the judge's reply to read
(:func:`annotation.judges.agreement.judge_report`). Judge labels appear only here, for a lead:
never on an annotator's screen. Self-contained: the monitor page calls :func:`render_judge_section`.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from annotation.glossary import label
from annotation.judges.agreement import judge_report, runs_for_study
from evaluation.undefined import UNDEFINED, show, show_why
from storage import studies
from ui.markdown import md_escape


def _f(value, fmt: str = ".3f") -> str:
    return show(value, fmt)


def agreement_rows(report: dict) -> list[dict]:
    """One row per domain (first the whole study): items both judged, kappa with its interval and
    band (or why it is undefined), raw agreement, and each answer's share by the humans, by the
    judge on the same items and by the judge over all its items.

    >>> row = {"domain": "(all)", "n_items": 8, "kappa": 0.6, "kappa_low": 0.1, "kappa_high": 1.0, "band": "moderate",
    ...        "undefined": None, "agreement": 0.875, "human_share": {"Yes": 0.875, "No": 0.125},
    ...        "judge_share": {"Yes": 0.75, "No": 0.25}, "judge_share_all": {"Yes": 0.7, "No": 0.3}, "judge_items": 10}
    >>> r = agreement_rows({"overall": row, "domains": [], "categories": ["Yes", "No"]})[0]
    >>> r["Cohen kappa"], r["95% interval"], r["Yes: humans / judge / judge, all"]
    ('0.600', '[0.100, 1.000]', '0.88 / 0.75 / 0.70')
    """
    out = []
    for row in [report["overall"], *report["domains"]]:
        shares = {f"{c}: humans / judge / judge, all": " / ".join(
            _f(row[k][c], ".2f") for k in ("human_share", "judge_share", "judge_share_all")) for c in report["categories"]}
        out.append({"Domain": row["domain"], "Items": row["n_items"],
                    "Cohen kappa": show_why(row["kappa"], row["undefined"], ".3f"),
                    "95% interval": (f"[{row['kappa_low']:.3f}, {row['kappa_high']:.3f}]"
                                     if row["kappa_low"] is not None else UNDEFINED),
                    "Band": row["band"] or UNDEFINED, "Agreement": _f(row["agreement"]), **shares,
                    "Judge's items": row["judge_items"]})
    return out


def confusion_frame(report: dict) -> pd.DataFrame:
    """The whole study's confusion table: humans' outcome (rows) by the judge's answer (columns)."""
    cats = report["categories"]
    return pd.DataFrame(report["overall"]["confusion"], index=[f"humans: {c}" for c in cats],
                        columns=[f"judge: {c}" for c in cats])


def disagreement_rows(report: dict) -> list[dict]:
    """The items the humans decided one way and the judge the other, with the texts to read."""
    return [{"Instance": d["instance_id"], "Document": d["doc_id"] or UNDEFINED, "Domain": d["domain"] or UNDEFINED,
             "Humans": d["human"], "Judge": d["judge"], "Judge's score": _f(d["score"]), "Judge's reply": d["raw"],
             "Query": d["query"], "Instruction": d["instruction"]} for d in report["disagreements"]]


def render_judge_section(conn, study_id: int, *, n_boot: int = 200, seed: int = 0) -> None:
    """Show the section for one study (read live from the database on every run)."""
    st.subheader("Automatic judge vs the humans")
    runs = runs_for_study(conn, study_id)
    if not runs:
        st.caption("No automatic judge has answered this study's questions yet (how to run one: docs/judges.md); "
                   "a judge's labels stay apart from the human labels.")
        return
    questions = studies.get_study(conn, study_id)["questions"]
    by_question: dict[str, list[dict]] = {q: [] for q in questions}
    for r in runs:
        by_question[r["question"]].append(r)
    by_question = {q: rs for q, rs in by_question.items() if rs}
    for question, options in by_question.items():
        named = {r["id"]: f"run {r['id']}: {r['judge']} {r['model']} ({r['answers']} answers"
                          + (f", prompt {r['prompt_version']})" if r["prompt_version"] else ")") for r in options}
        run_id = st.selectbox(f"Judge run for {label(question)}", list(named), key=f"mon_judge_run_{question}",
                              format_func=named.get)
        report = judge_report(conn, study_id, run_id, n_boot=n_boot, seed=seed)
        _render_report(report, question)


def _render_report(report: dict, question: str) -> None:
    p = report["run"]
    st.caption(md_escape(f"{label(question)}: judge run {p['id']}, {p['judge']} {p['model']}"
                         + (f" at {p['base_url']}" if p["base_url"] else "")
                         + (f", prompt {p['prompt_version']} ({p['prompt_hash']})" if p["prompt_version"] else "")
                         + (f", threshold {p['threshold']:.4f}" if p["threshold"] is not None else "")
                         + f"; {report['undecided']} item(s) without a human decision and {report['unjudged']} "
                           "decided item(s) the judge did not answer are not compared."))
    st.dataframe(pd.DataFrame(agreement_rows(report)), hide_index=True, key=f"mon_judge_agreement_{question}",
                 column_config={
                     "Items": st.column_config.NumberColumn(help="items the humans decided and the judge answered"),
                     "95% interval": st.column_config.TextColumn(
                         help="bootstrap percentile interval; the study's query groups resampled"),
                     **{f"{c}: humans / judge / judge, all": st.column_config.TextColumn(
                         help=f"share of {c} by the humans and by the judge on the items both judged, and by the "
                              "judge over every item of the benchmark it answered") for c in report["categories"]}})
    st.dataframe(confusion_frame(report), width="content", key=f"mon_judge_confusion_{question}")
    for note in report["notes"]:
        st.caption(md_escape(f"Note: {note}."))
    rows = disagreement_rows(report)
    if rows:
        st.markdown(f"**Where the judge and the humans disagree** ({len(rows)} item{'s' if len(rows) != 1 else ''})")
        frame = pd.DataFrame(rows)
        frame = frame.drop(columns=[c for c in ("Document", "Domain") if (frame[c] == UNDEFINED).all()])
        st.dataframe(frame, hide_index=True, key=f"mon_judge_disagreements_{question}",
                     column_config={**{c: st.column_config.TextColumn(width="medium")
                                       for c in ("Judge's reply", "Query", "Instruction")},
                                    "Judge's score": st.column_config.TextColumn(
                                        help="from the answer's probabilities: of the first answer (Yes, relevant), "
                                             "or the expected value on a scale; a local judge's similarity")})
