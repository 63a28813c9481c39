"""What the re-judging of a changed narrative says: per document its changed relevance, per query
how many originally relevant documents flipped, and the agreement of the re-judging.

Two kinds of re-judging (:data:`KINDS`): ``published`` judges the PUBLISHED changed instruction
as imported (its outcome validates the published ``changed`` qrels: qrels ``changed-validated``);
``edit`` judges an expert's new narrative version (a new instruction: qrels ``edited-validated``).
Control documents (originally non-relevant, mixed in to check the annotators) are reported, never
written into the changed qrels: FollowIR's changed documents are relevant -> not relevant.

FollowIR (Weller et al., 2024, §3) re-judges the documents relevant under the original narrative
after an expert made it more specific; InfoSearch (Zhou et al., 2025, §2) re-judges instructed and
reversed instructions the same way.

- :func:`resolve` — the changed judgment of one item (the one rule of :func:`annotation.agreement.majority.decide`);
- :func:`to_relevance` — a judgment as a qrels grade;
- :func:`rejudge_summary` — per document, per query and overall, with ``qrels_changed``;
- :func:`rounds_agreement` — the agreement of every round at once.

Storing the outcome as qrels is :func:`annotation.outcomes.qrels_builds.store_changed_qrels` (published)
and :func:`annotation.outcomes.qrels_builds.store_edited_qrels` (edits). No Streamlit, no SQL.
"""
from __future__ import annotations

import numpy as np

from annotation.agreement import majority
from annotation.gc_pause import paused_gc
from annotation.agreement.data import UnknownLabel
from annotation.agreement.stats import Undefined, fleiss_kappa, percent_agreement, randolph_kappa
from annotation.narratives.versions import KINDS, original_judgments
from annotation.questions.study import question
from storage import narratives as store
from storage import projects, studies
from storage.errors import IFJudgeError, NotFound
from storage.db import Database

PURPOSES = {"published": store.PUBLISHED_PURPOSE, "edit": store.REJUDGE_PURPOSE}
# the qrels version each kind of re-judging builds
KIND_VERSIONS = {"published": "changed-validated", "edit": "edited-validated"}


def kind_of_study(study: dict) -> str | None:
    """``published`` / ``edit`` for a re-judging study (by its settings' purpose), else None."""
    purpose = study["settings"].get("purpose")
    return next((k for k, p in PURPOSES.items() if p == purpose), None)


def changed_judgments(changed: dict[str, dict[str, int]], query_id: str) -> tuple[str | None, dict[str, int] | None]:
    """(qrels key, judgments) of a query in the published ``changed`` qrels: keyed by the query id,
    or by its ``changed`` (or ``og``) instance id; (None, None) when the query has none."""
    for key in (query_id, f"{query_id}-changed", f"{query_id}-og"):
        if key in changed:
            return key, changed[key]
    return None, None


def resolve(values: list[str], adjudication: str | None = None, *, overlap: int | None = None) -> tuple[str | None, str]:
    """The changed judgment of one item and how it was reached: the one rule of
    :func:`annotation.agreement.majority.decide`, the one the agreement and adjudication pages use.

    The newest adjudication wins (``adjudicated``); else the label with a strict plurality
    (``unanimous`` when every label agrees, else ``majority``). Unresolved (value None): a tie for
    the most labels (``tie``), no label at all (``no labels``), and a single label (``awaiting
    labels``: one person does not decide an item, unless the study planned ``overlap`` 1).

    >>> resolve(["relevant", "not relevant", "relevant"])
    ('relevant', 'majority')
    >>> resolve(["relevant", "not relevant"])
    (None, 'tie')
    >>> resolve(["not relevant"])
    (None, 'awaiting labels')
    >>> resolve(["relevant", "not relevant"], "not relevant")
    ('not relevant', 'adjudicated')
    """
    d = majority.decide(values, adjudication=adjudication, overlap=overlap)
    return (d.value, d.provenance) if d.resolved else (None, d.reason)


def to_relevance(value: str, *, scale: str, original: int | None) -> int:
    """Qrels relevance of a judgment: graded ``0``/``1``/``2`` as is; binary ``not relevant`` -> 0,
    ``relevant`` -> the original grade when it was relevant (> 0), else 1."""
    if scale == "graded":
        return int(value)
    if value == "relevant":
        return original if original is not None and original > 0 else 1
    if value == "not relevant":
        return 0
    raise IFJudgeError(f"relevance judgment {value!r} is not one of relevant, not relevant")


def _no_pairs() -> dict:
    return {"percent_agreement": None, "randolph_kappa": None, "fleiss_kappa": None, "n_items_pairable": 0,
            "undefined_reason": "no item has two labels yet"}


