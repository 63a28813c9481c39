"""Encoding of a long label table (item, annotator, label) into integer codes for the agreement
statistics: per-item count matrix over the declared categories, the annotator pairs that labelled
the same item, and the gold label per item. Refuses labels outside the declared categories and
duplicate (item, annotator) rows, naming the offending row (0-based position in the table).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from storage.errors import IFJudgeError, InvalidAnswer

COLUMNS = ("item", "annotator", "label")


class UnknownLabel(InvalidAnswer):
    """A label (or gold label) outside the declared categories; ``row`` is its 0-based position."""

    def __init__(self, label, row: int, categories, *, table: str = "labels"):
        self.label, self.row, self.table = label, row, table
        super().__init__(f"{table} row {row}: label {label!r} is not one of the declared categories: "
                         f"{', '.join(categories)}")


class DuplicateLabel(IFJudgeError):
    """Two rows for the same (item, annotator), or two gold rows for one item; ``rows`` are their
    0-based positions (first, second)."""

    def __init__(self, key: str, rows: tuple[int, int], *, table: str = "labels"):
        self.key, self.rows, self.table = key, rows, table
        super().__init__(f"{table} rows {rows[0]} and {rows[1]}: duplicate {key}")


class MissingValue(IFJudgeError):
    """An empty item, annotator or label; ``row`` is its 0-based position, ``field`` the column."""

    def __init__(self, field: str, row: int, *, table: str = "labels"):
        self.field, self.row, self.table = field, row, table
        super().__init__(f"{table} row {row}: empty {field}")


@dataclass(frozen=True)
class EncodedLabels:
    categories: tuple[str, ...]
    item_ids: np.ndarray          # item id (str) per item code
    annotators: tuple[str, ...]   # sorted, so code order is string order
    counts: np.ndarray            # (n_items, q) labels per item and category
    gold: np.ndarray | None       # (n_items,) category index of the gold label, -1 when none
    n_gold_without_labels: int
    pair_names: tuple[str, ...]   # "a|b", a < b, for annotator pairs sharing >= 1 item
    pair_item: np.ndarray         # per within-item label pair: item code
    pair_cell: np.ndarray         # per within-item label pair: pair * q * q + label_a * q + label_b
    sorted_item: np.ndarray       # per label, sorted by (item, annotator): item code
    sorted_code: np.ndarray       # per label, same order: annotator * q + category index
    overlap: np.ndarray | None = None      # (n_items,) planned annotators per item, None: unknown
    adjudicated: np.ndarray | None = None  # (n_items,) category index a lead decided, -1 when none

    def pair_tables(self) -> np.ndarray:
        """Contingency table (pair, label of a, label of b) of every annotator pair."""
        q = len(self.categories)
        n = len(self.pair_names) * q * q
        return np.bincount(self.pair_cell, minlength=n).reshape(len(self.pair_names), q, q)

    @property
    def n_labels(self) -> int:
        return int(self.counts.sum())


def _as_str(col: pd.Series, field: str, table: str) -> pd.Series:
    missing = col.isna().to_numpy()
    if missing.any():
        raise MissingValue(field, int(np.flatnonzero(missing)[0]), table=table)
    s = col if pd.api.types.is_string_dtype(col.dtype) else col.astype(str)
    empty = (s == "").to_numpy()
    if empty.any():
        raise MissingValue(field, int(np.flatnonzero(empty)[0]), table=table)
    return s


def _frame(data, columns: tuple[str, ...], table: str) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        df = data
    elif table == "gold" and isinstance(data, Mapping):
        df = pd.DataFrame({"item": list(data.keys()), "label": list(data.values())})
    else:
        df = pd.DataFrame(list(data), columns=list(columns))
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise IFJudgeError(f"{table} table lacks column(s) {missing}; it has {list(df.columns)}")
    return df.reset_index(drop=True)


def _codes(labels: pd.Series, categories: tuple[str, ...], table: str) -> np.ndarray:
    codes = pd.Index(list(categories)).get_indexer(labels).astype(np.int64)
    bad = np.flatnonzero(codes < 0)
    if len(bad):
        raise UnknownLabel(labels.iloc[bad[0]], int(bad[0]), categories, table=table)
    return codes


def _per_item(mapping, item_ids, default: int, table: str, categories=None) -> np.ndarray:
    """A per-item-code array from a mapping item -> value (a label coded against ``categories``)."""
    out = np.full(len(item_ids), default, np.int64)
    if not mapping:
        return out
    keys = pd.Series([str(k) for k in mapping.keys()], dtype=object)
    pos = pd.Index(item_ids).get_indexer(keys)
    vals = list(mapping.values())
    if categories is not None:
        codes = _codes(_as_str(pd.Series(vals, dtype=object), "label", table), categories, table)
    else:
        codes = np.asarray([_planned(v, row, table) for row, v in enumerate(vals)], np.int64)
    out[pos[pos >= 0]] = codes[pos >= 0]
    return out


def _planned(v, row: int, table: str) -> int:
    """A planned number of annotators: a whole number >= 1."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise IFJudgeError(f"{table} row {row}: planned annotators must be a whole number >= 1, got {v!r}")
    return int(v)


