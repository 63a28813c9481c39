"""The seven built-in questions, one declaration each (:class:`annotation.questions.question_type.Question`),
following their benchmarks' protocols: InstructIR's validity, naturalness and best passage (Oh et
al., 2024, Appendix B, Figure 9a: wording and guidelines verbatim; Table 7: the rows), IFIR's
passage match and INSTFOL match (§3.4, Table 2; Appendix A.2), InfoSearch's condition (§2) and
FollowIR's re-judging relevance (§3). Naturalness (Yes / No or 1-5) and relevance (binary or
graded 0-2) have two forms each, chosen per study.

Adding a question is adding a declaration here (copy :data:`CONDITION`) and listing it in
:data:`BUILTIN_QUESTIONS`; the annotate screen, the Monitor, the outcomes, the estimates, the
qrels builds, the glossary and the exports read it (docs/architecture.md, "Question type").

>>> [q.id for q in BUILTIN_QUESTIONS.values()]
['validity', 'naturalness', 'best_passage', 'passage_match', 'instfol_match', 'condition', 'relevance']
>>> NATURALNESS.form({"naturalness": "likert"}).is_positive("3"), VALIDITY.drop_reason("No")
(True, 'invalid')
"""
from __future__ import annotations

from dataclasses import replace

from annotation.questions.question_type import Question

YES_NO = ("Yes", "No")
LIKERT = ("1", "2", "3", "4", "5")
RELEVANCE_BINARY = ("relevant", "not relevant")
RELEVANCE_GRADED = ("0", "1", "2")
MATCH_0_3 = ("0", "1", "2", "3")

RANDOLPH = ("kappa coefficient (Randolph, 2005)", "randolph_kappa")
YES_SHARE = ("Proportion of Yes response", "yes_share")
FLEISS = ("Fleiss kappa", "fleiss_kappa")
PERCENT = ("Percent agreement", "percent_agreement_pairwise")
ALPHA_ORDINAL = ("Krippendorff alpha (ordinal)", "krippendorff_alpha_ordinal")
MEAN_SCORE = ("Mean score", "mean_score")
TABLE7 = "InstructIR Table 7"

NATURALNESS_LIKERT_NOTE = (
    "\nOn the 1-5 scale: 1 = clearly UNNATURAL, 3 = partly natural, 5 = clearly NATURAL for this query."
)

VALIDITY = Question(
    "validity", "Is the instruction valid for the search user?", YES_NO, ("No",), ("1", "2"),
    guidelines=(
        "Q1 asks whether the provided instruction is suitable for the search user scenario.\n"
        "- VALID: providing information about the search user, such as the user's job, background, situation, "
        "location, occupation, hobbies, interests, goals or preferred targets.\n"
        "- INVALID: providing little to no connection to the user's job, background, situation, location, "
        "occupation, hobbies, interests, or goals. It fails to consider preferences and context, resulting in an "
        "overall inadequate fit."),
    name="Valid instruction", short="Valid", monitor_prompt="Q1. Is the instruction valid for the search user?",
    monitor_rows=(RANDOLPH, YES_SHARE), reported=(TABLE7, ("randolph_kappa", "yes_share")),
    benchmark=("InstructIR",), extrapolation="invalid", positive=("Yes",), estimand="valid instruction",
    qrels="drop-instance", drop_rule="drop_invalid", dropped_as="invalid",
)

