"""A connection that shares its reads (storage.studies.share_reads; the Monitor page and
study_monitor use it) answers items_of_study and current_labels with the same rows as the
database, for every question, reads the study once, and sees a label written through it."""
import time

import pytest

from annotation import workspace
from annotation.monitoring import monitor
from storage import studies
from storage.db import connect
from tests.builders import label_demo, user_row

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL


def test_shared_reads_answer_as_the_database_and_a_write_ends_them(demo, db_path):
    db, r = demo
    sid = r["study_id"]
    u = user_row(db, "ann1")
    s = workspace.open_screen(db, sid, u)
    workspace.submit_screen(db, s, u, {"validity": {"value": "No", "reason": "vague"}, "naturalness": {"value": "Yes"},
                                       "best_passage": {"value": s.items[2].passages[0]["doc_id"]}},
                            started_at=time.time() - 1)
    plain = connect(db_path)
    with studies.shared_reads(db):
        for q in (None, "validity", "naturalness", "best_passage"):
            assert studies.current_labels(db, sid, q) == studies.current_labels(plain, sid, q)
            assert studies.items_of_study(db, sid, q) == studies.items_of_study(plain, sid, q)
        assert len(studies.current_labels(db, sid)) == 3  # one screen of ann1: three questions
        first = studies.items_of_study(db, sid)
        first[0]["payload"]["candidates"] = ["changed by a caller"]
        assert studies.items_of_study(db, sid) == studies.items_of_study(plain, sid)  # copies were handed out
        u2 = user_row(db, "ann2")  # a write through the sharing connection: the next read sees it
        s2 = workspace.open_screen(db, sid, u2)
        workspace.submit_screen(db, s2, u2, {"validity": {"value": "Yes"}, "naturalness": {"value": "Yes"},
                                             "best_passage": {"value": s2.items[2].passages[0]["doc_id"]}},
                                started_at=time.time() - 1)
        assert len(studies.current_labels(db, sid)) == 6
    assert not hasattr(db, "_ifjudge_shared_reads")  # leaving the block forgets the rows


def test_study_monitor_is_the_same_with_and_without_shared_reads(demo):
    db, r = demo
    label_demo(db, r["study_id"])
    assert monitor.study_monitor(db, r["study_id"], n_boot=50) == monitor._study_monitor(db, r["study_id"], n_boot=50, seed=None)


def test_label_and_item_columns_are_the_rows_as_columns_shared_or_not(demo, db_path):
    # the column reads behind the monitor and the adjudication queue at benchmark size
    db, r = demo
    sid = r["study_id"]
    label_demo(db, sid)  # 8 screens x 3 annotators x 3 questions = 72 labels, every assignment answered
    plain = connect(db_path)
    for conn in (plain, studies.share_reads(connect(db_path))):
        for q in (None, "validity", "best_passage"):
            labels = studies.current_labels(plain, sid, q)
            cols = studies.current_label_columns(conn, sid, q)
            assert list(cols) == list(studies.LABEL_KEYS)
            for key in ("item", "annotator", "value", "reason", "duration_ms"):
                assert cols[key] == [x[key] for x in labels]
            items = studies.items_of_study(plain, sid, q)
            icols = studies.item_columns(conn, sid, q)
            assert icols["id"] == [i["id"] for i in items] and icols["cap"] == [i["cap"] for i in items]
            assert icols["gold"] == [i["payload"].get("gold") for i in items]
        validity = studies.items_of_study(conn, sid, "validity")  # 8 items with the same payload text, {}
        validity[0]["payload"]["note"] = "changed by a caller"
        assert [i["payload"] for i in validity[1:]] == [{}] * 7  # each item has its own payload dict
        payloads = studies.item_payloads(conn, sid)  # what the estimates read of each item's payload
        assert payloads == {i["id"]: i["payload"] for i in studies.items_of_study(plain, sid)}
        assert len(payloads) == 24 and sum("gold" in p for p in payloads.values()) == 8
        studies.item_columns(conn, sid)["id"].clear()  # a caller changing its lists leaves the shared ones alone
        assert studies.item_columns(conn, sid)["id"] == [i["id"] for i in studies.items_of_study(plain, sid)]
        assert len(studies.current_label_columns(conn, sid)["item"]) == 72
        assert sum(g is not None for g in studies.item_columns(conn, sid)["gold"]) == 8  # one target per best passage
        assert studies.labelled_assignments(conn, sid) == (72, 72)
        assert studies.study_item(conn, sid, items[0]["id"]) == items[0]
        assert studies.study_item(conn, sid, 10_000) is None
    with pytest.raises(KeyError, match="'nope' is not a label column"):
        studies.current_label_columns(plain, sid)["nope"]


def test_labelled_assignments_counts_the_answered_assignments(demo):
    db, r = demo
    sid = r["study_id"]
    assert studies.labelled_assignments(db, sid) == (0, 72)  # 24 items x 3 annotators, none answered
    u = user_row(db, "ann2")
    s = workspace.open_screen(db, sid, u)
    workspace.submit_screen(db, s, u, {"validity": {"value": "Yes"}, "naturalness": {"value": "Yes"},
                                       "best_passage": {"value": s.items[2].passages[0]["doc_id"]}},
                            started_at=time.time() - 1)
    assert studies.labelled_assignments(db, sid) == (3, 72)  # one screen: its three items
