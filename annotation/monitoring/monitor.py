"""What the lead watches while a study runs: the InstructIR Table 7 view per question, the naive
extrapolation to the whole benchmark (for comparison with :mod:`annotation.estimates.benchmark`), per-annotator progress and agreement, disagreements and reasons.

Table 7 (Oh et al., 2024, Appendix B): for Q1 and Q2 the Randolph free-marginal kappa and the
proportion of Yes; for Q3 Cohen's kappa between the human majority and the dataset's target, and
top-1 accuracy. "The majority" is the one of :func:`annotation.agreement.majority.decide`: it follows the
study's planned overlap (overlap 1: the single label decides) and an adjudicated item takes the
lead's value, as in the item outcomes and the validated qrels.
"""
from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from annotation.agreement.report import agreement_report
from annotation.agreement.data import EncodedLabels, encoded
from annotation.gc_pause import paused_gc
from annotation.glossary import label, undefined
from annotation.outcomes.table import outcome_table
from annotation.outcomes.items import labels_frame, question_labels
from annotation.outcomes.qrels_builds import study_completeness
from annotation.questions.study import study_question, study_questions
from annotation.monitoring.scales import scale_summary
from annotation.estimates.sampling import study_design
from storage import studies, users
from storage.db import Database

def decision_inputs(db: Database, study_id: int, question_id: str, *, overlap: bool = True) -> tuple[dict | None, dict]:
    """What the majority of each item of one question depends on besides its labels, coded as
    :func:`annotation.outcomes.items.labels_frame` codes the labels: ``(overlap, adjudications)`` =
    item id -> planned annotators (the item's cap, the study's overlap) and item id -> the newest
    adjudicated value (a question whose answers are passages, the best passage: the chosen
    passage's position in the candidate list).
    :func:`annotation.agreement.report.agreement_report` takes both, so that Table 7 decides items as
    the outcomes and the validated qrels do (:func:`annotation.agreement.majority.decide`). Without
    ``overlap`` the first is None (the outcome table's ``cap`` holds it)."""
    by_position = study_question(studies.get_study(db, study_id), question_id).answers_are_passages
    adjudicated = studies.adjudications(db, study_id)
    planned = None
    if overlap or adjudicated:
        cols = studies.item_columns(db, study_id, question_id)
        planned = {i: int(cap) for i, cap in zip(cols["id"], cols["cap"])}
    adjudications = {}
    passages = None  # best passage: the candidates of the items, read once
    for i, a in adjudicated.items():
        if i not in planned:
            continue
        value = a["value"]
        if by_position:
            passages = studies.item_candidates(db, study_id, question_id) if passages is None else passages
            candidates = passages[i]
            if value not in candidates:
                continue  # not one of the item's passages: the vote stands
            value = str(candidates.index(value) + 1)
        adjudications[i] = value
    return planned if overlap else None, adjudications


def question_report(db: Database, study_id: int, question_id: str, *, n_boot: int = 0, seed: int = 0) -> dict | None:
    """The agreement report of one question (None while it has no label). The majority follows
    the study's planned overlap and the lead's adjudications (:func:`decision_inputs`). Computed
    once per page run or report when ``db`` shares its reads (:func:`storage.studies.share_reads`:
    Table 7 and the question's own table read the same report; treat it as read-only then)."""
    return studies.shared(db, ("question_report", study_id, question_id, n_boot, seed),
                          lambda: _question_report(db, study_id, question_id, n_boot=n_boot, seed=seed))


def item_groups(db: Database, study_id: int, question_id: str) -> tuple[dict[str, str], dict[str, str]]:
    """``(item -> query group, item -> domain)`` of one question's items (item ids as text), from
    the study's design (:func:`annotation.estimates.sampling.study_design`): what the agreement intervals
    resample (items of a group are answered alike). A re-judged document's group is its query."""
    cols = studies.item_columns(db, study_id)
    group, stratum = item_group_columns(db, study_id)
    keep = [j for j, q in enumerate(cols["question"]) if q == question_id]
    ids = [str(cols["id"][j]) for j in keep]
    return dict(zip(ids, group[keep].tolist())), dict(zip(ids, stratum[keep].tolist()))


def item_group_columns(db: Database, study_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Each item's query group and domain (object arrays in :func:`storage.studies.item_columns`
    order), kept with the study's item reads while its items are unchanged."""

    def compute():
        design = studies.shared(db, ("study_design", study_id), lambda: study_design(db, study_id))
        unit_group, group_stratum = design["unit_group"], design["group_stratum"]
        group = [unit_group.get(inst, inst) for inst in studies.item_columns(db, study_id)["instance_id"]]
        stratum = [group_stratum.get(g, "") for g in group]
        return np.asarray(group, dtype=object), np.asarray(stratum, dtype=object)

    return studies.shared(db, ("item_groups", study_id), compute)


