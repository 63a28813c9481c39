"""From labels to decisions: each item's outcome and provenance, the validated instance set, and
the validated qrels.

Provenance of an item (SPEC.md, "Files in and out"):

- ``adjudicated``: a lead recorded a final value (the newest adjudication wins);
- ``unanimous``: at least two labels, all equal;
- ``majority``: a strict plurality;
- ``unresolved``: no labels yet, a tie, or a single label of an item planned for several
  annotators (no majority yet; with overlap 1 the single label decides).

The rule is :mod:`annotation.majority`, the same everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median

import numpy as np
import pandas as pd

from annotation import majority
from annotation.bulk import paused_gc
from annotation.questions import question
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




PROVENANCES = ("unanimous", "majority", "adjudicated", "unresolved")  # the codes of OutcomeTable.provenance


@dataclass
class OutcomeTable:
    """The outcome of every item of a study (one question, or all) as columns, one row per item in
    :func:`storage.studies.item_columns` order: what :func:`item_outcomes` decides, without an
    object per item (a study of 33,336 items and 100,008 labels). The per-item columns are numpy
    arrays: ``n`` labels, ``top`` (the largest count of one value), ``distinct`` values,
    ``provenance`` (an index into :data:`PROVENANCES`) and ``adjudicated``; ``items`` holds the
    items' own columns (:data:`storage.studies.ITEM_COLUMN_KEYS`) and ``values`` the decided value
    per row (None while unresolved). :meth:`votes` gives one row's label counts."""

    items: dict[str, list]
    n: np.ndarray
    top: np.ndarray
    distinct: np.ndarray
    provenance: np.ndarray
    adjudicated: np.ndarray
    values: list
    _label_items: np.ndarray  # the labels' item ids, in (item, annotator name) order
    _label_values: list[str]

    def __len__(self) -> int:
        return len(self.n)

    def disagreement(self) -> np.ndarray:
        """1 - the share of the most common label per row (0 without labels), as
        :attr:`Outcome.disagreement`."""
        return np.where(self.n > 0, 1.0 - self.top / np.maximum(self.n, 1), 0.0)

    def is_(self, provenance: str) -> np.ndarray:
        """The rows whose provenance is ``provenance``."""
        return self.provenance == PROVENANCES.index(provenance)

    def votes(self, row: int) -> dict[str, int]:
        """value -> count of the current labels of row ``row``, in the order the values first appear
        (annotators by name), as :attr:`Outcome.label_counts`."""
        item = self.items["id"][row]
        lo, hi = np.searchsorted(self._label_items, [item, item + 1])
        counts: dict[str, int] = {}
        for v in self._label_values[lo:hi]:
            counts[v] = counts.get(v, 0) + 1
        return counts


def outcome_table(db: Database, study_id: int, question_id: str | None = None) -> OutcomeTable:
    """:class:`OutcomeTable` of the study: each item decided by the rule of
    :func:`annotation.majority.decide` (the newest adjudication wins; a strict plurality of at least
    :func:`annotation.majority.min_labels` labels of the item's planned overlap; else unresolved),
    vectorised over an (item, value) count table. Computed once per page run or report when the
    connection shares its reads (:func:`storage.studies.share_reads`).

    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> t = outcome_table(db, 1)
    >>> len(t), int(t.n.sum()), sorted(set(t.provenance.tolist())) == [PROVENANCES.index("unresolved")]
    (24, 0, True)
    """
    return studies.shared(db, ("outcome_table", study_id, question_id),
                          lambda: _outcome_table(db, study_id, question_id))


