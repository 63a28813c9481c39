"""The lead's landing view: every study with its project and its progress.

>>> from storage.db import connect
>>> from annotation.demo import load_demo
>>> db = connect(":memory:"); _ = load_demo(db)
>>> [(r["study"], r["answers_given"], r["answers_needed"], r["unresolved"]) for r in study_progress(db)]
[('demo: InstructIR validation', 0, 72, 24)]
"""
from __future__ import annotations

from annotation.outcome_table import outcome_table
from storage import projects, studies
from storage.db import Database


def study_progress(db: Database) -> list[dict]:
    """One row per study: id, name, project, questions (ids), annotators, answers given and
    needed (one per item and annotator assigned), their share (None with nothing assigned), and
    how many items are still unresolved (no label yet, a tie, or too few labels)."""
    names = {p["id"]: p["name"] for p in projects.list_projects(db)}
    rows = []
    for s in studies.list_studies(db):
        given, needed = studies.answer_counts(db, s["id"])
        rows.append({
            "id": s["id"], "study": s["name"], "project": names.get(s["project_id"], "?"),
            "questions": list(s["questions"]), "annotators": len(s["annotators"]),
            "answers_given": int(given), "answers_needed": int(needed),
            "share_done": given / needed if needed else None,
            "unresolved": int((outcome_table(db, s["id"]).provenance == "unresolved").sum()),
        })
    return rows
