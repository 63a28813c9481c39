"""Validated qrels versions built from named studies: provenance, the unresolved block, the
completeness check, and a second (unlabelled) study that must not change what the first validated."""
import json
import time
from pathlib import Path

import pytest

from annotation import workspace
from annotation.outcomes.qrels_builds import (IncompleteStudy, UnresolvedJudgments, build_validated, build_versions,
                                     store_build, store_versions, study_completeness)
from exports.validated import export_project, study_choices
from formats.bundle import Bundle, Qrel
from formats.trec_io import read_qrels
from storage import projects, studies
from storage.errors import IFJudgeError
from tests.builders import second_study, user_row
from storage.projects import get_project

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL


def _lines(path):
    return [ln for ln in path.read_text().splitlines() if ln.strip()]


def test_provenance_counts_by_hand(labelled):
    db, sid, order = labelled
    b = build_validated(db, projects.get_project_by_id(db, 1), [sid])
    by = {(p["qid"], p["doc_id"]): p for p in b.provenance}
    # screen 1: validity Y,Y,Y and naturalness Y,Y,N -> majority; screen 2: Y,N,N / Y,N,N -> majority, dropped;
    # screens 3-8: all Yes -> unanimous; one qrels line per InstructIR instance
    n_original = sum(len(d) for d in projects.qrels(db, 1, "original").values())
    assert b.counts["provenance_unanimous"] == 6 and b.counts["provenance_majority"] == 2
    assert b.counts["provenance_not checked"] == n_original - 8 and b.counts["unresolved"] == 0
    dropped = [p for p in b.provenance if p["relevance"] is None]
    assert [p["qid"] for p in dropped] == [order[1]] and dropped[0]["reason"] == "invalid, unnatural"
    first = next(p for p in b.provenance if p["qid"] == order[0])
    assert first["label_counts"]["validity"] == {"Yes": 3} and first["label_counts"]["naturalness"] == {"Yes": 2, "No": 1}
    assert first["studies"] == [sid]
    build_id = store_build(db, projects.get_project(db, "demo"), b, created_by="lead")
    stored = projects.qrels_builds(db, 1, "validated", with_provenance=True)[0]
    assert stored["id"] == build_id and [s["id"] for s in stored["studies"]] == [sid]
    assert stored["studies"][0]["labelled"] == stored["studies"][0]["planned"] == 72
    assert len(stored["provenance"]) == len(by)
    assert projects.qrels(db, 1, "validated") == b.qrels
    assert order[1] not in b.qrels and len(b.qrels) == len(projects.qrels(db, 1, "original")) - 1


def test_store_versions_builds_and_stores_each_version_or_nothing(labelled):
    db, sid, order = labelled
    sid2 = second_study(db)  # no label yet: every judgment it names is unresolved
    with pytest.raises(IncompleteStudy):
        store_versions(db, projects.get_project(db, "demo"), [sid2])
    with pytest.raises(UnresolvedJudgments):
        store_versions(db, projects.get_project(db, "demo"), [sid2], allow_incomplete=True)
    assert projects.qrels_builds(db, 1) == [] and "validated" not in projects.qrels_versions(db, 1)

    stored = store_versions(db, projects.get_project(db, "demo"), [sid], created_by="lead")
    assert list(stored) == ["validated"]
    build_id, build = stored["validated"]
    # as the provenance test counts by hand: 6 unanimous + 2 majority screens, screen 2 dropped
    assert build.counts["provenance_unanimous"] == 6 and build.counts["provenance_majority"] == 2
    row = projects.qrels_builds(db, 1)[0]
    assert (row["id"], row["version"], row["created_by"]) == (build_id, "validated", "lead")
    assert [s["id"] for s in row["studies"]] == [sid] and row["counts"] == build.counts
    original = projects.qrels(db, 1, "original")
    assert projects.qrels(db, 1, "validated") == {q: d for q, d in original.items() if q != order[1]}