def _question_report(db: Database, study_id: int, question_id: str, *, n_boot: int, seed: int) -> dict | None:
    rows, values, categories, gold = question_labels(db, study_id, question_id)
    if not len(rows):
        return None
    q = study_question(studies.get_study(db, study_id), question_id)
    ordinal = q.scale == "ordinal"  # declared: the ordinal coefficients (Krippendorff ordinal, weighted Cohen)
    coded = coded_labels(db, study_id, question_id, rows, values, categories, gold)
    if coded is None:  # something the coding refuses: the long table, whose checks name it
        frame, categories, gold = labels_frame(db, study_id, question_id)
        overlap, adjudications = decision_inputs(db, study_id, question_id)
        caps = set(overlap.values())
        clusters, strata = item_groups(db, study_id, question_id) if n_boot > 0 else (None, None)
        report = agreement_report(frame, categories, gold=gold, ordinal=ordinal, n_boot=n_boot, seed=seed,
                                  overlap=caps.pop() if len(caps) == 1 else overlap, adjudications=adjudications,
                                  clusters=clusters, strata=strata)
    else:
        enc, item_rows = coded
        clusters = strata = None
        if n_boot > 0:
            group, stratum = item_group_columns(db, study_id)
            clusters, strata = group[item_rows], stratum[item_rows]
        report = agreement_report(enc, categories, ordinal=ordinal, n_boot=n_boot, seed=seed, clusters=clusters,
                                  strata=strata)
    if "Yes" in categories:
        report["yes_share"] = report["majority_shares"]["Yes"]
        if "intervals" in report:
            report["intervals"]["yes_share"] = report["intervals"].get("majority_share_Yes")
    if any(key == "positive_share" for _, key in q.monitor_rows):
        _positive_share(report, q.positive)
    if q.numeric:
        report["mean_score"] = float(pd.Series(values, dtype=object).astype(float).mean())
    return report


def _positive_share(report: dict, positive: tuple[str, ...]) -> None:
    """``positive_share``: the items whose majority is one of the ``positive`` answers, over every
    labelled item (as "Proportion of Yes response"), with its interval when the report has
    intervals (the sum of the answers' shares, replicate by replicate, when there is one answer:
    the interval of that answer's share; else none)."""
    report["positive_share"] = float(sum(report["majority_shares"].get(c, 0.0) for c in positive))
    if "intervals" in report:
        report["intervals"]["positive_share"] = (report["intervals"].get(f"majority_share_{positive[0]}")
                                                 if len(positive) == 1 else None)


def coded_labels(db: Database, study_id: int, question_id: str, rows: np.ndarray, values, categories: list[str],
                 gold: dict | None) -> tuple[EncodedLabels, np.ndarray] | None:
    """The labels of one question (:func:`annotation.outcomes.items.question_labels`) coded for
    :func:`annotation.agreement.report.agreement_report` straight from the outcome table's columns, with
    the majority's inputs (:func:`decision_inputs`): ``(encoded labels, the outcome table's row of
    each of their items)``; the same codes as the long table's (items by id, annotators by name),
    without its pass over every label. None when a value, a gold answer, an adjudication or an
    item's planned overlap is not one the long table's checks accept: that path names it."""
    t = outcome_table(db, study_id)
    cats = pd.Index(categories)
    lab = cats.get_indexer(pd.Index(values, dtype=object))
    of_question = t.question == question_id
    caps = t.cap[of_question]
    if (lab < 0).any() or (caps < 1).any():
        return None
    item_code, ids = pd.factorize(t.item[t.label_row[rows]])  # items in label order: by id
    item_rows = np.empty(len(ids), np.int64)
    item_rows[item_code] = t.label_row[rows]
    ann, annotators = pd.factorize(t.annotator[rows], sort=True)
    gold_codes, n_gold_extra = None, 0
    if gold is not None:
        gold_item = np.fromiter(gold, np.int64, len(gold))
        gold_lab = cats.get_indexer(pd.Index(list(gold.values()), dtype=object))
        if (gold_lab < 0).any():
            return None
        at = pd.Index(ids).get_indexer(gold_item)
        gold_codes = np.full(len(ids), -1, np.int64)
        gold_codes[at[at >= 0]] = gold_lab[at >= 0]
        n_gold_extra = int((at < 0).sum())
    adjudicated = None
    _, adjudications = decision_inputs(db, study_id, question_id, overlap=False)
    if adjudications:
        adj_lab = cats.get_indexer(pd.Index(list(adjudications.values()), dtype=object))
        if (adj_lab < 0).any():
            return None
        at = pd.Index(ids).get_indexer(np.fromiter(adjudications, np.int64, len(adjudications)))
        adjudicated = np.full(len(ids), -1, np.int64)
        adjudicated[at[at >= 0]] = adj_lab[at >= 0]
    enc = encoded(tuple(cats), np.asarray([str(i) for i in ids.tolist()], dtype=object), item_code,
                  tuple(annotators), ann, lab, gold=gold_codes, n_gold_without_labels=n_gold_extra,
                  overlap=t.cap[item_rows].astype(np.int64), adjudicated=adjudicated)
    return enc, item_rows


