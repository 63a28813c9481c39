"""The Set up page follows the project's benchmark: the questions offered and preselected per kind,
FollowIR sent to the Narratives page, and a second study that would re-sample the first one's
items is held back with a warning and two ways out (AppTest)."""
from dataclasses import replace

import pytest

from annotation.demo import demo_bundle, demo_data
from annotation.glossary import label
from storage import projects, studies
from tests.builders import ROOT, app, user_row

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
    if "naturalness" in preselected:  # its scale is asked only when naturalness is
        assert at.radio(key="study_naturalness").value == scale
    else:
        assert not [r for r in at.radio if r.key == "study_naturalness"]
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


def _keys(at) -> set[str]:
    return {w.key for kind in ("number_input", "checkbox", "radio") for w in getattr(at, kind)}


def test_only_the_settings_of_the_chosen_questions_are_shown(env_db):
    db, _ = env_db
    at = _page(db, "demo")  # InstructIR's three questions
    assert {"study_passages", "study_per_group", "study_naturalness", "study_check_share"} <= _keys(at)
    assert not {"study_max_excluded", "study_stratify", "study_subset_fraction"} & _keys(at)  # no domains, no passage match
    at.multiselect(key="study_questions").set_value(["validity"]).run()
    assert not {"study_passages", "study_naturalness"} & _keys(at)
    assert not [s for s in at.subheader if "INSTFOL" in s.value]  # IFIR's measure: no IFIR project here
    _project(db, "ifir-p", "ifir")
    at = _page(db, "ifir-p")
    assert "study_max_excluded" in _keys(at) and "study_passages" not in _keys(at)
    assert [s for s in at.subheader if "INSTFOL" in s.value]


def test_enter_in_a_number_box_does_not_create_and_check_items_are_mixed_in(env_db):
    db, _ = env_db
    at = _page(db, "demo")
    form = next(f for f in at.get("form") if f.proto.form.form_id == "study_form")
    assert form.proto.form.enter_to_submit is False  # Enter in "Seed" or "Annotators per item" submits nothing
    assert at.multiselect(key="study_annotators").value == []  # nobody preselected
    at.multiselect(key="study_annotators").set_value(["ann1", "ann2", "ann3"])
    at.number_input(key="study_seed").set_value(3)
    at.number_input(key="study_check_share").set_value(0.25)
    at.checkbox(key="study_remaining").check()
    at.button(key="FormSubmitter:study_form-Create study").click().run()
    assert not at.exception and at.success, [w.value for w in at.warning]
    assert "check screens with known answers" in at.success[0].value
    sid = studies.list_studies(db)[-1]["id"]
    assert studies.get_study(db, sid)["settings"]["check_share"] == 0.25 and studies.has_check_items(db, sid)


def test_a_judge_stratified_study_shows_its_width_before_it_is_created(env_db):
    from storage import judge_labels

    db, _ = env_db
    every = sorted(i["instance_id"] for i in projects.instances(db, 1) if i["instruction"].strip())
    run, _ = judge_labels.find_or_create_run(
        db, project_id=1, question="validity", judge="chat", model="judge-7b", base_url="", prompt_version="v1",
        prompt_hash="abc", prompt={}, parameters={"scale": "yesno"}, config_key="k", created_by="test")
    judge_labels.add_items(db, run["id"], [{"instance_id": i, "question": "validity"} for i in every])
    judge_labels.store_labels(db, run["id"], [{"instance_id": i, "question": "validity", "value": "No" if n < 2 else "Yes",
                                               "raw": "", "score": None} for n, i in enumerate(every)])
    at = _page(db, "demo")
    at.selectbox(key="study_judge_run").set_value(run["id"]).run()
    at.multiselect(key="study_annotators").set_value(["ann1", "ann2", "ann3"])
    at.number_input(key="study_fraction").set_value(0.5)
    at.number_input(key="study_seed").set_value(7)
    at.button(key="FormSubmitter:study_form-Create study").click().run()
    assert not at.exception and not at.success
    shown = at.info[0].value.replace("\\", "")
    assert shown.startswith("Judge-stratified sample: judge No:") and "plain random sample of the same" in shown
    assert len(studies.list_studies(db)) == 1  # nothing created before the lead has read it
    at.button(key="study_judge_create").click().run()
    assert not at.exception and at.success and "created" in at.success[0].value
    plan = studies.get_study(db, 2)["settings"]["judge_strata"]
    assert plan["run"] == run["id"] and plan["allocation"] == "neyman" and "judge No" in plan["group_stratum"].values()


def test_a_lead_declares_an_own_question_on_the_page(env_db):
    db, _ = env_db
    at = _page(db, "demo")
    at.radio(key="study_own_format").set_value("yaml")
    at.text_area(key="study_own_text").set_value('id: harmful\nwording: "Harmful?"\ncategories: []\n').run()
    assert not at.exception
    refused = [e.value for e in at.error]
    assert refused and "line 3" in refused[0] and "categories" in refused[0]  # names the line and the field
    declaration = (ROOT / "docs" / "examples" / "harmful.yaml").read_text()
    at.text_area(key="study_own_text").set_value(declaration).run()
    assert not at.error
    shown = at.dataframe[0].value
    assert list(shown["Id"]) == ["harmful"] and list(shown["Outcome"]) == ["Yes -> drop instance"]
    at.multiselect(key="study_questions").set_value(["validity"])
    at.multiselect(key="study_annotators").set_value(["ann1", "ann2", "ann3"])
    at.number_input(key="study_seed").set_value(5)
    at.checkbox(key="study_remaining").check()
    at.button(key="FormSubmitter:study_form-Create study").click().run()
    assert not at.exception and at.success, [w.value for w in at.warning + at.error]
    study = studies.list_studies(db)[-1]
    assert study["questions"] == ["validity", "harmful"]
    stored = studies.get_study(db, study["id"])["settings"]["own_questions"]["harmful"]
    assert stored["keys"] == ["3", "4"] and stored["on_outcome"] == {"Yes": "drop instance"}  # 1/2 are validity's
    assert at.text_area(key="study_own_text").value == ""  # the form starts over after a creation