def _outcome_table(db: Database, study_id: int, question_id: str | None) -> OutcomeTable:
    label_items, label_values = studies.current_label_values(db, study_id, question_id)
    items = studies.item_columns(db, study_id, question_id)
    adj = studies.adjudications(db, study_id)
    ids = np.asarray(items["id"], dtype=np.int64)
    m = len(ids)
    order = np.argsort(ids, kind="stable")
    li = np.asarray(label_items, dtype=np.int64)  # sorted: the labels come by item
    codes, uniques = pd.factorize(np.asarray(label_values, dtype=object), sort=False)
    q = max(len(uniques), 1)
    row = order[np.searchsorted(ids, li, sorter=order)] if m else li
    # one count per (row, value) present, sorted by row then value code
    pairs, count = np.unique(row * q + codes, return_counts=True)
    pair_row, pair_code = np.divmod(pairs, q)
    n = np.bincount(row, minlength=m)
    distinct = np.bincount(pair_row, minlength=m)
    top = np.zeros(m, dtype=np.int64)
    np.maximum.at(top, pair_row, count)
    is_top = count == top[pair_row]
    n_top = np.bincount(pair_row[is_top], minlength=m)
    winner = np.full(m, -1, dtype=np.int64)
    winner[pair_row[is_top]] = pair_code[is_top]  # read only where one value has the top count
    need = np.where(np.asarray(items["cap"], dtype=np.int64) <= 1, 1, majority.MIN_LABELS)
    adjudicated = np.fromiter((i in adj for i in items["id"]), bool, m)
    strict = (n > 0) & (n >= need) & (n_top == 1)
    code = PROVENANCES.index
    prov = np.where(adjudicated, code("adjudicated"),
                    np.where(~strict, code("unresolved"), np.where(top == n, code("unanimous"), code("majority"))))
    uniq = list(uniques)
    values = [adj[i]["value"] if a else (uniq[w] if s else None)
              for i, a, s, w in zip(items["id"], adjudicated.tolist(), strict.tolist(), winner.tolist())]
    return OutcomeTable(items, n, top, distinct, prov, adjudicated, values, li, label_values)


def item_outcomes(db: Database, study_id: int, question_id: str | None = None) -> list[Outcome]:
    # computed once per page run or report when the connection shares its reads (storage.studies.share_reads)
    with paused_gc():  # an object per item, no cycles (annotation.bulk)
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
    question of a study, as :func:`annotation.agreement.agreement_report` takes them.

    ``best_passage`` labels are doc ids whose candidates differ per item; they are coded as the
    position ("1".."N") of the chosen passage in the item's canonical (sorted) candidate list, and
    the gold as the target's position.
    """
    study = studies.get_study(db, study_id)
    s = study["settings"]
    cols = studies.current_label_columns(db, study_id, question_id)
    gold = None
    if question_id == "best_passage":
        items = study_items(db, study_id, question_id)
        n = int(s.get("passages", 3))
        categories = [str(i) for i in range(1, n + 1)]
        code = lambda item, v: str(items[item]["payload"]["candidates"].index(v) + 1)  # noqa: E731
        values = [code(i, v) for i, v in zip(cols["item"], cols["value"])]
        gold = {i: code(i, it["payload"]["gold"]) for i, it in items.items() if it["payload"].get("gold")}
    else:
        q = question(question_id, naturalness=s.get("naturalness", "yesno"), relevance=s.get("relevance", "binary"))
        categories = list(q.categories)
        values = cols["value"]
    frame = pd.DataFrame({"item": cols["item"], "annotator": cols["annotator"], "label": values})
    return frame, categories, gold


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
    """instance id -> {"keep": bool, "why": [...], "outcomes": {question: Outcome}}."""
    rules = rules or ValidationRules()
    out: dict[str, dict] = {}
    for o in item_outcomes(db, study_id):
        d = out.setdefault(o.instance_id, {"keep": True, "why": [], "outcomes": {}})
        d["outcomes"][o.question] = o
        if o.value is None:
            continue
        if o.question == "validity" and rules.drop_invalid and o.value == "No":
            d["keep"], d["why"] = False, [*d["why"], "invalid"]
        if o.question == "naturalness" and rules.drop_unnatural:
            unnatural = o.value == "No" or (o.value.isdigit() and int(o.value) < rules.likert_threshold)
            if unnatural:
                d["keep"], d["why"] = False, [*d["why"], "unnatural"]
        if o.question == "best_passage" and rules.drop_best_passage_mismatch and o.gold and o.value != o.gold:
            d["keep"], d["why"] = False, [*d["why"], "best passage differs from the target"]
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
