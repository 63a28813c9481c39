"""Bootstrap percentile intervals for the agreement statistics (seeded).

Two resampling schemes:

- **query groups within domains** (:func:`cluster_draws`, the default where the items' groups are
  known): the instances of a query group are answered alike more often than two random instances,
  so a study's items are a cluster sample and an interval that resamples items is too narrow. Each
  replicate draws ``n_h - 1`` of the ``n_h`` sampled groups of each stratum (domain) with
  replacement and weighs them ``n_h / (n_h - 1)``: the rescaling bootstrap of Rao & Wu (1988,
  *JASA* 83:231), which gives the design variance of a with-replacement cluster sample; a stratum
  with one group keeps it.
- **items** (:func:`item_draws`, a named comparison): n_items item indices with replacement.

Every statistic is then recomputed from sums: items are grouped by signature (who gave which label,
and the gold label), so a replicate only counts its draws per signature and multiplies the counts by
per-signature item features and pair-table cells (sparse matrices). No pandas work happens per
replicate.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import sparse

from annotation.agreement.data import EncodedLabels
from annotation.agreement.kernels import (
    MIN_PAIRABLE,
    alpha_from_coincidences,
    cohen_from_tables,
    distinct_patterns,
    distinct_rows,
    item_features,
    kappa_from_sums,
)
from evaluation.significance import bca_interval
from storage.errors import IFJudgeError

LEVEL = 0.95


def statistics_from_sums(S: np.ndarray, cols: dict, q: int, *, tables: np.ndarray | None,
                         ordinal: bool, values: np.ndarray) -> dict[str, np.ndarray]:
    """Every bootstrapped statistic, one value per row of ``S`` (NaN = undefined)."""
    out = kappa_from_sums(S, cols, q)
    rated = S[:, cols["rated"]][:, 0]
    out["majority_shares"] = np.where(rated[:, None] > 0, S[:, cols["major"]] / np.maximum(rated, 1e-300)[:, None], np.nan)
    n_pair = S[:, cols["pairable"]][:, 0]
    few = n_pair < MIN_PAIRABLE - 1e-9
    out["percent_agreement_pairwise"] = np.where(n_pair > 0, S[:, cols["agree"]][:, 0] / np.maximum(n_pair, 1), np.nan)
    out["percent_agreement_unanimous"] = np.where(n_pair > 0, S[:, cols["unanimous"]][:, 0] / np.maximum(n_pair, 1), np.nan)
    o = S[:, cols["coinc"]]
    levels = [("nominal", None)] + ([("ordinal", None), ("interval", values)] if ordinal else [])
    for level, vals in levels:
        a = alpha_from_coincidences(o.reshape(len(S), q, q), level=level, values=vals)
        a[few] = np.nan
        out[f"krippendorff_alpha_{level}"] = a
    if "gold" in cols:
        n_gold = S[:, cols["gold"]][:, 0]
        correct = S[:, cols["correct"]][:, 0]
        n_major = S[:, cols["decided"]][:, 0]
        out["top1_accuracy_ties_count_as_wrong"] = np.where(n_gold > 0, correct / np.maximum(n_gold, 1), np.nan)
        out["top1_accuracy_excluding_ties"] = np.where(n_major > 0, correct / np.maximum(n_major, 1), np.nan)
        out["cohen_kappa_majority_vs_gold_excluding_ties"] = cohen_from_tables(S[:, cols["major_gold"]].reshape(-1, q, q))
    if tables is not None and tables.shape[1] > 0:
        for name, weights in [("", None)] + ([("_linear", "linear"), ("_quadratic", "quadratic")] if ordinal else []):
            per_pair = cohen_from_tables(tables, weights)
            out[f"cohen_kappa{name}_pairwise"] = per_pair
            defined = ~np.isnan(per_pair)
            total = np.where(defined, per_pair, 0.0).sum(1)
            k = defined.sum(1)
            out["cohen_kappa_mean_pairwise" if not name else f"cohen_kappa{name}"] = np.where(k > 0, total / np.maximum(k, 1), np.nan)
    return out


def item_signatures(enc: EncodedLabels) -> tuple[np.ndarray, np.ndarray]:
    """Items grouped by everything the statistics see: (annotator, label) of each label, and gold.
    Returns ``(first, signature_of_item)``: the first item of each signature, and the signature
    index of every item."""
    n_per = enc.counts.sum(1)
    m = int(n_per.max())
    start = np.concatenate([[0], np.cumsum(n_per)[:-1]])
    pos = np.arange(len(enc.sorted_item)) - start[enc.sorted_item]
    mat = np.zeros((len(n_per), m + 1), np.int64)
    mat[enc.sorted_item, pos] = enc.sorted_code + 1
    if enc.gold is not None:
        mat[:, m] = enc.gold + 1
    extra = [np.asarray(x, np.int64)[:, None] + 1 for x in (enc.overlap, enc.adjudicated) if x is not None]
    return distinct_rows(np.column_stack([mat, *extra]) if extra else mat)


class Signatures:
    """Per-signature item features and pair-table cells of an encoded label table (read-only once
    built: the bootstrap, the observed values and the jackknife of one report share it)."""

    def __init__(self, enc: EncodedLabels):
        q = self.q = len(enc.categories)
        n_items = len(enc.counts)
        first, self.sig = item_signatures(enc)
        n_sig = self.n_sig = len(first)
        counts = enc.counts[first]
        gold = None if enc.gold is None else enc.gold[first]
        overlap = None if enc.overlap is None else enc.overlap[first]
        adjudicated = None if enc.adjudicated is None else enc.adjudicated[first]
        p_first, pattern_of_sig = distinct_patterns(counts, gold, overlap, adjudicated)
        self.F, self.cols = item_features(
            counts[p_first], None if gold is None else gold[p_first],
            overlap=None if overlap is None else overlap[p_first],
            adjudicated=None if adjudicated is None else adjudicated[p_first])
        self.to_pattern = sparse.csr_matrix((np.ones(n_sig), (pattern_of_sig, np.arange(n_sig))),
                                            shape=(len(p_first), n_sig))
        self.n_pairs = len(enc.pair_names)
        is_first = np.zeros(n_items, bool)
        is_first[first] = True
        sel = is_first[enc.pair_item]
        self.to_cells = sparse.csr_matrix(
            (np.ones(int(sel.sum())), (enc.pair_cell[sel], self.sig[enc.pair_item[sel]])),
            shape=(self.n_pairs * q * q, n_sig))

    def sums(self, drawn: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Feature sums (b, K) and pair tables (b, pairs, q, q) of draw counts per signature (b, n_sig)."""
        drawn_t = np.asarray(drawn, float).T
        S = (self.to_pattern @ drawn_t).T @ self.F
        T = (self.to_cells @ drawn_t).T.reshape(-1, self.n_pairs, self.q, self.q) if self.n_pairs else None
        return S, T


