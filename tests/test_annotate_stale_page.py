"""One current answer per item and annotator, on the annotate page (issue 20, item 4): a second
tab (a second session) that opened an item before the first tab answered it is refused with a
message that says so, its answer is not stored, and only "Replace my answer with these" stores it."""

from storage import studies
from tests.builders import app, user_row


def answer(at, sid, screen, naturalness, passage):
    for key in (f"val:{sid}:{screen}:validity:Yes", f"val:{sid}:{screen}:naturalness:{naturalness}",
                f"pick:{sid}:{screen}:{passage}"):
        at.button(key=key).click().run()


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
    answer(first, sid, screen, "Yes", 1)
    first.button(key=f"submit:{sid}:{screen}").click().run()
    assert naturalness_labels(db, sid) == [("Yes", "")]

    answer(second, sid, screen, "No", 2)  # these reruns must not make the stale tab current
    second.text_area(key=f"ans:{sid}:{screen}:naturalness:reason").input("too generic").run()
    second.button(key=f"submit:{sid}:{screen}").click().run()
    assert not second.exception
    assert any("already answered this item in another tab or window" in w.value for w in second.warning)
    assert naturalness_labels(db, sid) == [("Yes", "")]  # refused: the first tab's answer stays current
    assert second.button(key=f"stale_next:{sid}:{screen}").proto.shortcut.lower() == "n"

    second.button(key=f"replace:{sid}:{screen}").click().run()  # the explicit replacement
    assert naturalness_labels(db, sid) == [("Yes", ""), ("No", "too generic")]
    current = [x for x in studies.current_labels(db, sid) if x["question"] == "naturalness"]
    assert [(x["value"], x["reason"]) for x in current] == [("No", "too generic")]
    assert not any("already answered" in w.value for w in second.warning)
    assert second.session_state[f"ann_screen:{sid}"] != screen  # on to the next item


def test_next_item_leaves_the_stale_answers_unstored(env_db):
    db, sid, first, second, screen = two_tabs(env_db)
    answer(first, sid, screen, "Yes", 1)
    first.button(key=f"submit:{sid}:{screen}").click().run()
    answer(second, sid, screen, "Yes", 3)
    second.button(key=f"submit:{sid}:{screen}").click().run()
    second.button(key=f"stale_next:{sid}:{screen}").click().run()
    assert second.session_state[f"ann_screen:{sid}"] not in (None, screen)
    assert naturalness_labels(db, sid) == [("Yes", "")]
    assert len(studies.label_history(db, sid)) == 3
