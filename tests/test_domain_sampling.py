"""Every design the tool samples is the design it estimates: one sampling rate per domain, a total
allocated proportionally or by Neyman allocation, IFIR's subsampled excluded passages (a third stage)
and a study that skips what other studies asked -- drawn by create_study (and the CLI), read back by
study_design, weighted by the estimates."""
from collections import Counter

import pytest

from accounts import auth
from annotation.estimates.benchmark import benchmark_estimates
from annotation.studies import StudySettings, create_study
from annotation.estimates.sampling import study_design
from storage import studies
from storage.errors import IFJudgeError
from tests.builders import label_ifir
from storage.projects import get_project

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL



def _domains(db, sid) -> Counter:
    """Sampled groups (queries) per domain."""
    return Counter(g.rstrip("0123456789") for g in {it["instance_id"].split("_")[0] for it in studies.items_of_study(db, sid)})


def test_one_fraction_per_domain_is_sampled_and_weighted(ifir_db):
    settings = StudySettings(domain_fractions={"fiqa": 0.1, "aila": 0.5, "pm": 1.0}, per_group=2, naturalness="likert",
                             overlap=3, seed=2)
    sid = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["naturalness"], annotators=["a0", "a1", "a2"],
                       settings=settings)["study_id"]
    assert _domains(ifir_db, sid) == {"fiqa": 2, "aila": 5, "pm": 3}
    same = StudySettings(subset_fraction={"fiqa": 0.1, "aila": 0.5, "pm": 1.0})  # a dict where one fraction goes
    assert same.domain_fractions == settings.domain_fractions and same.subset_fraction is None
    d = study_design(ifir_db, sid)
    assert d["strata"] == {"fiqa": 20, "aila": 10, "pm": 3} and "at its own rate" in d["description"]
    # natural in fiqa and pm (score 4), not in aila (score 1): each domain weighted by its own rate,
    # R = (20 * 2 + 3 * 2) / (20 * 2 + 10 * 2 + 3 * 2) = 46 / 66 (every group has 2 instances, both sampled)
    label_ifir(ifir_db, sid, {(it["instance_id"], None, "naturalness"): ["1" if it["instance_id"].startswith("aila") else "4"] * 3
                              for it in studies.items_of_study(ifir_db, sid)})
    (e,) = benchmark_estimates(ifir_db, sid)["estimates"]
    assert e["share"] == pytest.approx(46 / 66)
    assert e["naive_independent"]["share"] == 0.5  # unweighted: 5 of the 10 sampled groups natural


def test_a_total_allocated_proportionally_or_by_neyman(ifir_db):
    prop = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["naturalness"], annotators=["a0"],
                        settings=StudySettings(group_fraction=0.3, allocation="proportional", overlap=1))["study_id"]
    # 10 of 33 groups: pm's share (0.9) is below one group, so pm gets 1 and the other 9 go 6 / 3
    assert _domains(ifir_db, prop) == {"fiqa": 6, "aila": 3, "pm": 1}
    assert "in proportion to their sizes" in study_design(ifir_db, prop)["description"]
    with pytest.raises(IFJudgeError, match="Neyman allocation needs the anticipated share"):
        create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["naturalness"], annotators=["a0"],
                     settings=StudySettings(group_fraction=0.3, allocation="neyman", overlap=1))
    ney = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["naturalness"], annotators=["a0"], settings=StudySettings(
        group_fraction=0.3, allocation="neyman", anticipated_shares={"fiqa": 0.99, "aila": 0.5, "pm": 0.9}, overlap=1))
    # N_h S_h: 20 * 0.0995, 10 * 0.5, 3 * 0.3 -> 10 groups as 2.5 / 6.3 / 1.1 -> 3, 6, 1
    assert _domains(ifir_db, ney["study_id"]) == {"fiqa": 3, "aila": 6, "pm": 1}
    with pytest.raises(IFJudgeError, match="one way to sample the domains"):
        create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["naturalness"], annotators=["a0"],
                     settings=StudySettings(subset_fraction=0.1, allocation="proportional", overlap=1))


def test_domain_fractions_on_the_command_line(ifir_db, db_path, run_cli):
    code, out, err = run_cli("study", "create", "--db", db_path, "--project", "ifir", "--questions", "naturalness",
                             "--annotators", "a0", "--overlap", "1", "--naturalness", "likert",
                             "--domain-fractions", "fiqa=0.1,aila=0.5,pm=1")
    assert code == 0, err
    sid = studies.list_studies(ifir_db)[-1]["id"]
    assert _domains(ifir_db, sid) == {"fiqa": 2, "aila": 5, "pm": 3}
    code, _, err = run_cli("study", "create", "--db", db_path, "--project", "ifir", "--questions", "naturalness",
                           "--annotators", "a0", "--overlap", "1", "--domain-fractions", "fiqa:0.1")
    assert code == 2 and "expected DOMAIN=NUMBER pairs" in err and "'fiqa:0.1'" in err
    code, _, err = run_cli("study", "create", "--db", db_path, "--project", "ifir", "--questions", "naturalness",
                           "--annotators", "a0", "--overlap", "1", "--domain-fractions", "fiqa=0.1,aila=0.5")
    assert code == 2 and "no fraction for 'pm'" in err and "the project's domains" in err
    code, _, err = run_cli("study", "create", "--db", db_path, "--project", "ifir", "--questions", "naturalness",
                           "--annotators", "a0", "--overlap", "1", "--allocation", "neyman",
                           "--anticipated-shares", "fiqa=0.99,aila=0.5,pm=0.9", "--group-fraction", "0.3")
    assert code == 0, err