def _agreement_of_counts(counts: np.ndarray, categories: tuple[str, ...]) -> dict:
    """Percent agreement, Randolph's and Fleiss' kappa of one item x category count matrix (the
    coefficients of :func:`annotation.agreement.report.agreement_report`, computed by the same functions
    of :mod:`annotation.agreement.stats` on the same matrix)."""
    n_pairable = int((counts.sum(1) >= 2).sum())
    if n_pairable == 0:
        return _no_pairs()
    values = {"percent_agreement": percent_agreement(counts),
              "randolph_kappa": randolph_kappa(counts, categories=categories),
              "fleiss_kappa": fleiss_kappa(counts, categories=categories)}
    reasons = {name: v.reason for name, v in values.items() if isinstance(v, Undefined)}
    return {**{name: None if name in reasons else float(v) for name, v in values.items()},
            "n_items_pairable": n_pairable,
            "undefined_reason": reasons.get("randolph_kappa") or reasons.get("percent_agreement")}


def rounds_agreement(label_rounds: list[list[dict]], categories: tuple[str, ...]) -> tuple[list[dict], dict]:
    """The agreement of each round of labels and of all of them together: percent agreement
    (pairwise), Randolph's and Fleiss' kappa, ``n_items_pairable`` and ``undefined_reason`` (None
    when the coefficients are defined), the values :func:`annotation.agreement.report.agreement_report`
    gives on each round's labels. ``label_rounds``: per round, label rows ``{"item", "value"}``
    (one per item and annotator; an item belongs to one round, as each re-judging item belongs to
    one narrative version). Every label is coded once; each round is a slice of one count matrix
    (items in the order they first appear, the order the report counts them in), so a round costs
    a few array operations instead of a full agreement report. Returns ``(per round, overall)``.

    Examples
    --------
    >>> rows = lambda item, *vs: [{"item": item, "value": v} for v in vs]
    >>> per, total = rounds_agreement([rows(1, "relevant", "relevant", "not relevant"),
    ...                                rows(2, "relevant", "relevant") + rows(3, "relevant")],
    ...                               ("not relevant", "relevant"))
    >>> round(per[0]["percent_agreement"], 4), per[1]["percent_agreement"], per[1]["n_items_pairable"]
    (0.3333, 1.0, 1)
    >>> round(total["percent_agreement"], 4), round(total["randolph_kappa"], 4)  # (1/3 + 1) / 2; (2/3 - 1/2) / (1/2)
    (0.6667, 0.3333)
    """
    return _rounds_agreement([([r["item"] for r in labels], [r["value"] for r in labels]) for labels in label_rounds],
                             categories)


def _rounds_agreement(rounds: list[tuple[list, list[str]]], categories: tuple[str, ...]) -> tuple[list[dict], dict]:
    """:func:`rounds_agreement` of rounds given as columns: per round, (item ids, values)."""
    code = {c: k for k, c in enumerate(categories)}
    flat_items = [i for items, _ in rounds for i in items]
    if not flat_items:
        return [_no_pairs() for _ in rounds], _no_pairs()
    for _, values in rounds:  # as the agreement report: the first label outside the categories, by its row
        bad = next((i for i, v in enumerate(values) if v not in code), None)
        if bad is not None:
            raise UnknownLabel(values[bad], bad, categories)
    position: dict = {}
    rows = np.fromiter((position.setdefault(i, len(position)) for i in flat_items), np.int64, len(flat_items))
    codes = np.fromiter((code[v] for _, values in rounds for v in values), np.int64, len(flat_items))
    q = len(categories)
    counts = np.bincount(rows * q + codes, minlength=len(position) * q).reshape(len(position), q)
    per, start = [], 0
    for items, _ in rounds:
        part = rows[start:start + len(items)]
        start += len(items)
        per.append(_agreement_of_counts(counts[part.min():part.max() + 1], categories) if len(items) else _no_pairs())
    return per, _agreement_of_counts(counts, categories)


