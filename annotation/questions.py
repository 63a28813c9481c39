"""The question types annotators answer (docs/protocol.md, "Question types"), with their wording, declared
categories, keyboard keys, and the default guidelines from the InstructIR annotator
instructions (Oh et al., 2024, Appendix B, Figure 9a).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from storage.errors import IFJudgeError, InvalidAnswer

YES_NO = ("Yes", "No")
LIKERT = ("1", "2", "3", "4", "5")
RELEVANCE_BINARY = ("relevant", "not relevant")
RELEVANCE_GRADED = ("0", "1", "2")
MATCH_0_3 = ("0", "1", "2", "3")

# InstructIR, Figure 9a ("Instructions for Annotators"), verbatim.
PROJECT_GOAL_INSTRUCTIR = (
    "We aim to construct a benchmark focusing on instance-specific and user-aligned instructions for each query, "
    "mirroring the varied nature of real-world search scenarios."
)
# the goal shown to annotators per project kind (a study may set its own: settings["goal"])
PROJECT_GOALS = {
    "instructir": PROJECT_GOAL_INSTRUCTIR,
    "ifir": (
        "We validate IFIR, a benchmark of instruction-following retrieval in expert domains (finance, legal, "
        "healthcare, scientific literature): whether each instruction is natural for its query, whether its gold "
        "passages match it, and whether the passages it excludes are rightly excluded."
    ),
    "followir": (
        "We validate FollowIR, a benchmark of retrieval that follows TREC narratives: which documents stay relevant "
        "when a narrative is made more specific or adds an exclusion."
    ),
    "infosearch": (
        "We validate InfoSearch, a benchmark of retrieval that follows conditions on the documents (language, "
        "length, format, ...): whether each document satisfies the instruction's condition."
    ),
    "generic": PROJECT_GOAL_INSTRUCTIR,
}

GUIDELINES = {
    "validity": (
        "Q1 asks whether the provided instruction is suitable for the search user scenario.\n"
        "- VALID: providing information about the search user, such as the user's job, background, situation, "
        "location, occupation, hobbies, interests, goals or preferred targets.\n"
        "- INVALID: providing little to no connection to the user's job, background, situation, location, "
        "occupation, hobbies, interests, or goals. It fails to consider preferences and context, resulting in an "
        "overall inadequate fit."
    ),
    "naturalness": (
        "Q2 asks whether the given instruction aligns naturally with the provided query.\n"
        "- NATURAL: The scenario reflects a very specific scenario in which a user interacts with a search engine "
        "using a given query and typically instance specific and not universally applicable to other queries.\n"
        "- UNNATURAL: The scenario does not provide any additional information that is not processed in the query. "
        "Throughout, redundant information and overly general scenarios are provided."
    ),
    "best_passage": (
        "Q3 is asking to identify the passage that best fits the given instruction and query, considering specific "
        "conditions such as occupation, age, situation, and preferences. Pay careful attention to detail when "
        "selecting the most appropriate target from the provided options.\n"
        "- NOT RELEVANT: The passage lacks relevance to the user's INSTRUCTION, providing little to no connection "
        "to the user's job, background, situation, location, occupation, hobbies, interests, or goals. It fails to "
        "consider preferences and context, resulting in an overall inadequate fit.\n"
        "- RELEVANT: The passage is mostly relevant, precisely addressing all aspects of the user's INSTRUCTION, "
        "QUERY, and preferences. It seamlessly integrates with the user's context, demonstrating a profound "
        "understanding. The passage is exceptionally clear, concise, and exhaustive in providing information, "
        "offering a flawless fit."
    ),
    "passage_match": (
        "Rate how well the passage matches the query together with its instruction, from 1 (does not match: "
        "ignores or contradicts the instruction) to 5 (matches every condition the instruction sets). "
        "The higher the score, the better the match."
    ),
    "instfol_match": (
        "Score how well the passage matches the instruction together with the query, as IFIR's INSTFOL judge "
        "does (0-3):\n"
        "- 0: the passage meets none of the instruction's levels (off topic for the query, or contradicts the "
        "instruction).\n"
        "- 1: the passage meets the instruction only at the first level: it is on the query's topic.\n"
        "- 2: the passage meets the first and second levels: on topic and satisfying the instruction's main "
        "condition (the user's situation, role or goal).\n"
        "- 3: the passage totally matches the instruction, including its detailed requirements."
    ),
    "condition": (
        "InfoSearch (Zhou et al., 2025, §2): read the instruction shown (it sets a condition on the document: "
        "its language, audience, format, source, length or content). Answer Yes if the document satisfies that "
        "condition and answers the query, No if it does not satisfy it. Judge only against the instruction shown; "
        "the same document may be shown under the reversed instruction in another item."
    ),
    "relevance": (
        "Judge the document against the narrative shown, not against what you remember of earlier versions. "
        "A document is relevant only if it satisfies every condition of the narrative, including any exclusion."
    ),
}

NATURALNESS_LIKERT_NOTE = (
    "\nOn the 1-5 scale: 1 = clearly UNNATURAL, 3 = partly natural, 5 = clearly NATURAL for this query."
)


@dataclass(frozen=True)
class Question:
    id: str
    prompt: str
    categories: tuple[str, ...]
    reason_required_for: tuple[str, ...] = ()
    keys: tuple[str, ...] = field(default=())

    def label(self, value: str) -> str:
        """How an answer reads on its button (``not relevant`` -> ``Not relevant``); the stored
        value is unchanged."""
        return value[:1].upper() + value[1:]

    def check(self, value: str, reason: str, *, categories: tuple[str, ...] | None = None) -> None:
        """Refuse a value outside the declared categories, or a missing reason where one is required."""
        allowed = categories or self.categories
        if value not in allowed:
            raise InvalidAnswer(
                f"{self.id}: answer {value!r} is not one of {', '.join(allowed)}"
            )
        if value in self.reason_required_for and not (reason or "").strip():
            raise InvalidAnswer(f"{self.id}: a reason is required when the answer is {value}")


def question(qid: str, *, naturalness: str = "yesno", relevance: str = "binary") -> Question:
    """The question ``qid`` as configured by a study (``naturalness``: yesno | likert;
    ``relevance``: binary | graded)."""
    if qid == "validity":
        return Question(qid, "Is the instruction valid for the search user?", YES_NO, ("No",), ("1", "2"))
    if qid == "naturalness":
        if naturalness == "likert":
            return Question(qid, "How natural is the instruction for the given query? (1-5)", LIKERT, (), LIKERT)
        if naturalness != "yesno":
            raise IFJudgeError(f"naturalness must be 'yesno' or 'likert', got {naturalness!r}")
        return Question(qid, "Is the instruction natural for the given query?", YES_NO, ("No",), ("3", "4"))
    if qid == "best_passage":
        return Question(qid, "Which passage is the most natural for the given instruction and query?", (), (), ("5", "6", "7"))
    if qid == "passage_match":
        return Question(qid, "How well does the passage match the instruction and query? (1-5)", LIKERT, (), LIKERT)
    if qid == "instfol_match":
        return Question(qid, "How well does the passage match the instruction and query? (0-3)", MATCH_0_3, (), MATCH_0_3)
    if qid == "condition":
        return Question(qid, "Does this document satisfy the instruction's condition?", YES_NO, (), ("1", "2"))
    if qid == "relevance":
        if relevance == "graded":
            return Question(qid, "How relevant is the document under this narrative? (0-2)", RELEVANCE_GRADED, (), ("1", "2", "3"))
        return Question(qid, "Is the document relevant under this narrative?", RELEVANCE_BINARY, (), ("1", "2"))
    raise IFJudgeError(f"unknown question {qid!r}; expected one of "
                       f"{', '.join(INSTANCE_QUESTIONS + RUN_QUESTIONS + ('relevance', 'condition'))}")


INSTANCE_QUESTIONS = ("validity", "naturalness", "best_passage", "passage_match")
# questions about the passages two retrieval runs returned (IFIR's INSTFOL with human judges)
RUN_QUESTIONS = ("instfol_match",)


def screen_shortcuts(questions: list[Question], n_passages: int = 0) -> dict[str, list[str | None]]:
    """The keyboard key of every option on one screen, per question id (None: no key).

    Each question keeps its own keys (validity 1/2, naturalness 3/4, passages 5/6/7, 1-5 on a
    Likert-only screen, relevance 1/2 or 1/2/3). A question whose keys collide with those of an
    earlier question on the same screen (a 1-5 scale beside validity) is answered by click only,
    so a key never means two things; options beyond a question's keys (a fourth passage) get none.

    >>> v, n = question("validity"), question("naturalness", naturalness="likert")
    >>> screen_shortcuts([v, n])
    {'validity': ['1', '2'], 'naturalness': [None, None, None, None, None]}
    >>> screen_shortcuts([question("best_passage")], n_passages=4)
    {'best_passage': ['5', '6', '7', None]}
    """
    used: set[str] = set()
    out: dict[str, list[str | None]] = {}
    for q in questions:
        n = n_passages if q.id == "best_passage" else len(q.categories)
        keys = [q.keys[i] if i < len(q.keys) else None for i in range(n)]
        if used & {k for k in keys if k}:
            keys = [None] * n
        used |= {k for k in keys if k}
        out[q.id] = keys
    return out


NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six")


def labeler_instructions(questions: list[Question]) -> str:
    """The "Instructions for Data Labeler" paragraph of InstructIR's Figure 9a, for the questions
    of one screen in their order (Q1, Q2, ...); verbatim for InstructIR's three questions.

    >>> print(labeler_instructions([question("validity"), question("naturalness"), question("best_passage")]))
    You will encounter three questions for each instance. Your task is to choose an option for each question. If you choose 'NO' for Q1 or Q2, provide a clear and concise reason for your decision.
    """
    n = len(questions)
    count = NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else str(n)
    text = (f"You will encounter {count} question{'s' if n != 1 else ''} for each instance. "
            f"Your task is to choose an option for each question.")
    reasons = [f"Q{i}" for i, q in enumerate(questions, start=1) if q.reason_required_for]
    if reasons:
        text += f" If you choose 'NO' for {' or '.join(reasons)}, provide a clear and concise reason for your decision."
    return text
