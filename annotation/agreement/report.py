"""Agreement report of one question: the single entry point used by ``ifjudge agreement``, the
monitoring page and the exports (docs/statistics.md; InstructIR Table 7).

>>> import pandas as pd
>>> df = pd.DataFrame({"item": ["i1"] * 3 + ["i2"] * 3, "annotator": ["a", "b", "c"] * 2,
...                    "label": ["Yes", "Yes", "Yes", "Yes", "No", "Yes"]})
>>> r = agreement_report(df, ["Yes", "No"])
>>> round(r["randolph_kappa"], 4), r["majority_shares"]["Yes"]   # P_o = (1 + 1/3) / 2
(0.3333, 1.0)
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from annotation.agreement.bootstrap import (Signatures, bca_percentile_interval, bootstrap_statistics, group_codes,
                                           group_jackknife, item_values, observed_statistics, percentile_interval)
from annotation.agreement.data import EncodedLabels, encode_labels
from annotation.agreement.kernels import pattern_sums
from annotation.agreement.stats import (
    Undefined,
    check_categories,
    cohen_kappa_table,
    fleiss_kappa,
    gwet_ac1,
    interval_values,
    is_defined,
    krippendorff_alpha,
    landis_koch_band,
    pairable_reason,
    randolph_kappa,
)
from storage.errors import IFJudgeError

__all__ = ["agreement_report", "landis_koch_band", "Undefined", "KAPPA_KEYS"]

#: statistics that carry a Landis & Koch band and a bootstrap interval
KAPPA_KEYS = (
    "randolph_kappa", "fleiss_kappa", "gwet_ac1", "krippendorff_alpha_nominal", "krippendorff_alpha_ordinal",
    "krippendorff_alpha_interval", "cohen_kappa_mean_pairwise", "cohen_kappa_linear", "cohen_kappa_quadratic",
    "cohen_kappa_majority_vs_gold_excluding_ties",
)
_PAIR_KEYS = {"cohen_kappa": "cohen_kappa_pairwise", "cohen_kappa_linear_pairwise": "cohen_kappa_linear_pairwise",
              "cohen_kappa_quadratic_pairwise": "cohen_kappa_quadratic_pairwise"}
_INTERVAL_KEYS = KAPPA_KEYS + ("percent_agreement_pairwise", "percent_agreement_unanimous",
                               "top1_accuracy_ties_count_as_wrong", "top1_accuracy_excluding_ties")


def _value(v, name: str, reasons: dict):
    if isinstance(v, Undefined):
        reasons[name] = v.reason
        return None
    return float(v)


def _pairwise_cohen(enc: EncodedLabels, tables: np.ndarray, weights, reasons: dict, key: str) -> dict:
    out, why = {}, {}
    for name, table in zip(enc.pair_names, tables):
        v = cohen_kappa_table(table, enc.categories, weights=weights, who=f"annotators {name!r}")
        out[name] = _value(v, name, why)
    if why:
        reasons[key] = why
    return out


def _mean_of_pairs(per_pair: dict, name: str, reasons: dict, notes: list):
    vals = [v for v in per_pair.values() if v is not None]
    if not per_pair:
        reasons[name] = "no two annotators labelled the same item"
        return None
    if not vals:
        reasons[name] = "Cohen's kappa is undefined for every annotator pair"
        return None
    if len(vals) < len(per_pair):
        notes.append(f"{name}: mean over the {len(vals)} of {len(per_pair)} annotator pairs whose kappa is defined")
    return float(np.mean(vals))


RESAMPLING = {"groups": "query groups resampled within domains (Rao-Wu rescaling bootstrap, BCa)",
              "items": "items resampled (treats items as independent; a comparison)"}


def agreement_report(labels, categories: Sequence[str], *, gold=None, ordinal: bool = False,
                     n_boot: int = 0, seed: int = 0, overlap=None, adjudications=None, clusters=None,
                     strata=None, resample: str | None = None) -> dict:
    """Agreement statistics of one question, as a JSON-ready dict.

    Parameters
    ----------
    labels : DataFrame with columns ``item, annotator, label`` (or a sequence of such triples);
        one current label per (item, annotator). Or labels already coded against ``categories``
        (:class:`annotation.agreement.data.EncodedLabels`, :func:`annotation.agreement.data.encoded`:
        gold, overlap and adjudications inside; the three arguments are then not given).
    categories : the question's declared categories (never inferred); for ``ordinal`` their order.
    gold : DataFrame ``item, label`` or mapping item -> label (the dataset's answer), optional.
    ordinal : also Krippendorff ordinal / interval alpha and linear / quadratic weighted Cohen.
    n_boot, seed : bootstrap replicates for 95% percentile intervals.
    clusters, strata : mappings item -> query group and item -> domain (or, with coded ``labels``,
        a sequence of each per item, in ``labels.item_ids`` order), optional. With ``clusters``
        the bootstrap resamples query groups within domains (items of one group are answered alike:
        resampling items gives too narrow an interval), :mod:`annotation.agreement.bootstrap`.
    resample : "groups" (the default with ``clusters``) or "items" (the default without; with
        ``clusters`` a named comparison). The report's ``intervals_resampled`` says which was used.
    overlap : the study's planned annotators per item (an int, or a mapping item -> int), optional.
        With 1, an item's single label is its majority; otherwise (and when None) an item needs
        two labels (:func:`annotation.agreement.majority.min_labels`).
    adjudications : mapping item -> the lead's label, optional. An adjudicated item's majority is
        the lead's value (in ``majority_shares``, top-1 accuracy and the majority-vs-gold kappa);
        the agreement coefficients use the annotators' labels only.

    Returns
    -------
    dict with ``n_items``, ``n_items_pairable``, ``percent_agreement_pairwise`` (mean over items with
    >= 2 labels of the share of agreeing label pairs), ``percent_agreement_unanimous``,
    ``randolph_kappa`` (P_e = 1/q), ``fleiss_kappa`` (Gwet's generalisation when label counts vary),
    ``gwet_ac1``, ``krippendorff_alpha_*``, ``cohen_kappa`` ("a|b" -> kappa), ``cohen_kappa_mean_pairwise``,
    with gold ``top1_accuracy_ties_count_as_wrong``, ``top1_accuracy_excluding_ties`` (over the items
    with gold that have a majority), ``n_majority_ties`` (items with >= 2 labels, no majority and no
    adjudication), ``n_items_awaiting_labels`` (too few labels to decide),
    ``cohen_kappa_majority_vs_gold_excluding_ties``; ``label_shares`` and ``majority_shares`` (share of
    items whose strict-plurality label is each category: InstructIR's "proportion of Yes");
    ``bands`` (Landis & Koch), ``intervals`` (when ``n_boot`` > 0), ``undefined_reasons`` (statistic ->
    why it is null). Undefined statistics are None, never 0 or 1.

    References
    ----------
    Oh, H. et al. (2024). INSTRUCTIR, Appendix B, Table 7. See the functions of
    ``annotation.agreement.stats`` for each coefficient's formula and source.
    """
    cats = check_categories(categories)
    values = interval_values(cats) if ordinal else np.arange(len(cats), dtype=float)
    if isinstance(labels, EncodedLabels):
        if labels.categories != cats or any(x is not None for x in (gold, overlap, adjudications)):
            raise IFJudgeError("coded labels carry their categories, gold, overlap and adjudications")
        enc = labels
    else:
        enc = encode_labels(labels, cats, gold=gold, overlap=overlap, adjudications=adjudications)
    reasons: dict = {}
    notes: list[str] = []
    S, cols, _, _ = pattern_sums(enc.counts, enc.gold, overlap=enc.overlap, adjudicated=enc.adjudicated)
    report: dict = {
        "categories": list(cats), "ordinal": bool(ordinal), "n_labels": enc.n_labels,
        "n_annotators": len(enc.annotators), "n_items": len(enc.counts),
        "n_items_pairable": int(S[0, cols["pairable"]][0]),
    }
    report.update(_coefficients(enc, S, cols, ordinal=ordinal, values=values, reasons=reasons))
    report.update(_pairwise(enc, ordinal=ordinal, reasons=reasons, notes=notes))
    report.update(_majorities(enc, S, cols))
    if enc.gold is not None:
        _gold_statistics(report, enc, S, cols, reasons, notes)
    report["bands"] = {k: landis_koch_band(report[k]) for k in KAPPA_KEYS if k in report}
    report["bands"]["cohen_kappa"] = {k: landis_koch_band(v) for k, v in report["cohen_kappa"].items()}
    if n_boot > 0:
        mode = _resampling(resample, clusters, enc, notes)
        groups = group_codes(enc, clusters, strata)[:2] if mode == "groups" else (None, None)
        report["intervals"] = _intervals(report, enc, ordinal=ordinal, values=values, n_boot=n_boot, seed=seed,
                                         groups=groups)
        report["intervals_resampled"] = RESAMPLING[mode]
    report["undefined_reasons"] = reasons
    report["notes"] = notes
    return report


def _coefficients(enc: EncodedLabels, S: np.ndarray, cols: dict, *, ordinal: bool, values, reasons: dict) -> dict:
    """The chance-corrected coefficients over all annotators: percent agreement (pairwise and
    unanimous), Randolph, Fleiss, Gwet's AC1, Krippendorff (nominal; ordinal and interval too)."""
    counts, cats = enc.counts, enc.categories
    n_pairable = int(S[0, cols["pairable"]][0])
    out: dict = {}
    for name, col in (("percent_agreement_pairwise", "agree"), ("percent_agreement_unanimous", "unanimous")):
        out[name] = _value(float(S[0, cols[col]][0] / n_pairable) if n_pairable else Undefined(pairable_reason(0)),
                           name, reasons)
    out["randolph_kappa"] = _value(randolph_kappa(counts, categories=cats), "randolph_kappa", reasons)
    out["fleiss_kappa"] = _value(fleiss_kappa(counts, categories=cats), "fleiss_kappa", reasons)
    out["gwet_ac1"] = _value(gwet_ac1(counts), "gwet_ac1", reasons)
    out["krippendorff_alpha_nominal"] = _value(
        krippendorff_alpha(counts, level="nominal", categories=cats), "krippendorff_alpha_nominal", reasons)
    if ordinal:
        for level in ("ordinal", "interval"):
            out[f"krippendorff_alpha_{level}"] = _value(
                krippendorff_alpha(counts, level=level, values=values, categories=cats),
                f"krippendorff_alpha_{level}", reasons)
    return out


def _pairwise(enc: EncodedLabels, *, ordinal: bool, reasons: dict, notes: list) -> dict:
    """Cohen's kappa per annotator pair, their mean and the shared items of each pair (weighted
    linear and quadratic too when ``ordinal``)."""
    tables = enc.pair_tables()
    out: dict = {"cohen_kappa": _pairwise_cohen(enc, tables, None, reasons, "cohen_kappa")}
    out["cohen_kappa_mean_pairwise"] = _mean_of_pairs(out["cohen_kappa"], "cohen_kappa_mean_pairwise", reasons, notes)
    out["cohen_kappa_n_items"] = dict(zip(enc.pair_names, tables.sum((1, 2)).tolist()))
    if ordinal:
        for w in ("linear", "quadratic"):
            per_pair = _pairwise_cohen(enc, tables, w, reasons, f"cohen_kappa_{w}_pairwise")
            out[f"cohen_kappa_{w}"] = _mean_of_pairs(per_pair, f"cohen_kappa_{w}", reasons, notes)
            out[f"cohen_kappa_{w}_pairwise"] = per_pair
    return out


def _majorities(enc: EncodedLabels, S: np.ndarray, cols: dict) -> dict:
    """The share of labels and of majorities per category, the items without a majority and the
    adjudicated ones."""
    cats, n_items = enc.categories, len(enc.counts)
    n_labels_per_cat = S[0, cols["labels"]]
    n_major = S[0, cols["major"]]
    return {
        "label_shares": dict(zip(cats, (n_labels_per_cat / n_labels_per_cat.sum()).tolist())),
        "majority_shares": dict(zip(cats, (n_major / n_items).tolist())),
        "n_items_no_majority": int(n_items - n_major.sum()),
        "n_items_adjudicated": 0 if enc.adjudicated is None else int((enc.adjudicated >= 0).sum()),
    }


def _gold_statistics(report: dict, enc: EncodedLabels, S: np.ndarray, cols: dict, reasons: dict,
                     notes: list) -> None:
    n_gold = int(S[0, cols["gold"]][0])
    n_ties = int(S[0, cols["tie"]][0])
    n_decided = int(S[0, cols["decided"]][0])
    correct = int(S[0, cols["correct"]][0])
    report["n_items_with_gold"] = n_gold
    report["n_items_without_gold"] = report["n_items"] - n_gold
    report["n_gold_items_without_labels"] = enc.n_gold_without_labels
    if n_gold < report["n_items"]:
        notes.append(f"{report['n_items'] - n_gold} labelled item(s) have no gold label: left out of top-1 accuracy "
                     f"and of the majority-vs-gold kappa")
    none = Undefined("no labelled item has a gold label")
    report["top1_accuracy_ties_count_as_wrong"] = _value(
        correct / n_gold if n_gold else none, "top1_accuracy_ties_count_as_wrong", reasons)
    report["top1_accuracy_excluding_ties"] = _value(
        correct / n_decided if n_decided else Undefined("no item with a gold label has a majority"),
        "top1_accuracy_excluding_ties", reasons)
    report["n_majority_ties"] = n_ties
    report["n_items_awaiting_labels"] = n_gold - n_decided - n_ties
    q = len(enc.categories)
    table = S[0, cols["major_gold"]].reshape(q, q)
    report["cohen_kappa_majority_vs_gold_excluding_ties"] = _value(
        cohen_kappa_table(table, enc.categories, who="the majority vote and the gold label"),
        "cohen_kappa_majority_vs_gold_excluding_ties", reasons)


def _resampling(resample: str | None, clusters, enc: EncodedLabels, notes: list) -> str:
    """"groups" or "items": what the bootstrap resamples (a note when groups were asked for but
    fewer than 2 are labelled)."""
    mode = resample or ("groups" if clusters is not None else "items")
    if mode not in RESAMPLING:
        raise IFJudgeError(f"resample must be groups or items, got {resample!r}")
    if mode == "groups" and clusters is None:
        raise IFJudgeError("resampling query groups needs each item's group (clusters)")
    if mode == "groups" and len(set(item_values(enc, clusters))) < 2:
        notes.append("fewer than 2 query groups are labelled: the bootstrap resamples items")
        return "items"
    return mode


def _intervals(report: dict, enc: EncodedLabels, *, ordinal, values, n_boot, seed, groups=(None, None)) -> dict:
    """The 95% interval of every statistic: percentile intervals of the item bootstrap; with groups,
    BCa intervals of the Rao-Wu replicates (acceleration from the jackknife over groups)."""
    sg = Signatures(enc)  # the items grouped by what the statistics see: once for the three passes below
    reps = bootstrap_statistics(enc, ordinal=ordinal, values=values, n_boot=n_boot, seed=seed,
                                groups=groups[0], group_strata=groups[1], signatures=sg)
    if groups[0] is not None:
        observed = observed_statistics(enc, ordinal=ordinal, values=values, signatures=sg)
        jack = group_jackknife(enc, ordinal=ordinal, values=values, groups=groups[0], signatures=sg)
        interval = lambda key, col=None: bca_percentile_interval(  # noqa: E731
            _column(reps[key], col), float(_column(observed[key], col)[0]), _column(jack[key], col))
    else:
        interval = lambda key, col=None: percentile_interval(_column(reps[key], col))  # noqa: E731
    out: dict = {}
    for j, c in enumerate(enc.categories):  # the share of each answer (InstructIR Table 7's proportion of Yes)
        out[f"majority_share_{c}"] = interval("majority_shares", j)
    for key in _INTERVAL_KEYS:
        if key in report and key in reps:
            out[key] = interval(key) if is_defined(report[key]) else None
    for key, rep_key in _PAIR_KEYS.items():
        if key in report and rep_key in reps:
            out[key] = {name: interval(rep_key, p) if report[key][name] is not None else None
                        for p, name in enumerate(enc.pair_names)}
    return out


def _column(values: np.ndarray, col: int | None) -> np.ndarray:
    """One statistic's values: the array, or its column ``col`` (per category or annotator pair)."""
    return values if col is None else values[:, col]

