"""The lead's landing view: every study with its project and its progress.

>>> from storage.db import connect
>>> from annotation.demo import load_demo
>>> db = connect(":memory:"); _ = load_demo(db)
>>> [(r["study"], r["answers_given"], r["answers_needed"], r["awaiting_labels"], r["ties"]) for r in study_progress(db)]
[('demo: InstructIR validation', 0, 72, 24, 0)]
"""
from __future__ import annotations

import numpy as np

from annotation.outcomes.table import outcome_table
from storage import projects, studies
from storage.db import Database


def study_progress(db: Database) -> list[dict]:
    """One row per study: id, name, project, questions (ids), annotators, answers given and
    needed (one per item and annotator assigned), their share (None with nothing assigned), and
    how many items are still unresolved (``unresolved``), told apart: ``awaiting_labels`` (not
    all the labels planned for the item are given yet, so more may decide it) and ``ties`` (every
    planned label given, no strict majority: for a lead to decide)."""
    names = {p["id"]: p["name"] for p in projects.list_projects(db)}
    rows = []
    for s in studies.list_studies(db):
        given, needed = studies.answer_counts(db, s["id"])
        rows.append({
            "id": s["id"], "study": s["name"], "project": names.get(s["project_id"], "?"),
            "questions": list(s["questions"]), "annotators": len(s["annotators"]),
            "answers_given": int(given), "answers_needed": int(needed),
            "share_done": given / needed if needed else None,
            **unresolved_counts(db, s["id"]),
        })
    return rows


def unresolved_counts(db: Database, study_id: int) -> dict[str, int]:
    """``{"unresolved", "awaiting_labels", "ties"}`` of a study's items (see :func:`study_progress`)."""
    t = outcome_table(db, study_id)
    cap = np.asarray(studies.item_columns(db, study_id)["cap"], dtype=np.int64)
    unresolved = t.provenance == "unresolved"
    awaiting = unresolved & (t.n_labels < np.maximum(cap, 1))
    return {"unresolved": int(unresolved.sum()), "awaiting_labels": int(awaiting.sum()),
            "ties": int((unresolved & ~awaiting).sum())}
