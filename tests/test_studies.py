"""Study set-up: seeded sampling, balanced assignment plans, item building."""
from collections import Counter

import pytest

from annotation.studies import StudySettings, balanced_plan, create_study, sample_instances
from storage import studies
from storage.db import connect
from storage.errors import IFJudgeError
from tests.builders import make_project
from storage.projects import get_project

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL



def test_sample_is_seeded_and_respects_fraction_and_per_group():
    insts = [{"instance_id": f"g{g}_{j}", "group_id": f"g{g}"} for g in range(100) for j in range(6)]
    a = sample_instances(insts, group_fraction=0.08, per_group=2, seed=7)
    b = sample_instances(list(reversed(insts)), group_fraction=0.08, per_group=2, seed=7)
    c = sample_instances(insts, group_fraction=0.08, per_group=2, seed=8)
    assert a == b  # input order does not matter
    assert a != c
    groups = Counter(i["group_id"] for i in a)
    assert len(groups) == 8 and set(groups.values()) == {2}


@pytest.mark.parametrize("n_screens,n_ann,overlap", [(10, 3, 3), (17, 5, 3), (7, 4, 2), (1, 3, 1), (50, 7, 3)])
def test_plan_is_balanced_and_never_repeats_an_annotator(n_screens, n_ann, overlap):
    plan = balanced_plan([f"s{i}" for i in range(n_screens)], list(range(n_ann)), overlap, seed=1)
    loads = Counter(u for users in plan.values() for u in users)
    assert max(loads.values()) - min(loads.values(), default=0) <= 1
    assert sum(loads.values()) == n_screens * overlap
    assert all(len(set(users)) == overlap for users in plan.values())


def test_plan_refuses_overlap_above_annotators():
    with pytest.raises(IFJudgeError, match="3 annotators per item were asked for but only 2"):
        balanced_plan(["s"], [1, 2], 3, seed=0)


def test_create_study_counts_and_same_seed_same_study(db_path):
    db = connect(db_path)
    make_project(db)
    kw = dict(project=get_project(db, "p"), questions=["validity", "naturalness", "best_passage"], annotators=["a0", "a1", "a2", "a3"])
    r1 = create_study(db, **kw, settings=StudySettings(seed=3))
    r2 = create_study(db, **kw, settings=StudySettings(seed=3))
    assert r1["instances"] == 4  # round(0.08 * 25) = 2 groups x 2 instances
    assert r1["items"] == 12 and r1["screens"] == 4 and r1["assignments"] == 36
    assert sorted(r1["per_annotator_screens"].values()) == [3, 3, 3, 3]
    s1 = [(i["instance_id"], i["question"], i["payload"]) for i in studies.items_of_study(db, r1["study_id"])]
    s2 = [(i["instance_id"], i["question"], i["payload"]) for i in studies.items_of_study(db, r2["study_id"])]
    assert s1 == s2
    a1 = [(r["screen"], r["annotator"]) for r in studies.assignment_rows(db, r1["study_id"])]
    a2 = [(r["screen"], r["annotator"]) for r in studies.assignment_rows(db, r2["study_id"])]
    assert a1 == a2


def test_best_passage_candidates_include_the_target_from_the_same_group(db_path):
    db = connect(db_path)
    make_project(db)
    r = create_study(db, project=get_project(db, "p"), questions=["best_passage"], annotators=["a0", "a1", "a2"],
                     settings=StudySettings(group_fraction=0.2, passages=3))
    for it in studies.items_of_study(db, r["study_id"], "best_passage"):
        cands, gold = it["payload"]["candidates"], it["payload"]["gold"]
        group = it["instance_id"].split("_")[0].lstrip("g")
        assert len(cands) == 3 and gold in cands
        assert gold == "p" + it["instance_id"][1:]
        assert all(c.startswith(f"p{group}_") for c in cands)


def test_create_study_errors_name_what_is_wrong(db_path):
    db = connect(db_path)
    make_project(db)
    with pytest.raises(IFJudgeError, match="unknown question"):
        create_study(db, project=get_project(db, "p"), questions=["vibes"], annotators=["a0"])
    with pytest.raises(IFJudgeError, match="no user named 'zed'"):
        create_study(db, project=get_project(db, "p"), questions=["validity"], annotators=["zed"])
    with pytest.raises(IFJudgeError, match="no project named 'nope'"):
        create_study(db, project=get_project(db, "nope"), questions=["validity"], annotators=["a0"])
    assert studies.list_studies(db) == []