def encode_labels(labels, categories: tuple[str, ...], *, gold=None, overlap=None,
                  adjudications=None) -> EncodedLabels:
    """Validate and encode a long label table (DataFrame with columns item, annotator, label, or
    a sequence of such triples) against the declared ``categories``; ``gold`` is a DataFrame with
    columns item, label, a mapping item -> label, or None. ``overlap`` is the planned number of
    annotators (one int, or a mapping item -> int; None: unknown); ``adjudications`` a mapping
    item -> the lead's label (items without labels are ignored)."""
    df = _frame(labels, COLUMNS, "labels")
    if len(df) == 0:
        raise IFJudgeError("the label table is empty")
    item_s = _as_str(df["item"], "item", "labels")
    ann_s = _as_str(df["annotator"], "annotator", "labels")
    lab = _codes(_as_str(df["label"], "label", "labels"), categories, "labels")
    item, item_ids = pd.factorize(item_s)
    ann, ann_names = pd.factorize(ann_s, sort=True)
    n_items = len(item_ids)
    order = _label_order(item.astype(np.int64), ann.astype(np.int64), item_ids, ann_names)
    gold_codes, n_gold_extra = _gold_codes(gold, item_ids, categories) if gold is not None else (None, 0)
    ov = None
    if isinstance(overlap, Mapping):
        ov = _per_item(overlap, item_ids, 2, "overlap")
    elif overlap is not None:  # one overlap for every item
        ov = np.full(n_items, _planned(overlap, 0, "overlap"), np.int64)
    adj = _per_item(adjudications, item_ids, -1, "adjudications", categories) if adjudications else None
    return encoded(categories, np.asarray(item_ids, dtype=object), item, tuple(str(a) for a in ann_names), ann, lab,
                   gold=gold_codes, n_gold_without_labels=n_gold_extra, overlap=ov, adjudicated=adj, order=order)


def encoded(categories: tuple[str, ...], item_ids: np.ndarray, item: np.ndarray, annotators: tuple[str, ...],
            ann: np.ndarray, lab: np.ndarray, *, gold: np.ndarray | None = None, n_gold_without_labels: int = 0,
            overlap: np.ndarray | None = None, adjudicated: np.ndarray | None = None,
            order: np.ndarray | None = None) -> EncodedLabels:
    """:class:`EncodedLabels` of labels already coded: per label its item (an index of
    ``item_ids``), its annotator (an index of ``annotators``, sorted) and its category index
    ``lab``; per item (``item_ids`` order) the gold, planned overlap and adjudicated category (or
    None). What :func:`encode_labels` builds once it has checked and coded a label table; refuses a
    second label of one (item, annotator). ``order``: the labels' order by (item, annotator), when
    already known."""
    item = np.asarray(item, dtype=np.int64)
    ann = np.asarray(ann, dtype=np.int64)
    lab = np.asarray(lab, dtype=np.int64)
    n_items, q = len(item_ids), len(categories)
    order = _label_order(item, ann, item_ids, annotators) if order is None else order
    counts = np.bincount(item * q + lab, minlength=n_items * q).reshape(n_items, q)
    it_s, an_s, lb_s = item[order], ann[order], lab[order]
    p_item, l_a, l_b, pair_index, pair_names = _label_pairs(it_s, an_s, lb_s, int(counts.sum(1).max()), annotators)
    return EncodedLabels(
        overlap=overlap, adjudicated=adjudicated,
        categories=categories, item_ids=item_ids,
        annotators=tuple(annotators), counts=counts, gold=gold,
        n_gold_without_labels=n_gold_without_labels, pair_names=pair_names, pair_item=p_item,
        pair_cell=(pair_index.astype(np.int64) * q + l_a) * q + l_b,
        sorted_item=it_s, sorted_code=an_s * q + lb_s,
    )


