"""An automatic judge's answers: read from its file (:func:`read_judge_labels`) and turned into the
1 / 0 of an estimate (:func:`judge_yes`). Stored apart from human labels, never counted in human
agreement; :mod:`annotation.survey.prediction_powered` uses them with the humans' sample."""
from __future__ import annotations

from pathlib import Path

from annotation.questions.question_type import Question
from annotation.questions.study import BUILTIN_QUESTIONS
from formats.csv_table import read_csv_table
from storage.errors import ImportFailure

def read_judge_labels(path: str | Path) -> dict[tuple[str, str, str], str]:
    """An automatic judge's per-item answers: a CSV with the header ``instance_id,question,value``
    and optionally ``doc_id`` (``passage_match``, ``condition``, ``relevance``). ``value`` is an
    answer of the question (``Yes``/``No``, ``1``-``5``, ``relevant``/``not relevant``) or, for
    ``best_passage``, ``Yes``/``No`` (or ``1``/``0``): is the dataset's target the best passage.
    The rows are every item of the benchmark the judge labelled (sampled or not).

    Raises
    ------
    ImportFailure
        Empty file, not UTF-8, a missing column or value, a row with another number of fields
        than the header, or one item twice (file, line, field; :mod:`formats.csv_table`).
    """
    table = read_csv_table(path, ("instance_id", "question", "value"), optional=("doc_id",), fold_case=True)
    out: dict[tuple[str, str, str], str] = {}
    for line, row in table.rows():
        key = (row["instance_id"], row["question"], row.get("doc_id", ""))
        value = row["value"]
        if not key[0] or not key[1] or not value:
            field = "instance_id" if not key[0] else "question" if not key[1] else "value"
            raise ImportFailure(str(path), line, field, f"empty {field}")
        if key in out:
            raise ImportFailure(str(path), line, "instance_id", f"item {key[0]} / {key[1]} {key[2]} appears twice")
        out[key] = value
    return out


def judge_yes(question: Question, value: str, *, threshold: int) -> int | None:
    """The judge's answer as 1 / 0 for the estimand of ``question`` (its declaration; None: not an
    answer of it). A question whose answers are passages (the best passage): Yes/No or 1/0 (is
    the dataset's target the best passage); otherwise an answer of the question, in any of its
    forms (a 1-5 naturalness judge read against a Yes / No study), positive as the question
    declares (``threshold``: the passage match's).

    >>> from annotation.questions.study import question
    >>> judge_yes(question("best_passage"), "1", threshold=4), judge_yes(question("naturalness"), "2", threshold=4)
    (1, 0)
    """
    v = value.strip()
    if question.positive_rule == "target":
        return {"1": 1, "yes": 1, "0": 0, "no": 0}.get(v.lower())
    base = BUILTIN_QUESTIONS.get(question.id) if question.builtin else None
    for form in ([f for _, f in base.forms] if base is not None and base.forms else [question]):
        if v in form.categories:
            return int(bool(form.is_positive(v, threshold=form.threshold_in({"match_threshold": threshold}))))
    return None
