"""Closing and deleting a study.

* **Close**: the study hands out no new screen (an annotator may still finish the screen they
  hold); its labels, outcomes and exports stay as they are. It can be opened again.
* **Delete**: after a confirmation (the study's name typed again), every row of the study
  (annotators, items, assignments, labels with their history, adjudications, drafts) is first
  kept as one JSON backup in the database (``study_backups``, downloadable from the Monitor and
  with ``ifjudge study backup``), then deleted, in one transaction. Qrels already built from the
  study keep their provenance.

>>> from storage.db import connect
>>> from annotation.demo import load_demo
>>> db = connect(":memory:"); sid = load_demo(db)["study"]["study_id"]
>>> close(db, sid); is_closed(studies.get_study(db, sid))
True
>>> delete(db, sid, by="lead", confirm="not its name")
Traceback (most recent call last):
...
formats.errors.IFJudgeError: type the study's name “demo: InstructIR validation” to delete it; nothing was deleted
>>> import json
>>> b = delete(db, sid, by="lead", confirm="demo: InstructIR validation")
>>> [s["id"] for s in studies.list_studies(db)], len(json.loads(studies.study_backup(db, b))["labels"])
([], 0)
"""
from __future__ import annotations

from storage import studies
from storage.db import Database
from storage.errors import IFJudgeError


def is_closed(study: dict) -> bool:
    """Whether a study (:func:`storage.studies.get_study`) is closed."""
    return bool(study.get("closed_at"))


def close(db: Database, study_id: int) -> None:
    """Close the study: no new screen is handed out (see the module's doc)."""
    studies.close_study(db, study_id, closed=True)


def reopen(db: Database, study_id: int) -> None:
    """Open a closed study again: its remaining screens are handed out again."""
    studies.close_study(db, study_id, closed=False)


def delete(db: Database, study_id: int, *, by: str, confirm: str) -> int:
    """Delete the study after keeping a backup of all its rows; ``confirm`` must be the study's
    name (a deliberate second step). Returns the backup's id."""
    study = studies.get_study(db, study_id)
    if confirm.strip() != study["name"].strip():
        raise IFJudgeError(f"type the study's name “{study['name']}” to delete it; nothing was deleted")
    return studies.delete_study(db, study_id, deleted_by=by)
