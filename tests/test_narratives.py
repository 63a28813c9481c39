"""The FollowIR workflow: word diff, narrative versions, re-judging rounds, qrels_changed, export."""
from __future__ import annotations

import json

import pytest

from annotation import workspace
from annotation.narratives import versions as narrative_versions, rejudging
from annotation.outcomes import qrels_builds
from annotation.narratives.diff import diff_counts, diff_rows, diff_text, same_words, word_diff
from exports import followir
from ui.markdown import diff_markdown
from annotation.questions.study import GUIDELINES
from storage import narratives as store
from storage import projects, studies, users
from formats.bundle import Bundle, Document, Instance, Narrative, Qrel, Query
from storage.errors import IFJudgeError, NotFound, PermissionDenied
from formats.readers import parse
from tests.builders import ADDED, ANNOTATORS, item_shown, judge, narratives_page, save_narrative as save, send, signed_in_page
from storage.projects import get_project

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL


def ops(original, modified):
    return [(s.op, " ".join(s.tokens)) for s in word_diff(original, modified)]


# ------------------------------------------------------------------------------------------ diff


def test_diff_marks_additions_and_removals():
    assert ops("robots in surgery on patients", "robots in cardiac surgery") == [
        ("equal", "robots in"), ("insert", "cardiac"), ("equal", "surgery"), ("delete", "on patients"),
    ]
    assert ops("about robots", "about surgical robots, not toys") == [
        ("equal", "about"), ("insert", "surgical"), ("equal", "robots"), ("insert", ", not toys"),
    ]
    assert diff_counts(word_diff("a b c", "a x c d")) == {"added": 2, "removed": 1}


def test_diff_treats_punctuation_as_tokens_and_ignores_whitespace():
    assert ops("outcomes, costs.", "outcomes; costs.") == [
        ("equal", "outcomes"), ("delete", ","), ("insert", ";"), ("equal", "costs ."),
    ]
    assert ops("a  b\nc", "a b c") == [("equal", "a b c")]
    assert same_words("a  b\n c ", "a b c")
    assert diff_text(word_diff("costs, training.", "costs.")) == "costs[-, training-]."


def test_diff_of_empty_texts():
    assert ops("", "") == []
    assert ops("", "new words") == [("insert", "new words")]
    assert ops("old words", "") == [("delete", "old words")]
    assert diff_markdown([]) == ""
    assert diff_rows(word_diff("x", "")) == [{"change": "removed", "text": "x"}]


def test_diff_markdown_escapes_every_markdown_character_of_the_words():
    md = diff_markdown(word_diff("plain text", "plain **bold** :red[x] <b>y</b> $z$ text"))
    assert md.startswith("plain :green-background[**")
    inserted = md[len("plain :green-background[**"):md.rindex("**]")]
    # no unescaped Markdown / directive / maths / HTML character survives in the inserted words
    assert inserted == r"\*\*bold\*\* \:red\[x\] \<b\>y\<\/b\> \$z\$"
    removed = diff_markdown(word_diff("keep [link](http://x)", "keep"))
    assert removed == r"keep :red-background[~~\[link\]\(http\:\/\/x\)~~]"


# ------------------------------------------------------------------------------------------ versions


def test_versions_form_a_parent_chain(demo):
    db, _ = demo
    state = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")
    og, changed = state["versions"]
    assert (og["variant"], og["parent_id"], changed["parent_id"]) == ("og", None, og["id"])
    first = save(db, changed["text"] + ADDED)
    assert first["created"] and first["parent_id"] == changed["id"]
    second = save(db, og["text"] + " Only hospitals in Europe.", base_version_id=og["id"])
    assert second["parent_id"] == og["id"]
    vs = store.versions(db, state["project_id"], "f-robot")
    assert [(v["id"], v["parent_id"], v["author"], v["variant"]) for v in vs[2:]] == [
        (first["version_id"], changed["id"], "expert", "changed"), (second["version_id"], og["id"], "expert", "changed"),
    ]
    assert vs[2]["text"] == changed["text"] + ADDED  # earlier versions stay readable
    assert all(v["created_at"] for v in vs)


