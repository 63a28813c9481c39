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
    "n_items_adjudicated": "Items decided by a lead",
    "n_items_awaiting_labels": "Items awaiting labels",
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

# the naive extrapolation of a study monitor (annotation.monitor.extrapolation)
EXTRAPOLATION = {
    "invalid": "Invalid instructions",
    "unnatural": "Unnatural instructions",
    "majority_differs_from_target": "Majority differs from the dataset's target",
}

# the columns of the Monitor's benchmark-wide estimates, by the key of an estimate of
# annotation.estimates.benchmark_estimates they show (``interval``: its low and high). Not in
# GLOSSARY: ``n_items`` there is an agreement report's items, here the decided items.
ESTIMATES = {
    "estimand": "Estimate",
    "share": "Share",
    "interval": "95% CI (design)",
    "naive_independent": "Naive CI (independent, Wilson; comparison only)",
    "deff": "Design effect",
    "n_effective": "Effective n",
    "n_items": "Decided items",
    "n_groups": "Groups",
    "to_halve": "Further labels to halve the CI",
}

GLOSSARY = {**EXTRAPOLATION, **QUESTIONS, **SCALES, **PROVENANCE, **COLUMNS, **EXPORT, **STATISTICS}

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


# What a figure means, one hover away (docs/metrics.md, docs/statistics.md): the definition, the
# range and what its sign or size says. Keys are canonical measure names without parameters.
MEASURES = {
    "nDCG": "Normalised discounted cumulative gain of the top k (trec_eval): the ranking's gain, relevance "
            "discounted by log2 of the rank, divided by the ideal ranking's. Range 0 to 1; higher is better.",
    "AP": "Average precision (trec_eval map_cut): the mean of the precision at each relevant document retrieved "
          "in the top k, divided by the number of relevant documents. Range 0 to 1; higher is better.",
    "RR": "Reciprocal rank: 1 / the rank of the first relevant document in the top k (0 when none). "
          "Range 0 to 1; higher is better.",
    "R": "Recall: the share of the relevant documents retrieved in the top k. Range 0 to 1; higher is better.",
    "P": "Precision: the share of the top k that is relevant. Range 0 to 1; higher is better.",
    "Robustness": "Robustness@k (InstructIR): per query group, the lowest nDCG@k over its instructions; the mean over "
                  "groups. Range 0 to 1; higher means the retriever does well on every instruction of a query, "
                  "not only on average.",
    "p-MRR": "p-MRR (FollowIR): for each document whose relevance the changed instruction changed, the change of its "
             "rank: R_new/R_og - 1 when it moved up, 1 - R_og/R_new when it moved down; mean per query, then over "
             "queries. Range -1 to +1; positive: the model follows the changed instruction (it demotes documents "
             "made irrelevant), 0: it ignores the instruction, negative: it moves them the wrong way.",
    "WISE": "WISE (InfoSearch): per positive document, a reward when the instruction ranks it higher than the "
            "original query and the reversed instruction lower (up to 1 at rank 1), else a penalty (down to -1 "
            "when the order is fully reversed); mean per query, then over queries. Range -1 to 1; positive: the "
            "model follows the instruction, 0: it ignores it, negative: it goes against it.",
    "SICR": "SICR (InfoSearch): the share of positive documents ranked and scored in the strict order "
            "instructed > original > reversed; mean per query, then over queries. Range 0 to 1; higher: the model "
            "follows the instruction more often (0: never in that order).",
    "INSTFOL": "INSTFOL (IFIR): how much adding the instruction raised the judged match of the top k, relative to "
               "the room left: (i - q) / (max - q) with q the bare query's mean score and i the instructed one's. "
               "At most 1; positive: the instruction helped, 0: no change, negative: it hurt.",
    "Kendall tau": "Kendall rank correlation of two leaderboards: (concordant - discordant pairs of systems) / all "
                   "pairs. Range -1 to 1; 1: the same order, 0: unrelated, -1: the order reversed. Needs at least "
                   "3 systems to say much (with 2 it is only +1 or -1).",
}


def measure_help(name: str) -> str:
    """The definition, range and sign meaning of a measure named as the pages name it
    (``nDCG@10``, ``Robustness@10``, ``p-MRR(qrels='changed')``, ``WISE(K=30)``; the keys of older
    databases, ``p-MRR[changed]``, too); "" for one not described.

    >>> measure_help("p-MRR(qrels='changed-validated')").startswith("p-MRR (FollowIR)")
    True
    >>> measure_help("p-MRR[changed]") == measure_help("p-MRR")
    True
    >>> "Range -1 to 1" in measure_help("WISE(K=30)"), measure_help("Judged@10")
    (True, '')
    """
    base = str(name).split("@")[0].split("[")[0].split("(")[0].strip()
    return MEASURES.get(base, "")


# agreement statistics: what the number says (docs/statistics.md)
STATISTIC_HELP = {
    "randolph_kappa": "Randolph's free-marginal kappa: agreement beyond chance, chance = 1 / number of answers. "
                      "Range -1 to 1; 1 perfect agreement, 0 chance level, below 0 worse than chance.",
    "fleiss_kappa": "Fleiss' kappa: agreement beyond the chance expected from how often each answer is used. "
                    "Range -1 to 1; 1 perfect, 0 chance level, below 0 worse than chance.",
    "cohen_kappa_majority_vs_gold_excluding_ties": "Cohen's kappa between the annotators' majority passage and the "
                                                   "dataset's target, on items with a majority. Range -1 to 1; 1: "
                                                   "the humans always pick the target, 0: chance level.",
    "top1_accuracy_ties_count_as_wrong": "Share of items whose majority passage is the dataset's target; an item "
                                         "without a majority counts as wrong. Range 0 to 1; higher is better.",
    "top1_accuracy_excluding_ties": "Share of items with a majority whose majority passage is the dataset's "
                                    "target. Range 0 to 1; higher is better.",
    "yes_share": "Share of items whose majority answer is Yes. Range 0 to 1.",
    "mean_score": "Mean of the scores given (1-5, or 0-3 for INSTFOL judging); higher: a better match.",
    "krippendorff_alpha_ordinal": "Krippendorff's alpha with ordinal distances: agreement beyond chance that "
                                  "counts near scores as near. Range -1 to 1; 1 perfect, 0 chance level.",
    "percent_agreement_pairwise": "Share of agreeing pairs of labels on an item, averaged over items with two "
                                  "labels or more. Range 0 to 1.",
    "n_majority_ties": "Items whose labels have no strict plurality (a tie): no majority passage.",
    "disagreement": "1 - the share of the item's most common answer: 0 when everyone agrees, 0.33 when three "
                    "labels split 2 to 1, 0.67 when three labels all differ. Highest first.",
}
