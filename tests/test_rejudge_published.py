"""FollowIR: re-judging the PUBLISHED changed instruction, with no edit (issue 19, item 5).

The demo's query f-robot: relevant under the original qrels f-doc-1..5, not relevant f-doc-6;
published changed qrels f-doc-1 = f-doc-2 = 1, f-doc-3 = f-doc-4 = f-doc-5 = f-doc-6 = 0.
"""
from __future__ import annotations

import json

import pytest

from annotation import workspace
from annotation.narratives import versions as narrative_versions, rejudging
from annotation.outcomes import qrels_builds
from evaluation.pmrr import p_mrr
from storage import narratives as store
from storage import projects, studies, users
from storage.errors import IFJudgeError, PermissionDenied
from tests.builders import ADDED, ANNOTATORS, REJUDGE_ANSWERS, judge, narratives_page, published_rejudged_demo
from storage.projects import get_project

pytestmark = pytest.mark.both_engines

# published_rejudged_demo (tests/builders.py): f-doc-1 relevant (published 1), f-doc-2 2:1 not relevant (published 1), f-doc-3 relevant (published 0),
# f-doc-4 not relevant (published 0), f-doc-5 2:1 relevant but adjudicated not relevant (published 0),
# f-doc-6 the control, judged relevant by all three
EXPECTED = {"f-robot": {"f-doc-1": 1, "f-doc-2": 0, "f-doc-3": 1, "f-doc-4": 0, "f-doc-5": 0, "f-doc-6": 0}}


def test_a_lead_starts_it_without_an_edit_and_the_screens_show_the_published_text(demo):
    db, _ = demo
    pid = projects.get_project(db, "demo")["id"]
    before = store.versions(db, pid, "f-robot")
    with pytest.raises(PermissionDenied, match="only a lead"):
        narrative_versions.rejudge_published(db, project=get_project(db, "demo"), author="expert", annotators=ANNOTATORS)
    r = narrative_versions.rejudge_published(db, project=get_project(db, "demo"), author="lead", annotators=ANNOTATORS, controls=1)
    assert store.versions(db, pid, "f-robot") == before  # no version is added
    assert (r["queries"], r["items"], r["documents"], r["controls"], r["assignments"]) == (["f-robot"], 6, 5, 1, 18)
    assert r["per_annotator"] == {"ann1": 6, "ann2": 6, "ann3": 6}
    published = narrative_versions.published_changed_version(before)
    items = studies.items_of_study(db, r["study_id"])
    assert {it["narrative_version_id"] for it in items} == {published["id"]}
    assert [it["doc_id"] for it in items if it["payload"]["control"]] == ["f-doc-6"]
    screen = workspace.open_screen(db, r["study_id"], users.get_user(db, "ann1"))
    assert screen.narrative == published["text"]  # judged under instruction_changed as imported
    with pytest.raises(IFJudgeError, match="already being re-judged"):
        narrative_versions.rejudge_published(db, project=get_project(db, "demo"), author="lead", annotators=ANNOTATORS,
                                             query_ids=["f-robot"])
    # an expert edit afterwards is its own study and does not withdraw the published re-judging's screens
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    edit = narrative_versions.save_narrative(db, project=get_project(db, "demo"), query_id="f-robot", author="expert",
                                             text=newest + ADDED, annotators=ANNOTATORS)
    assert edit["study_id"] != r["study_id"] and edit["withdrawn"] == 0
    assert len(studies.assignment_rows(db, r["study_id"])) == 18