def test_published_versions_are_never_overwritten(labelled):
    db, sid, _ = labelled
    with pytest.raises(IFJudgeError, match="published and is never overwritten"):
        projects.replace_qrels(db, 1, "changed", {"q": {"d": 1}})
    b = Bundle(qrels=[Qrel("q", "d", 1, "validated")])
    with pytest.raises(IFJudgeError, match="cannot be imported"):
        projects.import_bundle(db, "other", b, fmt="beir")


def test_second_unlabelled_study_does_not_change_what_the_first_validated(labelled, tmp_path):
    db, sid, order = labelled
    export_project(db, projects.get_project(db, "demo"), "trec", tmp_path / "a", study_ids=[sid])
    before = _lines(tmp_path / "a" / "qrels.validated.txt")
    sid2 = second_study(db)
    choices = {c["id"]: c for c in study_choices(db, projects.get_project_by_id(db, 1))}
    assert choices[sid2]["labelled"] == 0 and choices[sid2]["planned"] > 0 and choices[sid]["complete"]
    manifest = export_project(db, projects.get_project(db, "demo"), "trec", tmp_path / "b", study_ids=[sid])
    assert _lines(tmp_path / "b" / "qrels.validated.txt") == before
    assert order[1] not in {ln.split()[0] for ln in before}
    assert [s["id"] for s in manifest["studies"]] == [sid] and manifest["counts"]["instances_dropped"] == 1
    # naming the unfinished study asks first; confirmed, its missing labels are unresolved, not "kept"
    with pytest.raises(IncompleteStudy, match=f"study {sid2} .*0 of .*--allow-incomplete"):
        export_project(db, projects.get_project(db, "demo"), "trec", tmp_path / "c", study_ids=[sid, sid2])
    m = export_project(db, projects.get_project(db, "demo"), "trec", tmp_path / "c", study_ids=[sid, sid2], allow_incomplete=True,
                       unresolved="keep-published")
    assert order[1] not in read_qrels(tmp_path / "c" / "qrels.validated.txt")  # pooled labels still drop it
    assert {s["id"] for s in m["studies"]} == {sid, sid2}


def test_without_a_study_only_published_versions_are_exported(labelled, tmp_path):
    db, sid, _ = labelled
    m = export_project(db, projects.get_project(db, "demo"), "trec", tmp_path)
    assert {f["path"] for f in m["files"]} == {"qrels.original.txt", "qrels.changed.txt"} and m["studies"] == []
    with pytest.raises(IFJudgeError, match="name the study"):
        export_project(db, projects.get_project(db, "demo"), "report", tmp_path)


def test_unresolved_judgments_block_until_the_lead_chooses(labelled, tmp_path):
    db, sid, _ = labelled
    sid2 = second_study(db)
    screen = studies.items_of_study(db, sid2, "validity")[0]["screen"]
    u = user_row(db, "ann1")
    s = workspace.open_screen(db, sid2, u, screen)
    workspace.submit_screen(db, s, u, {"validity": {"value": "No", "reason": "r"}, "naturalness": {"value": "No", "reason": "r"}},
                            started_at=time.time() - 1)
    with pytest.raises(UnresolvedJudgments) as exc:
        build_versions(db, projects.get_project(db, "demo"), [sid2], allow_incomplete=True)
    assert {r["qid"] for r in exc.value.rows} >= {screen} and "awaiting labels" in str(exc.value)
    assert "--unresolved keep-published|drop|relevant|not-relevant" in str(exc.value)
    kept = build_versions(db, projects.get_project(db, "demo"), [sid2], allow_incomplete=True, unresolved="keep-published")["validated"]
    dropped = build_versions(db, projects.get_project(db, "demo"), [sid2], allow_incomplete=True, unresolved="drop")["validated"]
    assert screen in kept.qrels and screen not in dropped.qrels  # one "No" does not decide the instance
    assert all(p["provenance"] == "unresolved" for p in kept.unresolved)
    with pytest.raises(IFJudgeError, match="relevant / not-relevant apply to document judgments"):
        build_versions(db, projects.get_project(db, "demo"), [sid2], allow_incomplete=True, unresolved="relevant")
    m = export_project(db, projects.get_project(db, "demo"), "jsonl", tmp_path, study_ids=[sid2], allow_incomplete=True, unresolved="drop")
    assert m["unresolved_policy"] == "drop" and m["qrels_versions"]["validated"]["unresolved"]
    assert study_completeness(db, sid2)["labelled"] == 2


