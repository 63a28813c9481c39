"""The annotation screen as in InstructIR Fig. 9 (issue 11, item 7): the project goal and the
labeler instructions before the first item, acknowledged once (stored), one key away afterwards;
instruction, then query, then the numbered questions."""
import pytest

from annotation import workspace
from annotation.questions.study import GUIDELINES, PROJECT_GOAL_INSTRUCTIR
from storage import studies
from storage.errors import PermissionDenied
from tests.builders import app, item_shown, send, signed_in_page, user_row
from storage.projects import get_project

FIG9A_INSTRUCTIONS = ("You will encounter three questions for each instance. Your task is to choose an option for "
                      "each question. If you choose 'NO' for Q1 or Q2, provide a clear and concise reason for your "
                      "decision.")
FIG9A_RELEVANT = ("- RELEVANT: The passage is mostly relevant, precisely addressing all aspects of the user's "
                  "INSTRUCTION, QUERY, and preferences. It seamlessly integrates with the user's context, "
                  "demonstrating a profound understanding. The passage is exceptionally clear, concise, and "
                  "exhaustive in providing information, offering a flawless fit.")


def test_guidelines_follow_figure_9a_and_the_acknowledgement_is_stored(env_db):
    db, r = env_db
    sid, ann1 = r["study_id"], user_row(db, "ann1")
    g = workspace.guidelines(db, sid, ann1)
    assert g.goal == PROJECT_GOAL_INSTRUCTIR and g.instructions == FIG9A_INSTRUCTIONS
    assert [p for _, p, _ in g.questions] == [
        "Q1. Is the instruction valid for the search user?", "Q2. Is the instruction natural for the given query?",
        "Q3. Which passage is the most natural for the given instruction and query?"]
    assert FIG9A_RELEVANT in g.questions[2][2] and "- NOT RELEVANT: The passage lacks relevance" in g.questions[2][2]
    assert g.acknowledged_at is None
    workspace.acknowledge_guidelines(db, sid, ann1)
    first = workspace.guidelines(db, sid, ann1).acknowledged_at
    workspace.acknowledge_guidelines(db, sid, ann1)  # idempotent: the first time is kept
    assert first is not None and workspace.guidelines(db, sid, ann1).acknowledged_at == first
    assert workspace.guidelines(db, sid, user_row(db, "ann2")).acknowledged_at is None
    db.execute("INSERT INTO users (name, role, password_hash, created_at) VALUES ('x', 'annotator', '', '')")
    with pytest.raises(PermissionDenied):
        workspace.acknowledge_guidelines(db, sid, user_row(db, "x"))


def test_new_annotator_sees_goal_and_instructions_before_the_first_item(env_db):
    db, r = env_db
    sid = r["study_id"]
    at = app("pages/annotate.py")
    at.session_state["user"] = user_row(db, "ann1")
    at.run()
    assert not at.exception
    texts = [t.value for t in at.text]
    screen = at.session_state[f"ann_screen:{sid}"]
    item = workspace.open_screen(db, sid, user_row(db, "ann1"), screen)
    # goal, instructions and the full definitions come first, then (in the item component, below
    # them) instruction, query, the numbered questions and the passages (Fig. 9)
    goal, instr = texts.index(PROJECT_GOAL_INSTRUCTIR), texts.index(FIG9A_INSTRUCTIONS)
    assert goal < instr < texts.index(GUIDELINES["best_passage"])
    assert at.get("bidi_component")[-1].proto.component_name == "ifjudge_annotate_item"
    shown = item_shown(at)["item"]
    assert (shown["texts"]["instruction"], shown["texts"]["query"]) == (item.instruction, item.query)
    assert [f"Q{q['number']}. {q['prompt']}" for q in shown["questions"]] == [
        "Q1. Is the instruction valid for the search user?",
        "Q2. Is the instruction natural for the given query?",
        "Q3. Which passage is the most natural for the given instruction and query?"]
    assert [o["passage"] for o in shown["questions"][2]["options"]] == [p["text"] for p in item.items[2].passages]
    assert item_shown(at)["guidelines"] == {"acknowledged": False}

    at.button(key=f"guidelines_ack:{sid}").click().run()
    assert studies.guidelines_acknowledged(db, sid, user_row(db, "ann1")["id"]) is not None
    assert PROJECT_GOAL_INSTRUCTIR not in [t.value for t in at.text]  # gone; the item stays
    assert item_shown(at)["item"]["screen"] == screen and item_shown(at)["guidelines"] == {"acknowledged": True}

    # one key away: the g shortcut button shows them again, and hides them
    toggle = at.button(key=f"guidelines_toggle:{sid}")
    assert toggle.proto.shortcut.lower() == "g"
    toggle.click().run()
    assert PROJECT_GOAL_INSTRUCTIR in [t.value for t in at.text]
    at.button(key=f"guidelines_toggle:{sid}").click().run()
    assert PROJECT_GOAL_INSTRUCTIR not in [t.value for t in at.text]

    # the keys g and a reach the page as messages of the item component
    send(at, "guidelines")
    assert PROJECT_GOAL_INSTRUCTIR in [t.value for t in at.text]
    send(at, "guidelines")
    assert PROJECT_GOAL_INSTRUCTIR not in [t.value for t in at.text]

    # a new session of the same annotator: acknowledged, so not shown again
    again = app("pages/annotate.py")
    again.session_state["user"] = user_row(db, "ann1")
    again.run()
    assert PROJECT_GOAL_INSTRUCTIR not in [t.value for t in again.text]


def test_study_goal_overrides_the_default(env_db):
    from annotation.studies import StudySettings, create_study

    db, _ = env_db
    r = create_study(db, project=get_project(db, "demo"), questions=["passage_match"], annotators=["ann1"],
                     settings=StudySettings(overlap=1, group_fraction=1.0, goal="Check the <b>gold</b> passages."))
    g = workspace.guidelines(db, r["study_id"], user_row(db, "ann1"))
    assert g.goal == "Check the <b>gold</b> passages."
    assert g.instructions == "You will encounter one question for each instance. Your task is to choose an option for each question."


def test_the_key_a_acknowledges_the_guidelines(env_db):
    db, r = env_db
    sid = r["study_id"]
    at = signed_in_page(db, "pages/annotate.py", "ann2")
    assert PROJECT_GOAL_INSTRUCTIR in [t.value for t in at.text]
    send(at, "acknowledge")  # the item component's message for the key a
    assert studies.guidelines_acknowledged(db, sid, user_row(db, "ann2")["id"]) is not None
    assert PROJECT_GOAL_INSTRUCTIR not in [t.value for t in at.text]
    assert item_shown(at)["guidelines"] == {"acknowledged": True}
