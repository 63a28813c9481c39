"""Every name a user reads, in one place: internal ids (question ids, column names, scale and
provenance names) -> the label shown on the pages.

No Streamlit here: plain functions, so pages and tests share them.

>>> label("validity"), label("median_seconds_per_screen"), label("not_in_glossary")
('Valid instruction', 'Median seconds per screen', 'Not in glossary')
>>> undefined(None, "every label identical: 0/0")
('—', 'every label identical: 0/0')
"""
from __future__ import annotations


from annotation.questions.builtin import BUILTIN_QUESTIONS
from annotation.questions.question_type import Question
from evaluation.undefined import UNDEFINED, is_undefined

# question ids: a short name (tables, headings), as each question declares it (``Question.name``;
# a lead's own question's is in its study: annotation.questions.study.study_questions); the full
# wording is its ``prompt``
QUESTIONS = {**{q.id: q.name for q in BUILTIN_QUESTIONS.values()},
             "narrative_edit": "Narrative edit"}

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
    "qrels_validated": "Validated qrels (stored)",
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
    "validated_qrels": "Validated qrels in this export",
    "changed_validated_qrels": "Validated changed qrels in this export",
    "reversed_validated_qrels": "Validated reversed qrels in this export",
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

# agreement statistics (annotation.agreement.report reports)
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
    "positive_share": "Share of positive majorities",
    "mean_score": "Mean score",
    "cohen_kappa_majority_vs_gold_excluding_ties": "Cohen kappa, majority vs. the dataset's target (ties left out)",
    "top1_accuracy_ties_count_as_wrong": "Top-1 accuracy (ties count as wrong)",
    "top1_accuracy_excluding_ties": "Top-1 accuracy (ties left out)",
}

# the naive extrapolation of a study monitor (annotation.monitoring.monitor.extrapolation)
EXTRAPOLATION = {
    "invalid": "Invalid instructions",
    "unnatural": "Unnatural instructions",
    "majority_differs_from_target": "Majority differs from the dataset's target",
}

# the columns of the Monitor's benchmark-wide estimates, by the key of an estimate of
# annotation.estimates.benchmark.benchmark_estimates they show (``interval``: its low and high). Not in
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
    if is_undefined(value):
        return UNDEFINED, reason or getattr(value, "reason", None) or "undefined"
    if isinstance(value, float):
        return f"{value:.3f}", ""
    return str(value), ""


def cell(value) -> str | int | float:
    """A value as a table cell reads: counts as votes, lists joined, booleans as Yes / No,
    undefined as ``"—"``; numbers and text as they are.

    >>> cell({"Yes": 1, "No": 2}), cell(["a", "b"]), cell(True), cell(None), cell(3)
    ('No 2 · Yes 1', 'a, b', 'Yes', '—', 3)
    """
    if is_undefined(value):
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
    "positive_share": "Share of items whose majority answer is one the question declares positive, over every item "
                      "with at least one label (an item still awaiting labels or tied counts as not positive). "
                      "Range 0 to 1.",
    "mean_score": "Mean of the scores given (1-5, or 0-3 for INSTFOL judging); higher: a better match.",
    "krippendorff_alpha_ordinal": "Krippendorff's alpha with ordinal distances: agreement beyond chance that "
                                  "counts near scores as near. Range -1 to 1; 1 perfect, 0 chance level.",
    "percent_agreement_pairwise": "Share of agreeing pairs of labels on an item, averaged over items with two "
                                  "labels or more. Range 0 to 1.",
    "n_majority_ties": "Items whose labels have no strict plurality (a tie): no majority passage.",
    "disagreement": "1 - the share of the item's most common answer: 0 when everyone agrees, 0.33 when three "
                    "labels split 2 to 1, 0.67 when three labels all differ. Highest first.",
}
STATISTIC_HELP.update({
    "yes_share": "InstructIR Table 7's \"Proportion of Yes response\": the items whose majority answer is Yes, over "
                 "every item with at least one label (an item still awaiting labels or tied counts as not Yes). "
                 "A share of items, not of labels; the benchmark-wide share (tab “Benchmark estimate”) counts decided "
                 "instances only.",
    "gwet_ac1": "Gwet's AC1: agreement beyond chance with a chance term that stays small when one answer dominates. "
                "Range -1 to 1; 1 perfect agreement, 0 chance level.",
    "krippendorff_alpha_nominal": "Krippendorff's alpha (nominal): 1 - observed / expected disagreement over all "
                                  "pairs of labels of an item. Range -1 to 1; 1 perfect, 0 chance level.",
    "cohen_kappa_mean_pairwise": "Cohen's kappa of each pair of annotators over the items both labelled, averaged "
                                 "over the pairs whose kappa is defined. Range -1 to 1.",
    "percent_agreement_unanimous": "Share of the items with two labels or more on which every label is the same.",
    "n_items": "Items of this question with at least one label.",
    "n_labels": "Current labels given (an annotator's newest answer on an item; older answers stay as history).",
    "n_annotators": "Annotators who gave at least one label on this question.",
    "n_items_pairable": "Items with at least two labels: the ones agreement can be measured on.",
    "n_items_no_majority": "Items whose labels have no strict plurality yet: ties and items awaiting labels.",
    "n_items_adjudicated": "Items a lead decided on the Adjudicate page (the lead's value is their outcome).",
    "n_items_awaiting_labels": "Items with too few labels to decide (fewer than two when the study asks for more).",
})