def observed_statistics(enc: EncodedLabels, *, ordinal: bool, values: np.ndarray,
                        signatures: Signatures | None = None) -> dict[str, np.ndarray]:
    """The bootstrap's formulas on the observed data (each item drawn once): must equal the point
    estimates of the library implementations (tested). ``signatures``: ``Signatures(enc)``, when
    already built."""
    sg = Signatures(enc) if signatures is None else signatures
    S, T = sg.sums(np.bincount(sg.sig, minlength=sg.n_sig)[None, :])
    return statistics_from_sums(S, sg.cols, sg.q, tables=T, ordinal=ordinal, values=values)


def item_draws(sig: np.ndarray, n_sig: int, b: int, rng) -> np.ndarray:
    """Draw counts per signature (b, n_sig) of ``b`` replicates that each draw n_items items with
    replacement."""
    n_items = len(sig)
    cells = sig[rng.integers(0, n_items, size=(b, n_items))]
    cells += np.arange(b)[:, None] * n_sig  # in place: one array of b x n_items, not two
    return np.bincount(cells.ravel(), minlength=b * n_sig).reshape(b, n_sig)


def cluster_draws(group_sig: sparse.csr_matrix, group_stratum: np.ndarray, b: int, rng) -> np.ndarray:
    """Weighted draw counts per signature (b, n_sig) of ``b`` Rao-Wu replicates: in each stratum
    of ``n_h >= 2`` groups, ``n_h - 1`` groups drawn with replacement, each draw weighing
    ``n_h / (n_h - 1)``; a stratum of one group keeps it (weight 1). ``group_sig`` holds each group's
    items per signature."""
    return _per_signature(group_sig, rao_wu_weights(group_stratum, b, rng))


def _per_signature(group_sig: sparse.csr_matrix, weights: np.ndarray) -> np.ndarray:
    """The groups' weights (b, n_groups) as weighted draw counts per signature (b, n_sig)."""
    return np.asarray((group_sig.T @ weights.T).T)


