"""InfoSearch validation loop: condition items for the changed and reversed modes built from the
original positives, the validated qrels they produce, and WISE / SICR / p-MRR per dimension on
published and validated qrels (hand-checked against evaluation.infosearch on the stored runs)."""
from dataclasses import replace

import pytest

from annotation.outcomes.qrels_builds import IncompleteStudy, build_versions, store_build
from annotation.questions.study import question
from evaluation.infosearch import infosearch_metrics
from evaluation.runner import run_eval
from formats.readers import parse
from storage import projects, studies
from storage.eval_runs import load_eval_run
from storage.projects import import_bundle
from tests.builders import CONDITION_ANSWERS as ANSWERS, DIMENSIONS, INFOSEARCH_FIXTURE as FIXTURE, answer_all
from storage.projects import get_project

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL

DISSENT = {("reversed", "aud-1", "is-d1"): "Yes"}


@pytest.fixture
def project(demo):
    db, _ = demo
    b = parse("infosearch", [FIXTURE])
    b = replace(b, queries=[replace(q, subset=DIMENSIONS[q.query_id]) for q in b.queries])
    import_bundle(db, "is", b, fmt="infosearch")
    return db, projects.get_project(db, "is")["id"]


def test_condition_question_is_registered():
    q = question("condition")
    assert q.prompt == "Does this document satisfy the instruction's condition?" and q.categories == ("Yes", "No")


def test_condition_study_validated_qrels_and_metrics_per_dimension(project, run_cli, db_path):
    db, pid = project
    code, out, err = run_cli("study", "create", "--db", db_path, "--project", "is", "--questions", "condition",
                             "--annotators", "ann1,ann2,ann3", "--group-fraction", "1", "--json")
    assert code == 0, err
    import json

    created = json.loads(out)
    sid = created["study_id"]
    # 2 queries x 3 originally relevant documents x 2 modes, each for 3 annotators
    assert (created["items"], created["items_by_mode"], created["assignments"]) == (12, {"changed": 6, "reversed": 6}, 36)
    items = studies.items_of_study(db, sid)
    assert {(it["payload"]["mode"], it["payload"]["qid"], it["doc_id"]) for it in items} == set(ANSWERS)
    assert all(it["instance_id"].endswith(it["payload"]["mode"]) for it in items)

    answer_all(db, sid, ["ann1", "ann2"])
    with pytest.raises(IncompleteStudy, match="24 of 36 planned labels"):  # a third label is planned per item
        build_versions(db, projects.get_project(db, "is"), [sid])
    answer_all(db, sid, ["ann3"], DISSENT)
    builds = build_versions(db, projects.get_project(db, "is"), [sid])
    changed, reversed_ = builds["changed-validated"], builds["reversed-validated"]
    assert changed.qrels == {"aud-1": {"is-d1": 1, "is-d2": 0, "is-d3": 0}, "lang-1": {"is-d3": 1, "is-d1": 0, "is-d2": 1}}
    assert reversed_.qrels == {"aud-1": {"is-d1": 0, "is-d2": 1, "is-d3": 0}, "lang-1": {"is-d3": 0, "is-d1": 1, "is-d2": 0}}
    assert changed.counts["changed"] == 0  # lang-1/is-d2 and aud-1/is-d3 were absent (None) from the published qrels
    prov = {(p["qid"], p["doc_id"]): p for p in reversed_.provenance}
    assert prov[("aud-1", "is-d1")]["provenance"] == "majority" and prov[("aud-1", "is-d1")]["label_counts"] == {"No": 2, "Yes": 1}
    assert prov[("lang-1", "is-d3")]["provenance"] == "unanimous"
    assert prov[("lang-1", "is-d2")]["published"] is None
    for b in builds.values():
        store_build(db, projects.get_project(db, "is"), b)
    assert projects.qrels(db, pid, "changed") == {"aud-1": {"is-d1": 1, "is-d2": 0}, "lang-1": {"is-d3": 1, "is-d1": 0}}

    rid = run_eval(db, projects.get_project(db, "is"), model="bm25", template="instruction_query", qrels_version="changed-validated")
    r = load_eval_run(db, rid)
    s = r["settings"]
    run_og, run_ins = (s["paired_run"]["run"], r["run"]) if s["variant"] == "changed" else (r["run"], s["paired_run"]["run"])
    run_rev = s["paired_run"]["reversed"]["run"]
    info = s["evaluation"]["infosearch"]
    for version in ("changed", "changed-validated"):
        ref = infosearch_metrics(projects.qrels(db, pid, "original"), projects.qrels(db, pid, version), run_og, run_ins, run_rev)
        got = info["by_qrels"][version]
        for name in ("WISE", "SICR", "p-MRR"):
            assert got["overall"][name] == pytest.approx(ref[name]) and r["metrics"][f"{name}(qrels='{version}')"] == pytest.approx(ref[name])
            for qid, dim in DIMENSIONS.items():  # one query per dimension here
                assert got["by_dimension"][dim][name] == pytest.approx(ref["per_query"][qid][name])
        assert set(got["by_dimension"]) == {"Audience", "Language"}
    # the validated instruction qrels add lang-1/is-d2 as a positive: two positives for lang-1 now
    assert info["by_qrels"]["changed-validated"]["by_dimension"]["Language"]["n_queries"] == 1
    assert r["metrics"]["WISE"] == pytest.approx(info["by_qrels"]["changed-validated"]["overall"]["WISE"])
    code, out, err = run_cli("eval", "run", "--db", db_path, "--project", "is", "--model", "bm25",
                             "--template", "instruction_query", "--qrels-version", "changed-validated")
    assert code == 0, err
    assert "InfoSearch on original vs changed-validated" in out and "Language" in out and "Audience" in out
    code, out, err = run_cli("eval", "compare", "--db", db_path, "--project", "is", "--json")
    cmp = json.loads(out)
    (row,) = cmp["infosearch"]
    assert set(row["by_qrels"]) == {"changed", "changed-validated"}
    assert row["by_qrels"]["changed"]["by_dimension"]["Audience"]["WISE"] == pytest.approx(
        info["by_qrels"]["changed"]["by_dimension"]["Audience"]["WISE"])
    code, out, err = run_cli("eval", "compare", "--db", db_path, "--project", "is")
    assert code == 0 and "InfoSearch bm25 [instruction_query] on original vs changed-validated" in out