def test_unchanged_save_creates_nothing(demo):
    db, _ = demo
    state = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")
    before = len(state["versions"])
    for text in (state["newest"]["text"], "  " + state["newest"]["text"].replace(" ", "\n", 3) + "\n",
                 state["original"]["text"]):
        result = save(db, text)
        assert result["created"] is False and "same words" in result["reason"]
    assert len(store.versions(db, state["project_id"], "f-robot")) == before
    assert store.rejudge_study_id(db, state["project_id"]) is None
    with pytest.raises(IFJudgeError, match="empty"):
        save(db, "  ")


def test_only_experts_and_leads_edit_and_stale_edits_are_refused(demo):
    db, _ = demo
    state = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")
    with pytest.raises(PermissionDenied):
        save(db, state["newest"]["text"] + ADDED, author="ann1")
    opened_on = state["newest"]["id"]
    save(db, state["newest"]["text"] + ADDED, author="lead", expected_newest_id=opened_on)
    with pytest.raises(store.StaleEdit, match="saved by lead"):
        save(db, state["newest"]["text"] + " Other.", expected_newest_id=opened_on)
    assert len(store.versions(db, state["project_id"], "f-robot")) == 3
    with pytest.raises(NotFound):
        narrative_versions.narrative_state(db, get_project(db, "demo"), "q1")


# ------------------------------------------------------------------------------------------ items


def test_save_creates_relevance_items_for_the_originally_relevant_documents(demo):
    db, _ = demo
    state = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")
    r = save(db, state["newest"]["text"] + ADDED)
    assert (r["items"], r["documents"], r["controls"], r["assignments"]) == (5, 5, 0, 15)
    assert r["per_annotator"] == {"ann1": 5, "ann2": 5, "ann3": 5} and r["study_created"]
    study = studies.get_study(db, r["study_id"])
    assert study["questions"] == ["relevance"] and study["annotators"] == ANNOTATORS
    s = study["settings"]
    assert (s["purpose"], s["relevance"], s["overlap"]) == ("rejudge", "binary", 3)
    assert s["guidelines"] == {"relevance": GUIDELINES["relevance"]}
    items = studies.items_of_study(db, r["study_id"])
    assert sorted(i["doc_id"] for i in items) == ["f-doc-1", "f-doc-2", "f-doc-3", "f-doc-4", "f-doc-5"]
    v = r["version_id"]
    assert {i["screen"] for i in items} == {f"f-robot-changed|{d}|v{v}" for d in state["relevant"]}
    assert all(i["question"] == "relevance" and i["narrative_version_id"] == v and i["cap"] == 3 for i in items)
    assert all(i["payload"] == {"control": False} for i in items)
    # the re-judging study is on each annotator's list, and the screen shows the new narrative
    ann1 = users.get_user(db, "ann1")
    assert r["study_id"] in [x["id"] for x in studies.studies_for_user(db, ann1["id"])]
    screen = workspace.open_screen(db, r["study_id"], ann1)
    assert screen.narrative == state["newest"]["text"] + ADDED and screen.document["doc_id"] in state["relevant"]
    assert [it.question.categories for it in screen.items] == [("relevant", "not relevant")]


def test_no_duplicates_and_a_new_round_per_different_modification(demo):
    db, _ = demo
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    first = save(db, newest + ADDED)
    assert save(db, newest + ADDED)["created"] is False
    assert len(studies.items_of_study(db, first["study_id"])) == 5
    second = save(db, newest + " Documents about costs are not relevant.", annotators=None)  # the study's annotators
    assert second["created"] and second["study_id"] == first["study_id"] and not second["study_created"]
    items = studies.items_of_study(db, first["study_id"])
    assert len(items) == 10
    assert {i["narrative_version_id"] for i in items} == {first["version_id"], second["version_id"]}
    assert len({i["screen"] for i in items}) == 10
    assert store.round_version_ids(db, first["study_id"]) == [first["version_id"], second["version_id"]]
    summary = rejudging.rejudge_summary(db, projects.get_project(db, "demo"))
    assert [(q["version_id"], q["superseded_rounds"]) for q in summary["queries"]] == [(second["version_id"], 1)]


