"""The questions annotators answer (docs/protocol.md, "Question types"; docs/questions.md), as a study asks them: each one a
declaration (:class:`annotation.questions.question_type.Question`), the seven built-in ones in
:mod:`annotation.questions.builtin` and a lead's own in the study's settings
(:mod:`annotation.questions.own`); :func:`study_questions` gives a study's. Here too: what one
screen's questions share (their keys, the labeler's instructions of InstructIR's Figure 9a) and
the project goals shown before the first item.
"""
from __future__ import annotations

from annotation.questions.builtin import (  # noqa: F401  (their names, as the rest of the tool imports them)
    BUILTIN_QUESTIONS, GUIDELINES, LIKERT, MATCH_0_3, NATURALNESS_LIKERT_NOTE, RELEVANCE_BINARY, RELEVANCE_GRADED, YES_NO)
from annotation.questions.own import from_snapshot
from annotation.questions.question_type import Question
from storage.errors import IFJudgeError

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



def question(qid: str, *, naturalness: str = "yesno", relevance: str = "binary") -> Question:
    """The built-in question ``qid`` as configured by a study (``naturalness``: yesno | likert;
    ``relevance``: binary | graded): its declaration's form (:mod:`annotation.questions.builtin`).
    A study's own questions are read with :func:`study_questions`."""
    q = BUILTIN_QUESTIONS.get(qid)
    if q is None:
        raise IFJudgeError(f"unknown question {qid!r}; expected one of {', '.join(BUILTIN_QUESTIONS)}")
    return q.form({"naturalness": naturalness, "relevance": relevance})


#: the built-in questions a study of instances asks (``annotation.studies.create_study``)
INSTANCE_QUESTIONS = tuple(q.id for q in BUILTIN_QUESTIONS.values() if not q.study_of_its_own)
#: questions about the passages two retrieval runs returned (IFIR's INSTFOL with human judges)
RUN_QUESTIONS = tuple(q.id for q in BUILTIN_QUESTIONS.values() if q.asked_per == "ranked-passages")


def study_questions(study: dict) -> dict[str, Question]:
    """Question id -> its declaration, as the study ``study`` (a row of
    :func:`storage.studies.get_study`) asks it, in the study's order: a built-in question in the
    form its settings choose, a lead's own question as the study stored it when it was created
    (``settings["own_questions"]``: later edits of the declaration never change what its labels
    meant).

    >>> study_questions({"questions": ["validity", "naturalness"], "settings": {"naturalness": "likert"}})["naturalness"].scale
    'ordinal'
    """
    settings = study.get("settings") or {}
    own = settings.get("own_questions") or {}
    out = {}
    for qid in study["questions"]:
        if qid in own:
            out[qid] = from_snapshot(own[qid])
        elif qid in BUILTIN_QUESTIONS:
            out[qid] = BUILTIN_QUESTIONS[qid].form(settings)
        else:
            raise IFJudgeError(f"study {study.get('id', '?')} asks {qid!r}, which is neither a built-in question nor "
                               "one it declares")
    return out


def study_question(study: dict, qid: str) -> Question:
    """One question as ``study`` asks it (:func:`study_questions`); a built-in question the study
    does not ask, in the form its settings choose; refused naming the study's questions otherwise.

    >>> study_question({"id": 1, "questions": ["validity"], "settings": {}}, "harm")
    Traceback (most recent call last):
    ...
    formats.errors.IFJudgeError: study 1 asks no question 'harm'; it asks validity
    """
    declared = study_questions(study)
    if qid in declared:
        return declared[qid]
    if qid in BUILTIN_QUESTIONS:
        return BUILTIN_QUESTIONS[qid].form(study.get("settings") or {})
    raise IFJudgeError(f"study {study.get('id', '?')} asks no question {qid!r}; it asks {', '.join(study['questions'])}")


def screen_shortcuts(questions: list[Question], n_passages: int = 0) -> dict[str, list[str | None]]:
    """The keyboard key of every option on one screen, per question id (None: no key).

    Each question keeps its own keys (validity 1/2, naturalness 3/4, passages 5/6/7, 1-5 on a
    Likert-only screen, relevance 1/2 or 1/2/3). A question whose keys collide with those of an
    earlier question on the same screen (a 1-5 scale beside validity) is answered by click only,
    so a key never means two things; options beyond a question's keys (a fourth passage) get none.
    A lead's own question's keys were checked against the others of its screen when the study
    was created (:func:`annotation.questions.own.assign_keys`).

    >>> v, n = question("validity"), question("naturalness", naturalness="likert")
    >>> screen_shortcuts([v, n])
    {'validity': ['1', '2'], 'naturalness': [None, None, None, None, None]}
    >>> screen_shortcuts([question("best_passage")], n_passages=4)
    {'best_passage': ['5', '6', '7', None]}
    """
    used: set[str] = set()
    out: dict[str, list[str | None]] = {}
    for q in questions:
        n = n_passages if q.answers_are_passages else len(q.categories)
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
    by_answers: dict[tuple[str, ...], list[str]] = {}  # the answers that need a reason -> the questions
    for i, q in enumerate(questions, start=1):
        if q.reason_required_for:
            by_answers.setdefault(q.reason_required_for, []).append(f"Q{i}")
    for answers, numbers in by_answers.items():
        said = " or ".join(f"'{a.upper()}'" for a in answers)
        text += f" If you choose {said} for {' or '.join(numbers)}, provide a clear and concise reason for your decision."
    return text
