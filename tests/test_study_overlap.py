"""A second study that would re-sample what another study of the project already asks: the
overlap is reported (library and CLI) with a new seed and the remaining items as ways out."""
import json

import pytest

from annotation.demo import demo_data
from storage.errors import IFJudgeError
from annotation.studies import StudySettings, create_study, sample_overlap
from storage.projects import get_project

GROUPS = sorted({i["query"] for i in demo_data()["instances"]})  # the demo study's groups


def test_same_settings_report_the_whole_sample_as_covered(demo):
    db, r = demo
    # the demo study asks validity, naturalness, best passage on 8 of the 12 instances of its groups
    o = sample_overlap(db, project=get_project(db, "demo"), questions=["naturalness"], groups=GROUPS,
                       settings=StudySettings(group_fraction=1.0, per_group=2, seed=0))
    assert (o.sampled, o.covered, o.remaining) == (8, 8, 12 - 8)
    assert o.studies == [{"id": r["study_id"], "name": "demo: InstructIR validation", "covered": 8}]
    assert "8 of its 8 instances" in o.text and "only the 4 instances" in o.text
    assert o.new_seed is not None and o.new_seed != 0 and o.new_seed_covered < 8


def test_another_question_or_the_remaining_items_overlap_nothing(demo):
    db, _ = demo
    same = StudySettings(group_fraction=1.0, per_group=2, seed=0)
    assert sample_overlap(db, project=get_project(db, "demo"), questions=["passage_match"], settings=same, groups=GROUPS).text == ""
    new = create_study(db, project=get_project(db, "demo"), questions=["validity"], annotators=["ann1", "ann2", "ann3"],
                       settings=StudySettings(group_fraction=1.0, per_group=2, seed=0, skip_covered=True), groups=GROUPS)
    assert new["instances"] == 4  # exactly the 12 - 8 not asked yet
    asked = {it["instance_id"] for s in (1, new["study_id"]) for it in _items(db, s)}
    assert len(asked) == 12
    # now nothing remains: a clear refusal, nothing created
    with pytest.raises(IFJudgeError, match="nothing remains to sample"):
        create_study(db, project=get_project(db, "demo"), questions=["validity"], annotators=["ann1", "ann2", "ann3"],
                     settings=StudySettings(group_fraction=1.0, per_group=2, seed=0, skip_covered=True), groups=GROUPS)


def _items(db, study_id):
    from storage import studies
    return studies.items_of_study(db, study_id)


def test_cli_warns_before_re_asking_and_remaining_avoids_it(run_cli, db_path):
    run_cli("demo", "--db", db_path)
    args = ["study", "create", "--db", db_path, "--project", "demo", "--questions", "validity", "--annotators",
            "ann1,ann2,ann3", "--group-fraction", "1", "--groups", ",".join(GROUPS), "--json"]
    code, out, err = run_cli(*args)
    assert code == 0 and "warning: This sample would ask again about 8 of its 8 instances" in err
    assert "--remaining" in err
    code, out, err = run_cli(*args[:-1], "--remaining", "--json")
    # study 2 took the same 8 again (it was warned, not refused); 4 remain for study 3
    assert code == 0 and "warning" not in err and json.loads(out)["instances"] == 4