def test_a_new_round_withdraws_unjudged_screens_of_the_old_one_and_keeps_totals_balanced(demo):
    db, _ = demo
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    ann = ["ann1", "ann2", "ann3", "expert"]
    first = save(db, newest + ADDED, annotators=ann)  # 5 documents x 3 over 4 people: loads 4,4,4,3
    assert first["withdrawn"] == 0
    sid = first["study_id"]
    u1 = users.get_user(db, "ann1")
    screen = workspace.open_screen(db, sid, u1)  # ann1 judges one screen of the first round
    workspace.submit_screen(db, screen, u1, {"relevance": {"value": "not relevant"}}, started_at=None)
    second = save(db, newest + " Documents about costs are not relevant.", annotators=None)
    assert second["withdrawn"] == 15 - 1  # every unjudged assignment of round 1
    rows = studies.assignment_rows(db, sid)
    old_items = {i["id"] for i in studies.items_of_study(db, sid) if i["narrative_version_id"] == first["version_id"]}
    assert [(r["annotator"], r["state"]) for r in rows if r["item"] in old_items] == [("ann1", "done")]
    assert len(studies.label_history(db, sid)) == 1  # the label given under round 1 stays
    # the next screen of every annotator is from the new round
    for name in ann:
        s = workspace.open_screen(db, sid, users.get_user(db, name))
        assert s is not None and s.items[0].item_id not in old_items
    totals = {p: first["per_annotator"].get(p, 0) + second["per_annotator"].get(p, 0) for p in ann}
    assert max(totals.values()) - min(totals.values()) <= 1  # balanced over both rounds: 30 = 8+8+7+7


def test_controls_are_flagged_seeded_and_reported_separately(demo):
    db, _ = demo
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    r = save(db, newest + ADDED, controls=1, seed=7)
    assert (r["items"], r["documents"], r["controls"]) == (6, 5, 1)
    items = studies.items_of_study(db, r["study_id"])
    controls = [i for i in items if i["payload"] == {"control": True}]
    assert [i["doc_id"] for i in controls] == ["f-doc-6"]  # the only originally non-relevant document
    for name in ANNOTATORS:
        judge(db, r["study_id"], name, {d: "not relevant" for d in ("f-doc-3", "f-doc-4", "f-doc-5", "f-doc-6")})
    q = rejudging.rejudge_summary(db, projects.get_project(db, "demo"))["queries"][0]
    assert (q["rejudged"], q["controls"], q["controls_resolved"], q["controls_judged_relevant"]) == (5, 1, 1, 0)
    assert (q["flipped"], q["relevant_original"]) == (3, 5)  # controls never count as flips


def test_refuses_too_few_annotators_and_a_scale_change(demo):
    db, _ = demo
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    with pytest.raises(IFJudgeError, match="3 annotators per item"):
        save(db, newest + ADDED, annotators=["ann1", "ann2"])
    assert len(narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["versions"]) == 2  # nothing written
    save(db, newest + ADDED)
    with pytest.raises(IFJudgeError, match="binary relevance scale"):
        save(db, newest + " Other.", relevance="graded")


# ------------------------------------------------------------------------------------------ qrels


