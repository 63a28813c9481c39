"""What a study's benchmark-wide estimates are shares of: per question (and part), which decided
items count as Yes, one row per sampled item (:func:`estimand_rows`). Each question declares its
estimate's name and what counts as Yes (``Question.estimand``, ``is_positive``; a question
without an estimand, INSTFOL's, has none):

| estimate | an item counts as Yes when |
|---|---|
| valid instruction | the decision is Yes |
| natural instruction | Yes, or 3 or more on the 1-5 scale |
| best passage is the dataset's target | the chosen passage is the target |
| passage match >= 4 (gold / excluded passages) | the decided score is 4 or 5 |
| condition satisfied (changed / reversed instruction) | Yes |
| narrative change confirmed | the re-judgment agrees with the published ``changed`` qrels |
| a lead's own question (``<name>: <positive>``) | the decision is one of its positive answers |
"""
from __future__ import annotations

from dataclasses import dataclass

from annotation.outcomes.table import outcome_table
from annotation.questions.question_type import Question
from annotation.questions.study import study_questions
from storage import projects, studies
from storage.db import Database

MATCH_THRESHOLD = 4  # passage match >= k counts as a match (IFIR's 1-5 scale)


@dataclass(frozen=True)
class Estimand:
    """One benchmark-wide share: its name, the question it reads, and which items (``part``:
    ``passage_match`` gold / excluded passages, ``condition`` mode)."""

    name: str
    question: str
    part: str | None = None


def estimand_name(q: Question, part: str | None, threshold: int | None = None) -> str:
    """The estimate's name: the question's ``estimand`` (``{k}``: its threshold) and the part.

    >>> from annotation.questions.builtin import PASSAGE_MATCH, CONDITION
    >>> estimand_name(PASSAGE_MATCH, "gold", 4), estimand_name(CONDITION, "reversed")
    ('passage match >= 4 (gold passages)', 'condition satisfied (reversed instruction)')
    """
    name = q.estimand.format(k=q.threshold if threshold is None else threshold)
    return f"{name} ({q.estimand_part.format(part=part)})" if part else name


def estimand_rows(db: Database, study_id: int, *, match_threshold: int = MATCH_THRESHOLD) -> dict[Estimand, list[dict]]:
    """Per estimand of the study, one row per item: ``{"item", "unit", "key", "y", "labels",
    "unit_items"}`` with ``y`` 1 / 0 for a decided item and None for an undecided one; ``key`` =
    (instance id, question, doc id or "") names the item in a judge's file; ``unit_items`` is the
    number of items of the unit in the benchmark when the study sampled some of them (IFIR's
    excluded passages under ``max_excluded``), else None."""
    study = studies.get_study(db, study_id)
    declared = study_questions(study)
    options = {"match_threshold": match_threshold}
    t = outcome_table(db, study_id)  # every item's decision as columns: no Outcome object per item
    parts = studies.item_parts(db, study_id)
    agrees = any(q.estimand_rule == "agrees-with-changed" for q in declared.values())
    changed = projects.qrels(db, study["project_id"], "changed") if agrees else {}
    query_of = ({i["instance_id"]: i["query_id"] for i in projects.instances(db, study["project_id"])}
                if changed else {})
    out: dict[Estimand, list[dict]] = {}
    estimands: dict[tuple, list[dict]] = {}  # (question, part) -> its rows: one Estimand per part, hashed once
    for item, instance, question_, doc_id, value, gold, n, control, kind, mode, of in zip(
            t.item.tolist(), t.instance.tolist(), t.question.tolist(), t.doc_id.tolist(), t.value.tolist(),
            t.gold.tolist(), t.n_labels.tolist(), parts["control"], parts["kind"], parts["mode"],
            parts["excluded_of"]):
        q = declared[question_]
        if not q.estimand:
            continue
        if control:  # a re-judging control document, not a document the change is about
            continue
        part = kind or mode
        rows = estimands.get((question_, part))
        if rows is None:
            name = estimand_name(q, part, q.threshold_in(options))
            rows = estimands[(question_, part)] = out.setdefault(Estimand(name, question_, part), [])
        # the unit a re-judged document's estimate samples is the document (design "relevance")
        unit = f"{instance}|{doc_id}" if q.design == "relevance" else instance
        y = None
        if value is not None:
            if q.estimand_rule == "agrees-with-changed":
                published = changed.get(instance) or changed.get(query_of.get(instance, ""), {})
                rel = published.get(doc_id)
                y = None if rel is None else int(bool(q.is_positive(value)) == (rel > 0))
            else:
                positive = q.is_positive(value, gold=gold, threshold=q.threshold_in(options))
                y = None if positive is None else int(positive)
        rows.append({"item": item, "unit": unit, "key": (instance, question_, doc_id or ""), "y": y, "labels": n,
                     "unit_items": of})
    return out