def table7(db: Database, study_id: int, *, n_boot: int = 200, seed: int = 0) -> list[dict]:
    """Rows (question, statistic, value, low, high, band) like InstructIR's Table 7: per question of
    the study the rows its declaration names (``Question.monitor_rows``), each with the question's
    id and short name and the key of its statistic in the question report."""
    study = studies.get_study(db, study_id)
    rows = []
    for q, d in study_questions(study).items():
        rep = question_report(db, study_id, q, n_boot=n_boot, seed=seed)
        for statistic, key in d.monitor_rows:
            value = None if rep is None else rep.get(key)
            interval = (rep or {}).get("intervals", {}).get(key) or {}
            rows.append({
                "question": d.monitor_prompt or d.prompt, "question_id": q, "name": d.title, "key": key,
                "statistic": statistic, "value": value,
                "low": interval.get("low"), "high": interval.get("high"),
                "resampled": (rep or {}).get("intervals_resampled"),
                "band": (rep or {}).get("bands", {}).get(key) if key in (rep or {}).get("bands", {}) else None,
                "undefined_reason": (rep or {}).get("undefined_reasons", {}).get(key)
                if rep is not None else "no labels yet",
            })
    return rows


def wilson(k: int, n: int) -> dict:
    """Share k/n with its Wilson 95% interval (statsmodels ``proportion_confint``)."""
    if n == 0:
        return {"share": None, "low": None, "high": None, "k": 0, "n": 0}
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return {"share": k / n, "low": float(low), "high": float(high), "k": k, "n": n}


def extrapolation(db: Database, study_id: int) -> dict:
    """The naive extrapolation, kept for comparison (``ifjudge monitor``): the share of invalid and
    of unnatural sampled instances, and of instances whose human majority disagrees with the
    dataset's target, each with a Wilson 95% interval that treats the sampled instances as
    independent (too narrow when the instances of a query group are alike). Instances without a
    decided outcome are not counted. The benchmark-wide estimate the Monitor page and the report
    show is :func:`annotation.estimates.benchmark.benchmark_estimates` (design-aware intervals)."""
    t = outcome_table(db, study_id)
    out = {}
    for q, d in study_questions(studies.get_study(db, study_id)).items():
        if not d.extrapolation:  # the questions InstructIR's validation reads this way
            continue
        rows = np.flatnonzero((t.question == q) & (t.provenance != "unresolved"))
        if not len(rows):
            continue
        positive = [d.is_positive(v, gold=g) for v, g in zip(t.value[rows].tolist(), t.gold[rows].tolist())]
        decided = [p for p in positive if p is not None]
        out[d.extrapolation] = wilson(sum(not p for p in decided), len(decided))
    return out


def annotator_table(db: Database, study_id: int) -> list[dict]:
    """Per annotator: screens done / total, median seconds per screen, share of labels equal to the
    item's decided value, and (best passage) share equal to the dataset's target."""
    t = outcome_table(db, study_id)
    who, names = pd.factorize(t.annotator)
    n, code = len(names), {a: k for k, a in enumerate(names)}
    # the newest duration of each (annotator, screen): the last label of the screen read in label order
    timed = np.flatnonzero(np.not_equal(t.duration_ms, None))
    seconds: dict[str, list[float]] = {a: [] for a in names}
    if len(timed):
        screen_code = pd.factorize(np.asarray(studies.item_screens(db, study_id), dtype=object))[0][t.label_row[timed]]
        key = who[timed] * (int(screen_code.max()) + 1) + screen_code
        _, last = np.unique(key[::-1], return_index=True)
        newest = timed[np.sort(len(timed) - 1 - last)]  # in label order
        secs = t.duration_ms[newest].astype(np.float64) / 1000  # exact: durations are whole milliseconds
        for k, name in enumerate(names):
            seconds[name] = secs[who[newest] == k].tolist()
    decided = (t.provenance != "unresolved")[t.label_row] & (t.n_labels >= 2)[t.label_row]
    agree = _shares(who, n, decided, t.label_value == t.value[t.label_row])
    has_gold = t.gold.astype(bool)[t.label_row]  # bool() of each: None and "" have none
    gold = _shares(who, n, has_gold, t.label_value == t.gold[t.label_row])
    out = []
    for name in studies.get_study(db, study_id)["annotators"]:
        done, total = studies.progress(db, study_id, users.get_user(db, name)["id"])
        k = code.get(name)
        d = seconds.get(name) or []
        out.append({"annotator": name, "done": done, "total": total,
                    "median_seconds_per_screen": statistics.median(d) if d else None,
                    "agreement_with_majority": None if k is None else agree[k],
                    "agreement_with_gold": None if k is None else gold[k]})
    return out