def rao_wu_weights(group_stratum: np.ndarray, b: int, rng) -> np.ndarray:
    """Each group's weight (b, n_groups) in ``b`` Rao-Wu replicates (:func:`cluster_draws`)."""
    n_groups = len(group_stratum)
    C = np.zeros((b, n_groups))
    for h in np.unique(group_stratum):
        members = np.flatnonzero(group_stratum == h)
        n_h = len(members)
        if n_h < 2:
            C[:, members] = 1.0
            continue
        picks = members[rng.integers(0, n_h, size=(b, n_h - 1))]
        counts = np.bincount((picks + np.arange(b)[:, None] * n_groups).ravel(), minlength=b * n_groups)
        C += counts.reshape(b, n_groups) * (n_h / (n_h - 1))
    return C


#: the replicate weights of the last few group designs (:func:`_replicate_weights`), at most
#: _WEIGHTS_BYTES in all: the questions of a study share their query groups and domains, and a
#: Monitor run draws the same replicates for each of them, and again after new labels
_weights: OrderedDict[tuple, list[np.ndarray]] = OrderedDict()
_weights_lock = threading.Lock()
_WEIGHTS_BYTES = 64 * 2**20


def _replicate_weights(group_strata: np.ndarray, n_boot: int, batch: int, seed: int) -> list[np.ndarray]:
    """The groups' Rao-Wu weights of each batch of ``batch`` replicates (:func:`rao_wu_weights`
    drawn from ``numpy.random.default_rng(seed)`` in turn): a function of the groups' strata, the
    sizes and the seed alone, so kept for the next call with the same ones (read-only arrays)."""
    # the weights depend on which groups share a stratum, strata taken in sorted order: their codes say it
    # (an object array's own bytes would be its values' addresses)
    strata = np.unique(np.asarray(group_strata), return_inverse=True)[1].astype(np.int64).ravel()
    key = (strata.tobytes(), n_boot, batch, seed)
    with _weights_lock:
        if key in _weights:
            _weights.move_to_end(key)
            return _weights[key]
    rng = np.random.default_rng(seed)
    out = [rao_wu_weights(strata, min(batch, n_boot - start), rng) for start in range(0, n_boot, batch)]
    for w in out:
        w.flags.writeable = False
    if isinstance(seed, (int, np.integer)) and sum(w.nbytes for w in out) <= _WEIGHTS_BYTES:  # None: fresh entropy
        with _weights_lock:
            _weights[key] = out
            while sum(w.nbytes for ws in _weights.values() for w in ws) > _WEIGHTS_BYTES:
                _weights.popitem(last=False)
    return out


def item_values(enc: EncodedLabels, values, default=None) -> np.ndarray:
    """Per item of ``enc`` (``enc.item_ids`` order) its value in ``values``: a mapping item -> value
    (the item id or its text as key; ``default`` where absent), or a sequence already in that order."""
    if not isinstance(values, Mapping):
        return np.asarray(values, dtype=object)
    out = np.empty(len(enc.item_ids), dtype=object)
    out[:] = [values.get(item, values.get(str(item), default)) for item in enc.item_ids]
    return out


def group_codes(enc: EncodedLabels, clusters, strata=None) -> tuple[np.ndarray, np.ndarray, list]:
    """``(group code per item, stratum code per group, group names)`` from ``clusters`` (item ->
    query group) and ``strata`` (item -> domain, "" where absent; None: one stratum), each a mapping
    or a sequence per item (:func:`item_values`). Groups and strata are coded in the order their
    first item comes; a group's stratum is its first item's. Refuses an item without a group."""
    group = item_values(enc, clusters)
    missing = np.flatnonzero(np.equal(group, None))
    if len(missing):
        raise IFJudgeError(f"item {enc.item_ids[missing[0]]!r} has no query group: every labelled item needs one for the "
                           "cluster bootstrap")
    group_of, names = pd.factorize(group, use_na_sentinel=False)
    group_of = group_of.astype(np.int64)
    if strata is None:
        stratum = np.zeros(len(group_of), np.int64)
    else:
        stratum = pd.factorize(item_values(enc, strata, ""), use_na_sentinel=False)[0].astype(np.int64)
    first = np.unique(group_of, return_index=True)[1]  # each group's first item
    return group_of, stratum[first], list(names)


