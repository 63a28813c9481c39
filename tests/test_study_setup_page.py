"""The Set up page follows the project's benchmark: the questions offered and preselected per kind,
FollowIR sent to the Narratives page, and a second study that would re-sample the first one's
items is held back with a warning and two ways out (AppTest)."""
from dataclasses import replace

import pytest

from annotation.demo import demo_bundle, demo_data
from annotation.glossary import label
from storage import projects, studies
from tests.builders import app, user_row

pytestmark = pytest.mark.both_engines


def _project(db, name, kind, *, documents=True):
    bundle = demo_bundle(demo_data())
    if not documents:
        bundle = replace(bundle, documents=[], qrels=[])
    projects.import_bundle(db, name, bundle, fmt="demo", kind=kind)


def _page(db, project):
    at = app("pages/study_setup.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    at.selectbox(key="study_project").set_value(project).run()
    assert not at.exception
    return at


@pytest.mark.parametrize("kind, documents, offered, preselected, scale", [
    ("instructir", True, ["validity", "naturalness", "best_passage"], ["validity", "naturalness", "best_passage"], "yesno"),
    ("instructir", False, ["validity", "naturalness"], ["validity", "naturalness"], "yesno"),
    ("ifir", True, ["passage_match", "naturalness"], ["passage_match", "naturalness"], "likert"),
    ("infosearch", True, ["condition"], ["condition"], "yesno"),
])
def test_questions_follow_the_project_kind(env_db, kind, documents, offered, preselected, scale):
    db, _ = env_db
    _project(db, f"p-{kind}", kind, documents=documents)
    at = _page(db, f"p-{kind}")
    box = at.multiselect(key="study_questions")
    assert box.options == [label(q) for q in offered]
    assert list(box.value) == preselected
    assert at.radio(key="study_naturalness").value == scale
    if not documents:
        assert any("no documents" in i.value and "best passage" in i.value for i in at.info)


def test_followir_is_sent_to_the_narratives_page(env_db):
    db, _ = env_db
    _project(db, "fir", "followir")
    at = _page(db, "fir")
    assert any("Narratives page" in i.value for i in at.info)
    assert not [m for m in at.multiselect if m.key == "study_questions"]  # no InstructIR questions offered


def test_switching_back_restores_the_kinds_questions(env_db):
    db, _ = env_db
    _project(db, "ifir-p", "ifir")
    at = _page(db, "ifir-p")
    assert list(at.multiselect(key="study_questions").value) == ["passage_match", "naturalness"]
    at.selectbox(key="study_project").set_value("demo").run()  # generic: InstructIR's three
    assert list(at.multiselect(key="study_questions").value) == ["validity", "naturalness", "best_passage"]


def test_a_second_study_on_the_same_sample_warns_and_offers_a_new_seed(env_db):
    db, _ = env_db
    at = _page(db, "demo")
    at.multiselect(key="study_annotators").set_value(["ann1", "ann2", "ann3"])
    at.number_input(key="study_fraction").set_value(1.0)
    at.button(key="FormSubmitter:study_form-Create study").click().run()
    assert not at.exception and not at.success
    said = at.warning[0].value.replace("\\", "")
    assert said.startswith("This sample would ask again about ") and "study 1 “demo: InstructIR validation”" in said
    assert len(studies.list_studies(db)) == 1  # nothing created before the lead chooses
    seed_button = at.button(key="study_use_seed")
    new_seed = int(seed_button.label.split()[2])
    assert new_seed != 0
    seed_button.click().run()
    assert not at.exception and at.success and "created" in at.success[0].value
    assert studies.get_study(db, 2)["settings"]["seed"] == new_seed
    assert any("Next step" in c.value for c in at.caption)
