"""A study can be closed (no new screens; the one held can be finished) and opened again, and
deleted after a confirmation, its rows kept in a backup first; the Projects page counts items
awaiting labels apart from ties."""
from __future__ import annotations

import json
import time

import pytest

from annotation import study_lifecycle, workspace
from annotation.monitoring.overview import study_progress
from storage import studies
from storage.errors import IFJudgeError
from tests.builders import label_demo, user_row

pytestmark = pytest.mark.both_engines


def test_a_closed_study_hands_out_no_new_screen(demo):
    db, r = demo
    sid = r["study_id"]
    ann1 = user_row(db, "ann1")
    held = workspace.open_screen(db, sid, ann1)  # claimed before the study closes
    study_lifecycle.close(db, sid)
    assert study_lifecycle.is_closed(studies.get_study(db, sid))
    again = workspace.open_screen(db, sid, ann1)
    assert again is not None and again.screen == held.screen  # the screen in front of them can be finished
    workspace.submit_screen(db, again, ann1, {"validity": {"value": "Yes"}, "naturalness": {"value": "Yes"},
                                              "best_passage": {"value": again.items[2].passages[0]["doc_id"]}},
                            started_at=time.time() - 1)
    assert workspace.open_screen(db, sid, ann1) is None  # nothing new
    assert workspace.open_screen(db, sid, user_row(db, "ann2")) is None
    study_lifecycle.reopen(db, sid)
    assert workspace.open_screen(db, sid, ann1) is not None


def test_delete_keeps_a_backup_first_and_needs_the_name(demo):
    db, r = demo
    sid = r["study_id"]
    label_demo(db, sid)
    n_labels = db.execute("SELECT COUNT(*) FROM labels").fetchone()[0]
    with pytest.raises(IFJudgeError, match="type the study's name"):
        study_lifecycle.delete(db, sid, by="lead", confirm="demo")
    assert db.execute("SELECT COUNT(*) FROM labels").fetchone()[0] == n_labels  # nothing deleted
    backup = study_lifecycle.delete(db, sid, by="lead", confirm="demo: InstructIR validation")
    assert studies.list_studies(db) == []
    for table in ("labels", "items", "assignments", "study_annotators"):
        assert db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table
    kept = json.loads(studies.study_backup(db, backup))
    assert len(kept["labels"]) == n_labels == 72 and len(kept["items"]) == 24
    assert {r["user_name"] for r in kept["labels"]} == {"ann1", "ann2", "ann3"}
    assert kept["studies"][0]["name"] == "demo: InstructIR validation"
    (b,) = studies.study_backups(db)
    assert (b["study_id"], b["deleted_by"]) == (sid, "lead")


def test_awaiting_labels_and_ties_are_counted_apart(demo):
    db, r = demo
    sid = r["study_id"]
    (row,) = study_progress(db)
    assert (row["awaiting_labels"], row["ties"]) == (24, 0)  # no label yet: awaiting, not "unresolved"
    for name, v in (("ann1", "Yes"), ("ann2", "No")):  # two of the three planned labels: a 1-1 split awaits the third
        u = user_row(db, name)
        s = workspace.open_screen(db, sid, u, studies.item_screens(db, sid)[0])
        workspace.submit_screen(db, s, u, {"validity": {"value": v, "reason": "r"}, "naturalness": {"value": "Yes"},
                                           "best_passage": {"value": s.items[2].passages[0]["doc_id"]}},
                                started_at=time.time() - 1)
    (row,) = study_progress(db)
    assert row["ties"] == 0 and row["awaiting_labels"] == row["unresolved"] >= 22
    label_demo(db, sid)  # every label given: each annotator picks the first passage shown to them, orders differ
    (row,) = study_progress(db)
    assert row["awaiting_labels"] == 0 and row["ties"] == row["unresolved"] > 0


def test_the_command_line_closes_deletes_and_lists_backups(demo, db_path, run_cli):
    db, r = demo
    sid = r["study_id"]
    assert run_cli("study", "close", "--db", db_path, sid)[0] == 0
    assert study_lifecycle.is_closed(studies.get_study(db, sid))
    assert run_cli("study", "reopen", "--db", db_path, sid)[0] == 0
    assert not study_lifecycle.is_closed(studies.get_study(db, sid))
    code, _, err = run_cli("study", "delete", "--db", db_path, sid, "--confirm", "wrong")
    assert code == 2 and "type the study's name" in err and studies.list_studies(db)
    code, out, _ = run_cli("study", "delete", "--db", db_path, sid, "--confirm", "demo: InstructIR validation")
    assert code == 0 and "kept in backup 1" in out and not studies.list_studies(db)
    code, out, _ = run_cli("study", "backup", "--db", db_path, "--id", 1)
    assert code == 0 and len(json.loads(out)["items"]) == 24