def rejudge_summary(db: Database, project: dict, *, query_id: str | None = None, kind: str = "edit",
                    titles: bool = True, qrels: dict | None = None) -> dict:
    """What the re-judging of ``kind`` (``edit``: expert edits, the default; ``published``: the
    published changed instruction) says so far, per query (its newest round) and overall.

    Per document: original relevance, ``published`` (its label in the published ``changed``
    qrels; a document the query's changed qrels do not list counts as 0, None when the query has
    no changed qrels), the current labels, the adjudication, the status (:func:`resolve`), the
    changed relevance (None while unresolved) and whether it flipped (relevant under the original
    qrels, not relevant now). Per query: ``relevant_original``, ``rejudged``, ``resolved``,
    ``unresolved``, ``flipped``, ``share_flipped`` = flipped / relevant_original (FollowIR aimed at
    about 0.5), ``agree_published`` / ``disagree_published`` (resolved documents whose relevant /
    not relevant outcome equals / differs from the published changed label), controls judged and
    judged relevant, agreement (pairwise percent agreement, Randolph's kappa:
    :func:`rounds_agreement`), and ``qrels_changed``: the query's base qrels (``published``: the
    published changed ones; ``edit``: the original ones) with every resolved re-judged document
    updated -- controls are reported, never written there. ``titles=False`` leaves each document's
    ``title`` empty without reading the titles (a qrels build needs none). ``project``: its row
    (:func:`storage.projects.get_project`); ``qrels``: the project's ``original`` and ``changed`` qrels when the caller read them
    (a qrels build, :class:`annotation.outcomes.qrels_builds.BuildInputs`).

    Returns ``{"study_id", "kind", "scale", "queries": [...], "documents": [...], "overall": {...},
    "qrels_changed": {qrels key: {doc: rel}}}``.
    """
    if kind not in KINDS:
        raise IFJudgeError(f"re-judging kind {kind!r}; expected one of {', '.join(KINDS)}")
    with paused_gc():  # a dict per document, no cycles (annotation.gc_pause)
        return _rejudge_summary(db, project, query_id, kind, titles, qrels)


def _rejudge_summary(db: Database, project: dict, query_id: str | None, kind: str, titles: bool,
                     qrels: dict | None) -> dict:
    pid = project["id"]
    out = {"study_id": None, "kind": kind, "scale": None, "queries": [], "documents": [], "overall": {},
           "qrels_changed": {}}
    study_id = store.rejudge_study_id(db, pid, PURPOSES[kind])
    if study_id is None:
        out["overall"] = _overall([], _no_pairs())
        return out
    scale = studies.get_study(db, study_id)["settings"].get("relevance", "binary")
    rounds = _rounds(db, study_id, query_id)
    inputs = _judged_inputs(db, pid, study_id, rounds, titles=titles, qrels=qrels)
    label_rounds = []
    for q in sorted(rounds["current"]):
        vid = rounds["current"][q]
        key, judged, pub_judged, changed = _base_judgments(inputs, q, kind)
        rows, labels = _round_documents(q, vid, rounds["items"].get(vid, []), inputs, judged, pub_judged, scale)
        for r in rows:
            if r["changed"] is not None and not r["control"]:
                changed[r["doc_id"]] = r["changed"]
        summary = _query_summary(q, vid, judged, rows)
        summary["superseded_rounds"] = sum(1 for v, qq in rounds["version_query"].items() if qq == q and v < vid)
        out["queries"].append(summary)
        out["documents"] += rows
        out["qrels_changed"][key] = changed
        label_rounds.append(labels)
    per_round, overall = _rounds_agreement(label_rounds, question("relevance", relevance=scale).categories)
    for summary, agreement in zip(out["queries"], per_round):
        summary["agreement"] = agreement
    out.update(study_id=study_id, scale=scale, overall=_overall(out["queries"], overall))
    return out


def _rounds(db: Database, study_id: int, query_id: str | None) -> dict:
    """The study's rounds: ``{"items": version -> its relevance items (study order), "version_query":
    version -> query, "current": query -> its newest round's version}`` (only ``query_id`` if given)."""
    by_version: dict[int, list[dict]] = {}
    for it in studies.items_of_study(db, study_id, "relevance"):
        if it["narrative_version_id"]:
            by_version.setdefault(it["narrative_version_id"], []).append(it)
    version_query = {vid: store.get_version(db, vid)["query_id"] for vid in by_version}
    current: dict[str, int] = {}
    for vid, q in version_query.items():
        current[q] = max(vid, current.get(q, 0))
    if query_id is not None:
        if query_id not in current:
            raise NotFound(f"query {query_id!r} has no re-judging round; queries with one: "
                           f"{', '.join(sorted(current)) or 'none'}")
        current = {query_id: current[query_id]}
    return {"items": by_version, "version_query": version_query, "current": current}


def _judged_inputs(db: Database, pid: int, study_id: int, rounds: dict, *, titles: bool = True,
                   qrels: dict | None = None) -> dict:
    """What the rounds are judged against: the current labels by item, the adjudications, the
    original and published changed qrels, and the titles of the documents of the current rounds."""
    labels_by_item: dict[int, list[tuple[str, str]]] = {}  # item -> (annotator, value) by annotator name
    for item, annotator, value in studies.current_label_votes(db, study_id, "relevance"):
        labs = labels_by_item.get(item)
        if labs is None:
            labels_by_item[item] = [(annotator, value)]
        else:
            labs.append((annotator, value))
    docs = {it["doc_id"] for vid in rounds["current"].values() for it in rounds["items"].get(vid, [])}
    return {"labels": labels_by_item, "adjudicated": studies.adjudications(db, study_id),
            **(qrels or {"original": projects.qrels(db, pid, "original"), "changed": projects.qrels(db, pid, "changed")}),
            "titles": projects.document_titles(db, pid, sorted(docs)) if titles else {}}