_NATURALNESS = Question(
    "naturalness", "Is the instruction natural for the given query?", YES_NO, ("No",), ("3", "4"),
    guidelines=(
        "Q2 asks whether the given instruction aligns naturally with the provided query.\n"
        "- NATURAL: The scenario reflects a very specific scenario in which a user interacts with a search engine "
        "using a given query and typically instance specific and not universally applicable to other queries.\n"
        "- UNNATURAL: The scenario does not provide any additional information that is not processed in the query. "
        "Throughout, redundant information and overly general scenarios are provided."),
    name="Natural instruction", short="Natural", monitor_prompt="Q2. Is the instruction natural for the given query?",
    monitor_rows=(RANDOLPH, YES_SHARE), reported=(TABLE7, ("randolph_kappa", "yes_share")),
    benchmark=("InstructIR", "IFIR"), extrapolation="unnatural", positive=("Yes",), estimand="natural instruction",
    qrels="drop-instance", drop_rule="drop_unnatural", dropped_as="unnatural", form_setting="naturalness",
)
#: IFIR's 1-5 naturalness (§3.4): 3 or more counts as natural; the validated qrels drop an
#: instance below ``ValidationRules.likert_threshold``
NATURALNESS_LIKERT = replace(
    _NATURALNESS, prompt="How natural is the instruction for the given query? (1-5)", categories=LIKERT,
    reason_required_for=(), keys=LIKERT, guidelines=_NATURALNESS.guidelines + NATURALNESS_LIKERT_NOTE,
    scale="ordinal", numeric=True, positive=("3", "4", "5"), positive_rule="at-least", threshold=3,
    threshold_option="likert_threshold", summary=(("", "Naturalness of instructions"),))
NATURALNESS = replace(_NATURALNESS, forms=(("yesno", _NATURALNESS), ("likert", NATURALNESS_LIKERT)))

BEST_PASSAGE = Question(
    "best_passage", "Which passage is the most natural for the given instruction and query?", (), (), ("5", "6", "7"),
    guidelines=(
        "Q3 is asking to identify the passage that best fits the given instruction and query, considering specific "
        "conditions such as occupation, age, situation, and preferences. Pay careful attention to detail when "
        "selecting the most appropriate target from the provided options.\n"
        "- NOT RELEVANT: The passage lacks relevance to the user's INSTRUCTION, providing little to no connection "
        "to the user's job, background, situation, location, occupation, hobbies, interests, or goals. It fails to "
        "consider preferences and context, resulting in an overall inadequate fit.\n"
        "- RELEVANT: The passage is mostly relevant, precisely addressing all aspects of the user's INSTRUCTION, "
        "QUERY, and preferences. It seamlessly integrates with the user's context, demonstrating a profound "
        "understanding. The passage is exceptionally clear, concise, and exhaustive in providing information, "
        "offering a flawless fit."),
    name="Most natural passage", short="Passage",
    monitor_prompt="Q3. Which passage is the most natural for the given instruction and query?",
    monitor_rows=(("kappa coefficient (Cohen, 1960)", "cohen_kappa_majority_vs_gold_excluding_ties"),
                  ("Top-1 Accuracy", "top1_accuracy_ties_count_as_wrong"),
                  ("Top-1 Accuracy excluding ties", "top1_accuracy_excluding_ties"),
                  ("Number of ties (no majority)", "n_majority_ties")),
    reported=(TABLE7, ("cohen_kappa_majority_vs_gold_excluding_ties", "top1_accuracy_ties_count_as_wrong")),
    benchmark=("InstructIR",), extrapolation="majority_differs_from_target", positive_rule="target",
    estimand="best passage is the dataset's target", asked_per="candidates", qrels="drop-instance",
    drop_rule="drop_best_passage_mismatch", dropped_as="best passage differs from the target",
)

PASSAGE_MATCH = Question(
    "passage_match", "How well does the passage match the instruction and query? (1-5)", LIKERT, (), LIKERT,
    guidelines=(
        "Rate how well the passage matches the query together with its instruction, from 1 (does not match: "
        "ignores or contradicts the instruction) to 5 (matches every condition the instruction sets). "
        "The higher the score, the better the match."),
    name="Passage matches", short="Match", monitor_prompt="How well does the passage match the instruction and query? (1-5)",
    monitor_rows=(ALPHA_ORDINAL, MEAN_SCORE),
    reported=("IFIR Table 2 (mean); agreement as InstructIR reports none here", ("mean_score", "krippendorff_alpha_ordinal")),
    benchmark=("IFIR",), scale="ordinal", numeric=True, positive=("4", "5"), positive_rule="at-least", threshold=4,
    estimand="passage match >= {k}", estimand_part="{part} passages", threshold_option="match_threshold",
    summary=(("gold", "Gold passage matching score"), ("excluded", "Excluded passage matching score"),
             ("", "Passage matching score")),
    summary_reversed=(("excluded", "Excluded passage score (6 - match)"),),
    asked_per="gold-and-excluded", qrels="match-score",
)

