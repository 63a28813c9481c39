"""The Adjudicate page with a long queue: the item picker and the queue table list a window of
``adjudication.QUEUE_ROWS`` items around the open one and say how many the queue holds; Next walks
on past the window."""
from annotation.outcomes import adjudication
from storage.db import write
from tests.builders import label_all, signed_in_page, user_row


def test_a_long_queue_lists_a_window_and_says_how_many(env_db, monkeypatch):
    db, r = env_db
    sid = r["study_id"]
    label_all(db, sid, {"ann1": "Yes", "ann2": "Yes", "ann3": "No"}, {"ann1": "Yes", "ann2": "No", "ann3": "Yes"})
    with write(db):  # ann3's naturalness labels removed: each of the 8 naturalness items is a 1-1 tie
        db.execute("DELETE FROM labels WHERE user_id = ? AND item_id IN (SELECT id FROM items WHERE study_id = ?"
                   " AND question = 'naturalness')", [user_row(db, "ann3")["id"], sid])
    ids = [q["item"] for q in adjudication.queue(db, sid)]
    assert len(ids) == 8
    monkeypatch.setattr(adjudication, "QUEUE_ROWS", 3)  # a queue of thousands, in small
    at = signed_in_page(db, "pages/adjudicate.py", "lead")
    assert not at.exception
    picker = at.selectbox(key=f"adj_item:{sid}:unresolved")
    assert len(picker.options) == 3 and picker.value == ids[0]
    captions = " ".join(c.value for c in at.caption)
    assert "Items 1-3 of the 8 in this queue" in captions and "Items 1-3 of 8" in captions
    table = next(d.value for d in at.dataframe if "How decided" in d.value.columns)
    assert list(table["Item"]) == ids[:3]
    for i in ids[:3]:  # Next three times: the fourth item, in the second window
        at.button(key=f"adj_next:{sid}:{i}").click().run()
    picker = at.selectbox(key=f"adj_item:{sid}:unresolved")
    assert picker.value == ids[3] and len(picker.options) == 3
    assert "Items 4-6 of the 8 in this queue" in " ".join(c.value for c in at.caption)
    assert list(next(d.value for d in at.dataframe if "How decided" in d.value.columns)["Item"]) == ids[3:6]
