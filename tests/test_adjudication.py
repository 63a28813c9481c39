"""Adjudication: the queue holds unresolved items only (majority items behind a filter), the view
shows every vote with its reason, and only values of the item's question are recorded."""

import pytest

from annotation.outcomes import adjudication
from storage import studies
from storage.db import write
from storage.errors import InvalidAnswer, NotFound
from tests.builders import label_all, user_row as user  # label_all: also tests/e2e/test_adjudicate_browser.py

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL


@pytest.fixture
def labelled(demo):
    db, r = demo
    sid = r["study_id"]
    # validity: 2 Yes / 1 No -> majority; naturalness: made a tie by dropping ann3's label below
    label_all(db, sid, {"ann1": "Yes", "ann2": "Yes", "ann3": "No"}, {"ann1": "Yes", "ann2": "No", "ann3": "Yes"})
    ann3 = user(db, "ann3")["id"]
    with write(db):  # ann3's naturalness labels removed: each naturalness item is a 1-1 tie
        db.execute("DELETE FROM labels WHERE user_id = ? AND item_id IN (SELECT id FROM items WHERE study_id = ?"
                   " AND question = 'naturalness')", [ann3, sid])
    return db, sid


def test_queue_holds_ties_only_and_majority_items_behind_a_filter(labelled):
    db, sid = labelled
    q = adjudication.queue(db, sid)
    assert q and {r["question"] for r in q} == {"naturalness"}
    assert all(r["votes"] == {"Yes": 1, "No": 1} and r["decision"] is None for r in q)
    majority = adjudication.queue(db, sid, show="majority")
    assert majority and {r["question"] for r in majority} == {"validity"}
    assert all(r["decision"] == "Yes" and r["provenance"] == "majority" for r in majority)
    assert adjudication.queue(db, sid, show="decided") == []
    with pytest.raises(InvalidAnswer, match="show must be one of unresolved, majority, decided, all, got 'some'"):
        adjudication.queue(db, sid, show="some")


def test_view_shows_votes_with_reasons_and_passages(labelled):
    db, sid = labelled
    first = adjudication.queue(db, sid)[0]["item"]
    v = adjudication.item_view(db, sid, first)
    assert v.prompt == "Is the instruction natural for the given query?" and v.instruction_label == "Instruction"
    assert v.options == [("Yes", "Yes"), ("No", "No")]
    assert sorted((x["annotator"], x["answer"], x["reason"]) for x in v.votes) == [("ann1", "Yes", ""), ("ann2", "No", "odd")]
    assert v.majority is None and v.decision is None
    bp = next(i["id"] for i in studies.items_of_study(db, sid, "best_passage"))
    vb = adjudication.item_view(db, sid, bp)
    assert len(vb.passages) == 3 and sum(p["target"] for p in vb.passages) == 1
    assert [v for v, _ in vb.options] == [p["doc_id"] for p in vb.passages]
    assert any(lab.endswith("(dataset target)") for _, lab in vb.options)
    with pytest.raises(NotFound, match="study 1 has no item 9999"):
        adjudication.item_view(db, sid, 9999)


def test_record_accepts_only_the_questions_values_keeps_the_note_and_moves_on(labelled):
    db, sid = labelled
    items = [r["item"] for r in adjudication.queue(db, sid)]
    with pytest.raises(InvalidAnswer, match=r"'Maybe' is not an answer of this question; accepted: Yes, No"):
        adjudication.record(db, sid, items[0], "Maybe", lead="lead")
    assert studies.adjudications(db, sid) == {}
    d = adjudication.record(db, sid, items[0], "No", lead="lead", note="  ann2 is right  ")
    assert (d["value"], d["lead"], d["note"]) == ("No", "lead", "ann2 is right")
    assert adjudication.item_view(db, sid, items[0]).decision["value"] == "No"
    assert items[0] not in [r["item"] for r in adjudication.queue(db, sid)]  # left the queue
    assert [r["item"] for r in adjudication.queue(db, sid, show="decided")] == [items[0]]
    assert adjudication.next_in_queue(db, sid, items[0]) == items[1]
    bp = next(i for i in studies.items_of_study(db, sid, "best_passage"))
    with pytest.raises(InvalidAnswer, match="accepted: "):
        adjudication.record(db, sid, bp["id"], "not-a-candidate", lead="lead")
    adjudication.record(db, sid, bp["id"], bp["payload"]["candidates"][0], lead="lead")