def _shares(who: np.ndarray, n: int, counted: np.ndarray, equal: np.ndarray) -> list[float | None]:
    """Per annotator code: the share of ``equal`` among the labels ``counted`` (None: none counted)."""
    total = np.bincount(who[counted], minlength=n).tolist()
    hits = np.bincount(who[counted & equal], minlength=n).tolist()
    return [h / c if c else None for h, c in zip(hits, total)]


def disagreements(db: Database, study_id: int) -> list[dict]:
    """Items whose labels differ, most disagreement first (the adjudication queue). Computed once
    per page run or report when ``db`` shares its reads (then read the rows, do not change them)."""
    return list(studies.shared(db, ("disagreements", study_id), lambda: _disagreements(db, study_id)))


def _disagreements(db: Database, study_id: int) -> list[dict]:
    t = outcome_table(db, study_id)
    rows = np.flatnonzero(t.distinct > 1)
    out = [{"item": i, "instance": inst, "question": q, "doc_id": doc, "labels": counts, "disagreement": round(d, 6),
            "decision": v, "provenance": p}
           for i, inst, q, doc, counts, d, v, p in zip(
               t.item[rows].tolist(), t.instance[rows].tolist(), t.question[rows].tolist(), t.doc_id[rows].tolist(),
               t.label_counts(rows), t.disagreement[rows].tolist(), t.value[rows].tolist(), t.provenance[rows].tolist())]
    return sorted(out, key=lambda r: (-r["disagreement"], r["provenance"] == "adjudicated", r["item"]))


def reasons(db: Database, study_id: int) -> list[dict]:
    """Every reason given (a reason is required for each No). Computed once per page run or report
    when ``db`` shares its reads (then read the rows, do not change them)."""
    return list(studies.shared(db, ("reasons", study_id), lambda: _reasons(db, study_id)))


def _reasons(db: Database, study_id: int) -> list[dict]:
    t = outcome_table(db, study_id)
    given = [j for j, r in enumerate(t.reason) if r]
    rows = t.label_row[given]
    keys = ("item", "instance", "question", "annotator", "value", "reason")
    return [dict(zip(keys, r)) for r in zip(t.item[rows].tolist(), t.instance[rows].tolist(), t.question[rows].tolist(),
                                            t.annotator[given].tolist(), t.label_value[given].tolist(),
                                            [t.reason[j] for j in given])]


def study_monitor(db: Database, study_id: int, *, n_boot: int = 200, seed: int | None = None) -> dict:
    """Everything the monitor page shows for a study, as plain JSON-ready values (NaN -> None).

    ``{"study": {"id", "name", "questions", "annotators"}, "completeness"`` (labelled / planned
    labels, :func:`annotation.outcomes.qrels_builds.study_completeness`), ``"table7"`` (:func:`table7`),
    ``"extrapolation"`` (:func:`extrapolation`), ``"scale_means"`` (IFIR Table 2,
    :func:`annotation.monitoring.scales.scale_summary`), ``"annotators"`` (:func:`annotator_table`),
    ``"questions"`` ({question: :func:`question_report` or None while unlabelled}),
    ``"disagreements"`` and ``"reasons"``}. Intervals use ``n_boot`` bootstrap replicates with
    ``seed`` (default: the study's seed), as the page does.
    """
    # the pieces below read the same labels: once, and kept for the next call while the study's data are
    # unchanged (storage.study_reads); their hundreds of thousands of rows hold no cycle
    with studies.shared_reads(db, across_runs=True), paused_gc():
        return _study_monitor(db, study_id, n_boot=n_boot, seed=seed)


