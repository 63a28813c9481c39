"""Adjudication (docs/protocol.md, "Adjudication"): the queue of items a lead settles, the view of one item
(its text, its passages, every vote with its reason) and a validated write of the final value.

The Adjudicate page and ``ifjudge adjudicate`` are thin shells over these functions. An item's
outcome follows :func:`annotation.agreement.majority.decide` (a strict plurality wins; a tie is unresolved).

Queues (``show=``):

- ``"unresolved"`` (the default): items with at least two labels and no majority (a tie), not yet
  decided by a lead: the work left;
- ``"majority"``: items whose labels differ but a majority decided them (a lead may overrule);
- ``"decided"``: items a lead has decided;
- ``"all"``: every item whose labels differ, and every decided item.

>>> from storage.db import connect
>>> from annotation.demo import load_demo
>>> db = connect(":memory:"); _ = load_demo(db)
>>> queue(db, 1)
[]
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from annotation.agreement import majority as majority_rule
from annotation.gc_pause import paused_gc
from annotation.outcomes.table import OutcomeTable, outcome_table
from annotation.questions.study import study_questions
from annotation.outcomes.resolution import SHOW  # noqa: F401  (the queues, named where --help reads them)
from annotation.workspace import narrative_with_changes
from storage import projects, studies
from storage.errors import InvalidAnswer, NotFound
from storage.db import Database

QUEUE_ROWS = 100  # items of a queue the Adjudicate page lists at a time (around the open item)


def _queue_mask(t: OutcomeTable, show: str) -> np.ndarray:
    """The rows of ``t`` in queue ``show``: ties of two labels or more not decided by a lead
    (``unresolved``), majorities over differing labels, lead decisions, or all of these."""
    decided = t.provenance == "adjudicated"
    if show == "unresolved":
        return (t.provenance == "unresolved") & (t.n_labels >= 2)
    split = t.distinct > 1
    if show == "majority":
        return (t.provenance == "majority") & split
    if show == "decided":
        return decided
    return split | decided


def queue(db: Database, study_id: int, *, show: str = "unresolved") -> list[dict]:
    """The items to settle, most disagreement first, as rows: item, instance, question (id),
    votes (value -> count), provenance, decision (the current value, None while unresolved)."""
    if show not in SHOW:
        raise InvalidAnswer(f"show must be one of {', '.join(SHOW)}, got {show!r}")
    studies.get_study(db, study_id)
    with paused_gc():  # a row per listed item, no cycles
        t = outcome_table(db, study_id)
        rows = np.flatnonzero(_queue_mask(t, show))
        disagreement = t.disagreement[rows].tolist()
        out = [
            {"item": i, "instance": inst, "question": q, "doc_id": d, "votes": votes, "provenance": p,
             "decision": v, "disagreement": round(x, 6)}
            for i, inst, q, d, votes, p, v, x in zip(
                t.item[rows].tolist(), t.instance[rows].tolist(), t.question[rows].tolist(), t.doc_id[rows].tolist(),
                t.label_counts(rows), t.provenance[rows].tolist(), t.value[rows].tolist(), disagreement)
        ]
    # most disagreement first (rounded to 6 decimals), then by item id
    return sorted(out, key=lambda r: (-r["disagreement"], r["item"]))


def queue_counts(db: Database, study_id: int) -> dict[str, int]:
    """How many items each queue of :data:`SHOW` holds (the lengths of :func:`queue`)."""
    studies.get_study(db, study_id)
    with paused_gc():
        t = outcome_table(db, study_id)
    return {show: int(_queue_mask(t, show).sum()) for show in SHOW}


@dataclass
class ItemView:
    """Everything a lead reads to settle one item."""

    study_id: int
    item_id: int
    instance_id: str
    question_id: str
    prompt: str
    query: str
    instruction: str  # the instruction, or the narrative version judged (re-judging)
    instruction_label: str
    options: list[tuple[str, str]]  # (stored value, label shown)
    passages: list[dict] = field(default_factory=list)  # best_passage: doc_id, title, text, target
    document: dict | None = None  # relevance / passage_match: the one document judged
    votes: list[dict] = field(default_factory=list)  # annotator, value, answer (label), reason
    counts: dict[str, int] = field(default_factory=dict)
    provenance: str = "unresolved"
    majority: str | None = None  # the labels' outcome before any lead decision
    decision: dict | None = None  # the newest adjudication: value, lead, note, created_at

    def option_label(self, value: str | None) -> str:
        return dict(self.options).get(value, value or "")


def item_view(db: Database, study_id: int, item_id: int) -> ItemView:
    """The view of item ``item_id`` of study ``study_id`` (NotFound when it is not in the study)."""
    study = studies.get_study(db, study_id)
    item = studies.study_item(db, study_id, item_id)
    if item is None:
        raise NotFound(f"study {study_id} has no item {item_id}")
    q = study_questions(study)[item["question"]]
    pid = study["project_id"]
    inst = projects.get_instance(db, pid, item["instance_id"]) or {"query": "", "instruction": ""}
    if item["narrative_version_id"]:
        text, label = narrative_with_changes(db, item["narrative_version_id"])[0], "Narrative (the version judged)"
    else:
        text, label = inst["instruction"], "Instruction"
    candidates = item["payload"].get("candidates", [])
    docs = projects.documents_by_id(db, pid, set(candidates) | ({item["doc_id"]} if item["doc_id"] else set()))
    gold = item["payload"].get("gold")
    passages = [{"doc_id": d, "title": docs.get(d, {}).get("title", ""), "text": docs.get(d, {}).get("text", ""),
                 "target": d == gold} for d in candidates]
    if q.answers_are_passages:
        options = [(p["doc_id"], f"Passage {n}: {p['doc_id']}" + (" (dataset target)" if p["target"] else ""))
                   for n, p in enumerate(passages, start=1)]
    else:
        options = [(v, q.label(v)) for v in q.categories]
    labels = dict(options)
    votes = [{"annotator": a, "value": v, "answer": labels.get(v, v), "reason": why or ""}
             for a, v, why in studies.item_current_labels(db, item_id)]
    decision = studies.adjudications(db, study_id).get(item_id)
    counts: dict[str, int] = {}
    for v in votes:
        counts[v["value"]] = counts.get(v["value"], 0) + 1
    # the item's outcome, as item_outcomes decides it
    outcome = majority_rule.decide(counts, adjudication=decision["value"] if decision else None, overlap=item["cap"])
    majority = majority_rule.decide(counts, overlap=item["cap"]).value  # the labels' own outcome, before any decision
    document = ({"doc_id": item["doc_id"], **docs[item["doc_id"]]}
                if item["doc_id"] and item["doc_id"] in docs else None)
    return ItemView(
        study_id, item_id, item["instance_id"], q.id, q.prompt, inst["query"], text, label, options,
        passages if q.answers_are_passages else [], document, votes, counts, outcome.provenance, majority, decision,
    )


def record(db: Database, study_id: int, item_id: int, value: str, *, lead: str, note: str = "") -> dict:
    """Store a lead's final value for an item and return the stored decision.

    Only a value of the item's question is accepted (a passage of the item's candidates for
    ``best_passage``); the note is kept as written (trimmed). Refused with ``InvalidAnswer``
    naming what was received and what is accepted; nothing is written then.
    """
    view = item_view(db, study_id, item_id)
    accepted = [v for v, _ in view.options]
    if value not in accepted:
        raise InvalidAnswer(
            f"item {item_id} ({view.prompt}): {value!r} is not an answer of this question; "
            f"accepted: {', '.join(accepted)}"
        )
    if not lead.strip():
        raise InvalidAnswer("a decision needs the name of the lead who made it")
    studies.add_adjudication(db, item_id, value, lead.strip(), (note or "").strip())
    return studies.adjudications(db, study_id)[item_id]


def next_in_queue(db: Database, study_id: int, after: int | None, *, show: str = "unresolved") -> int | None:
    """The item to open after ``after``: the next one in the queue's order (wrapping around), the
    first one when ``after`` has left the queue (decided), None when the queue is empty."""
    items = [r["item"] for r in queue(db, study_id, show=show)]
    if not items:
        return None
    if after in items:
        return items[(items.index(after) + 1) % len(items)]
    return items[0]
