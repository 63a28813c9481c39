"""Every name a user reads, in one place: internal ids (question ids, column names, scale and
provenance names) -> the label shown on the pages.

No Streamlit here: plain functions, so pages and tests share them.

>>> label("validity"), label("median_seconds_per_screen"), label("not_in_glossary")
('Valid instruction', 'Median seconds per screen', 'Not in glossary')
>>> undefined(None, "every label identical: 0/0")
('—', 'every label identical: 0/0')
"""
from __future__ import annotations

import math

# question ids: a short name (tables, headings); the full wording is annotation.questions.question().prompt
QUESTIONS = {
    "validity": "Valid instruction",
    "naturalness": "Natural instruction",
    "best_passage": "Most natural passage",
    "passage_match": "Passage matches",
    "instfol_match": "Passage matches (0-3)",
    "relevance": "Relevant document",
    "narrative_edit": "Narrative edit",
}

SCALES = {
    "yesno": "Yes / No",
    "likert": "1-5 scale",
    "binary": "Relevant / not relevant",
    "graded": "Graded 0-2",
}

PROVENANCE = {
    "adjudicated": "Decided by a lead",
    "unanimous": "Unanimous",
    "majority": "Majority",
    "unresolved": "Unresolved",
}

COLUMNS = {
    "median_seconds_per_screen": "Median seconds per screen",
    "agreement_with_gold": "Agreement with the dataset's target",
    "agreement_with_majority": "Agreement with the majority",
    "qrels_changed": "Changed qrels",
    "qrels_og": "Original qrels",
    "qrels_original": "Original qrels",
    "qrels_validated": "Validated qrels",
    "qrels_reversed": "Reversed qrels",
    "doc_id": "Document",
    "instance": "Instance",
    "instance_id": "Instance",
    "item": "Item",
    "annotator": "Annotator",
    "value": "Answer",
    "reason": "Reason",
    "note": "Note",
    "lead": "Lead",
    "decision": "Decision",
    "provenance": "How decided",
    "disagreement": "Disagreement",
    "labels": "Votes",
    "question": "Question",
    "created_at": "Saved at",
    "screens_done": "Screens done",
    "screens": "Screens",
    "assignments_done": "Answers given",
    "assignments": "Answers needed",
    "share_done": "Done",
    "unresolved": "Unresolved items",
    "annotators": "Annotators",
    "project": "Project",
    "study": "Study",
    "kind": "Kind",
}

# what an export holds (its manifest's counts) and the studies it is built from
EXPORT = {
    "instances": "Instances",
    "groups": "Instruction groups",
    "queries": "Queries",
    "documents": "Documents",
    "instances_checked": "Instances checked by the studies",
    "instances_dropped": "Instances left out",
    "validated_qrels": "Validated qrels",
    "changed_validated_qrels": "Validated changed qrels",
    "reversed_validated_qrels": "Validated reversed qrels",
    "judgments": "Judgments",
    "left_out": "Left out",
    "labelled": "Labels given",
    "planned": "Labels planned",
    "complete": "Complete",
    "name": "Name",
    "id": "Id",
    "qid": "Query",
    "published": "Published label",
    "label_counts": "Votes",
    "open": "Open questions",
}

# agreement statistics (annotation.agreement reports)
STATISTICS = {
    "n_items": "Items",
    "n_labels": "Labels",
    "n_annotators": "Annotators",
    "n_items_pairable": "Items with two labels or more",
    "n_items_no_majority": "Items without a majority",
    "n_majority_ties": "Ties (no majority)",
    "percent_agreement_pairwise": "Percent agreement (pairwise)",
    "percent_agreement_unanimous": "Unanimous items (share)",
    "randolph_kappa": "Randolph free-marginal kappa",
    "fleiss_kappa": "Fleiss kappa",
    "gwet_ac1": "Gwet AC1",
    "krippendorff_alpha_nominal": "Krippendorff alpha (nominal)",
    "krippendorff_alpha_ordinal": "Krippendorff alpha (ordinal)",
    "cohen_kappa_mean_pairwise": "Cohen kappa (mean over pairs)",
    "cohen_kappa": "Cohen kappa",
    "yes_share": "Share of Yes majorities",
    "mean_score": "Mean score",
    "cohen_kappa_majority_vs_gold_excluding_ties": "Cohen kappa, majority vs. the dataset's target (ties left out)",
    "top1_accuracy_ties_count_as_wrong": "Top-1 accuracy (ties count as wrong)",
    "top1_accuracy_excluding_ties": "Top-1 accuracy (ties left out)",
}

GLOSSARY = {**QUESTIONS, **SCALES, **PROVENANCE, **COLUMNS, **EXPORT, **STATISTICS}

UNDEFINED = "—"


def label(name: str) -> str:
    """The label of an internal name; an unknown name is made readable (underscores to spaces,
    first letter capitalised) rather than shown raw."""
    if name in GLOSSARY:
        return GLOSSARY[name]
    text = str(name).replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def relabel(row: dict) -> dict:
    """A table row with readable column names (for ``st.dataframe``)."""
    return {label(k): v for k, v in row.items()}


def undefined(value, reason: str = "") -> tuple[str, str]:
    """(text, hover) for a statistic: ``"—"`` and the reason when it is undefined (None or NaN),
    else the value (floats to 3 decimals) and no hover."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return UNDEFINED, reason or "undefined"
    if isinstance(value, float):
        return f"{value:.3f}", ""
    return str(value), ""


def cell(value) -> str | int | float:
    """A value as a table cell reads: counts as votes, lists joined, booleans as Yes / No,
    undefined as ``"—"``; numbers and text as they are.

    >>> cell({"Yes": 1, "No": 2}), cell(["a", "b"]), cell(True), cell(None), cell(3)
    ('No 2 · Yes 1', 'a, b', 'Yes', '—', 3)
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return UNDEFINED
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, dict):
        return votes(value) if all(isinstance(v, int) for v in value.values()) else "; ".join(
            f"{label(k)}: {cell(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set)):
        return ", ".join(str(cell(v)) for v in value)
    return value


def table(rows: list[dict]) -> list[dict]:
    """Rows for ``st.dataframe``: readable column names and cells (:func:`relabel`, :func:`cell`).

    >>> table([{"doc_id": "d1", "label_counts": {"1": 2}}])
    [{'Document': 'd1', 'Votes': '1 2'}]
    """
    return [{label(k): cell(v) for k, v in row.items()} for row in rows]


def votes(counts: dict[str, int]) -> str:
    """Label counts in words, most votes first: ``{"No": 2, "Yes": 1}`` -> ``"No 2 · Yes 1"``.

    >>> votes({"Yes": 1, "No": 2})
    'No 2 · Yes 1'
    """
    return " · ".join(f"{v} {n}" for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