def _study_monitor(db: Database, study_id: int, *, n_boot: int, seed: int | None) -> dict:
    study = studies.get_study(db, study_id)
    seed = int(study["settings"].get("seed", 0) if seed is None else seed)
    done = study_completeness(db, study_id)
    out = _plain({
        "study": {"id": study["id"], "name": study["name"], "questions": study["questions"],
                  "annotators": study["annotators"]},
        "completeness": {k: done[k] for k in ("labelled", "planned", "complete")},
        "table7": table7(db, study_id, n_boot=n_boot, seed=seed),
        "extrapolation": extrapolation(db, study_id),
        "scale_means": scale_summary(db, study_id, n_boot=n_boot, seed=seed).to_dict("records"),
        "annotators": annotator_table(db, study_id),
        "questions": {q: question_report(db, study_id, q, n_boot=n_boot, seed=seed) for q in study["questions"]},
    })
    # already plain (ints, floats rounded from ratios, text): tens of thousands of rows need no pass, only
    # a copy (the rows are kept for the next call)
    out["disagreements"] = [dict(r) for r in disagreements(db, study_id)]
    out["reasons"] = [dict(r) for r in reasons(db, study_id)]
    return out


def _plain(value):
    """``value`` with numpy scalars as Python numbers, NaN as None and tuples as lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def kappa_cells(report: dict) -> list[dict]:
    """The cells of the pairwise Cohen kappa heatmap of a :func:`question_report`: both orders of
    each annotator pair, with the value as the cell shows it (3 decimals, or ``"—"`` when kappa is
    undefined), the reason it is undefined (for the tooltip) and the number of shared items.

    Cohen's kappa, ``(p_o - p_e) / (1 - p_e)`` (Cohen, 1960), is undefined when ``p_e = 1`` (both
    annotators gave one same label to every shared item).

    >>> cells = kappa_cells({"cohen_kappa": {"a|b": 0.5, "a|c": None}, "cohen_kappa_n_items": {"a|b": 4, "a|c": 4},
    ...                      "undefined_reasons": {"cohen_kappa": {"a|c": "0/0"}}})
    >>> [(c["a"], c["b"], c["text"], c["why"]) for c in cells]
    [('a', 'b', '0.500', ''), ('b', 'a', '0.500', ''), ('a', 'c', '—', '0/0'), ('c', 'a', '—', '0/0')]
    """
    why = (report.get("undefined_reasons") or {}).get("cohen_kappa") or {}
    shared = report.get("cohen_kappa_n_items") or {}
    cells = []
    for pair, kappa in (report.get("cohen_kappa") or {}).items():
        a, b = pair.split("|", 1)
        value = None if kappa is None or (isinstance(kappa, float) and math.isnan(kappa)) else float(kappa)
        text, reason = undefined(value, why.get(pair, "undefined"))
        for x, y in ((a, b), (b, a)):
            cells.append({"a": x, "b": y, "kappa": value, "text": text, "why": reason, "items": shared.get(pair)})
    return cells


# the single statistics of a question report, in the order a lead reads them
REPORT_STATISTICS = (
    "n_items", "n_labels", "n_annotators", "n_items_pairable", "n_items_no_majority", "n_items_adjudicated",
    "n_items_awaiting_labels", "percent_agreement_pairwise",
    "percent_agreement_unanimous", "randolph_kappa", "fleiss_kappa", "gwet_ac1", "krippendorff_alpha_nominal",
    "krippendorff_alpha_ordinal", "cohen_kappa_mean_pairwise", "yes_share", "mean_score",
)


def report_rows(report: dict) -> list[dict]:
    """A question report as table rows (statistic, value, agreement band, why undefined), with
    readable names; ``"—"`` for an undefined value and its reason beside it.

    >>> report_rows({"n_items": 8, "fleiss_kappa": None, "undefined_reasons": {"fleiss_kappa": "0/0"}})
    [{'Statistic': 'Items', 'Value': '8', 'Band': '', 'Why undefined': ''}, {'Statistic': 'Fleiss kappa', 'Value': '—', 'Band': '', 'Why undefined': '0/0'}]
    """
    bands = report.get("bands") or {}
    reasons = report.get("undefined_reasons") or {}
    rows = []
    keys = [k for k in REPORT_STATISTICS if k in report]
    keys += [k for k in report if k.startswith(("cohen_kappa_majority", "top1_", "n_majority")) and k not in keys]
    for key in [k for k in keys if not isinstance(report[k], (dict, list))]:
        reason = reasons.get(key)
        text, why = undefined(report[key], reason if isinstance(reason, str) else "")
        band = bands.get(key)
        rows.append({"Statistic": label(key), "Value": text, "Band": band if isinstance(band, str) else "",
                     "Why undefined": why})
    return rows
