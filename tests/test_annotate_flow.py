"""The annotate page's messages (issue 28, item 2), without a browser: one submit carries every
answer and is checked and committed as before; a message sent again is done once; one sent from
an item no longer open stores nothing; drafts write only what changed; reasons have a length
limit, refused in words (issue 32)."""
import pytest

from annotation import workspace
from storage import studies, users
from ui.annotate_flow import BadMessage, Message, Tab, parse_message


def tab_of(demo, name="ann1"):
    db, r = demo
    return Tab(db, users.get_user(db, name), r["study_id"], {})


def submit(tab, seq, answers=None, kind="submit"):
    screen = tab.current()
    if answers is None:
        answers = {"validity": {"value": "Yes", "reason": ""}, "naturalness": {"value": "Yes", "reason": ""},
                   "best_passage": {"value": screen.items[2].passages[0]["doc_id"], "reason": ""}}
    return tab.handle(Message(seq, kind, tab.sid, screen.screen, tab.token, answers))


def test_one_message_submits_the_item_once_even_when_sent_again(demo):
    db, r = demo
    tab = tab_of(demo)
    first, token = tab.current().screen, tab.token
    result = submit(tab, 1)
    assert result.status == "saved" and tab.ack == 1
    assert tab.current().screen != first and tab.token != token  # the reply is the next item
    assert tab.handle(Message(1, "submit", tab.sid, first, token, {})) is None  # sent again: done already
    assert len(studies.label_history(db, r["study_id"])) == 3


def test_a_message_from_an_item_no_longer_open_stores_nothing(demo):
    db, r = demo
    tab = tab_of(demo)
    first = tab.current().screen
    submit(tab, 1)
    late = tab.handle(Message(2, "submit", tab.sid, first, "old", {"validity": {"value": "No", "reason": "x"}}))
    assert late.status == "gone" and "nothing was stored" in late.message
    assert len(studies.label_history(db, r["study_id"])) == 3


def test_a_refused_submit_names_every_question_and_keeps_the_item(demo):
    tab = tab_of(demo)
    screen, token = tab.current().screen, tab.token
    result = submit(tab, 1, {"validity": {"value": "No", "reason": "  "}})
    assert result.status == "refused" and list(result.problems) == ["validity", "naturalness", "best_passage"]
    assert result.problems["validity"].endswith("a reason is required when the answer is No")
    assert (tab.current().screen, tab.token) == (screen, token)


def test_a_reason_longer_than_the_limit_is_refused_in_words(demo):
    tab = tab_of(demo)
    long = "x" * (workspace.REASON_MAX_CHARS + 1)
    result = submit(tab, 1, {"validity": {"value": "No", "reason": long}, "naturalness": {"value": "Yes"},
                             "best_passage": {"value": tab.current().items[2].passages[0]["doc_id"]}})
    assert result.status == "refused" and list(result.problems) == ["validity"]
    assert result.problems["validity"] == (
        f"Q1 “Is the instruction valid for the search user?”: the reason is {len(long):,} characters long; "
        f"at most {workspace.REASON_MAX_CHARS} are accepted: please shorten it")
    ok = submit(tab, 2, {"validity": {"value": "No", "reason": long[:-1]}, "naturalness": {"value": "Yes"},
                         "best_passage": {"value": tab.current().items[2].passages[0]["doc_id"]}})
    assert ok.status == "saved"


def test_drafts_write_only_what_changed(demo, monkeypatch):
    tab = tab_of(demo)
    screen = tab.current()
    written = []
    save = workspace.save_draft
    monkeypatch.setattr(workspace, "save_draft", lambda *a, **k: (written.append(a[3]), save(*a, **k)))
    answers = {"validity": {"value": "No", "reason": "vague"}, "naturalness": {"value": None, "reason": ""}}
    tab.handle(Message(1, "draft", tab.sid, screen.screen, tab.token, answers))
    tab.handle(Message(2, "draft", tab.sid, screen.screen, tab.token,
                       {**answers, "naturalness": {"value": "Yes", "reason": ""}}))
    assert written == ["validity", "naturalness", "naturalness"]
    assert workspace.draft(tab.db, screen, tab.user) == {"validity": {"value": "No", "reason": "vague"},
                                                         "naturalness": {"value": "Yes", "reason": ""}}
    # a new tab (a reload) opens the item with them
    again = Tab(tab.db, tab.user, tab.sid, {})
    assert again.current().screen == screen.screen
    assert again.initial_answers(again.current())["validity"] == {"value": "No", "reason": "vague"}


def test_skip_and_back(demo):
    tab = tab_of(demo)
    first = tab.current().screen
    assert tab.handle(Message(1, "skip", tab.sid, first, tab.token)).status == "done"
    second = tab.current().screen
    assert second != first
    submit(tab, 2)
    assert tab.handle(Message(3, "back", tab.sid, tab.current().screen, tab.token)).status == "done"
    back = tab.current()
    assert back.screen == second and all(it.current for it in back.items)  # changing a submitted answer
    assert tab.initial_answers(back)["validity"] == {"value": "Yes", "reason": ""}


@pytest.mark.parametrize("raw, message", [
    ("submit", "a message is an object, got str"),
    ({"seq": 0, "kind": "submit"}, "a message needs a positive seq, got 0"),
    ({"seq": 1, "kind": "submit", "answers": {"validity": {"value": 3}}}, "the answer to 'validity' must be a short text"),
    ({"seq": 1, "kind": "submit", "answers": {"validity": {"value": "No", "reason": "x" * 20_001}}},
     "the reason of 'validity' must be a text of at most 20000 characters"),
    ({"seq": 1, "kind": "draft", "study": "1"}, "study must be a number, got '1'"),
])
def test_a_message_of_another_shape_is_refused(raw, message):
    with pytest.raises(BadMessage, match="^" + message.replace("(", r"\(").replace(")", r"\)") + "$"):
        parse_message(raw)