def test_subsampled_excluded_passages_are_weighted_by_their_instance(ifir_db):
    sid = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["passage_match"], annotators=["a0", "a1", "a2"],
                       settings=StudySettings(subset_fraction=0.1, per_group=2, max_excluded=1, seed=4))["study_id"]
    excluded = [it for it in studies.items_of_study(ifir_db, sid) if it["payload"]["kind"] == "excluded"]
    # <q>_1 has 2 excluded passages (c2, c3), <q>_2 has 3 (c1, c2, c3): one of each sampled, the count recorded
    assert {it["instance_id"][-2:]: it["payload"]["excluded_of"] for it in excluded} == {"_1": 2, "_2": 3}
    # the sampled excluded passage of <q>_1 matches (5), that of <q>_2 does not (1)
    label_ifir(ifir_db, sid, {(it["instance_id"], it["doc_id"], "passage_match"): ["5" if it["instance_id"].endswith("_1")
                                                                                     else "1"] * 3 for it in excluded})
    e = next(x for x in benchmark_estimates(ifir_db, sid)["estimates"] if x["part"] == "excluded")
    # every group alike: 2 of its 5 excluded passages match (weights 2 and 3), not 1 of 2
    assert e["share"] == pytest.approx(2 / 5) and e["naive_independent"]["share"] == 0.5
    assert any("third sampling stage" in n for n in study_design(ifir_db, sid)["notes"])


def test_a_study_of_what_others_did_not_ask_estimates_that_rest(ifir_db):
    first = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["naturalness"], annotators=["a0"],
                         settings=StudySettings(group_fraction=0.5, per_group=2, overlap=1, seed=1))["study_id"]
    asked = {it["instance_id"] for it in studies.items_of_study(ifir_db, first)}
    second = create_study(ifir_db, project=get_project(ifir_db, "ifir"), questions=["naturalness"], annotators=["a0"],
                          settings=StudySettings(group_fraction=0.5, per_group=2, overlap=1, seed=1, skip_covered=True))
    assert studies.get_study(ifir_db, second["study_id"])["settings"]["skipped_studies"] == [first]
    d = study_design(ifir_db, second["study_id"])
    assert not asked & set(d["unit_group"])  # the population it estimates is the rest of the benchmark
    assert sum(d["group_units"].values()) == 66 - len(asked)
    assert any(f"studies {first} did not ask" in n and "not of all of it" in n for n in d["notes"])


def test_the_setup_page_allocates_a_total_over_the_domains(ifir_db, db_path, monkeypatch):
    from tests.builders import signed_in_page

    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    auth.add_user(ifir_db, "lead", "lead", "pw")
    at = signed_in_page(ifir_db, "pages/study_setup.py", "lead")
    at.multiselect(key="study_questions").set_value(["naturalness"])
    at.multiselect(key="study_annotators").set_value(["a0"])
    at.number_input(key="study_overlap").set_value(1)
    at.checkbox(key="study_stratify").check()
    at.number_input(key="study_fraction").set_value(0.3)
    at.selectbox(key="study_rates").set_value("proportional")
    at.button(key="FormSubmitter:study_form-Create study").click().run()
    assert not at.exception and not at.error
    s = studies.list_studies(ifir_db)[-1]
    assert s["settings"]["allocation"] == "proportional" and s["settings"]["subset_fraction"] is None
    assert _domains(ifir_db, s["id"]) == {"fiqa": 6, "aila": 3, "pm": 1}
    at.checkbox(key="study_stratify").check()
    at.multiselect(key="study_annotators").set_value(["a0"])
    at.number_input(key="study_overlap").set_value(1)
    at.selectbox(key="study_rates").set_value("table")  # the table's default: 0.1 in every domain
    at.button(key="FormSubmitter:study_form-Create study").click().run()
    at.button(key="study_create_anyway").click().run()  # it re-asks a few instances of the first study
    assert not at.exception and not at.error
    s = studies.list_studies(ifir_db)[-1]
    assert s["settings"]["domain_fractions"] == {"aila": 0.1, "fiqa": 0.1, "pm": 0.1}