# Landis & Koch (1977), the band the Monitor prints beside a kappa
BAND_HELP = ("Landis & Koch (1977) band of a kappa (value rounded to 10 decimals): below 0 poor, 0 to 0.20 slight, "
             "0.21 to 0.40 fair, 0.41 to 0.60 moderate, 0.61 to 0.80 substantial, above 0.80 almost perfect. It "
             "describes agreement beyond chance, not whether the benchmark is right.")

# The agreement figures each benchmark's own paper reports, by question: the ones to put in a paper
# (the others are shown for comparison); each question declares them (``Question.reported``).
# FollowIR, InfoSearch and IFIR report no agreement coefficient for these questions; for those,
# the InstructIR choice (Randolph's free-marginal kappa, which does not collapse when one answer
# dominates) is marked.
REPORTED = {q.id: q.reported for q in BUILTIN_QUESTIONS.values()}


def reported(question: Question | str, statistic: str) -> str:
    """Whether a statistic of a question (its declaration, or a built-in one's id) is the one to
    report (the seed paper's choice) or a comparison: the text of the Monitor's "Report" column.

    >>> reported("validity", "randolph_kappa"), reported("validity", "fleiss_kappa")
    ('Report (InstructIR Table 7)', 'comparison')
    >>> reported("best_passage", "top1_accuracy_ties_count_as_wrong")
    'Report (InstructIR Table 7)'
    """
    source, keys = question.reported if isinstance(question, Question) else REPORTED.get(question, ("", ()))
    return f"Report ({source})" if statistic in keys else "comparison"