def test_changed_validated_is_compared_with_published_changed_judgment_by_judgment(demo):
    db, _ = demo
    pid = projects.get_project(db, "demo")["id"]
    published_rejudged_demo(db)
    summary = rejudging.rejudge_summary(db, projects.get_project(db, "demo"), kind="published")
    q = summary["queries"][0]
    assert all(d["title"] for d in summary["documents"])
    untitled = rejudging.rejudge_summary(db, projects.get_project(db, "demo"), kind="published", titles=False)  # what a build reads
    assert [d["title"] for d in untitled["documents"]] == [""] * len(summary["documents"])
    assert untitled == {**summary, "documents": [{**d, "title": ""} for d in summary["documents"]]}
    # resolved main documents: 1 agrees (1/1), 2 differs (0/1), 3 differs (1/0), 4 agrees, 5 agrees (adjudicated 0/0)
    assert (q["agree_published"], q["disagree_published"], q["flipped"]) == (3, 2, 3)
    assert (q["controls"], q["controls_judged_relevant"]) == (1, 1)
    stored = qrels_builds.store_changed_qrels(db, projects.get_project(db, "demo"), created_by="lead")
    assert (stored["version"], stored["changed"], stored["controls"]) == (
        "changed-validated", 2, {"documents": 1, "resolved": 1, "judged_relevant": 1})
    assert projects.qrels(db, pid, "changed-validated") == EXPECTED
    assert projects.qrels(db, pid, "changed")["f-robot"]["f-doc-3"] == 0  # the published version is untouched
    build = projects.qrels_builds(db, pid, "changed-validated", with_provenance=True)[0]
    assert (build["base_version"], build["settings"]["kind"]) == ("changed", "published")
    prov = {p["doc_id"]: (p["published"], p["relevance"], p["provenance"]) for p in build["provenance"]}
    assert prov == {
        "f-doc-1": (1, 1, "unanimous"), "f-doc-2": (1, 0, "majority"), "f-doc-3": (0, 1, "unanimous"),
        "f-doc-4": (0, 0, "unanimous"), "f-doc-5": (0, 0, "adjudicated"),
        "f-doc-6": (0, 0, "not checked"),  # the control: reported, never written as a judgment
    }


def test_controls_judged_relevant_are_no_pmrr_changed_documents(demo):
    db, _ = demo
    pid = projects.get_project(db, "demo")["id"]
    published_rejudged_demo(db)
    qrels_builds.store_changed_qrels(db, projects.get_project(db, "demo"))
    run_og = {"f-robot": {"f-doc-1": .9, "f-doc-2": .8, "f-doc-3": .7, "f-doc-4": .6, "f-doc-5": .5, "f-doc-6": .4}}
    run_new = {"f-robot": {"f-doc-6": .95, "f-doc-1": .9, "f-doc-3": .85, "f-doc-4": .8, "f-doc-2": .3, "f-doc-5": .2}}
    pm = p_mrr(projects.qrels(db, pid, "original"), projects.qrels(db, pid, "changed-validated"), run_og, run_new)
    # changed documents (relevant -> not relevant): f-doc-2 rank 2 -> 5: 1 - 2/5; f-doc-4 4 -> 4: 0;
    # f-doc-5 5 -> 6: 1 - 5/6. The control f-doc-6 (0, judged relevant; rank 6 -> 1) is not one of them.
    assert pm["n_documents"] == 3
    assert pm["p-MRR"] == pytest.approx((1 - 2 / 5 + 0 + 1 - 5 / 6) / 3) == pytest.approx(23 / 90)


def test_report_names_the_published_version_and_what_the_controls_show(demo, tmp_path):
    from exports.validated import export_project

    db, _ = demo
    r = published_rejudged_demo(db)
    m = export_project(db, projects.get_project(db, "demo"), "report", tmp_path, study_ids=[r["study_id"]])
    md = (tmp_path / "report.md").read_text()
    assert "## Qrels version `changed-validated` (validates the published `changed`)" in md
    assert "validates `original`" not in md
    assert ("Controls: 1 of 1 control documents (non-relevant under the original narrative) judged relevant under "
            "the published changed instruction (1 resolved)") in md
    assert m["qrels_versions"]["changed-validated"]["counts"]["changed"] == 2