def test_export_cli_names_studies_and_refuses_without_choices(run_cli, labelled, db_path, tmp_path):
    db, sid, _ = labelled
    sid2 = second_study(db)
    code, out, err = run_cli("export", "--db", db_path, "--project", "demo", "--format", "trec", "--out", tmp_path / "out",
                             "--study", sid, "--study", sid2)
    assert code == 2 and "--allow-incomplete" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_cli("export", "--db", db_path, "--project", "demo", "--format", "trec", "--out", tmp_path / "out",
                             "--study", sid, "--study", sid2, "--allow-incomplete")
    assert code == 2 and "unresolved judgment(s) for validated" in err and "no labels" in err.splitlines()[1]
    code, out, err = run_cli("export", "--db", db_path, "--project", "demo", "--format", "trec", "--out", tmp_path / "out",
                             "--study", sid, "--study", sid2, "--allow-incomplete", "--unresolved", "keep-published")
    assert code == 0, err
    assert f"built from study {sid2} (second): 0/" in out
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["unresolved_policy"] == "keep-published" and len(manifest["studies"]) == 2
    code, out, err = run_cli("validate", "--db", db_path, "--study", sid)
    assert code == 0 and "stored" in out and projects.qrels_builds(db, 1, "validated")


def test_rejudging_report_and_monitor_give_randolph_fleiss_and_percent_agreement(demo, tmp_path):
    from annotation.monitoring import monitor
    from annotation.narratives import versions as narrative_versions
    from tests.builders import ADDED, judge, save_narrative

    db, _ = demo
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    r = save_narrative(db, newest + ADDED)
    judge(db, r["study_id"], "ann1", {"f-doc-3": "not relevant"})
    judge(db, r["study_id"], "ann2", {"f-doc-3": "not relevant", "f-doc-4": "not relevant"})
    judge(db, r["study_id"], "ann3", {"f-doc-3": "not relevant"})
    rows = {x["statistic"]: x for x in monitor.table7(db, r["study_id"], n_boot=0)}
    # 5 documents x 3 labels; f-doc-4 split 2-1, the others unanimous: P_o = (4 + 1/3) / 5
    assert rows["Percent agreement"]["value"] == pytest.approx((4 + 1 / 3) / 5)
    assert rows["kappa coefficient (Randolph, 2005)"]["value"] == pytest.approx((((4 + 1 / 3) / 5) - 0.5) / 0.5)
    assert "Fleiss kappa" in rows
    m = export_project(db, projects.get_project(db, "demo"), "report", tmp_path, study_ids=[r["study_id"]])
    md = (tmp_path / "report.md").read_text()
    assert "Percent agreement" in md and "Fleiss kappa" in md and "Completeness: 15 of 15 planned labels" in md
    # an expert edit's re-judging is a new instruction version, named as such (not a correction of changed)
    assert "## Qrels version `edited-validated`" in md and m["qrels_versions"]["edited-validated"]["counts"]["judgments"] == 6
    assert "changed-validated" not in m["qrels_versions"]
    # the published changed qrels are exported beside the human ones, unchanged
    assert m["qrels_versions"]["changed"] == {"built_from": "published"}