def test_a_condition_study_samples_its_subset_fraction_of_each_dimension(demo):
    """2 dimensions x 10 queries, ``subset_fraction=0.5``: 5 queries of each dimension (the share of
    each dimension, as other studies sample per subset), not the default group fraction's 2."""
    from annotation.studies import StudySettings, create_condition_study
    from formats.bundle import Bundle, Document, Instance, Qrel, Query

    db, _ = demo
    b = Bundle(documents=[Document("d", "a passage")])
    for dim in ("Language", "Audience"):
        for n in range(10):
            q = f"{dim}-{n}"
            b.queries.append(Query(q, f"query {n}", dim))
            b.instances += [Instance(f"{q}-{v}", q, q, "" if v == "og" else f"{v} instruction", v)
                            for v in ("og", "changed", "reversed")]
            b.qrels.append(Qrel(q, "d", 1, "original"))
    import_bundle(db, "dims", b, fmt="infosearch")
    created = create_condition_study(db, project=get_project(db, "dims"), annotators=["ann1"],
                                     settings=StudySettings(subset_fraction=0.5, overlap=1, seed=3))
    chosen = {it["payload"]["qid"] for it in studies.items_of_study(db, created["study_id"])}
    assert sorted(q.split("-")[0] for q in chosen) == ["Audience"] * 5 + ["Language"] * 5
    default = create_condition_study(db, project=get_project(db, "dims"), annotators=["ann1"], settings=StudySettings(overlap=1))
    assert len({it["payload"]["qid"] for it in studies.items_of_study(db, default["study_id"])}) == 2  # 0.08 x 20
