"""The Monitor page's tables as a lead reads them: passages and instructions by their text
(shortened; the full text beside), label counts in words, readable headers, and ``"—"`` with its
reason wherever a value is missing. Formats the outputs of :mod:`annotation.monitor`; no
Streamlit here.

>>> shorten("a  long\\ninstruction text", 12)
'a long inst…'
>>> heading("ifir", ["passage_match", "naturalness"])
'Agreement (IFIR Table 2 questions)'
>>> heading("infosearch", ["condition"]), heading("followir", ["relevance"])
('Condition judgments (InfoSearch §2): agreement', 'Re-judging agreement (FollowIR §3)')
>>> heading("generic", ["validity", "naturalness", "best_passage"])
'Human verification (InstructIR Table 7)'
"""
from __future__ import annotations

import math
import re

from annotation import monitor
from annotation.glossary import PROVENANCE, STATISTIC_HELP, STATISTICS, UNDEFINED, label, votes
from annotation.majority import decide
from storage import projects, studies
from storage.db import Database

SHORT = 90
PAGE_ROWS = 100  # rows of the disagreement and reason tables shown at a time
UNRESOLVED_WHY = {"tie": "tie: no majority, for a lead to decide", "awaiting labels": "awaiting more labels",
                  "no labels": "no label yet"}


def shorten(text: str | None, n: int = SHORT) -> str:
    """``text`` on one line, cut to ``n`` characters with an ellipsis."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= n else flat[: n - 1].rstrip() + "…"


def _text(doc: dict | None) -> str:
    if not doc:
        return ""
    return f"{doc['title']}: {doc['text']}" if doc.get("title") else doc["text"]


def readable_note(note: str) -> str:
    """A report note with statistic ids in words.

    >>> readable_note("cohen_kappa_mean_pairwise: mean over 2 pairs")
    'Cohen kappa (mean over pairs): mean over 2 pairs'
    """
    return re.sub(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b", lambda m: STATISTICS.get(m.group(0), m.group(0)), note)


def heading(kind: str, questions: list[str]) -> str:
    """The heading of the agreement table, named after the benchmark's own table or section."""
    qs = set(questions)
    if kind == "ifir" or qs & {"passage_match", "instfol_match"} and not qs & {"validity", "best_passage"}:
        return "Agreement (IFIR Table 2 questions)"
    if kind == "infosearch" or qs == {"condition"}:
        return "Condition judgments (InfoSearch §2): agreement"
    if kind == "followir" or "relevance" in qs:
        return "Re-judging agreement (FollowIR §3)"
    return "Human verification (InstructIR Table 7)"


def _num(value, digits: int = 3) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def table7_rows(rows: list[dict]) -> list[dict]:
    """:func:`annotation.monitor.table7` rows with readable columns: the value and its 95% interval
    as text (``"—"`` when undefined, the reason in "Why undefined"), the agreement band, and what
    the statistic means.

    >>> table7_rows([{"question": "Q1", "statistic": "Proportion of Yes response", "value": None, "low": None,
    ...               "high": None, "band": None, "undefined_reason": "no labels yet"}])[0]["Value"]
    '—'
    """
    keys = {lab: key for spec in monitor.TABLE7_ROWS.values() for lab, key in spec}
    short = {prompt: label(q) for q, prompt in monitor.PROMPTS.items()}  # the full wording is the column's help
    out = []
    for r in rows:
        value = _num(r["value"])
        low, high = _num(r.get("low")), _num(r.get("high"))
        out.append({
            "Question": short.get(r["question"], r["question"]), "Statistic": r["statistic"], "Value": value or UNDEFINED,
            "95% interval": f"{low} to {high}" if low is not None and high is not None else UNDEFINED,
            "Band": r.get("band") or "",
            "Why undefined": "" if value is not None else (r.get("undefined_reason") or "undefined"),
            "What it means": STATISTIC_HELP.get(keys.get(r["statistic"], ""), ""),
        })
    return out


def interval_help(rows: list[dict]) -> str:
    """The hover of Table 7's interval column: how its bootstrap resampled (query groups within
    domains, or items) -- from :func:`annotation.monitor.table7` rows.

    >>> interval_help([{"resampled": "items resampled"}])
    'bootstrap percentile interval, items resampled'
    """
    how = next((r["resampled"] for r in rows if r.get("resampled")), None)
    return "bootstrap percentile interval" + (f", {how}" if how else "")


def annotator_rows(rows: list[dict]) -> list[dict]:
    """:func:`annotation.monitor.annotator_table` rows with readable headers and ``"—"`` (with why)
    where there is nothing to measure yet."""
    out = []
    for r in rows:
        med = r.get("median_seconds_per_screen")
        maj, gold = r.get("agreement_with_majority"), r.get("agreement_with_gold")
        out.append({
            "Annotator": r["annotator"], "Screens done": f"{r['done']} of {r['total']}",
            "Median seconds per screen": f"{med:.1f}" if med is not None else f"{UNDEFINED} no screen done",
            "Agreement with the majority": f"{maj:.0%}" if maj is not None else f"{UNDEFINED} no decided item yet",
            "Agreement with the dataset's target": f"{gold:.0%}" if gold is not None
            else f"{UNDEFINED} no target (best passage only)",
        })
    return out


def disagreement_rows(db: Database, study_id: int) -> list[dict]:
    """:func:`annotation.monitor.disagreements` with the texts: the question's short name, the
    instruction, query and passage (shortened) and their full texts (``full``), the votes in words,
    the disagreement, the decision (``"—"`` and why when undecided) and how it was decided.
    Every row; a screen shows one page of them (:func:`disagreement_page`)."""
    return _with_texts(db, study_id, monitor.disagreements(db, study_id))


