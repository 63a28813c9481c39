"""From labels to decisions: each item's outcome and provenance, the validated instance set, and
the validated qrels.

Provenance of an item (docs/validation.md, "Provenance"):

- ``adjudicated``: a lead recorded a final value (the newest adjudication wins);
- ``unanimous``: at least two labels, all equal;
- ``majority``: a strict plurality;
- ``unresolved``: no labels yet, a tie, or a single label of an item planned for several
  annotators (no majority yet; with overlap 1 the single label decides).

The rule is :mod:`annotation.agreement.majority`, the same everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

import numpy as np
import pandas as pd

from annotation.agreement import majority
from annotation.gc_pause import paused_gc
from annotation.outcomes.table import outcome_table
from annotation.questions.study import study_question, study_questions
from storage import projects, studies
from storage.db import Database


@dataclass
class Outcome:
    item_id: int
    instance_id: str
    question: str
    doc_id: str | None
    value: str | None
    provenance: str
    label_counts: dict[str, int] = field(default_factory=dict)
    gold: str | None = None
    reasons: list[tuple[str, str]] = field(default_factory=list)  # (annotator, reason)

    @property
    def disagreement(self) -> float:
        """1 - the share of the most common label (0 when unanimous)."""
        n = sum(self.label_counts.values())
        return 0.0 if n == 0 else 1.0 - max(self.label_counts.values()) / n




def item_outcomes(db: Database, study_id: int, question_id: str | None = None) -> list[Outcome]:
    # computed once per page run or report when the connection shares its reads (storage.studies.share_reads)
    with paused_gc():  # an object per item, no cycles (annotation.gc_pause)
        return list(studies.shared(db, ("outcomes", study_id, question_id),
                                   lambda: _item_outcomes(db, study_id, question_id)))


def _item_outcomes(db: Database, study_id: int, question_id: str | None) -> list[Outcome]:
    # one pass over the label columns (no dict per label): 100,000 labels in a fraction of a second
    cols = studies.current_label_columns(db, study_id, question_id)
    adj = studies.adjudications(db, study_id)
    counts_of: dict[int, dict[str, int]] = {}
    reasons_of: dict[int, list[tuple[str, str]]] = {}
    for item, annotator, value, reason in zip(cols["item"], cols["annotator"], cols["value"], cols["reason"]):
        counts = counts_of.get(item)
        if counts is None:
            counts = counts_of[item] = {}
        counts[value] = counts.get(value, 0) + 1  # first-seen order, as Counter over the rows
        if reason:
            reasons_of.setdefault(item, []).append((annotator, reason))
    out = []
    decisions: dict[tuple, majority.Decision] = {}  # decide() is a pure function of these: a few hundred patterns
    items = studies.item_columns(db, study_id, question_id)
    for i, instance, question_, doc_id, cap, gold in zip(*(items[k] for k in studies.ITEM_COLUMN_KEYS)):
        counts = counts_of.get(i, {})
        key = (tuple(counts.items()), adj[i]["value"] if i in adj else None, cap)
        d = decisions.get(key)
        if d is None:
            d = decisions[key] = majority.decide(counts, adjudication=key[1], overlap=cap)
        out.append(Outcome(i, instance, question_, doc_id, d.value, d.provenance, dict(counts), gold,
                           reasons_of.get(i, [])))
    return out


def study_items(db: Database, study_id: int, question_id: str) -> dict[int, dict]:
    """item id -> item (:func:`storage.studies.items_of_study`) of one question of a study, built
    once per page run or report when ``db`` shares its reads (then read-only: do not change it)."""
    return studies.shared(db, ("items_by_id", study_id, question_id),
                          lambda: {it["id"]: it for it in studies.items_of_study(db, study_id, question_id)})


def labels_frame(db: Database, study_id: int, question_id: str) -> tuple[pd.DataFrame, list[str], dict | None]:
    """The long table (item, annotator, label), the declared categories and the gold answers of one
    question of a study, as :func:`annotation.agreement.report.agreement_report` takes them.

    Labels that are passages (the best passage: doc ids whose candidates differ per item) are
    coded as the position ("1".."N") of the chosen passage in the item's canonical (sorted)
    candidate list, and the gold as the target's position.
    """
    rows, values, categories, gold = question_labels(db, study_id, question_id)
    t = outcome_table(db, study_id)
    frame = pd.DataFrame({"item": t.item[t.label_row[rows]], "annotator": t.annotator[rows], "label": values})
    return frame, categories, gold


def question_labels(db: Database, study_id: int, question_id: str) -> tuple[np.ndarray, list, list[str], dict | None]:
    """What :func:`labels_frame` tabulates, as the outcome table's rows: ``(rows, values,
    categories, gold)``: the indices of the question's labels among the outcome table's labels
    (:func:`annotation.outcomes.table.outcome_table`, in its order), their values as the agreement
    statistics code them (best passage: the position), the declared categories and the gold."""
    study = studies.get_study(db, study_id)
    q = study_question(study, question_id)
    t = outcome_table(db, study_id)
    rows = np.flatnonzero(t.question[t.label_row] == question_id)
    items, values = t.item[t.label_row[rows]], t.label_value[rows]
    gold = None
    if q.answers_are_passages:
        candidates = studies.item_candidates(db, study_id, question_id)
        n = int(study["settings"].get("passages", 3))
        categories = [str(i) for i in range(1, n + 1)]
        values = passage_positions(candidates, items, values)
        gold = {i: str(candidates[i].index(g) + 1) for i, g in t.gold_of(question_id).items()}
    else:
        categories = list(q.categories)
    return rows, values, categories, gold


def passage_positions(candidates: dict[int, list[str]], items: np.ndarray, chosen: np.ndarray) -> list[str]:
    """The position ("1".."N") of each chosen passage (``chosen[j]``, a doc id) in the candidate
    list of its item (``items[j]``): its first place there, as ``list.index``, for every label at once.
    An item without candidates is a ``KeyError``, a passage not among them a ``ValueError``.

    >>> passage_positions({7: ["d2", "d1"], 9: ["d5", "d6", "d7"]}, np.array([9, 7, 9]), np.array(["d7", "d1", "d5"]))
    ['3', '2', '1']
    """
    if not len(items):
        return []
    ids = np.fromiter(candidates, np.int64, len(candidates))
    width = max(map(len, candidates.values()), default=0)
    table = np.full((len(ids), width), None, dtype=object)
    for r, passages in enumerate(candidates.values()):
        table[r, :len(passages)] = passages
    order = np.argsort(ids, kind="stable")
    at = np.minimum(np.searchsorted(ids, items, sorter=order), max(len(ids) - 1, 0))
    row = order[at] if len(ids) else at
    absent = np.flatnonzero(ids[row] != items) if len(ids) else np.arange(len(items))
    if len(absent):
        raise KeyError(int(items[absent[0]]))
    chosen = np.asarray(chosen, dtype=object)
    hit = table[row] == chosen[:, None]
    missing = np.flatnonzero(~hit.any(1))
    if len(missing):
        raise ValueError(f"{chosen[missing[0]]!r} is not in list")
    return np.asarray([str(k) for k in range(1, width + 1)], dtype=object)[hit.argmax(1)].tolist()


@dataclass
class ValidationRules:
    """Which instances the validated set leaves out (configurable, as the lead decides)."""

    drop_invalid: bool = True  # validity outcome "No"
    drop_unnatural: bool = True  # naturalness outcome "No" (or a 1-5 outcome below ``likert_threshold``)
    likert_threshold: int = 3
    drop_best_passage_mismatch: bool = False  # the human choice is not the dataset's target
    keep_unsampled: bool = True  # instances outside the study stay as they are
    # IFIR passage_match (1-5): a gold passage whose match score (median of the labels, or the
    # adjudicated score) is <= match_gold_max becomes not relevant; an excluded passage whose score
    # is >= match_excluded_min becomes relevant. 0 / 6 switch a side off.
    match_gold_max: int = 2
    match_excluded_min: int = 4

    def passage_rule(self) -> str:
        """The passage-match rule in words, as the report names it."""
        return (f"gold passage with median match score <= {self.match_gold_max} -> not relevant; "
                f"excluded passage with median match score >= {self.match_excluded_min} -> relevant")


def match_score(labels: list[str], decision: majority.Decision | None = None) -> tuple[float | None, str, str]:
    """The match score of one ``passage_match`` item (1-5 labels) and its provenance:
    the adjudicated score when a lead adjudicated (``adjudicated``); else the median of the labels
    when there are two or more (``unanimous`` when all agree, else ``majority``: the median
    decides); else undecided (None, ``unresolved``, the reason).

    >>> match_score(["1", "2", "5"])
    (2.0, 'majority', '')
    >>> match_score(["4", "5"])
    (4.5, 'majority', '')
    >>> match_score(["5"])
    (None, 'unresolved', 'awaiting labels')
    """
    if decision is not None and decision.provenance == "adjudicated":
        return float(decision.value), "adjudicated", ""
    if len(labels) < 2:
        return None, "unresolved", "awaiting labels" if labels else "no labels"
    score = float(median(int(v) for v in labels))
    return score, "unanimous" if len(set(labels)) == 1 else "majority", ""


def instance_decisions(db: Database, study_id: int, rules: ValidationRules | None = None) -> dict[str, dict]:
    """instance id -> {"keep": bool, "why": [...], "outcomes": {question: Outcome}}: an instance is
    left out when a decided answer drops it (each question's own rule,
    :meth:`annotation.questions.question_type.Question.drop_reason`, as ``rules`` switch them)."""
    rules = rules or ValidationRules()
    declared = study_questions(studies.get_study(db, study_id))
    out: dict[str, dict] = {}
    for o in item_outcomes(db, study_id):
        d = out.setdefault(o.instance_id, {"keep": True, "why": [], "outcomes": {}})
        d["outcomes"][o.question] = o
        why = declared[o.question].drop_reason(o.value, gold=o.gold, rules=rules)
        if why is not None:
            d["keep"], d["why"] = False, [*d["why"], why]
    return out


def validated_qrels(
    db: Database, study_id: int, rules: ValidationRules | None = None
) -> dict[str, dict[str, int]]:
    """The original qrels without the instances the study rejected (and, unless
    ``keep_unsampled``, without the instances it did not look at)."""
    rules = rules or ValidationRules()
    study = studies.get_study(db, study_id)
    decisions = instance_decisions(db, study_id, rules)
    original = projects.qrels(db, study["project_id"], "original")
    out = {}
    for qid, docs in original.items():
        d = decisions.get(qid)
        if d is None and not rules.keep_unsampled:
            continue
        if d is not None and not d["keep"]:
            continue
        out[qid] = dict(docs)
    return out