def test_majority_adjudication_and_changed_qrels(demo):
    db, _ = demo
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    r = save(db, newest + ADDED)
    judge(db, r["study_id"], "ann1", {"f-doc-3": "not relevant", "f-doc-4": "not relevant", "f-doc-5": "not relevant"})
    judge(db, r["study_id"], "ann2", {"f-doc-3": "not relevant", "f-doc-4": "not relevant"})
    judge(db, r["study_id"], "ann3", {"f-doc-2": "not relevant", "f-doc-4": "not relevant"})
    summary = rejudging.rejudge_summary(db, projects.get_project(db, "demo"))
    docs = {d["doc_id"]: d for d in summary["documents"]}
    assert {d: (x["status"], x["changed"]) for d, x in docs.items()} == {
        "f-doc-1": ("unanimous", 1), "f-doc-2": ("majority", 1), "f-doc-3": ("majority", 0),
        "f-doc-4": ("unanimous", 0), "f-doc-5": ("majority", 1),
    }
    item5 = docs["f-doc-5"]["item"]
    studies.add_adjudication(db, item5, "relevant", "lead")
    studies.add_adjudication(db, item5, "not relevant", "lead", "the newest decision counts")
    summary = rejudging.rejudge_summary(db, projects.get_project(db, "demo"))
    assert summary["qrels_changed"] == {"f-robot": {"f-doc-1": 1, "f-doc-2": 1, "f-doc-3": 0, "f-doc-4": 0,
                                                     "f-doc-5": 0, "f-doc-6": 0}}
    q = summary["queries"][0]
    assert (q["flipped"], q["share_flipped"], q["unresolved"], q["adjudicated"]) == (3, 0.6, 0, 1)
    # percent agreement: 2 unanimous items, 3 items split 2-1 (1 of 3 pairs agree)
    assert q["agreement"]["percent_agreement"] == pytest.approx((2 + 3 / 3) / 5)
    assert summary["overall"]["agreement"]["percent_agreement"] == pytest.approx(0.6)


def test_a_tie_is_unresolved_and_keeps_the_original_relevance(demo):
    db, _ = demo
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    r = save(db, newest + ADDED, annotators=["ann1", "ann2"], overlap=2)
    judge(db, r["study_id"], "ann1", {"f-doc-3": "not relevant", "f-doc-4": "not relevant"})
    judge(db, r["study_id"], "ann2", {"f-doc-3": "not relevant"})
    summary = rejudging.rejudge_summary(db, projects.get_project(db, "demo"))
    docs = {d["doc_id"]: d for d in summary["documents"]}
    assert (docs["f-doc-4"]["status"], docs["f-doc-4"]["changed"]) == ("tie", None)
    assert summary["qrels_changed"]["f-robot"]["f-doc-4"] == 1  # left as original
    assert summary["qrels_changed"]["f-robot"]["f-doc-3"] == 0
    q = summary["queries"][0]
    assert (q["resolved"], q["unresolved"], q["ties"], q["flipped"]) == (4, 1, 1, 1)
    assert rejudging.resolve(["relevant", "not relevant", "x", "x"]) == ("x", "majority")
    assert rejudging.resolve(["1", "2", "0"]) == (None, "tie")
    assert rejudging.resolve([]) == (None, "no labels")


def test_one_label_of_three_does_not_decide_a_document(demo):
    db, _ = demo
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    r = save(db, newest + ADDED)  # overlap 3
    judge(db, r["study_id"], "ann1", {"f-doc-3": "not relevant"})
    summary = rejudging.rejudge_summary(db, projects.get_project(db, "demo"))
    docs = {d["doc_id"]: d for d in summary["documents"]}
    assert {d: (x["status"], x["changed"]) for d, x in docs.items()} == {
        d: ("awaiting labels", None) for d in ("f-doc-1", "f-doc-2", "f-doc-3", "f-doc-4", "f-doc-5")
    }
    assert summary["qrels_changed"]["f-robot"]["f-doc-3"] == 1  # not flipped by one annotator
    q = summary["queries"][0]
    assert (q["resolved"], q["unresolved"], q["flipped"]) == (0, 5, 0)
    judge(db, r["study_id"], "ann2", {"f-doc-3": "not relevant"})
    docs = {d["doc_id"]: d for d in rejudging.rejudge_summary(db, projects.get_project(db, "demo"))["documents"]}
    assert (docs["f-doc-3"]["status"], docs["f-doc-3"]["changed"]) == ("unanimous", 0)  # 2 of 3 agree