def test_the_expert_edit_path_still_works_and_is_named_as_a_new_instruction(demo, tmp_path):
    from exports.validated import export_project

    db, _ = demo
    pid = projects.get_project(db, "demo")["id"]
    published = published_rejudged_demo(db)
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    edit = narrative_versions.save_narrative(db, project=get_project(db, "demo"), query_id="f-robot", author="expert",
                                             text=newest + ADDED, annotators=ANNOTATORS)
    for name in ANNOTATORS:
        judge(db, edit["study_id"], name, {"f-doc-1": "not relevant"})
    builds = qrels_builds.build_versions(db, projects.get_project(db, "demo"), [edit["study_id"], published["study_id"]])
    assert set(builds) == {"changed-validated", "edited-validated"}
    stored = qrels_builds.store_edited_qrels(db, projects.get_project(db, "demo"))
    assert stored["version"] == "edited-validated"
    # the edit starts from the original qrels: f-doc-1 flips, the other originally relevant ones stay
    assert projects.qrels(db, pid, "edited-validated") == {
        "f-robot": {"f-doc-1": 0, "f-doc-2": 1, "f-doc-3": 1, "f-doc-4": 1, "f-doc-5": 1, "f-doc-6": 0}}
    assert "changed-validated" not in projects.qrels_versions(db, pid)  # the published one is not built by an edit
    build = projects.qrels_builds(db, pid, "edited-validated")[0]
    assert build["settings"]["instructions"] == {"f-robot": edit["version_id"]}
    export_project(db, projects.get_project(db, "demo"), "report", tmp_path, study_ids=[edit["study_id"]])
    md = (tmp_path / "report.md").read_text()
    assert "## Qrels version `edited-validated` (a new instruction version: expert-edited narratives re-judged" in md


def test_runner_evaluates_each_build_with_the_instruction_that_was_judged(demo):
    from evaluation.runner import rejudged_instructions

    db, _ = demo
    pid = projects.get_project(db, "demo")["id"]
    versions = store.versions(db, pid, "f-robot")
    published_rejudged_demo(db)
    qrels_builds.store_changed_qrels(db, projects.get_project(db, "demo"))
    assert rejudged_instructions(db, pid) == {"f-robot": narrative_versions.published_changed_version(versions)["text"]}
    edit = narrative_versions.save_narrative(db, project=get_project(db, "demo"), query_id="f-robot", author="expert",
                                             text=versions[-1]["text"] + ADDED, annotators=ANNOTATORS)
    for name in ANNOTATORS:
        judge(db, edit["study_id"], name, {})
    qrels_builds.store_edited_qrels(db, projects.get_project(db, "demo"))
    # the expert's later edit does not change what changed-validated was judged under
    assert rejudged_instructions(db, pid) == {"f-robot": narrative_versions.published_changed_version(versions)["text"]}
    assert rejudged_instructions(db, pid, "edited-validated") == {"f-robot": versions[-1]["text"] + ADDED}