def bootstrap_statistics(enc: EncodedLabels, *, ordinal: bool, values: np.ndarray, n_boot: int, seed: int,
                         batch: int | None = None, groups: np.ndarray | None = None,
                         group_strata: np.ndarray | None = None,
                         signatures: Signatures | None = None) -> dict[str, np.ndarray]:
    """Replicate values of every statistic: arrays of shape (n_boot,) or (n_boot, n_pairs).

    A replicate draws items (``numpy.random.default_rng(seed)``): with ``groups`` (a group code per
    item) and ``group_strata`` (a stratum code per group), Rao-Wu replicates of the groups
    (:func:`cluster_draws`), else n_items items with replacement (:func:`item_draws`). It counts the
    draws per item signature (:func:`item_signatures`) and sums per-signature quantities: item
    features (:func:`item_features`) and cells of the annotator-pair contingency tables.
    ``signatures``: ``Signatures(enc)``, when already built.
    """
    sg = Signatures(enc) if signatures is None else signatures
    n_items, n_sig = len(enc.counts), sg.n_sig
    rng = np.random.default_rng(seed)
    group_sig = None
    if groups is not None:
        n_groups = int(groups.max()) + 1
        group_sig = sparse.csr_matrix((np.ones(n_items), (groups, sg.sig)), shape=(n_groups, n_sig))
        strata = np.zeros(n_groups, np.int64) if group_strata is None else np.asarray(group_strata)
    if batch is None:
        batch = max(1, min(n_boot, 4_000_000 // n_items, 20_000_000 // n_sig))
    sums, tables = [], []
    weights = None if group_sig is None else _replicate_weights(strata, n_boot, batch, seed)
    for k, start in enumerate(range(0, n_boot, batch)):
        b = min(batch, n_boot - start)
        drawn = item_draws(sg.sig, n_sig, b, rng) if group_sig is None else _per_signature(group_sig, weights[k])
        S, T = sg.sums(drawn)
        sums.append(S)
        tables.append(T)
    T = np.concatenate(tables) if sg.n_pairs else None
    return statistics_from_sums(np.vstack(sums), sg.cols, sg.q, tables=T, ordinal=ordinal, values=values)


def group_jackknife(enc: EncodedLabels, *, ordinal: bool, values: np.ndarray, groups: np.ndarray,
                    signatures: Signatures | None = None) -> dict[str, np.ndarray]:
    """Every statistic with each query group left out in turn (one row per group): the jackknife
    whose skewness gives the BCa interval its acceleration. ``signatures``: ``Signatures(enc)``,
    when already built."""
    sg = Signatures(enc) if signatures is None else signatures
    n_groups = int(groups.max()) + 1
    group_sig = sparse.csr_matrix((np.ones(len(groups)), (groups, sg.sig)), shape=(n_groups, sg.n_sig)).toarray()
    total = np.bincount(sg.sig, minlength=sg.n_sig)
    S, T = sg.sums(total[None, :] - group_sig)
    return statistics_from_sums(S, sg.cols, sg.q, tables=T, ordinal=ordinal, values=values)


def bca_percentile_interval(replicates: np.ndarray, observed: float, jackknife: np.ndarray, *,
                            level: float = LEVEL) -> dict:
    """The BCa interval (:func:`evaluation.significance.bca_interval`) of the defined replicates,
    in :func:`percentile_interval`'s form (``method`` "BCa")."""
    r = np.asarray(replicates, float)
    ok = r[~np.isnan(r)]
    out = {"low": None, "high": None, "level": level, "method": "BCa",
           "n_boot": int(len(r)), "n_undefined": int(len(r) - len(ok))}
    if len(ok) and np.isfinite(observed):
        lo, hi = bca_interval(ok, float(observed), jackknife, 1 - level)
        out["low"], out["high"] = float(lo), float(hi)
    return out


def percentile_interval(replicates: np.ndarray, *, level: float = LEVEL) -> dict:
    """Percentile interval of the defined replicates (NaN replicates are counted, not used)."""
    r = np.asarray(replicates, float)
    ok = r[~np.isnan(r)]
    out = {"low": None, "high": None, "level": level, "method": "percentile",
           "n_boot": int(len(r)), "n_undefined": int(len(r) - len(ok))}
    if len(ok):
        lo, hi = np.percentile(ok, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
        out["low"], out["high"] = float(lo), float(hi)
    return out