def two_query_bundle() -> Bundle:
    b = Bundle()
    b.documents = [Document(f"d{i}", f"text {i}", f"title {i}") for i in range(1, 6)]
    b.queries = [Query("q1", "first"), Query("q2", "second")]
    for q in ("q1", "q2"):
        b.instances += [Instance(f"{q}-og", q, q, f"{q} original narrative.", "og"),
                        Instance(f"{q}-changed", q, q, f"{q} changed narrative.", "changed")]
        b.narratives += [Narrative(q, f"{q} original narrative.", "og"), Narrative(q, f"{q} changed narrative.", "changed")]
    b.qrels = [Qrel("q1", "d1", 2, "original"), Qrel("q1", "d2", 1, "original"), Qrel("q1", "d3", 0, "original"),
               Qrel("q1", "d1", 2, "changed"), Qrel("q1", "d2", 1, "changed"), Qrel("q1", "d3", 0, "changed"),
               Qrel("q2", "d4", 1, "original"), Qrel("q2", "d5", 1, "original"),
               Qrel("q2", "d4", 1, "changed"), Qrel("q2", "d5", 0, "changed")]
    return b


def test_store_replaces_only_the_rejudged_queries(demo):
    db, _ = demo
    projects.import_bundle(db, "fir", two_query_bundle(), fmt="followir")
    r = narrative_versions.save_narrative(db, project=get_project(db, "fir"), query_id="q1", text="q1 narrative, negated: not d2.",
                                  author="expert", annotators=ANNOTATORS)
    for name in ANNOTATORS:
        judge(db, r["study_id"], name, {"d2": "not relevant"})
    # an expert edit is a new instruction version: its outcome is edited-validated, not a correction of changed
    with pytest.raises(IFJudgeError, match="no re-judging of the published changed instruction"):
        qrels_builds.store_changed_qrels(db, projects.get_project(db, "fir"))
    stored = qrels_builds.store_edited_qrels(db, projects.get_project(db, "fir"))
    assert (stored["version"], stored["queries"], stored["rows"], stored["unresolved"]) == ("edited-validated", 1, 3, 0)
    pid = projects.get_project(db, "fir")["id"]
    # the human outcome is its own version; the published changed qrels stay as imported
    assert projects.qrels(db, pid, "edited-validated") == {"q1": {"d1": 2, "d2": 0, "d3": 0}}
    assert "changed-validated" not in projects.qrels_versions(db, pid)
    assert projects.qrels(db, pid, "changed") == {"q1": {"d1": 2, "d2": 1, "d3": 0}, "q2": {"d4": 1, "d5": 0}}
    build = projects.qrels_builds(db, pid, "edited-validated", with_provenance=True)[0]
    assert (build["base_version"], build["settings"]["kind"]) == ("original", "edit")
    assert build["settings"]["instructions"] == {"q1": r["version_id"]}  # the narrative version judged
    d2 = next(p for p in build["provenance"] if p["doc_id"] == "d2")
    assert (d2["published"], d2["relevance"], d2["provenance"], d2["label_counts"]) == (1, 0, "unanimous", {"not relevant": 3})
    assert projects.qrels(db, pid, "original")["q1"] == {"d1": 2, "d2": 1, "d3": 0}  # graded grade kept for d1
    demo_pid = projects.get_project(db, "demo")["id"]
    assert projects.qrels(db, demo_pid, "changed")["f-robot"]["f-doc-3"] == 0  # another project untouched


# ------------------------------------------------------------------------------------------ export


def content(b: Bundle) -> tuple:
    return (b.documents, b.queries, b.instances, sorted(b.qrels, key=repr), b.narratives, b.top_ranked)


def rejudged_demo(db):
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    r = save(db, newest + ADDED)
    judge(db, r["study_id"], "ann1", {"f-doc-3": "not relevant", "f-doc-4": "not relevant"})
    judge(db, r["study_id"], "ann2", {"f-doc-3": "not relevant", "f-doc-4": "not relevant", "f-doc-5": "not relevant"})
    judge(db, r["study_id"], "ann3", {"f-doc-3": "not relevant", "f-doc-4": "not relevant"})
    return r, newest + ADDED