# What every column header of the Monitor and Evaluate tables means: the help a header shows on
# hover (the pages read it by the header's text, so one header means one thing everywhere).
HEADER_HELP = {
    # Monitor: the Table 7 view and the question report
    "Question": "The question annotators answer (hover the table for its full wording).",
    "Statistic": "The agreement figure or share; hover a row's name in the help below the table for its definition.",
    "Value": "The statistic's value on the labels so far; — when it is undefined (the reason is beside it).",
    "95% interval": "Percentile bootstrap 95% interval: items resampled with replacement (seeded), the statistic "
                    "recomputed on each replicate. — when it is undefined or not computed.",
    "Band": BAND_HELP,
    "Why undefined": "Why there is no value, e.g. 0/0 when every label is the same answer.",
    "Report": "Report: the figure the benchmark's own paper reports for this question (the one to put in a paper). "
              "Comparison: another coefficient, shown to check that the conclusion does not hang on the choice.",
    "Over": "What the figure is counted over: labelled items (every item with a label, undecided ones included), "
            "items with two labels or more (agreement), or decided items (a strict majority or a lead's decision).",
    # Monitor: benchmark-wide estimates (ESTIMATES' labels)
    "Estimate": "What share is estimated over the whole benchmark, from the study's sample.",
    "Share": "The benchmark-wide share: the decided items saying Yes for the estimate, weighted by how the study "
             "sampled them (stratified ratio estimator). Decided instances only: an item awaiting labels or tied "
             "is left out.",
    "95% CI (design)": "95% interval that follows how the sample was drawn (query groups, then instances): "
                       "Korn & Graubard's interval at the effective sample size. Use this one.",
    "Naive CI (independent, Wilson; comparison only)": "Wilson interval that treats every decided instance as "
                                                       "independent: too narrow when instances of one query group "
                                                       "are alike. Shown only for comparison.",
    "Design effect": "Variance of the estimate under the study's design divided by the variance a simple random "
                     "sample of as many instances would have. Above 1: instances of a group are alike, the sample "
                     "says less than its size suggests.",
    "Effective n": "Decided items divided by the design effect: the size of a simple random sample that would give "
                   "the same precision.",
    "Decided items": "Items with an outcome: a strict majority, a single label when the study asks for one, or a "
                     "lead's decision.",
    "Groups": "Query groups sampled (the clusters of the design).",
    "Further labels to halve the CI": "Labels still to give, in new query groups sampled as the study sampled "
                                      "them, for the design interval to become half as wide.",
    # Monitor: annotators' habits
    "Annotator": "The annotator's user name.",
    "Done": "Screens submitted of the screens assigned to this annotator (check screens included).",
    "Median s": "Median seconds from opening a screen to submitting it (its newest submission): all the questions "
                "of one instance or document.",
    "Agreement": "Share of the annotator's labels equal to the majority of the OTHER annotators of the same item, "
                 "over the items where at least two others answered and have a strict majority (their own vote does "
                 "not count). Low: the annotator often goes against the rest.",
    "Agreement with the majority": "Share of the annotator's labels equal to the item's decided value (their own "
                                   "vote counted); on decided items with two labels or more.",
    "Agreement with the dataset's target": "Best passage: share of the annotator's choices that are the dataset's "
                                           "target passage.",
    "Checks right": "Check items (screens with known answers, mixed into the study at set-up, never counted in "
                    "estimates, agreement or exports): right answers of those the annotator answered.",
    "Flag": "⚑ straight-lining: the same answer to every one of at least 10 items of a question (for the best "
            "passage: the same position on screen) while the other annotators of those items answered otherwise "
            "at least once. ⚑ fast: a median time per screen under a third of the study's median. The details are "
            "listed under the table.",
    # Monitor: disagreements and reasons
    "Votes": "Each answer and how many annotators gave it.",
    "Disagreement": STATISTIC_HELP["disagreement"],
    "Decision": "The item's outcome: a lead's decision, else the strict majority; — with why when there is none "
                "yet (awaiting labels, or a tie for a lead to decide).",
    "Instruction": "The instance's instruction (shortened; read it in full below).",
    "Reason": "The annotator's reason for a No (as typed).",
    "Answer": "The annotator's answer.",
    # Evaluate
    "System": "A retrieval setting: model [instruction template], with its reranker and depth when not the default.",
    "Qrels version": "Which relevance judgments the run was scored against: original (published), validated (the "
                     "published ones corrected by the studies), changed / reversed and their validated versions.",
    "Queries": "Queries (InstructIR: instances) that qrels version judges and the run was scored on.",
    "Compared queries": "Queries both qrels versions judge: the change is computed on these only.",
    "Change": "Validated minus published, on the queries named in the row.",
    "Queries whose score changed": "Compared queries whose per-query score differs between the two qrels.",
    "Checked: queries (published / validated)": "The queries the study judged: all of them on the published "
                                                "side, those the validated qrels keep on the other.",
    "Full set: queries (published / validated)": "Every query each qrels version judges.",
    "Kendall tau": MEASURES["Kendall tau"],
    "Qrels versions": "The two qrels versions whose leaderboards are compared.",
    "Systems": "Systems evaluated on both versions (Kendall tau needs at least 3).",
}