def _base_judgments(inputs: dict, q: str, kind: str) -> tuple[str, dict, dict | None, dict]:
    """(qrels key, original judgments, published changed judgments or None, the base the outcome
    updates: ``published`` -> the published changed qrels when the query has some, else the original)."""
    key, judged = original_judgments(inputs["original"], q)
    ckey, pub_judged = changed_judgments(inputs["changed"], q)
    if kind == "published" and ckey is not None:
        return ckey, judged, pub_judged, dict(pub_judged)
    return key, judged, pub_judged, dict(judged)


def _round_documents(q: str, vid: int, items: list[dict], inputs: dict, judged: dict, pub_judged: dict | None,
                     scale: str) -> tuple[list[dict], tuple[list[int], list[str]]]:
    """The document rows of one round (by doc id) and the round's labels as columns (item ids,
    values), in that order."""
    rows, label_items, label_values = [], [], []
    decisions = inputs.setdefault("decisions", {})  # resolve() is a pure function of (values, adjudication, overlap)
    for it in sorted(items, key=lambda i: i["doc_id"]):
        labs = inputs["labels"].get(it["id"], ())
        values = tuple(v for _, v in labs)
        label_items += [it["id"]] * len(values)
        label_values += values
        adj = inputs["adjudicated"].get(it["id"])
        pattern = (values, adj["value"] if adj else None, it["cap"])
        resolved = decisions.get(pattern)
        if resolved is None:
            resolved = decisions[pattern] = resolve(list(values), pattern[1], overlap=it["cap"])
        value, status = resolved
        orig = judged.get(it["doc_id"])
        rel = None if value is None else to_relevance(value, scale=scale, original=orig)
        counts: dict[str, int] = {}
        for v in values:
            counts[v] = counts.get(v, 0) + 1
        rows.append({
            "query_id": q, "version_id": vid, "item": it["id"], "doc_id": it["doc_id"],
            "title": inputs["titles"].get(it["doc_id"], ""), "control": bool(it["payload"].get("control")),
            "original": orig, "published": None if pub_judged is None else pub_judged.get(it["doc_id"], 0),
            "labels": dict(labs), "counts": counts, "adjudication": pattern[1],
            "status": status, "value": value, "changed": rel, "planned": it["cap"],
            "flipped": rel is not None and (orig or 0) > 0 and rel <= 0,
        })
    return rows, (label_items, label_values)


def _query_summary(q: str, vid: int, judged: dict[str, int], rows: list[dict]) -> dict:
    main = [r for r in rows if not r["control"]]
    ctrl = [r for r in rows if r["control"]]
    n_rel = sum(1 for r in judged.values() if r > 0)
    flipped = sum(r["flipped"] for r in main)
    return {
        "query_id": q, "version_id": vid, "relevant_original": n_rel, "rejudged": len(main),
        "resolved": sum(r["changed"] is not None for r in main),
        "unresolved": sum(r["changed"] is None for r in main),
        "ties": sum(r["status"] == "tie" for r in main), "adjudicated": sum(r["status"] == "adjudicated" for r in main),
        "flipped": flipped, "still_relevant": sum(r["changed"] is not None and r["changed"] > 0 for r in main),
        "share_flipped": flipped / n_rel if n_rel else None,
        "agree_published": sum(r["changed"] is not None and r["published"] is not None
                               and (r["changed"] > 0) == (r["published"] > 0) for r in main),
        "disagree_published": sum(r["changed"] is not None and r["published"] is not None
                                  and (r["changed"] > 0) != (r["published"] > 0) for r in main),
        "controls": len(ctrl), "controls_resolved": sum(r["changed"] is not None for r in ctrl),
        "controls_judged_relevant": sum(r["changed"] is not None and r["changed"] > 0 for r in ctrl),
    }


def _overall(queries: list[dict], agreement: dict) -> dict:
    keys = ("relevant_original", "rejudged", "resolved", "unresolved", "ties", "adjudicated", "flipped",
            "still_relevant", "agree_published", "disagree_published", "controls", "controls_resolved", "controls_judged_relevant")
    total = {k: sum(q[k] for q in queries) for k in keys}
    total["queries"] = len(queries)
    total["share_flipped"] = total["flipped"] / total["relevant_original"] if total["relevant_original"] else None
    total["agreement"] = agreement
    return total