def test_export_round_trip_and_pmrr_accepts_the_qrels(demo, tmp_path, run_cli, db_path):
    db, _ = demo
    _, text = rejudged_demo(db)
    code, out, err = run_cli("export-followir", "--db", db_path, "--project", "demo", "--out", tmp_path / "fir", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["counts"]["queries"] == 1 and result["notes"] == []
    from annotation.outcomes.qrels_builds import build_rejudged

    derived = build_rejudged(db, projects.get_project(db, "demo"), [store.rejudge_study_id(db, 1)]).qrels
    written, _ = followir.followir_bundle(db, projects.get_project(db, "demo"), changed_qrels=derived)
    again = parse("followir", [tmp_path / "fir"])
    assert content(again) == content(written)
    queries = [json.loads(line) for line in (tmp_path / "fir" / "queries.jsonl").read_text().splitlines()]
    og = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["original"]["text"]
    assert queries == [{"_id": "f-robot", "text": "robots in surgery", "instruction_og": og, "instruction_changed": text}]
    assert (tmp_path / "fir" / "qrels_changed" / "test.tsv").read_text() == (
        "query-id\tcorpus-id\tscore\n"
        "f-robot\tf-doc-1\t1\nf-robot\tf-doc-2\t1\nf-robot\tf-doc-3\t0\nf-robot\tf-doc-4\t0\n"
        "f-robot\tf-doc-5\t1\nf-robot\tf-doc-6\t0\n"
    )
    assert (tmp_path / "fir" / "qrels_og" / "test.tsv").read_text() == (
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"f-robot\tf-doc-{i}\t1\n" for i in range(1, 6)) + "f-robot\tf-doc-6\t0\n"
    )
    # the export imports back into a project, and p-MRR reads its qrels
    projects.import_bundle(db, "reimported", again, fmt="followir")
    og_order = ["f-doc-3", "f-doc-4", "f-doc-1", "f-doc-2", "f-doc-5", "f-doc-6"]
    new_order = ["f-doc-1", "f-doc-2", "f-doc-5", "f-doc-6", "f-doc-3", "f-doc-4"]
    for name, order in (("og", og_order), ("changed", new_order)):
        (tmp_path / f"run_{name}.trec").write_text(
            "".join(f"f-robot Q0 {d} {k} {10 - k} run\n" for k, d in enumerate(order, start=1)))
    code, out, err = run_cli(
        "eval", "pmrr", "--qrels-og", tmp_path / "fir" / "qrels_og" / "test.tsv",
        "--qrels-changed", tmp_path / "fir" / "qrels_changed" / "test.tsv",
        "--run-og", tmp_path / "run_og.trec", "--run-changed", tmp_path / "run_changed.trec", "--json",
    )
    assert code == 0, err
    pmrr = json.loads(out)
    # changed: f-doc-3 (rank 1 -> 5) and f-doc-4 (2 -> 6): (1 - 1/5 + 1 - 2/6) / 2
    assert pmrr["p-MRR"] == pytest.approx((0.8 + 2 / 3) / 2)
    assert pmrr["n_queries"] == 1


def test_export_uses_stored_changed_qrels_for_queries_without_a_round(demo, tmp_path):
    db, _ = demo
    projects.import_bundle(db, "fir", two_query_bundle(), fmt="followir")
    result = followir.export_followir(db, projects.get_project(db, "fir"), tmp_path / "out")
    again = parse("followir", [tmp_path / "out"])
    assert content(again) == content(followir.followir_bundle(db, projects.get_project(db, "fir"))[0])
    assert result["counts"]["qrels_changed"] == 5
    assert again.top_ranked == {"q1": ["d1", "d2", "d3"], "q2": ["d4", "d5"]}  # judged documents when none stored
    projects.import_bundle(db, "bare", Bundle(queries=[Query("x", "x")], narratives=[Narrative("x", "n")]), fmt="trec")
    with pytest.raises(IFJudgeError, match="no query"):
        followir.export_followir(db, projects.get_project(db, "bare"), tmp_path / "bare")


# ------------------------------------------------------------------------------------------ CLI


