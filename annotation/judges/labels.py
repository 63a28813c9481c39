"""An automatic judge's answers: read from its file (:func:`read_judge_labels`) and turned into the
1 / 0 of an estimate (:func:`judge_yes`). Stored apart from human labels, never counted in human
agreement; :mod:`annotation.survey.prediction_powered` uses them with the humans' sample."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from annotation.questions.question_type import Question
from annotation.questions.study import BUILTIN_QUESTIONS
from formats.text import decode_utf8
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
        Empty file, not UTF-8, a missing column or value, or one item twice (file, line, field).
    """
    data = Path(path).read_bytes()
    if not data.strip():
        raise ImportFailure(str(path), None, None, "empty file: expected the header instance_id,question,value[,doc_id]")
    reader = csv.reader(io.StringIO(decode_utf8(data, path), newline=""))
    try:
        header = [h.strip().lower() for h in next(reader)]
        for col in ("instance_id", "question", "value"):
            if col not in header:
                raise ImportFailure(str(path), 1, col, f"missing column {col!r}; expected instance_id,question,value[,doc_id]")
        at = {c: header.index(c) for c in ("instance_id", "question", "value", "doc_id") if c in header}
        out: dict[tuple[str, str, str], str] = {}
        for row in reader:
            if not any(c.strip() for c in row):
                continue
            line = reader.line_num
            if len(row) < len(header):
                raise ImportFailure(str(path), line, header[len(row)], f"expected {len(header)} fields, got {len(row)}")
            key = (row[at["instance_id"]].strip(), row[at["question"]].strip(),
                   row[at["doc_id"]].strip() if "doc_id" in at else "")
            value = row[at["value"]].strip()
            if not key[0] or not key[1] or not value:
                field = "instance_id" if not key[0] else "question" if not key[1] else "value"
                raise ImportFailure(str(path), line, field, f"empty {field}")
            if key in out:
                raise ImportFailure(str(path), line, "instance_id", f"item {key[0]} / {key[1]} {key[2]} appears twice")
            out[key] = value
    except csv.Error as exc:
        raise ImportFailure(str(path), reader.line_num or 1, None, f"malformed CSV: {exc}") from None
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