def _label_order(item: np.ndarray, ann: np.ndarray, item_ids, ann_names) -> np.ndarray:
    """The labels' order by (item, annotator); refuses a second label of one (item, annotator)."""
    key = item * len(ann_names) + ann
    order = np.argsort(key, kind="stable")
    ks = key[order]
    dup = np.flatnonzero(ks[1:] == ks[:-1])
    if len(dup):
        r1, r2 = int(order[dup[0]]), int(order[dup[0] + 1])
        raise DuplicateLabel(f"(item {item_ids[item[r1]]!r}, annotator {ann_names[ann[r1]]!r})",
                             (min(r1, r2), max(r1, r2)))
    return order


def _label_pairs(it_s: np.ndarray, an_s: np.ndarray, lb_s: np.ndarray, most: int, ann_names):
    """Every pair of labels given to the same item by annotators a < b (labels sorted by item and
    annotator; ``most`` = the most labels of one item): ``(item, label of a, label of b, pair
    index, pair names "a|b")``."""
    n_ann = len(ann_names)
    parts = []
    for d in range(1, most):
        same = np.flatnonzero(it_s[:-d] == it_s[d:])
        if len(same) == 0:
            break
        parts.append((it_s[same], an_s[same], an_s[same + d], lb_s[same], lb_s[same + d]))
    if parts:
        p_item, p_a, p_b, l_a, l_b = (np.concatenate(x) for x in zip(*parts))
    else:
        p_item = p_a = p_b = l_a = l_b = np.zeros(0, np.int64)
    keys = p_a * n_ann + p_b
    if n_ann * n_ann <= 10_000_000:
        pair_keys = np.flatnonzero(np.bincount(keys, minlength=n_ann * n_ann))
        remap = np.zeros(n_ann * n_ann, np.int64)
        remap[pair_keys] = np.arange(len(pair_keys))
        pair_index = remap[keys]
    else:
        pair_keys, pair_index = np.unique(keys, return_inverse=True)
    pair_names = tuple(f"{ann_names[k // n_ann]}|{ann_names[k % n_ann]}" for k in pair_keys.tolist())
    return p_item, l_a, l_b, pair_index, pair_names


def _gold_codes(gold, item_ids, categories: tuple[str, ...]) -> tuple[np.ndarray, int]:
    """The gold label's category index per item code (-1: none) and how many gold rows name an
    item without labels; refuses a second gold label of one item."""
    g = _frame(gold, ("item", "label"), "gold")
    g_item = _as_str(g["item"], "item", "gold")
    g_lab = _codes(_as_str(g["label"], "label", "gold"), categories, "gold")
    dup = g_item.duplicated().to_numpy()
    if dup.any():
        r2 = int(np.flatnonzero(dup)[0])
        r1 = int(np.flatnonzero((g_item == g_item.iloc[r2]).to_numpy())[0])
        raise DuplicateLabel(f"gold for item {g_item.iloc[r2]!r}", (r1, r2), table="gold")
    pos = pd.Index(item_ids).get_indexer(g_item)
    gold_codes = np.full(len(item_ids), -1, np.int64)
    gold_codes[pos[pos >= 0]] = g_lab[pos >= 0]
    return gold_codes, int((pos < 0).sum())
