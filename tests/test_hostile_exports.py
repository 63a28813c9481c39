"""Exports as hostile (issue 31): formula cells neutralised in every CSV (raw on request), names
escaped in report.md and in captions, ``export --out`` never mixed with other files."""
from __future__ import annotations

import csv
import io
import json
import time

import pytest

from annotation import workspace
from storage import studies, users
from tests.builders import app, user_row

FORMULAS = ["=HYPERLINK(\"http://evil/\",\"x\")", "+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd",
            "\t=1+1", "\r=1+1"]


def _label_with_reasons(db, study_id, reasons):
    """Every screen answered No with one of ``reasons`` (in turn) as the reason."""
    k = 0
    for name in ("ann1", "ann2", "ann3"):
        u = users.get_user(db, name)
        while (s := workspace.open_screen(db, study_id, u)) is not None:
            reason = reasons[k % len(reasons)]
            k += 1
            workspace.submit_screen(db, s, u, {
                "validity": {"value": "No", "reason": reason}, "naturalness": {"value": "No", "reason": reason},
                "best_passage": {"value": s.items[2].passages[0]["doc_id"]}}, started_at=time.time() - 1)


def test_ifjudge_labels_neutralises_formula_cells_and_raw_keeps_them(run_cli, demo, db_path):
    db, r = demo
    _label_with_reasons(db, r["study_id"], FORMULAS)
    code, out, _ = run_cli("labels", "--db", db_path, "--study", r["study_id"])
    assert code == 0
    stored = {row["reason"] for row in studies.current_labels(db, r["study_id"]) if row["reason"]}
    assert len(stored) >= 4 and all(s.startswith(("=", "+", "-", "@", "\t", "\r")) for s in stored)
    reasons = {row["reason"] for row in csv.DictReader(io.StringIO(out, newline="")) if row["reason"]}
    assert reasons == {"'" + s for s in stored}  # each shown as text by a spreadsheet, nothing run
    code, raw, _ = run_cli("labels", "--db", db_path, "--study", r["study_id"], "--raw")
    assert {row["reason"] for row in csv.DictReader(io.StringIO(raw, newline="")) if row["reason"]} == stored


def test_report_csv_neutralises_and_report_md_escapes_names(run_cli, demo, db_path, tmp_path):
    db, r = demo
    db.execute("UPDATE studies SET name = ? WHERE id = ?", ["=HYPERLINK(\"http://evil\") ![x](http://evil/i.png)",
                                                            r["study_id"]])
    _label_with_reasons(db, r["study_id"], ["fine"])
    code, _, err = run_cli("export", "--db", db_path, "--project", "demo", "--format", "report", "--study",
                           r["study_id"], "--out", tmp_path / "report")
    assert code == 0, err
    rows = list(csv.reader((tmp_path / "report" / "report.csv").open(newline="")))
    assert all(not cell.startswith(("=", "+", "@", "\t", "\r")) for row in rows for cell in row)
    md = (tmp_path / "report" / "report.md").read_text()
    assert "![x](http" not in md and "\\!\\[x\\](http://evil/i.png)" in md


def test_negative_numbers_stay_numbers():
    from formats.spreadsheet import neutralise

    assert [neutralise(v) for v in ("-0.2143", "+1e-05", "-3", "-", "-x")] == ["-0.2143", "+1e-05", "-3", "'-", "'-x"]


def _export(run_cli, db_path, out, *extra):
    return run_cli("export", "--db", db_path, "--project", "demo", "--format", "trec", "--out", out, *extra)


def test_export_out_refuses_a_file_and_a_non_empty_folder_unless_asked_then_replaces_it_whole(run_cli, demo,
                                                                                              db_path, tmp_path):
    target = tmp_path / "export"
    target.write_text("my notes")
    code, _, err = _export(run_cli, db_path, target)
    assert code == 2 and "is a file" in err and target.read_text() == "my notes"
    assert _export(run_cli, db_path, target, "--replace")[0] == 0
    assert (target / "manifest.json").is_file()
    (target / "stale.txt").write_text("from an older export")
    code, _, err = _export(run_cli, db_path, target)
    assert code == 2 and "is not empty" in err and (target / "stale.txt").exists()
    assert _export(run_cli, db_path, target, "--replace")[0] == 0
    files = {p.name for p in target.iterdir()}
    assert "stale.txt" not in files and files == {"manifest.json", *[f["path"] for f in
                                                                     json.loads((target / "manifest.json").read_text())["files"]]}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # nothing left beside it


def test_replace_never_deletes_a_folder_that_is_not_an_export(run_cli, demo, db_path, tmp_path):
    home = tmp_path / "documents"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work")
    code, _, err = _export(run_cli, db_path, home, "--replace")
    assert code == 2 and "not an IFJudge export" in err and (home / "thesis.tex").read_text() == "years of work"


def test_a_failed_export_leaves_the_folder_as_it_was(run_cli, demo, db_path, tmp_path):
    target = tmp_path / "export"
    assert _export(run_cli, db_path, target)[0] == 0
    before = sorted(p.name for p in target.iterdir())
    code, _, err = run_cli("export", "--db", db_path, "--project", "demo", "--format", "report", "--out", target,
                           "--replace")  # no study: refused
    assert code == 2 and sorted(p.name for p in target.iterdir()) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_markdown_in_a_project_name_is_shown_as_typed_on_set_up_a_study(env_db):
    db, _ = env_db
    evil = "**bold** ![img](http://127.0.0.1:9/x.png) [link](http://127.0.0.1:9/)"
    db.execute("UPDATE projects SET name = ? WHERE name = 'demo'", [evil])
    at = app("pages/study_setup.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    assert not at.exception
    caption = next(c.value for c in at.caption if "can be asked" in c.value)
    assert "![img](" not in caption and "\\!\\[img\\]\\(http" in caption and "\\*\\*bold\\*\\*" in caption
