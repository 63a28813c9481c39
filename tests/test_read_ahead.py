"""The app server reads the newest open studies' rows before it listens (ui/preload.py
``read_ahead_studies``): the Monitor's first run then reads no label in full, and shows exactly what
a run from nothing shows, before and after new labels; closed studies are not read."""
import logging

import pytest

from annotation import study_lifecycle
from annotation.monitoring import monitor
from annotation.monitoring.read_ahead import read_ahead
from storage import study_reads
from storage.db import connect
from tests.builders import label_demo, relabel
from ui.preload import read_ahead_studies

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL


@pytest.fixture
def reads(monkeypatch):
    """The SQL statements run through any connection, and how many times labels were read in full."""
    seen = {"sql": [], "full": 0}
    real_all = study_reads.LabelState._read_all

    def read_all(self, *a):
        seen["full"] += 1
        return real_all(self, *a)

    monkeypatch.setattr(study_reads.LabelState, "_read_all", read_all)
    return seen


def test_the_first_monitor_run_after_the_read_ahead_reads_no_label_in_full(demo, db_path, reads):
    db, r = demo
    sid = r["study_id"]
    label_demo(db, sid)
    assert read_ahead_studies(db_path) == [sid]
    assert reads["full"] == 1  # the server read the labels once, before any lead asked

    def fresh():  # no study read kept (the replicate weights may be: they are the same drawn anew)
        return monitor._study_monitor(connect(db_path), sid, n_boot=50, seed=None)

    first = monitor.study_monitor(connect(db_path), sid, n_boot=50)
    assert reads["full"] == 1  # the lead's first run used the columns read ahead
    assert first == fresh()
    relabel(db, sid, "ann3", "validity", "Yes")  # an annotator changes an answer after the start
    changed = monitor.study_monitor(connect(db_path), sid, n_boot=50)
    assert reads["full"] == 1  # the new label was read alone
    assert changed == fresh() and changed != first


def test_only_the_newest_open_studies_are_read(demo, db_path, reads):
    from annotation.studies import StudySettings, create_study
    from storage.projects import get_project

    db, r = demo
    project = get_project(db, "demo")
    second, third = (create_study(db, project=project, questions=["validity"], annotators=["ann1", "ann2"], name=name,
                                  settings=StudySettings(group_fraction=1.0, overlap=2, seed=seed))["study_id"]
                     for name, seed in (("second", 3), ("third", 4)))
    assert read_ahead(connect(db_path)) == [third, second, r["study_id"]]
    assert read_ahead(connect(db_path), limit=2) == [third, second]
    study_lifecycle.close(db, third)
    assert read_ahead(connect(db_path)) == [second, r["study_id"]]  # a closed study is not read


def test_the_read_ahead_stays_within_its_label_budget(demo, db_path, reads):
    from tests.builders import second_study

    db, r = demo
    first = r["study_id"]
    label_demo(db, first)  # 72 labels
    second = second_study(db)  # newer, no label yet
    assert read_ahead(connect(db_path), budget=71) == [second]  # the first study would pass the budget
    assert reads["full"] == 1  # the second study's (empty) labels: the first was not read
    assert read_ahead(connect(db_path), budget=72) == [second, first]


def test_a_database_that_cannot_be_read_leaves_the_start_to_the_pages(tmp_path, caplog):
    bad = tmp_path / "not-a-database.db"
    bad.write_bytes(b"this is not SQLite" * 100)
    with caplog.at_level(logging.ERROR, logger="ifjudge"):
        assert read_ahead_studies(bad) == []
    assert "reading the open studies ahead failed" in caplog.text


def test_the_app_server_reads_ahead_before_it_listens(labelled, db_path):
    """What ``ifjudge serve`` runs (ui/server.py), in a new process: the study's labels are kept
    in the process by the time the module has built the app."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    _, sid, _ = labelled
    root = Path(__file__).resolve().parents[1]
    probe = ("import json, ui.server; from storage import study_reads; "
             "print(json.dumps([[k[1], len(v.labels._columns['item'])] for k, v in study_reads._kept.items()]))")
    env = dict(os.environ, IFJUDGE_DB=str(db_path), PYTHONPATH=str(root), HF_HUB_OFFLINE="1")
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "read 1 open studies ahead" in out.stderr
    n_labels = connect(db_path).execute("SELECT COUNT(DISTINCT item_id || ':' || user_id) FROM labels").fetchone()[0]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [[sid, n_labels]]