INSTFOL_MATCH = Question(
    "instfol_match", "How well does the passage match the instruction and query? (0-3)", MATCH_0_3, (), MATCH_0_3,
    guidelines=(
        "Score how well the passage matches the instruction together with the query, as IFIR's INSTFOL judge "
        "does (0-3):\n"
        "- 0: the passage meets none of the instruction's levels (off topic for the query, or contradicts the "
        "instruction).\n"
        "- 1: the passage meets the instruction only at the first level: it is on the query's topic.\n"
        "- 2: the passage meets the first and second levels: on topic and satisfying the instruction's main "
        "condition (the user's situation, role or goal).\n"
        "- 3: the passage totally matches the instruction, including its detailed requirements."),
    name="Passage matches (0-3)", short="Match",
    monitor_prompt="How well does the passage match the instruction and query? (0-3)",
    monitor_rows=(ALPHA_ORDINAL, MEAN_SCORE),
    reported=("IFIR App. A.2 (mean)", ("mean_score", "krippendorff_alpha_ordinal")), benchmark=("IFIR",),
    scale="ordinal", numeric=True, summary=(("", "Match score (0-3)"),),
    asked_per="ranked-passages", qrels_build="", qrels="none",
)

CONDITION = Question(
    "condition", "Does this document satisfy the instruction's condition?", YES_NO, (), ("1", "2"),
    guidelines=(
        "InfoSearch (Zhou et al., 2025, §2): read the instruction shown (it sets a condition on the document: "
        "its language, audience, format, source, length or content). Answer Yes if the document satisfies that "
        "condition and answers the query, No if it does not satisfy it. Judge only against the instruction shown; "
        "the same document may be shown under the reversed instruction in another item."),
    name="Condition", short="Condition", monitor_prompt="Does this document satisfy the instruction's condition?",
    monitor_rows=(RANDOLPH, FLEISS, PERCENT, YES_SHARE),
    reported=("as InstructIR Table 7 (InfoSearch reports no coefficient)", ("randolph_kappa", "yes_share")),
    benchmark=("InfoSearch",), positive=("Yes",), estimand="condition satisfied", estimand_part="{part} instruction",
    asked_per="condition-documents", qrels_build="condition", qrels="condition-modes",
)

_RELEVANCE = Question(
    "relevance", "Is the document relevant under this narrative?", RELEVANCE_BINARY, (), ("1", "2"),
    guidelines=(
        "Judge the document against the narrative shown, not against what you remember of earlier versions. "
        "A document is relevant only if it satisfies every condition of the narrative, including any exclusion."),
    name="Relevant document", short="Relevant", monitor_prompt="Is the document relevant under the narrative?",
    monitor_rows=(RANDOLPH, FLEISS, PERCENT),
    reported=("as InstructIR Table 7 (FollowIR reports no coefficient)", ("randolph_kappa",)), benchmark=("FollowIR",),
    positive=("relevant",), estimand="narrative change confirmed (re-judgment agrees with the changed qrels)",
    estimand_rule="agrees-with-changed", asked_per="narrative-documents", qrels_build="rejudged", qrels="rejudged",
    form_setting="relevance",
)
RELEVANCE_GRADED_FORM = replace(
    _RELEVANCE, prompt="How relevant is the document under this narrative? (0-2)", categories=RELEVANCE_GRADED,
    keys=("1", "2", "3"), positive=("1", "2"))
RELEVANCE = replace(_RELEVANCE, forms=(("binary", _RELEVANCE), ("graded", RELEVANCE_GRADED_FORM)))

#: every built-in question, by id, in the order a study asks them
BUILTIN_QUESTIONS: dict[str, Question] = {q.id: q for q in (
    VALIDITY, NATURALNESS, BEST_PASSAGE, PASSAGE_MATCH, INSTFOL_MATCH, CONDITION, RELEVANCE)}

#: the default guideline of each built-in question (its first form's)
GUIDELINES = {q.id: q.guidelines for q in BUILTIN_QUESTIONS.values()}
