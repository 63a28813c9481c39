"""What a study's benchmark-wide estimates are shares of: per question (and part), which decided
items count as Yes, one row per sampled item (:func:`estimand_rows`).

| estimate | an item counts as Yes when |
|---|---|
| valid instruction | the decision is Yes |
| natural instruction | Yes, or 3 or more on the 1-5 scale |
| best passage is the dataset's target | the chosen passage is the target |
| passage match >= 4 (gold / excluded passages) | the decided score is 4 or 5 |
| condition satisfied (changed / reversed instruction) | Yes |
| narrative change confirmed | the re-judgment agrees with the published ``changed`` qrels |
"""
from __future__ import annotations

from dataclasses import dataclass

from annotation.outcome_table import outcome_table
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


def counts_as_yes(question: str, value: str, *, gold: str | None, threshold: int, scale: str) -> bool:
    """Whether a decided value counts as Yes for the estimand of ``question``.

    >>> counts_as_yes("naturalness", "3", gold=None, threshold=4, scale="binary"), counts_as_yes(
    ...     "passage_match", "3", gold=None, threshold=4, scale="binary")
    (True, False)
    """
    if question == "best_passage":
        return value == gold
    if question in ("passage_match", "instfol_match"):
        return int(value) >= threshold
    if question == "naturalness":
        return value == "Yes" or (value.isdigit() and int(value) >= 3)
    if question == "relevance":
        return value == "relevant" or (scale == "graded" and value.isdigit() and int(value) > 0)
    return value == "Yes"


NAMES = {
    "validity": "valid instruction", "naturalness": "natural instruction",
    "best_passage": "best passage is the dataset's target", "passage_match": "passage match >= {k}",
    "condition": "condition satisfied", "relevance": "narrative change confirmed (re-judgment agrees with the changed qrels)",
}


def estimand_rows(db: Database, study_id: int, *, match_threshold: int = MATCH_THRESHOLD) -> dict[Estimand, list[dict]]:
    """Per estimand of the study, one row per item: ``{"item", "unit", "key", "y", "labels",
    "unit_items"}`` with ``y`` 1 / 0 for a decided item and None for an undecided one; ``key`` =
    (instance id, question, doc id or "") names the item in a judge's file; ``unit_items`` is the
    number of items of the unit in the benchmark when the study sampled some of them (IFIR's
    excluded passages under ``max_excluded``), else None."""
    study = studies.get_study(db, study_id)
    scale = study["settings"].get("relevance", "binary")
    t = outcome_table(db, study_id)  # every item's decision as columns: no Outcome object per item
    parts = studies.item_parts(db, study_id)
    changed = projects.qrels(db, study["project_id"], "changed") if "relevance" in study["questions"] else {}
    query_of = ({i["instance_id"]: i["query_id"] for i in projects.instances(db, study["project_id"])}
                if changed else {})
    out: dict[Estimand, list[dict]] = {}
    estimands: dict[tuple, list[dict]] = {}  # (question, part) -> its rows: one Estimand per part, hashed once
    for item, instance, question_, doc_id, value, gold, n, control, kind, mode, of in zip(
            t.item.tolist(), t.instance.tolist(), t.question.tolist(), t.doc_id.tolist(), t.value.tolist(),
            t.gold.tolist(), t.n_labels.tolist(), parts["control"], parts["kind"], parts["mode"],
            parts["excluded_of"]):
        if question_ == "instfol_match":
            continue
        if control:  # a re-judging control document, not a document the change is about
            continue
        part = kind or mode
        rows = estimands.get((question_, part))
        if rows is None:
            name = NAMES.get(question_, question_).format(k=match_threshold)
            if part:
                name += f" ({'gold' if part == 'gold' else part} {'passages' if question_ == 'passage_match' else 'instruction'})"
            rows = estimands[(question_, part)] = out.setdefault(Estimand(name, question_, part), [])
        unit = f"{instance}|{doc_id}" if question_ == "relevance" else instance
        y = None
        if value is not None:
            if question_ == "relevance":
                published = changed.get(instance) or changed.get(query_of.get(instance, ""), {})
                rel = published.get(doc_id)
                y = None if rel is None else int(counts_as_yes("relevance", value, gold=None, threshold=0, scale=scale)
                                                  == (rel > 0))
            elif question_ == "best_passage" and not gold:
                y = None
            else:
                y = int(counts_as_yes(question_, value, gold=gold, threshold=match_threshold, scale=scale))
        rows.append({"item": item, "unit": unit, "key": (instance, question_, doc_id or ""), "y": y, "labels": n,
                     "unit_items": of})
    return out
