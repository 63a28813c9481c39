"""A study's reads kept across runs (storage.study_reads; the Monitor page and study_monitor): after
a changed answer, a lead's decision, a new annotator's labels or a hand edit, the kept monitor is
exactly the one computed from nothing; new labels are read alone, and a gap in them makes the
labels be read in full again."""
import pytest

from annotation.monitoring import monitor
from annotation.outcomes import adjudication
from storage import studies, study_reads
from storage.db import connect, write
from tests.builders import MONITOR_TABS, label_demo, open_tab, relabel, user_row

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL


@pytest.fixture
def full_reads(monkeypatch):
    """How many times a kept study's labels were read in full."""
    calls = []
    real = study_reads.LabelState._read_all
    monkeypatch.setattr(study_reads.LabelState, "_read_all", lambda self, *a: (calls.append(a), real(self, *a)))
    return calls


def test_the_kept_monitor_is_the_fresh_one_after_every_change(demo, db_path, full_reads):
    db, r = demo
    sid = r["study_id"]
    label_demo(db, sid)

    def kept():
        return monitor.study_monitor(connect(db_path), sid, n_boot=50)

    def fresh():  # no study read kept (the replicate weights may be: they are the same drawn anew)
        return monitor._study_monitor(connect(db_path), sid, n_boot=50, seed=None)

    first = kept()
    assert first == fresh() and kept() == first
    assert len(full_reads) == 1  # the second call read no label
    relabel(db, sid, "ann2", "validity", "No")
    relabel(db, sid, "ann3", "validity", "Yes")
    changed = kept()
    assert changed == fresh() and changed != first
    item = studies.items_of_study(db, sid, "naturalness")[1]["id"]
    adjudication.record(db, sid, item, "No", lead="lead", note="")
    assert kept() == fresh()
    assert len(full_reads) == 1  # the changed answers were read alone
    with write(db):  # a hand edit: a label removed
        db.execute("DELETE FROM labels WHERE id = (SELECT MIN(id) FROM labels)")
    assert kept() == fresh()
    assert len(full_reads) == 2  # the totals no longer matched: every label read again


def test_kept_label_columns_are_the_current_labels(labelled, db_path):
    db, sid, _ = labelled
    relabel(db, sid, "ann1", "best_passage", studies.items_of_study(db, sid, "best_passage")[0]["payload"]
             ["candidates"][1])
    for _ in range(2):  # the first run reads all labels, the second the new ones (none)
        conn = studies.share_reads(connect(db_path), across_runs=True)
        kept = studies.label_vote_columns(conn, sid)
        plain = studies.label_vote_columns(connect(db_path), sid)
        assert sorted(zip(*(kept[k] for k in plain))) == sorted(zip(*plain.values()))
        relabel(db, sid, "ann2", "validity", "No")


def test_an_in_memory_database_is_never_kept():
    from annotation.demo import load_demo

    outs = []
    for answered in (False, True):
        db = connect(":memory:")
        sid = load_demo(db)["study"]["study_id"]
        if answered:
            label_demo(db, sid)
        outs.append((monitor.study_monitor(db, sid, n_boot=0), monitor._study_monitor(db, sid, n_boot=0, seed=None)))
    assert outs[0][0] == outs[0][1] and outs[1][0] == outs[1][1] and outs[0][0] != outs[1][0]


def test_the_monitor_page_rerun_after_new_labels_shows_what_a_new_server_shows(env_db):
    from tests.builders import app

    db, r = env_db
    sid = r["study_id"]
    label_demo(db, sid)

    def tables(at):
        out = []
        for tab in MONITOR_TABS:  # every tab's tables
            open_tab(at, tab)
            assert not at.exception
            out.append([d.value.to_dict("list") for d in at.dataframe])
        return out

    kept = app("pages/monitor.py")
    kept.session_state["user"] = user_row(db, "lead")
    before = tables(kept)
    relabel(db, sid, "ann3", "validity", "Yes")
    after = tables(kept)  # a Refresh: the kept values of the study, brought up to date
    study_reads.forget()  # a new server: nothing kept
    fresh = app("pages/monitor.py")
    fresh.session_state["user"] = user_row(db, "lead")
    assert after == tables(fresh) and after != before


def test_the_kept_monitor_follows_every_write_of_the_annotate_and_adjudicate_screens(demo, db_path):
    """Labels stored through the app's own writes (a first answer, an edited answer, a lead's
    decision) and the study's deletion: after each, the kept monitor
    is the one computed from nothing."""
    import time

    from annotation import study_lifecycle, workspace
    from storage.errors import NotFound

    db, r = demo
    sid = r["study_id"]

    def same():
        kept = monitor.study_monitor(connect(db_path), sid, n_boot=20)
        assert kept == monitor._study_monitor(connect(db_path), sid, n_boot=20, seed=None)
        return kept

    def answer(name, validity, screen=None, replace=False):
        u = user_row(db, name)
        s = workspace.open_screen(db, sid, u, screen)
        workspace.submit_screen(db, s, u, {"validity": {"value": validity, "reason": "" if validity == "Yes" else "vague"},
                                           "naturalness": {"value": "Yes"},
                                           "best_passage": {"value": s.items[2].passages[0]["doc_id"]}},
                                started_at=time.time() - 1, replace=replace)
        return s.screen

    seen = [same()]
    first = [answer(name, "Yes") for name in ("ann1", "ann2", "ann3")]  # the annotate screen's submit
    seen.append(same())
    answer("ann3", "No", first[2], replace=True)  # an answer changed on its screen ("replace my answer")
    seen.append(same())
    item = studies.screen_items(db, sid, first[0])[0]["id"]
    adjudication.record(db, sid, item, "No", lead="lead", note="")  # a lead's decision
    seen.append(same())
    u = user_row(db, "lead")
    study_lifecycle.delete(db, sid, by=u["name"], confirm=studies.get_study(db, sid)["name"])  # the study deleted
    with pytest.raises(NotFound):  # nothing kept answers for it
        monitor.study_monitor(connect(db_path), sid, n_boot=20)
    assert all(a != b for a, b in zip(seen, seen[1:]))  # each write changed what the monitor shows


def test_a_study_created_in_a_deleted_ones_ids_is_not_served_its_kept_reads(demo, db_path):
    """SQLite gives a deleted study's ids (study, items, labels) to the next one; with the same
    number of items and labels every row count and highest id is as before. The deletion's backup
    makes the kept reads go: the new study's Monitor is its own."""
    from annotation import study_lifecycle
    from annotation.studies import StudySettings, create_study
    from storage.projects import get_project

    db, _ = demo
    project = get_project(db, "demo")

    def new_study(seed: int) -> int:
        sid = create_study(db, project=project, questions=["validity", "naturalness", "best_passage"],
                           annotators=["ann1", "ann2", "ann3"], name="again",
                           settings=StudySettings(group_fraction=0.5, overlap=3, seed=seed))["study_id"]
        label_demo(db, sid)
        return sid

    def kept(sid):
        return monitor.study_monitor(connect(db_path), sid, n_boot=50)

    first = new_study(3)
    before = kept(first)
    assert before == monitor._study_monitor(connect(db_path), first, n_boot=50, seed=None)
    study_lifecycle.delete(db, first, by="lead", confirm="again")
    second = new_study(11)
    instances = [i["instance_id"] for i in studies.items_of_study(db, second)]
    assert kept(second) == monitor._study_monitor(connect(db_path), second, n_boot=50, seed=None)
    assert [i["instance_id"] for i in studies.items_of_study(studies.share_reads(connect(db_path), across_runs=True),
                                                              second)] == instances