def test_cli_edit_show_and_summary(demo, run_cli, db_path, tmp_path):
    db, _ = demo
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    (tmp_path / "n.txt").write_text(newest + ADDED, encoding="utf-8")
    base = ["--db", db_path, "--project", "demo"]
    code, out, err = run_cli("narrative", "edit", *base, "--query", "f-robot", "--author", "expert",
                             "--file", tmp_path / "n.txt", "--annotators", ",".join(ANNOTATORS), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert (result["created"], result["items"], result["assignments"]) == (True, 5, 15)
    code, out, _ = run_cli("narrative", "edit", *base, "--query", "f-robot", "--author", "expert",
                           "--file", tmp_path / "n.txt")
    assert (code, out.startswith("unchanged:")) == (0, True)
    code, out, _ = run_cli("narrative", "show", *base, "--query", "f-robot", "--version", str(result["version_id"]))
    assert "{+Documents about knee surgery are not relevant.+}" in out
    code, out, _ = run_cli("narrative", "show", *base)
    assert out.startswith("f-robot\t3 version(s)")
    for name in ANNOTATORS:
        judge(db, result["study_id"], name, {"f-doc-3": "not relevant"})
    code, out, _ = run_cli("narrative", "rejudge-summary", *base, "--store", "--json")
    summary = json.loads(out)
    assert (summary["overall"]["flipped"], summary["overall"]["agreement"]["percent_agreement"]) == (1, 1.0)
    assert (summary["kind"], summary["stored"]["version"]) == ("edit", "edited-validated")
    assert (summary["stored"]["queries"], summary["stored"]["rows"]) == (1, 6)
    assert projects.qrels(db, projects.get_project(db, "demo")["id"], "edited-validated")["f-robot"]["f-doc-4"] == 1
    assert projects.qrels(db, projects.get_project(db, "demo")["id"], "edited-validated")["f-robot"]["f-doc-3"] == 0
    code, out, _ = run_cli("narrative", "rejudge-summary", *base, "--documents")
    assert f"f-robot\t{result['version_id']}\t5\t5\t5\t1\t0.200\t0\t0\t1.000" in out
    assert "f-robot\tf-doc-3\tno\t1\tann1=not relevant,ann2=not relevant,ann3=not relevant\tunanimous\t0" in out
    code, _, err = run_cli("narrative", "edit", *base, "--query", "nope", "--author", "expert", "--text", "x")
    assert code == 2 and "has no narrative" in err
    code, _, err = run_cli("narrative", "edit", *base, "--query", "f-robot", "--author", "ann1", "--text", "x y")
    assert code == 2 and "only an expert or a lead" in err


# ------------------------------------------------------------------------------------------ page


def test_page_refuses_annotators(env_db):
    db, _ = env_db
    at = narratives_page(db, "ann1")
    assert [e.value for e in at.error] == ["You do not have access to this page."]


def test_page_live_diff_and_save(env_db):
    db, _ = env_db
    at = narratives_page(db, "expert")
    assert not at.exception
    assert at.subheader[0].value == "Documents relevant under the original narrative: 5"
    assert [e.label for e in at.expander][:5] == [
        r"f\-doc\-1\: Robot\-assisted prostate surgery outcomes", r"f\-doc\-2\: Surgical robots and hospital costs",
        r"f\-doc\-3\: Remote telesurgery across the Atlantic", r"f\-doc\-4\: Robotic arms in knee replacement",
        r"f\-doc\-5\: Training surgeons on robotic systems",
    ]
    box = at.text_area[0]
    box.input(box.value + " Not **knee** surgery.").run()
    diff = at.container(key="nar_diff").markdown[0].value
    assert diff.endswith(r":green-background[**Not \*\*knee\*\* surgery\.**]")
    annotators = next(m for m in at.multiselect if m.key.startswith("nar_annotators"))
    assert annotators.value == []  # nobody is chosen for the lead
    annotators.set_value(["ann1", "ann2", "ann3"])
    at.button(key=next(b.key for b in at.button if b.key.startswith("nar_save"))).click().run()
    # versions are numbered per query (v1 the original, v2 the published change, v3 this save)
    assert [s.value for s in at.success] == [
        "Saved version v3 of query f-robot: 5 documents to re-judge (0 controls), 15 assignments in study 2."]
    versions = next(d.value for d in at.dataframe if "started from" in d.value.columns)
    assert list(versions["version"]) == ["v1 (original)", "v2", "v3"] and list(versions["started from"]) == ["—", "v1", "v2"]
    assert all(t.endswith("UTC") for t in versions["saved"])  # readable times, not ISO
    # after a save, "Read a version" shows the new version, not the one chosen before
    read = next(sb for sb in at.selectbox if sb.label == "Read a version")
    assert read.value == 3
    at.button(key=next(b.key for b in at.button if b.key.startswith("nar_save"))).click().run()
    assert [i.value for i in at.info if i.value.startswith("Nothing saved")]
    assert len(store.versions(db, projects.get_project(db, "demo")["id"], "f-robot")) == 3


def test_rejudge_screen_marks_the_changes_and_hides_the_original_judgment(env_db):
    db, _ = env_db
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    r = save(db, newest + " <b>Knee</b> *surgery* is not relevant.")
    at = signed_in_page(db, "pages/annotate.py", "ann1")
    sid = r["study_id"]
    next(s for s in at.selectbox if s.label == "Study").set_value(sid).run()  # keyed by the work left
    assert not at.exception
    shown = item_shown(at)["item"]
    assert shown["texts"]["narrative"] == newest + " <b>Knee</b> *surgery* is not relevant."  # as text
    # the changes from the original narrative: the added words marked, as text (never HTML or Markdown)
    inserted = [part for op, part in shown["texts"]["changes"] if op == "insert"]
    assert inserted[-1] == " <b>Knee</b> *surgery* is not relevant."
    assert [(o["label"], o["key"]) for o in shown["questions"][0]["options"]] == [("Relevant", "1"), ("Not relevant", "2")]
    assert shown["texts"]["instruction"] is None  # the original narrative is not shown as the instruction
    assert not any("judged relevant" in str(getattr(e, "value", "")).lower() for e in at.main)
    assert "judged relevant" not in json.dumps(shown).lower()
    send(at, "submit", {"relevance": "not relevant"})
    assert [x["value"] for x in studies.current_labels(db, sid)] == ["not relevant"]


def test_graded_rejudging_stores_the_majority_grade(demo):
    """relevance="graded": answers 0/1/2 (keys 1/2/3); the majority grade is the changed qrel, and a
    grade of 0 for an originally relevant document is a flip."""
    db, _ = demo
    newest = narrative_versions.narrative_state(db, get_project(db, "demo"), "f-robot")["newest"]["text"]
    r = save(db, newest + ADDED, relevance="graded")
    user = users.get_user(db, "ann1")
    screen = workspace.open_screen(db, r["study_id"], user)
    (item,) = screen.items
    assert item.question.categories == ("0", "1", "2") and item.question.keys == ("1", "2", "3")
    grades = {"ann1": {"f-doc-3": "0", "f-doc-4": "2"}, "ann2": {"f-doc-3": "0", "f-doc-4": "2"},
              "ann3": {"f-doc-3": "1", "f-doc-4": "1"}}
    for name, answers in grades.items():
        judge(db, r["study_id"], name, answers, default="1")
    summary = rejudging.rejudge_summary(db, projects.get_project(db, "demo"))
    assert summary["scale"] == "graded"
    assert summary["qrels_changed"]["f-robot"] == {"f-doc-1": 1, "f-doc-2": 1, "f-doc-3": 0, "f-doc-4": 2,
                                                   "f-doc-5": 1, "f-doc-6": 0}
    q = summary["queries"][0]
    assert (q["flipped"], q["resolved"], q["unresolved"]) == (1, 5, 0)
    with pytest.raises(IFJudgeError):
        workspace.submit_screen(db, workspace.open_screen(db, r["study_id"], users.get_user(db, "ann1"), screen.screen),
                                users.get_user(db, "ann1"), {"relevance": {"value": "relevant"}}, started_at=None)


def test_versions_are_numbered_per_query_not_database_wide(demo):
    db, _ = demo
    from annotation.demo import demo_bundle

    projects.import_bundle(db, "second", demo_bundle(), fmt="demo", kind="generic")  # ids 3 and 4 in the database
    pid = projects.get_project(db, "second")["id"]
    vs = store.versions(db, pid, "f-robot")
    assert [v["id"] for v in vs] == [3, 4] and [(v["number"], v["parent_number"]) for v in vs] == [(1, None), (2, 1)]
    assert store.version_numbers(db, pid) == {3: 1, 4: 2}