def test_table7_gives_top1_excluding_ties_and_the_number_of_ties(labelled, tmp_path):
    from annotation.monitoring import monitor
    from annotation.outcomes.items import labels_frame
    from annotation.agreement.majority import majority_index

    db, sid, _ = labelled
    rows = {r["statistic"]: r["value"] for r in monitor.table7(db, sid, n_boot=0)}
    frame, cats, gold = labels_frame(db, sid, "best_passage")
    counts = frame.pivot_table(index="item", columns="label", aggfunc="size", fill_value=0).reindex(columns=cats, fill_value=0)
    winner = majority_index(counts.to_numpy())
    ties = int((winner < 0).sum())
    correct = sum(cats[w] == gold[i] for i, w in zip(counts.index, winner) if w >= 0)
    assert rows["Number of ties (no majority)"] == ties
    assert rows["Top-1 Accuracy"] == pytest.approx(correct / len(counts)) == pytest.approx(7 / 8)
    assert rows["Top-1 Accuracy excluding ties"] == pytest.approx(correct / (len(counts) - ties))
    export_project(db, projects.get_project(db, "demo"), "report", tmp_path, study_ids=[sid])
    md = (tmp_path / "report.md").read_text()
    assert f"| Number of ties (no majority) | {ties} |" in md and "Top-1 Accuracy excluding ties" in md


@pytest.mark.parametrize("fmt", ["followir", "mteb"])
def test_followir_project_rejudged_exports_the_validated_changed_qrels_with_the_new_narrative(demo, tmp_path, run_cli, db_path,
                                                                                             fmt):
    """A FollowIR project: the expert edits 303, three annotators re-judge; the MTEB/FollowIR export
    from the re-judging study holds qrels_changed = the human outcome and instruction_changed = the
    re-judged narrative, and reads back; p-MRR on its files equals p-MRR on the stored versions."""
    from annotation.narratives import versions as narrative_versions
    from evaluation.pmrr import p_mrr
    from formats.readers import parse
    from tests.builders import judge

    db, _ = demo
    fixture = Path(__file__).parent / "fixtures" / "importers" / "followir"
    projects.import_bundle(db, "fir", parse("followir", [fixture]), fmt="followir")
    pid = projects.get_project(db, "fir")["id"]
    new = "Relevant documents state a scientific achievement of the Hubble telescope, not FT911-1's topic."
    r = narrative_versions.save_narrative(db, project=get_project(db, "fir"), query_id="303", text=new, author="expert",
                                  annotators=["ann1", "ann2", "ann3"])
    for name in ("ann1", "ann2", "ann3"):
        judge(db, r["study_id"], name, {"FT911-1": "not relevant"})
    m = export_project(db, projects.get_project(db, "fir"), fmt, tmp_path / "m", study_ids=[r["study_id"]])
    assert [s["id"] for s in m["studies"]] == [r["study_id"]]
    back = parse(fmt, [tmp_path / "m"])  # hub v1 jsonl/tsv, or MTEB v2 parquet
    changed = {}
    for q in back.qrels:
        if q.version == "changed":
            changed.setdefault(q.qid, {})[q.doc_id] = q.relevance
    validated = projects.qrels(db, pid, "changed") | {"303": {"FT911-1": 0, "FT911-2": 1}}
    assert changed["303"] == validated["303"] and changed["404"] == projects.qrels(db, pid, "changed")["404"]
    assert {i.instruction for i in back.instances if i.query_id == "303" and i.variant == "changed"} == {new}
    run_og = {"303": {"FT911-1": 0.9, "FT911-2": 0.5}, "404": {"FT911-3": 0.9, "FT911-4": 0.5}}
    run_new = {"303": {"FT911-1": 0.4, "FT911-2": 0.5}, "404": {"FT911-3": 0.9, "FT911-4": 0.5}}
    original = projects.qrels(db, pid, "original")
    # 303: FT911-1 relevant -> not relevant, rank 1 -> 2: 1 - 1/2 = 0.5
    assert p_mrr(original, changed, run_og, run_new)["per_query"]["303"] == pytest.approx(0.5)
