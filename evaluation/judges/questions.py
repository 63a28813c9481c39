"""What a judge is asked, per question type, and how its answer is read: THE table of the judges.

:data:`JUDGE_QUESTIONS` holds one :class:`JudgeQuestion` per question a judge can answer: the
fields its prompt may use, its answer choices (per scale), the JSON key of the answer, how an
answer becomes the stored value and the value the benchmark-wide estimates read, how the answer's
probabilities become a score, and its built-in prompt versions. Nothing else in IFJudge branches
on a judge's question id; a new question type is one entry here.

Built-in prompts follow the seeds where they publish one:

- ``instfol_match``: IFIR-EVAL, Appendix A.2, Figure 6 (the INSTFOL judge, 0-3, a JSON object with
  the score and a reason). ``ifir-a2`` replaces the legal wording of the published AILA prompt
  ("prior case", "'plaintiff' or 'defendant' beneficial level") by the passage and the
  instruction's main condition, as the human ``instfol_match`` guideline does; ``ifir-a2-aila`` is
  the published prompt as printed, for the legal subsets;
- ``best_passage``: InstructIR, Figure 8 (the filtering stage's ranker: a 1-5 rubric over the
  user's SCENARIO and QUERY, the top-ranked document id returned);
- ``passage_match``: the same rubric of InstructIR Figure 8, one DOCUMENT scored 1-5;
- ``validity`` and ``naturalness``: InstructIR's annotator instructions (Figure 9a, Q1 and Q2);
- ``condition``: InfoSearch publishes no condition-check prompt; ``infosearch-condition`` is
  written in the form of its published templates (Appendix B: ``### TASK``, ``### INPUT``,
  ``### FORMATTING``) around the question annotators answer, and the answer's probability is the
  score, as InfoSearch's point-wise rerankers use the probability of True / False (§3);
- ``relevance``: FollowIR publishes no judging prompt; ``trec-narrative`` asks for a TREC
  relevance judgment under the narrative (a document is relevant only if it meets every condition
  of the narrative, exclusions included), binary, or on the 0-2 scale of Thomas et al. (2023),
  *Large language models can accurately predict searcher preferences*.

Placeholders in a prompt are ``{{name}}`` (so that JSON braces stay literal); each question names
the ones it fills (:attr:`JudgeQuestion.fields`).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Callable

from storage.errors import IFJudgeError

YES_NO = ("Yes", "No")
LIKERT = ("1", "2", "3", "4", "5")
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class Prompt:
    """One prompt version: the system message and the user message template."""

    question: str
    version: str
    system: str
    user: str
    source: str = ""

    @property
    def hash(self) -> str:
        """SHA-256 (first 16 hex digits) of the system message and the user template: equal
        prompts, equal hash, whatever their version names.

        >>> Prompt("validity", "a", "s", "u {{query}}").hash == Prompt("validity", "b", "s", "u {{query}}").hash
        True
        """
        blob = json.dumps({"system": self.system, "user": self.user}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    def as_dict(self) -> dict:
        return {"question": self.question, "version": self.version, "system": self.system, "user": self.user,
                "source": self.source, "hash": self.hash}


@dataclass(frozen=True)
class JudgeQuestion:
    """How a judge answers one question type.

    ``choices(scale, n)`` gives the answers the judge may give (``n``: the candidate passages of
    an item that has some); ``answer_key`` is the key of the answer in the JSON object;
    ``reason``: the JSON object also carries a reason (IFIR's prompt asks for one); ``stored``
    maps an answer to the value stored (a passage number to its doc id); ``estimand`` maps a
    stored value to the value the benchmark-wide estimates read (the ``--judge FILE.csv``
    column); ``score`` turns the answer's probabilities into one number; ``local``: a local
    (bi-encoder / cross-encoder) judge answers it too (a passage judged against a text)."""

    id: str
    fields: tuple[str, ...]
    scales: tuple[str, ...]
    choices: Callable[[str, int], tuple[str, ...]]
    prompts: tuple[Prompt, ...]
    answer_key: str = "answer"
    reason: bool = False
    integer: bool = False
    max_tokens: int = 16
    top_p: float | None = None
    stored: Callable[[str, dict], str] = lambda answer, payload: answer
    estimand: Callable[[str, dict], str] = lambda value, payload: value
    score: Callable[[dict, tuple, dict], float | None] = field(default=None)
    local: bool = False

    @property
    def default_prompt(self) -> Prompt:
        return self.prompts[0]

    def prompt(self, version: str) -> Prompt | None:
        return next((p for p in self.prompts if p.version == version), None)

    def check_scale(self, scale: str) -> str:
        if scale not in self.scales:
            raise IFJudgeError(f"{self.id}: scale must be one of {', '.join(self.scales)}, got {scale!r}")
        return scale


def render(template: str, fields: dict[str, str]) -> str:
    """The template with each ``{{name}}`` replaced by ``fields[name]`` (the text as it is: a
    brace in a passage stays a brace).

    >>> render('Query: {{query}} -> {"answer": "Yes"}', {"query": "red {apple}"})
    'Query: red {apple} -> {"answer": "Yes"}'
    """
    return PLACEHOLDER.sub(lambda m: fields[m.group(1)], template)


def check_template(question: "JudgeQuestion", system: str, user: str) -> None:
    """Refuse a prompt that names a field its question does not fill."""
    unknown = sorted({m for text in (system, user) for m in PLACEHOLDER.findall(text)} - set(question.fields))
    if unknown:
        raise IFJudgeError(f"the {question.id} prompt names {', '.join('{{' + u + '}}' for u in unknown)}; "
                           f"it may use {', '.join('{{' + f + '}}' for f in question.fields)}")
    if not user.strip():
        raise IFJudgeError(f"the {question.id} prompt's user message is empty")


# --------------------------------------------------------------------------- scores from probabilities


def positive_probability(dist: dict[str, float], choices: tuple, payload: dict) -> float | None:
    """P(first choice) ("Yes", "relevant"), the probabilities renormalised over the choices.

    >>> positive_probability({"Yes": 0.75, "No": 0.25, "Maybe": 0.0}, ("Yes", "No"), {})
    0.75
    """
    total = sum(dist.get(c, 0.0) for c in choices)
    return dist.get(choices[0], 0.0) / total if total > 0 else None


def expected_value(dist: dict[str, float], choices: tuple, payload: dict) -> float | None:
    """IFIR's weighted score (Appendix A.2): sum_k s_k e^{p_k} / sum_k e^{p_k} over the scale's
    values among the top log-probabilities at the score's token.

    >>> expected_value({"2": 0.5, "3": 0.5}, ("0", "1", "2", "3"), {})
    2.5
    """
    total = sum(dist.get(c, 0.0) for c in choices)
    return sum(float(c) * dist.get(c, 0.0) for c in choices) / total if total > 0 else None


def target_probability(dist: dict[str, float], choices: tuple, payload: dict) -> float | None:
    """``best_passage``: P(the dataset's target is the chosen passage), renormalised."""
    total = sum(dist.get(c, 0.0) for c in choices)
    if total <= 0 or payload.get("target") not in payload.get("candidates", []):
        return None
    return dist.get(str(payload["candidates"].index(payload["target"]) + 1), 0.0) / total


def _passage_doc(answer: str, payload: dict) -> str:
    return payload["candidates"][int(answer) - 1]


def _target_chosen(value: str, payload: dict) -> str:
    return "Yes" if value == payload.get("target") else "No"


# --------------------------------------------------------------------------- built-in prompts

_ANNOTATOR = "You are an expert annotator validating an instruction-following retrieval benchmark."
_INSTRUCTIR_GOAL = ("Project goal: We aim to construct a benchmark focusing on instance-specific and user-aligned "
                    "instructions for each query, mirroring the varied nature of real-world search scenarios.")

VALIDITY = Prompt("validity", "instructir-fig9a-q1", _ANNOTATOR, f"""{_INSTRUCTIR_GOAL}

Q1 asks whether the provided instruction is suitable for the search user scenario.
- VALID: providing information about the search user, such as the user's job, background, situation, location, occupation, hobbies, interests, goals or preferred targets.
- INVALID: providing little to no connection to the user's job, background, situation, location, occupation, hobbies, interests, or goals. It fails to consider preferences and context, resulting in an overall inadequate fit.

[INSTRUCTION]
{{{{instruction}}}}

[QUERY]
{{{{query}}}}

Q1. Is the instruction valid for the search user? Return only a JSON object: {{"answer": "Yes"}} or {{"answer": "No"}}.""",
                  "InstructIR (Oh et al., 2024), Appendix B, Figure 9a, Q1")

NATURALNESS = Prompt("naturalness", "instructir-fig9a-q2", _ANNOTATOR, f"""{_INSTRUCTIR_GOAL}

Q2 asks whether the given instruction aligns naturally with the provided query.
- NATURAL: The scenario reflects a very specific scenario in which a user interacts with a search engine using a given query and typically instance specific and not universally applicable to other queries.
- UNNATURAL: The scenario does not provide any additional information that is not processed in the query. Throughout, redundant information and overly general scenarios are provided.

[INSTRUCTION]
{{{{instruction}}}}

[QUERY]
{{{{query}}}}

Q2. Is the instruction natural for the given query? Answer with one of: {{{{choices}}}} ({{{{scale_note}}}}). Return only a JSON object {{"answer": "<your answer>"}}.""",
                     "InstructIR (Oh et al., 2024), Appendix B, Figure 9a, Q2")

_RUBRIC = """Score 1: The DOCUMENT lacks relevance to the user's SCENARIO, providing little to no connection to the user's job, background, situation, location, occupation, hobbies, interests, or goals. It fails to consider preferences and context, resulting in an overall inadequate fit.
Score 2: The DOCUMENT has limited relevance, with only a few elements aligning with the user's SCENARIO and QUERY. While some contextual understanding and preference consideration may be present, it falls short of providing a comprehensive and well-fitted response.
Score 3: The DOCUMENT demonstrates moderate relevance, capturing some aspects of the user's SCENARIO. It shows an adequate contextual fit and considers a majority of the user's stated preferences. However, there is room for improvement in terms of depth and clarity.
Score 4: The DOCUMENT exhibits high relevance, aligning well with the user's SCENARIO and covering most relevant aspects. It demonstrates a strong contextual fit, addresses the user's preferences effectively, and maintains high clarity and conciseness. However, there may be minor areas for improvement.
Score 5: The DOCUMENT is perfectly relevant, precisely addressing all aspects of the user's SCENARIO, QUERY, and preferences. It seamlessly integrates with the user's context, demonstrating a profound understanding. The DOCUMENT is exceptionally clear, concise, and exhaustive in providing information, offering a flawless fit."""
_HELPFUL = "You are a helpful, respectful and creative assistant."

BEST_PASSAGE = Prompt("best_passage", "instructir-fig8", _HELPFUL, f"""You are a ranker agent! Each potential DOCUMENT has a corresponding DOCUMENT id and you're tasked with ranking the answers based on their relevancy to the pair of QUERY, SCENARIO pair. In the evaluation, I want you to rate the relevancy of the pair according to the following score rubric:

{_RUBRIC}

You SHOULD ONLY generate the top ranked id from the given search DOCUMENT (id : {{{{choices}}}}) and no additional comments. This is VERY IMPORTANT!

You will be given list of DOCUMENT and a pair of QUERY,SCENARIO.

[DOCUMENT LIST]
{{{{passages}}}}

[SCENARIO]
{{{{instruction}}}}

[QUERY]
{{{{query}}}}

Return only a JSON object {{"answer": "<top ranked DOCUMENT id>"}}.""",
                      "InstructIR (Oh et al., 2024), Appendix A, Figure 8 (filtering stage Q2)")

PASSAGE_MATCH = Prompt("passage_match", "instructir-fig8-rubric", _HELPFUL, f"""You are a relevance evaluator! You're tasked with rating how well the DOCUMENT fits the pair of QUERY, SCENARIO according to the following score rubric:

{_RUBRIC}

[SCENARIO]
{{{{instruction}}}}

[QUERY]
{{{{query}}}}

[DOCUMENT]
{{{{passage}}}}

Return only a JSON object {{"answer": "<score 1 to 5>"}}.""",
                       "InstructIR (Oh et al., 2024), Figure 8's score rubric, one document scored")

_IFIR_TAIL = """Please give a score between 0 and 3.

**
IMPORTANT: Please make sure to only return in JSON format, with the "score" and "reason" key. No additional words or explanations are needed.

Please think step by step about the reason and give the score according to the Evaluation Criteria.

Example JSON:
{"score": 1, "reason": "The corpus only matches the instruction in terms of research field and research topics."}
**

JSON:"""

INSTFOL = Prompt("instfol_match", "ifir-a2", "You are an expert in the domain of the instruction.", """Given an instruction: {{instruction}},

and a passage: {{passage}},

please evaluate the passage according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.

There are 3 relevant levels to evaluate the passage regarding the instruction:

1. The passage is on the topic of the query: {{query}}.

2. The passage satisfies the instruction's main condition (the user's situation, role or goal).

3. The passage totally matches the instruction, including the detailed requirements in the instruction.

Evaluation Criteria:

1. If the passage only meets the instruction at the first level, the score is 1.

2. If the passage meets the instruction at the first and second levels, the score is 2.

3. If the passage meets the instruction at all three levels, the score is 3.

4. If the passage does not meet any of the levels, the score is 0.

""" + _IFIR_TAIL, "IFIR-EVAL, Appendix A.2, Figure 6 (INSTFOL judge), the legal wording made general")

INSTFOL_AILA = Prompt("instfol_match", "ifir-a2-aila", "You are an expert in legal domain.", """Given an instruction: {{instruction}},

and a prior case: {{passage}},

please evaluate the prior case according to the instruction and Evaluation Criteria and return a JSON object with the score and reason.

There are 3 relevant levels to evaluate the case regarding the instruction:

1. The prior case is similar to the one in the instruction.

2. The prior case satisfies the instruction at the 'plaintiff' or 'defendant' beneficial level.

3. The prior case totally matches the instruction, including the detailed requirements in the instruction.

Evaluation Criteria:

1. If the prior case only meets the instruction at the first level, the score is 1.

2. If the prior case meets the instruction at the first and second levels, the score is 2.

3. If the prior case meets the instruction at all three levels, the score is 3.

4. If the prior case does not meet any of the levels, the score is 0.

""" + _IFIR_TAIL, "IFIR-EVAL, Appendix A.2, Figure 6, as printed (AILA, legal)")

CONDITION = Prompt("condition", "infosearch-condition", "You are an expert annotator of document attributes.", """### TASK
You will be provided with a search query with an instruction and a document. The instruction sets a condition on the document (its language, audience, format, source, length or content). Your task is to decide whether the document satisfies that condition and answers the query.

### INPUT
Query: {{query}}
Instruction: {{instruction}}
Document: {{passage}}

### FORMATTING
Your output should be in the following format:
{"answer": <str: "Yes" if the document satisfies the instruction's condition, "No" if it does not>}""",
                   "written in the form of InfoSearch's templates (Zhou et al., 2025, Appendix B); InfoSearch publishes "
                   "no condition-check prompt")

RELEVANCE = Prompt("relevance", "trec-narrative", "You are a TREC relevance assessor.", """A person has typed the query below into a search engine. The narrative says exactly which documents they consider relevant.

[QUERY]
{{query}}

[NARRATIVE]
{{narrative}}

[DOCUMENT]
{{passage}}

Judge the document against the narrative shown. A document is relevant only if it satisfies every condition of the narrative, including any exclusion ("documents about ... are not relevant"); if you would use information from the document in a report on the topic as the narrative defines it, it is relevant.
Answer with one of: {{choices}} ({{scale_note}}). Return only a JSON object {"answer": "<your answer>"}.""",
                   "TREC relevance assessment under the narrative (FollowIR §3 re-judging; graded scale of Thomas "
                   "et al., 2023)")


# --------------------------------------------------------------------------- THE table

JUDGE_QUESTIONS: dict[str, JudgeQuestion] = {q.id: q for q in (
    JudgeQuestion("validity", ("query", "instruction"), ("yesno",), lambda scale, n: YES_NO, (VALIDITY,),
                  score=positive_probability),
    JudgeQuestion("naturalness", ("query", "instruction", "choices", "scale_note"), ("yesno", "likert"),
                  lambda scale, n: LIKERT if scale == "likert" else YES_NO, (NATURALNESS,),
                  score=lambda d, c, p: (expected_value if c == LIKERT else positive_probability)(d, c, p)),
    JudgeQuestion("best_passage", ("query", "instruction", "passages", "choices"), ("choice",),
                  lambda scale, n: tuple(str(i) for i in range(1, n + 1)), (BEST_PASSAGE,),
                  stored=_passage_doc, estimand=_target_chosen, score=target_probability, local=True),
    JudgeQuestion("passage_match", ("query", "instruction", "passage"), ("likert",), lambda scale, n: LIKERT,
                  (PASSAGE_MATCH,), score=expected_value),
    JudgeQuestion("instfol_match", ("query", "instruction", "passage"), ("0-3",),
                  lambda scale, n: ("0", "1", "2", "3"), (INSTFOL, INSTFOL_AILA), answer_key="score", reason=True,
                  integer=True, max_tokens=300, top_p=0.7, score=expected_value),
    JudgeQuestion("condition", ("query", "instruction", "passage"), ("yesno",), lambda scale, n: YES_NO, (CONDITION,),
                  score=positive_probability, local=True),
    JudgeQuestion("relevance", ("query", "narrative", "passage", "choices", "scale_note"), ("binary", "graded"),
                  lambda scale, n: ("0", "1", "2") if scale == "graded" else ("relevant", "not relevant"), (RELEVANCE,),
                  score=lambda d, c, p: (expected_value if c[0] == "0" else positive_probability)(d, c, p), local=True),
)}

#: what the ``{{scale_note}}`` placeholder says, per choice list
SCALE_NOTES = {
    YES_NO: "Yes or No",
    LIKERT: "1 = clearly unnatural, 3 = partly natural, 5 = clearly natural",
    ("relevant", "not relevant"): "relevant or not relevant",
    ("0", "1", "2"): "2 = highly relevant, 1 = relevant, 0 = not relevant",
}


def judge_question(qid: str) -> JudgeQuestion:
    """The entry of :data:`JUDGE_QUESTIONS`, or a clear refusal."""
    try:
        return JUDGE_QUESTIONS[qid]
    except KeyError:
        raise IFJudgeError(f"no judge answers {qid!r}; a judge answers {', '.join(JUDGE_QUESTIONS)}") from None


def default_scale(qid: str) -> str:
    return judge_question(qid).scales[0]


def answer_schema(question: JudgeQuestion, choices: tuple[str, ...]) -> dict:
    """The JSON schema of the answer object (OpenAI's ``response_format`` ``json_schema``, strict):
    the answer constrained to the choices (an integer enum for IFIR's score), and a reason string
    where the prompt asks for one.

    >>> answer_schema(judge_question("validity"), ("Yes", "No"))["properties"]
    {'answer': {'type': 'string', 'enum': ['Yes', 'No']}}
    """
    answer = ({"type": "integer", "enum": [int(c) for c in choices]} if question.integer
              else {"type": "string", "enum": list(choices)})
    props = {question.answer_key: answer}
    if question.reason:
        props["reason"] = {"type": "string"}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}
