"""A study's labels and item outcomes as columns: what :func:`annotation.outcomes.items.item_outcomes`
decides, computed over arrays for the screens that read every item of a large study (the
monitor, the benchmark-wide estimates) instead of one :class:`~annotation.outcomes.items.Outcome`
object per item.

The rule is the one of :mod:`annotation.agreement.majority`: the counts of each item's distinct values
(columns in the order the labels first give them, labels by annotator name, as ``Counter``
counts them) go through :func:`annotation.agreement.majority.majority_index` with the item's planned
overlap (its cap); a lead's newest adjudication overrides the vote.

>>> from storage.db import connect
>>> from annotation.demo import load_demo
>>> db = connect(":memory:"); sid = load_demo(db)["study"]["study_id"]
>>> t = outcome_table(db, sid)
>>> len(t.item), int(t.n_labels.sum()), sorted(set(t.provenance))
(24, 0, ['unresolved'])
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from annotation.agreement import majority
from storage import studies, users
from storage.db import Database


@dataclass(frozen=True)
class OutcomeTable:
    """Per item (the study's items in :func:`storage.studies.item_columns` order, as
    :func:`annotation.outcomes.items.item_outcomes` lists them): ``item`` (id), ``instance``,
    ``question``, ``doc_id``, ``gold`` (object arrays; None where absent), ``cap`` (the planned
    annotators), ``value`` (the decision, None when unresolved), ``provenance``, ``n_labels``,
    ``top`` (labels of the most common value) and ``distinct`` (distinct values). Per label (the
    current labels, by item id and annotator name): ``label_row`` (the label's item's index in the
    arrays above), ``annotator``, ``label_value``, ``reason``, ``duration_ms``."""

    item: np.ndarray
    instance: np.ndarray
    question: np.ndarray
    doc_id: np.ndarray
    gold: np.ndarray
    cap: np.ndarray
    value: np.ndarray
    provenance: np.ndarray
    n_labels: np.ndarray
    top: np.ndarray
    distinct: np.ndarray
    label_row: np.ndarray
    annotator: np.ndarray
    label_value: np.ndarray
    reason: np.ndarray
    duration_ms: np.ndarray

    @property
    def disagreement(self) -> np.ndarray:
        """Per item: 1 - the share of the most common label (0 when unanimous or unlabelled),
        :attr:`annotation.outcomes.items.Outcome.disagreement`."""
        n = np.maximum(self.n_labels, 1)
        return np.where(self.n_labels > 0, 1.0 - self.top / n, 0.0)

    def gold_of(self, question: str) -> dict[int, str]:
        """item id -> the dataset's answer (the payload's ``gold``) of the items asking ``question``
        that have one, in item order."""
        rows = np.flatnonzero(self.question == question)
        return {i: g for i, g in zip(self.item[rows].tolist(), self.gold[rows].tolist()) if g}

    def label_counts(self, rows) -> list[dict[str, int]]:
        """``{value: count}`` of the items at ``rows`` (indices), values in the order their labels
        first give them (as :attr:`annotation.outcomes.items.Outcome.label_counts`)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = [dict() for _ in range(len(rows))]
        if not len(rows):
            return out
        where = np.full(len(self.item), -1, np.int64)
        where[rows] = np.arange(len(rows))
        pick = np.flatnonzero(where[self.label_row] >= 0)
        for j, v in zip(where[self.label_row[pick]].tolist(), self.label_value[pick].tolist()):
            counts = out[j]
            counts[v] = counts.get(v, 0) + 1
        return out


def outcome_table(db: Database, study_id: int) -> OutcomeTable:
    """The :class:`OutcomeTable` of a study, built once per page run or report when ``db`` shares
    its reads (:func:`storage.studies.share_reads`; then read-only)."""
    return studies.shared(db, ("outcome_table", study_id), lambda: _outcome_table(db, study_id))


def _outcome_table(db: Database, study_id: int) -> OutcomeTable:
    items = studies.item_columns(db, study_id)
    labels = studies.label_vote_columns(db, study_id)
    adj = studies.adjudications(db, study_id)
    item = np.asarray(items["id"], dtype=np.int64)
    n_items = len(item)
    # the labels by item id and annotator name (as storage.studies.current_labels orders them)
    people = users.list_users(db)  # by name
    user_ids = np.asarray([u["id"] for u in people], dtype=np.int64)
    names = np.asarray([u["name"] for u in people], dtype=object)
    by_id = np.argsort(user_ids)
    who = by_id[np.searchsorted(user_ids, np.asarray(labels["user"], dtype=np.int64), sorter=by_id)]
    label_item = np.asarray(labels["item"], dtype=np.int64)
    by_label = np.lexsort((who, label_item))
    label_item, who = label_item[by_label], who[by_label]
    label_value = np.asarray(labels["value"], dtype=object)[by_label]
    sorter = np.argsort(item, kind="stable")
    label_row = sorter[np.searchsorted(item, label_item, sorter=sorter)] if len(label_item) else label_item
    value_code, values = pd.factorize(label_value)
    values = np.asarray(values, dtype=object)
    # the distinct (item, value) pairs in the order the labels first give them: labels come grouped by
    # item id, so within an item this is Counter's first-seen order
    key = label_row * max(len(values), 1) + value_code
    pair_of_label, pair_key = pd.factorize(key)
    pair_count = np.bincount(pair_of_label, minlength=len(pair_key))
    pair_key = np.asarray(pair_key, dtype=np.int64)
    pair_row, pair_value = np.divmod(pair_key, max(len(values), 1))
    distinct = np.bincount(pair_row, minlength=n_items)
    # the column of each pair within its item (pairs of one item are contiguous when items' labels are)
    order = np.argsort(pair_row, kind="stable")
    starts = np.concatenate([[0], np.cumsum(distinct)[:-1]])
    column = np.empty(len(pair_key), np.int64)
    column[order] = np.arange(len(pair_key)) - starts[pair_row[order]]
    width = int(distinct.max()) if n_items and len(pair_key) else 0
    counts = np.zeros((n_items, max(width, 1)), np.int64)
    counts[pair_row, column] = pair_count
    value_at = np.full((n_items, max(width, 1)), -1, np.int64)
    value_at[pair_row, column] = pair_value
    cap = np.asarray(items["cap"], dtype=np.int64)
    pick = majority.majority_index(counts, overlap=cap)
    n_labels = counts.sum(1)
    top = counts.max(1)
    decided = pick >= 0
    value = np.full(n_items, None, dtype=object)
    value[decided] = values[value_at[decided, pick[decided]]]
    provenance = np.where(decided, np.where(top == n_labels, "unanimous", "majority"), "unresolved").astype(object)
    if adj:
        rows = np.flatnonzero(np.isin(item, np.fromiter(adj, dtype=np.int64, count=len(adj))))
        value[rows] = [adj[i]["value"] for i in item[rows].tolist()]
        provenance[rows] = "adjudicated"
    return OutcomeTable(
        item=item, instance=np.asarray(items["instance_id"], dtype=object),
        question=np.asarray(items["question"], dtype=object), doc_id=np.asarray(items["doc_id"], dtype=object),
        gold=np.asarray(items["gold"], dtype=object), value=value, provenance=provenance, n_labels=n_labels,
        top=top, distinct=distinct, label_row=label_row, annotator=names[who],
        label_value=label_value, reason=np.asarray(labels["reason"], dtype=object)[by_label],
        duration_ms=np.asarray(labels["duration_ms"], dtype=object)[by_label], cap=cap,
    )
