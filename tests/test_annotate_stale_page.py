"""One current answer per item and annotator, on the annotate page (issue 20, item 4): a second
tab (a second session) that opened an item before the first tab answered it is refused with a
message that says so, its answer is not stored, and only "Replace my answer with these" stores it."""

from storage import studies
from tests.builders import app, item_shown, passage_id, send, user_row


def answers(at, naturalness, passage):
    return {"validity": "Yes", "naturalness": naturalness, "best_passage": passage_id(at, passage)}


def naturalness_labels(db, sid):
    return [(x["value"], x["reason"]) for x in studies.label_history(db, sid)
            if x["annotator"] == "ann1" and x["item"] in {i["id"] for i in studies.items_of_study(db, sid, "naturalness")}]


def two_tabs(env_db):
    """ann1 signed in in two tabs of the annotate page, both showing the same claimed screen:
    (db, study id, first tab, second tab, screen id)."""
    db, r = env_db
    sid = r["study_id"]
    tabs = [app("pages/annotate.py"), app("pages/annotate.py")]
    for at in tabs:
        at.session_state["user"] = user_row(db, "ann1")
        at.run()
    first, second = tabs
    return db, sid, first, second, first.session_state[f"ann_screen:{sid}"]


def test_a_stale_tab_is_told_and_replaces_only_when_asked(env_db):
    db, sid, first, second, screen = two_tabs(env_db)
    assert second.session_state[f"ann_screen:{sid}"] == screen  # the same claimed item in both
    send(first, "submit", answers(first, "Yes", 1))
    assert naturalness_labels(db, sid) == [("Yes", "")]

    stale = answers(second, ("No", "too generic"), 2)
    send(second, "draft", stale)  # a draft from the stale tab does not make it current
    send(second, "submit", stale)
    assert not second.exception
    result = item_shown(second)["result"]
    assert result["status"] == "stale" and "already answered this item in another tab or window" in result["message"]
    assert naturalness_labels(db, sid) == [("Yes", "")]  # refused: the first tab's answer stays current
    assert item_shown(second)["item"]["screen"] == screen  # the item stays, with its Next item (n) and Replace

    send(second, "replace", stale)  # the explicit replacement
    assert naturalness_labels(db, sid) == [("Yes", ""), ("No", "too generic")]
    current = [x for x in studies.current_labels(db, sid) if x["question"] == "naturalness"]
    assert [(x["value"], x["reason"]) for x in current] == [("No", "too generic")]
    assert item_shown(second)["result"]["status"] == "saved"
    assert second.session_state[f"ann_screen:{sid}"] != screen  # on to the next item


def test_next_item_leaves_the_stale_answers_unstored(env_db):
    db, sid, first, second, screen = two_tabs(env_db)
    send(first, "submit", answers(first, "Yes", 1))
    send(second, "submit", answers(second, "Yes", 3))
    assert item_shown(second)["result"]["status"] == "stale"
    send(second, "next")
    assert second.session_state[f"ann_screen:{sid}"] not in (None, screen)
    assert naturalness_labels(db, sid) == [("Yes", "")]
    assert len(studies.label_history(db, sid)) == 3