def disagreement_questions(db: Database, study_id: int) -> list[str]:
    """The short names of the questions that have a disagreement (the page's filter), sorted."""
    return sorted({label(r["question"]) for r in monitor.disagreements(db, study_id)})


def page_slice(total: int, page: int, size: int = PAGE_ROWS) -> tuple[int, int, int, int]:
    """``(page, pages, start, stop)`` of page ``page`` (1-based, clamped to 1..pages) of ``total``
    rows shown ``size`` at a time: rows ``start`` to ``stop - 1``; an empty table has one page.

    >>> page_slice(250, 2, 100), page_slice(250, 9, 100), page_slice(0, 1, 100)
    ((2, 3, 100, 200), (3, 3, 200, 250), (1, 1, 0, 0))
    """
    pages = max(1, -(-total // size))
    page = min(max(1, int(page)), pages)
    start = (page - 1) * size
    return page, pages, start, min(start + size, total)


def disagreement_page(db: Database, study_id: int, *, questions=(), page: int = 1, size: int | None = None) -> dict:
    """One page of :func:`disagreement_rows`, optionally only the questions named (short names,
    :func:`disagreement_questions`): ``{"rows", "total", "page", "pages", "start"}`` where
    ``total`` counts the rows the filter keeps and ``start`` is the index of the first row
    shown; ``size`` rows a page (default :data:`PAGE_ROWS`). Only the rows of the page are given their texts: a study of 100,000 labels has tens
    of thousands of disagreements, and a lead reads them a page at a time."""
    rows = [r for r in monitor.disagreements(db, study_id) if not questions or label(r["question"]) in questions]
    page, pages, start, stop = page_slice(len(rows), page, size or PAGE_ROWS)
    return {"rows": _with_texts(db, study_id, rows[start:stop]), "total": len(rows), "page": page, "pages": pages,
            "start": start}


def _with_texts(db: Database, study_id: int, rows: list[dict]) -> list[dict]:
    pid = studies.get_study(db, study_id)["project_id"]
    # best passage: the answers are doc ids; their texts are shown with the item
    chosen = {r["item"]: list(r["labels"]) for r in rows if r["question"] == "best_passage"}
    docs = projects.documents_by_id(db, pid, {r["doc_id"] for r in rows if r.get("doc_id")}
                                    | {d for ids in chosen.values() for d in ids})
    voted = {i: [(d, _text(docs.get(d))) for d in ids] for i, ids in chosen.items()}
    instances: dict[str, dict] = {}
    out = []
    for r in rows:
        inst = instances.get(r["instance"])
        if inst is None:
            inst = instances[r["instance"]] = projects.get_instance(db, pid, r["instance"]) or {}
        doc = docs.get(r.get("doc_id") or "")
        passage = _text(doc)
        decision = r.get("decision")
        why = UNRESOLVED_WHY.get(decide(r["labels"]).reason or "", "undecided")
        out.append({  # what to decide first (in view at 1280 px), then the texts
            "item": r["item"],
            "Question": label(r["question"]),
            "Votes": votes(r["labels"]),
            "Disagreement": round(float(r["disagreement"]), 2),
            "Decision": decision if decision is not None else f"{UNDEFINED} {why}",
            "Instruction": shorten(inst.get("instruction")) or f"{UNDEFINED} no instruction",
            "Query": shorten(inst.get("query")) or f"{UNDEFINED} no query text",
            "Passage": shorten(passage) if doc else f"{UNDEFINED} none (not a passage question)",
            "How decided": PROVENANCE.get(r["provenance"], label(r["provenance"])),
            "full": {"instance": r["instance"], "instruction": inst.get("instruction") or "",
                     "query": inst.get("query") or "", "document": r.get("doc_id") or "", "passage": passage,
                     "voted": voted.get(r["item"], [])},
        })
    return out


def reason_rows(db: Database, study_id: int) -> list[dict]:
    """:func:`annotation.monitor.reasons` with the question's name and the instruction's text."""
    return _reasons_with_texts(db, study_id, monitor.reasons(db, study_id))


def reason_page(db: Database, study_id: int, *, contains: str = "", page: int = 1, size: int | None = None) -> dict:
    """One page of :func:`reason_rows`, optionally only the reasons containing ``contains``
    (any case): ``{"rows", "total", "page", "pages", "start"}`` as :func:`disagreement_page`."""
    needle = contains.lower()
    rows = [r for r in monitor.reasons(db, study_id) if not needle or needle in r["reason"].lower()]
    page, pages, start, stop = page_slice(len(rows), page, size or PAGE_ROWS)
    return {"rows": _reasons_with_texts(db, study_id, rows[start:stop]), "total": len(rows), "page": page,
            "pages": pages, "start": start}


def _reasons_with_texts(db: Database, study_id: int, rows: list[dict]) -> list[dict]:
    pid = studies.get_study(db, study_id)["project_id"]
    cache: dict[str, dict] = {}
    out = []
    for r in rows:
        inst = cache.get(r["instance"])
        if inst is None:
            inst = cache[r["instance"]] = projects.get_instance(db, pid, r["instance"]) or {}
        out.append({"Question": label(r["question"]), "Annotator": r["annotator"], "Answer": r["value"],
                    "Reason": r["reason"], "Instruction": shorten(inst.get("instruction"))})
    return out
