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

- :func:`resolve` — the changed judgment of one item (the one rule of :func:`annotation.majority.decide`);
- :func:`to_relevance` — a judgment as a qrels grade;
- :func:`rejudge_summary` — per document, per query and overall, with ``qrels_changed``.

Storing the outcome as qrels is :func:`annotation.qrels_builds.store_changed_qrels` (published)
and :func:`annotation.qrels_builds.store_edited_qrels` (edits). No Streamlit, no SQL.
"""
from __future__ import annotations

from collections import Counter

import pandas as pd

from annotation import majority
from annotation.agreement import agreement_report
from annotation.narrative_versions import original_judgments
from annotation.questions import question
from storage import narratives as store
from storage import projects, studies
from storage.errors import IFJudgeError, NotFound
from storage.db import Database

KINDS = ("published", "edit")
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
    :func:`annotation.majority.decide`, the one the agreement and adjudication pages use.

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


def _agreement(label_rows: list[dict], categories: tuple[str, ...]) -> dict:
    """Percent agreement, Randolph's and Fleiss' kappa of the re-judging, from annotation.agreement."""
    per_item = Counter(r["item"] for r in label_rows)
    if not any(n >= 2 for n in per_item.values()):
        return {"percent_agreement": None, "randolph_kappa": None, "fleiss_kappa": None, "n_items_pairable": 0,
                "undefined_reason": "no item has two labels yet"}
    df = pd.DataFrame({"item": [str(r["item"]) for r in label_rows], "annotator": [r["annotator"] for r in label_rows],
                       "label": [r["value"] for r in label_rows]})
    rep = agreement_report(df, list(categories))
    reasons = rep.get("undefined_reasons", {})
    return {"percent_agreement": rep["percent_agreement_pairwise"], "randolph_kappa": rep["randolph_kappa"],
            "fleiss_kappa": rep["fleiss_kappa"], "n_items_pairable": rep["n_items_pairable"],
            "undefined_reason": reasons.get("randolph_kappa") or reasons.get("percent_agreement_pairwise")}


def rejudge_summary(db: Database, project: str, *, query_id: str | None = None, kind: str = "edit") -> dict:
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
    judged relevant, agreement (pairwise percent agreement, Randolph's kappa;
    annotation.agreement), and ``qrels_changed``: the query's base qrels (``published``: the
    published changed ones; ``edit``: the original ones) with every resolved re-judged document
    updated -- controls are reported, never written there.

    Returns ``{"study_id", "kind", "scale", "queries": [...], "documents": [...], "overall": {...},
    "qrels_changed": {qrels key: {doc: rel}}}``.
    """
    if kind not in KINDS:
        raise IFJudgeError(f"re-judging kind {kind!r}; expected one of {', '.join(KINDS)}")
    proj = projects.get_project(db, project)
    pid = proj["id"]
    out = {"study_id": None, "kind": kind, "scale": None, "queries": [], "documents": [], "overall": {},
           "qrels_changed": {}}
    study_id = store.rejudge_study_id(db, pid, PURPOSES[kind])
    if study_id is None:
        out["overall"] = _overall([], [], None)
        return out
    study = studies.get_study(db, study_id)
    scale = study["settings"].get("relevance", "binary")
    categories = question("relevance", relevance=scale).categories
    items = studies.items_of_study(db, study_id, "relevance")
    version_query = {}
    for vid in {it["narrative_version_id"] for it in items if it["narrative_version_id"]}:
        v = store.get_version(db, vid)
        version_query[vid] = v["query_id"]
    current_round: dict[str, int] = {}
    for vid, q in version_query.items():
        current_round[q] = max(vid, current_round.get(q, 0))
    if query_id is not None:
        if query_id not in current_round:
            raise NotFound(f"query {query_id!r} has no re-judging round; queries with one: "
                           f"{', '.join(sorted(current_round)) or 'none'}")
        current_round = {query_id: current_round[query_id]}
    labels_by_item: dict[int, list[dict]] = {}
    for r in studies.current_labels(db, study_id, "relevance"):
        labels_by_item.setdefault(r["item"], []).append(r)
    adjudicated = studies.adjudications(db, study_id)
    original = projects.qrels(db, pid, "original")
    published_changed = projects.qrels(db, pid, "changed")
    titles = {d: v["title"] for d, v in projects.documents(db, pid).items()}
    all_labels, all_docs = [], []
    for q in sorted(current_round):
        vid = current_round[q]
        key, judged = original_judgments(original, q)
        ckey, pub_judged = changed_judgments(published_changed, q)
        if kind == "published" and ckey is not None:
            key, changed = ckey, dict(pub_judged)
        else:
            changed = dict(judged)
        rows, round_labels = [], []
        for it in sorted((i for i in items if i["narrative_version_id"] == vid), key=lambda i: i["doc_id"]):
            labs = labels_by_item.get(it["id"], [])
            round_labels += labs
            adj = adjudicated.get(it["id"])
            value, status = resolve([lab["value"] for lab in labs], adj["value"] if adj else None, overlap=it["cap"])
            orig = judged.get(it["doc_id"])
            control = bool(it["payload"].get("control"))
            rel = None if value is None else to_relevance(value, scale=scale, original=orig)
            if rel is not None and not control:
                changed[it["doc_id"]] = rel
            rows.append({
                "query_id": q, "version_id": vid, "item": it["id"], "doc_id": it["doc_id"],
                "title": titles.get(it["doc_id"], ""), "control": control, "original": orig,
                "published": None if pub_judged is None else pub_judged.get(it["doc_id"], 0),
                "labels": {lab["annotator"]: lab["value"] for lab in labs},
                "counts": dict(Counter(lab["value"] for lab in labs)), "adjudication": adj["value"] if adj else None,
                "status": status, "value": value, "changed": rel, "planned": it["cap"],
                "flipped": rel is not None and (orig or 0) > 0 and rel <= 0,
            })
        summary = _query_summary(q, vid, judged, rows)
        summary["agreement"] = _agreement(round_labels, categories)
        summary["superseded_rounds"] = sum(1 for v, qq in version_query.items() if qq == q and v < vid)
        out["queries"].append(summary)
        out["documents"] += rows
        out["qrels_changed"][key] = changed
        all_labels += round_labels
        all_docs += rows
    out.update(study_id=study_id, scale=scale, overall=_overall(out["queries"], all_labels, categories))
    return out


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


def _overall(queries: list[dict], labels: list[dict], categories) -> dict:
    keys = ("relevant_original", "rejudged", "resolved", "unresolved", "ties", "adjudicated", "flipped",
            "still_relevant", "agree_published", "disagree_published", "controls", "controls_resolved", "controls_judged_relevant")
    total = {k: sum(q[k] for q in queries) for k in keys}
    total["queries"] = len(queries)
    total["share_flipped"] = total["flipped"] / total["relevant_original"] if total["relevant_original"] else None
    total["agreement"] = _agreement(labels, categories) if categories else _agreement([], ())
    return total