def header_help(name: str) -> str | None:
    """The definition a table header shows on hover: :data:`HEADER_HELP`, a measure's
    (:func:`measure_help`, also after a prefix such as ``Δ`` or ``Checked:``), or None.

    >>> header_help("Band").startswith("Landis & Koch")
    True
    >>> header_help("Checked: original").startswith("The mean over the queries the study judged")
    True
    >>> header_help("Δ nDCG@10").startswith("Normalised discounted")
    True
    """
    if name in HEADER_HELP:
        return HEADER_HELP[name]
    if name.startswith("Checked: "):
        return (f"The mean over the queries the study judged, with the {name.split(': ', 1)[1]} qrels (the "
                "validated side keeps only the queries it does not leave out). The view that moves when validation "
                "drops instances.")
    if name.startswith("Full set: "):
        return f"The mean over every query the {name.split(': ', 1)[1]} qrels judge."
    base = name.removeprefix("Δ ").split(",")[0].strip()
    return measure_help(base) or None


# The page controls a library message may name by their command-line flag: a page shows the
# control's name instead (a page never asks for a flag it has no box for).
CONTROLS = {
    "--unresolved": "the “Unresolved judgments” box",
    "--allow-incomplete": "the “I confirm: export from unfinished studies” box",
    "--format": "the “Format” box",
    "--subset": "the “Subset” box",
    "--study": "the “Studies” box",
    "--keep-invalid": "the “Drop invalid instances” box",
    "--keep-unnatural": "the “Drop unnatural instances” box",
    "--match-gold-max": "the “Gold passage not relevant at match score <=” box",
    "--match-excluded-min": "the “Excluded passage relevant at match score >=” box",
    "--project": "the “Project” box",
    "--controls": "the “Controls” box",
    "--annotators": "the “Annotators” box",
    "--questions": "the “Questions” box",
}


def page_message(text: str, controls: dict[str, str] | None = None) -> str:
    """A library message as a page shows it: each command-line flag it names (``--unresolved
    keep-published|drop|...``, ``--format``) replaced by the page control that sets the same
    thing (:data:`CONTROLS`, or ``controls`` for a page's own names), and ``ifjudge ...``
    commands left out of the advice; a flag without a control becomes "the setting".

    >>> page_message("3 unresolved; choose --unresolved keep-published|drop|relevant|not-relevant")
    '3 unresolved; choose the “Unresolved judgments” box'
    >>> page_message("cannot tell the layout: name the format with --format")
    'cannot tell the layout: name the format with the “Format” box'
    >>> page_message("no eval runs yet; run `ifjudge eval run` first")
    'no eval runs yet; run an evaluation on the Evaluate page first'
    """
    import re

    names = {**CONTROLS, **(controls or {})}
    text = re.sub(r"`?ifjudge eval run[^`;,.)]*`?", "an evaluation on the Evaluate page", text)
    text = re.sub(r"`?ifjudge [a-z-]+(?: [a-z-]+)?(?: --[^`;,.)]*)?`?", "the command line", text)

    def flag(m: re.Match) -> str:
        return names.get(m.group(1), "the setting")

    # a flag with its choices (--unresolved a|b|c, --format NAME) or alone
    return re.sub(r"(--[a-z][a-z0-9-]*)(?:[ =](?:[A-Za-z0-9_.-]+\|)+[A-Za-z0-9_.-]+)?", flag, text)


def when(iso: str | None) -> str:
    """A stored time (ISO 8601, UTC) as a lead reads it: day, month, year, hours and minutes.

    >>> when("2026-11-27T23:45:50+00:00"), when(None)
    ('27 Nov 2026, 23:45 UTC', '—')
    """
    from datetime import datetime

    if not iso:
        return UNDEFINED
    try:
        t = datetime.fromisoformat(str(iso))
    except ValueError:
        return str(iso)
    return t.strftime("%d %b %Y, %H:%M") + (" UTC" if t.utcoffset() is not None and not t.utcoffset() else "")