def test_cli_lists_and_records(labelled, db_path, run_cli):
    db, sid = labelled
    item = adjudication.queue(db, sid)[0]["item"]
    code, out, err = run_cli("adjudicate", "--db", db_path, "--study", sid, "--list")
    assert code == 0 and err == ""
    assert out.splitlines()[0].split("\t") == ["item", "instance", "question", "votes", "decision"]
    first = out.splitlines()[1].split("\t")
    assert first[0] == str(item) and first[2] == "Natural instruction" and first[3] == "No 1 · Yes 1" and first[4] == "—"
    code, out, err = run_cli("adjudicate", "--db", db_path, "--study", sid, "--item", item, "--value", "Maybe")
    assert code == 2 and "accepted: Yes, No" in err
    code, out, err = run_cli("adjudicate", "--db", db_path, "--study", sid, "--item", item, "--value", "Yes",
                             "--note", "ann1 reads it right", "--lead", "lead")
    assert code == 0 and out.strip() == f"item {item}: recorded Yes (lead lead; note: ann1 reads it right)"
    assert studies.adjudications(db, sid)[item]["note"] == "ann1 reads it right"
    code, out, err = run_cli("adjudicate", "--db", db_path, "--study", sid, "--item", item)
    assert code == 2 and "--value" in err


@pytest.mark.parametrize("name", ["annotation.outcomes.adjudication", "annotation.monitoring.overview", "accounts.session_tokens",
                                  "annotation.workspace", "annotation.glossary"])
def test_docstring_examples_run(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


def test_queues_counts_and_order_by_hand(labelled):
    """Every queue on votes counted by hand: a superseded label does not count, a single label of an
    item planned for three annotators awaits more (not a tie), one planned for one decides, and a
    lead's decision moves an item from its queue to "decided"."""
    db, sid = labelled
    nat = [i["id"] for i in studies.items_of_study(db, sid, "naturalness")]
    val = [i["id"] for i in studies.items_of_study(db, sid, "validity")]
    ann1, ann2 = user(db, "ann1")["id"], user(db, "ann2")["id"]
    adjudication.record(db, sid, nat[0], "No", lead="lead")
    adjudication.record(db, sid, val[0], "No", lead="lead")
    with write(db):
        db.execute("DELETE FROM labels WHERE user_id = ? AND item_id IN (?, ?)", [ann2, nat[1], nat[2]])
        db.execute("UPDATE items SET cap = 1 WHERE id = ?", [nat[2]])  # one planned annotator: ann1's Yes decides
        old = db.execute("SELECT MAX(id) FROM labels WHERE item_id = ? AND user_id = ?", [val[1], ann1]).fetchone()[0]
        db.execute("INSERT INTO labels (item_id, user_id, value, reason, submitted_at, supersedes)"
                   " VALUES (?, ?, 'No', 'changed my mind', 1.0, ?)", [val[1], ann1, old])  # Yes -> No: now 1 Yes, 2 No
    ties = [r["item"] for r in adjudication.queue(db, sid)]
    assert ties == sorted(nat[3:])  # all 1-1 ties (disagreement 0.5), by item id
    assert {r["item"]: r["provenance"] for r in adjudication.queue(db, sid, show="decided")} == {
        nat[0]: "adjudicated", val[0]: "adjudicated"}
    majority = {r["item"]: r for r in adjudication.queue(db, sid, show="majority")}
    assert sorted(majority) == sorted(val[1:])
    assert majority[val[1]]["votes"] == {"No": 2, "Yes": 1} and majority[val[1]]["decision"] == "No"
    assert majority[val[2]]["votes"] == {"Yes": 2, "No": 1} and majority[val[2]]["disagreement"] == 0.333333
    everything = adjudication.queue(db, sid, show="all")
    # the six split naturalness items (0.5) first, then the eight validity items (1/3), each by item id
    assert [r["item"] for r in everything] == sorted([nat[0], *nat[3:]]) + sorted(val)
    assert adjudication.queue_counts(db, sid) == {"unresolved": 5, "majority": 7, "decided": 2, "all": 14}
    decided = {r["item"]: r for r in everything}[nat[0]]
    assert decided["votes"] == {"Yes": 1, "No": 1} and decided["decision"] == "No" and decided["disagreement"] == 0.5