def test_cli_rejudge_published_summary_and_store(demo, run_cli, db_path):
    db, _ = demo
    base = ["--db", db_path, "--project", "demo"]
    code, out, err = run_cli("narrative", "rejudge-published", *base, "--author", "lead",
                             "--annotators", ",".join(ANNOTATORS), "--controls", "1", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert (r["items"], r["assignments"], r["controls"]) == (6, 18, 1)
    for name, answers in REJUDGE_ANSWERS.items():
        judge(db, r["study_id"], name, answers)
    item = next(it for it in studies.items_of_study(db, r["study_id"]) if it["doc_id"] == "f-doc-5")
    studies.add_adjudication(db, item["id"], "not relevant", "lead")
    code, out, err = run_cli("narrative", "rejudge-summary", *base, "--store", "--documents")
    assert code == 0, err
    assert "controls: 1 of 1 control documents judged relevant under the published changed instruction" in out
    assert "f-robot\tf-doc-3\tno\t1\tann1=relevant,ann2=relevant,ann3=relevant\tunanimous\t1\t0" in out
    assert "stored qrels 'changed-validated': 6 rows for 1 re-judged queries" in out and "2 differ" in out
    assert projects.qrels(db, projects.get_project(db, "demo")["id"], "changed-validated") == EXPECTED
    code, _, err = run_cli("narrative", "rejudge-published", *base, "--author", "lead", "--annotators", "ann1",
                           "--query", "f-robot")
    assert code == 2 and "already being re-judged" in err


def test_narratives_page_starts_the_published_rejudging_and_stores_changed_validated(env_db):
    db, _ = env_db
    pid = projects.get_project(db, "demo")["id"]
    at = narratives_page(db, "expert")  # an expert edits, only a lead starts the published re-judging
    assert not at.exception
    assert "Start re-judging the published instruction" not in [b.label for b in at.button]
    at = narratives_page(db, "lead")
    assert not at.exception
    at.multiselect(key=f"nar_pub_annotators:{pid}").set_value(ANNOTATORS)
    at.number_input(key=f"nar_pub_controls:{pid}").set_value(1)
    at.button[[b.label for b in at.button].index("Start re-judging the published instruction")].click().run()
    assert not at.exception and not at.error
    assert [s.value for s in at.success] == [
        "Re-judging of the published changed instruction started in study 2: 1 queries, 6 documents to judge "
        "(1 controls), 18 assignments."]
    assert "Every query with a published changed instruction is being re-judged (study 2)." in [i.value for i in at.info]
    for name, answers in REJUDGE_ANSWERS.items():
        judge(db, 2, name, answers)
    item = next(it for it in studies.items_of_study(db, 2) if it["doc_id"] == "f-doc-5")
    studies.add_adjudication(db, item["id"], "not relevant", "lead")
    at.run()
    assert at.radio(key=f"nar_kind:{pid}").value == "published"
    assert any("Controls: 1 of 1 control documents judged relevant under the published changed instruction" in c.value
               for c in at.caption)
    at.button(key=f"nar_store:{pid}:published").click().run()
    assert [s.value for s in at.success] == [
        "Stored qrels 'changed-validated': 6 rows for 1 re-judged queries (0 unresolved); 2 differ from the published "
        "changed label; the published qrels are unchanged."]
    assert projects.qrels(db, pid, "changed-validated") == EXPECTED


class EditAware:
    """A stand-in retriever: f-doc-1 ranks first, unless the instruction carries the expert's
    addition about knee surgery, which pushes it to the bottom of the six f-docs."""

    name = "edit-aware"

    def settings(self):
        return {}

    def retrieve(self, topics, documents, *, template, k, candidates, progress):
        out = {}
        for t in topics:
            scores = {f"f-doc-{i}": 1.0 - i / 10 for i in range(1, 7)}
            if "knee surgery" in (t["instruction"] or ""):
                scores["f-doc-1"] = 0.0
            out[t["qid"]] = scores
        return out


def test_eval_run_scores_edited_validated_with_the_edited_narrative(demo):
    from evaluation.runner import run_eval
    from storage.eval_runs import load_eval_run

    db, _ = demo
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    edit = narrative_versions.save_narrative(db, project=get_project(db, "demo"), query_id="f-robot", author="expert",
                                             text=newest + ADDED, annotators=ANNOTATORS)
    for name in ANNOTATORS:
        judge(db, edit["study_id"], name, {"f-doc-1": "not relevant"})
    qrels_builds.store_edited_qrels(db, projects.get_project(db, "demo"))
    r = load_eval_run(db, run_eval(db, projects.get_project(db, "demo"), model=EditAware(), qrels_version="edited-validated"))
    # original vs edited-validated: one changed document, f-doc-1 (1 -> 0); og run ranks it 1st, the
    # changed run made with the EDITED narrative ranks it 6th: 1 - 1/6 (with the imported changed
    # instruction it would stay 1st: 0)
    assert r["metrics"]["p-MRR(qrels='edited-validated')"] == pytest.approx(5 / 6)
    assert r["metrics"]["p-MRR"] == pytest.approx(5 / 6)
    ev = r["settings"]["evaluation"]["p-MRR"]
    assert ev["qrels"] == ["original", "edited-validated"]
    assert ev["changed_run_instructions"]["edited-validated"] == "re-judged narratives"
    assert ev["changed_run_instructions"]["changed"] == "imported"
