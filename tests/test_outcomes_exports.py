"""Decisions, provenance, validated qrels, exports (round trips) and the monitoring report."""
import json
from collections import Counter

import pytest
import pytrec_eval
from scipy import stats

from annotation.monitoring import monitor
from annotation.estimates.benchmark import benchmark_estimates
from annotation.agreement.majority import decide as majority_decide
from annotation.outcomes.items import ValidationRules, instance_decisions, item_outcomes, validated_qrels
from annotation.outcomes.qrels_builds import store_validated_qrels
from formats.trec_io import read_qrels
from exports.validated import export_project
from formats import readers as importers
from storage import eval_runs, projects, studies

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL
# ``labelled``: the fixture of tests/conftest.py (builders.label_by_plan)


def decide(counts: Counter) -> tuple[str | None, str]:
    d = majority_decide(counts)
    return d.value, d.provenance


def test_decide_rules():
    assert decide(Counter({"Yes": 3})) == ("Yes", "unanimous")
    assert decide(Counter({"Yes": 2, "No": 1})) == ("Yes", "majority")
    assert decide(Counter({"a": 1, "b": 1, "c": 1})) == (None, "unresolved")
    assert decide(Counter({"Yes": 1})) == (None, "unresolved")  # one label: no majority yet
    assert decide(Counter()) == (None, "unresolved")


def test_outcomes_provenance_and_adjudication(labelled):
    db, sid, order = labelled
    out = {(o.instance_id, o.question): o for o in item_outcomes(db, sid)}
    first, second = order[0], order[1]
    assert out[(first, "validity")].provenance == "unanimous"
    assert out[(first, "naturalness")].value == "Yes" and out[(first, "naturalness")].provenance == "majority"
    assert out[(second, "validity")].value == "No"
    # best passage on screen 3+: ann1 and ann2 pick the target, ann3 another passage -> majority = target
    assert out[(order[3], "best_passage")].value == out[(order[3], "best_passage")].gold
    item = out[(first, "validity")].item_id
    studies.add_adjudication(db, item, "No", "lead", "instruction is about a different user")
    o = next(o for o in item_outcomes(db, sid, "validity") if o.item_id == item)
    assert (o.value, o.provenance) == ("No", "adjudicated")


def test_validated_qrels_drop_invalid_and_unnatural_but_keep_unchecked(labelled):
    db, sid, order = labelled
    dec = instance_decisions(db, sid)
    assert dec[order[1]]["keep"] is False and dec[order[1]]["why"] == ["invalid", "unnatural"]
    q = validated_qrels(db, sid)
    original = projects.qrels(db, 1, "original")
    assert order[1] not in q and order[0] in q
    assert set(original) - set(q) == {order[1]}  # unchecked instances (and the FollowIR query) stay
    only = validated_qrels(db, sid, ValidationRules(keep_unsampled=False))
    assert set(only) == set(order) - {order[1]}
    keep_all = validated_qrels(db, sid, ValidationRules(drop_invalid=False, drop_unnatural=False))
    assert keep_all == original
    assert store_validated_qrels(db, sid) == sum(len(v) for v in q.values())
    assert projects.qrels(db, 1, "validated") == q


def test_trec_export_reads_in_pytrec_eval_and_has_adjudicated_value(labelled, tmp_path):
    db, sid, order = labelled
    item = next(o.item_id for o in item_outcomes(db, sid, "validity") if o.instance_id == order[0])
    studies.add_adjudication(db, item, "No", "lead", "")
    manifest = export_project(db, projects.get_project(db, "demo"), "trec", tmp_path, study_ids=[sid])
    q = read_qrels(tmp_path / "qrels.validated.txt")
    assert order[0] not in q and order[1] not in q and order[2] in q
    ev = pytrec_eval.RelevanceEvaluator(q, {"ndcg"})
    run = {qid: {d: float(r) for d, r in docs.items()} for qid, docs in q.items()}
    assert all(v["ndcg"] == 1.0 for v in ev.evaluate(run).values())
    assert {f["path"] for f in manifest["files"]} == {"qrels.original.txt", "qrels.changed.txt", "qrels.validated.txt"}
    assert manifest["study"]["id"] == sid and manifest["counts"]["instances_dropped"] == 2
    saved = json.loads((tmp_path / "manifest.json").read_text())
    assert saved["files"][0]["sha256"] and saved["version"]


def test_beir_export_imports_back_with_the_same_validated_qrels(labelled, tmp_path):
    db, sid, _ = labelled
    export_project(db, projects.get_project(db, "demo"), "beir", tmp_path, study_ids=[sid])
    back = importers.parse("beir", [tmp_path])
    got = {}
    for q in back.qrels:
        got.setdefault(q.qid, {})[q.doc_id] = q.relevance
    # one BEIR query per instance: the 12 InstructIR-style instances less the one the study drops, and the FollowIR
    # query as f-robot-og (its validated = original judgments) and f-robot-changed (its changed judgments)
    expected = validated_qrels(db, sid)
    expected["f-robot-og"] = expected.pop("f-robot")
    expected["f-robot-changed"] = projects.qrels(db, projects.get_project(db, "demo")["id"], "changed")["f-robot"]
    assert got == expected and len(got) == 11 + 2
    assert len(back.documents) == 18 and len(back.queries) == 13
    assert {i.instance_id: i.instruction for i in back.instances}["f-robot-changed"].startswith("A relevant document")


def test_beir_and_mteb_exports_of_the_demo_hold_every_judgment(demo, tmp_path):
    """Without a study: 14 queries (one per instance) and 12 + 6 + 6 judgments, not the changed ones alone."""
    db, _ = demo
    for fmt in ("beir", "mteb"):
        manifest = export_project(db, projects.get_project(db, "demo"), fmt, tmp_path / fmt)
        back = importers.parse(fmt, [tmp_path / fmt])
        assert (len(back.queries), len(back.qrels), len(back.documents)) == (14, 24, 18), fmt
        assert manifest["left_out"] == []


def test_mteb_export_after_a_study_leaves_out_the_dropped_instance(labelled, tmp_path):
    db, sid, order = labelled
    manifest = export_project(db, projects.get_project(db, "demo"), "mteb", tmp_path, study_ids=[sid])
    back = importers.parse("mteb", [tmp_path])
    ids = {q.query_id for q in back.queries}
    assert len(ids) == 13 and order[1] not in ids and order[0] in ids
    # what the validation left out is counted in left_out too (not only what the layout cannot hold)
    assert manifest["left_out"] == [{"what": "instances", "count": 1, "judgments": 1, "by": "validation",
                                     "version": "validated", "why": "the studies dropped them: invalid 1, unnatural 1"}]
    assert manifest["counts"]["instances_dropped"] == 1


def test_jsonl_export_carries_provenance_and_label_counts(labelled, tmp_path):
    db, sid, order = labelled
    export_project(db, projects.get_project(db, "demo"), "jsonl", tmp_path, study_ids=[sid])
    rows = {r["instance_id"]: r for r in map(json.loads, (tmp_path / "instances.jsonl").read_text().splitlines())}
    assert len(rows) == 14
    r = rows[order[1]]
    assert r["kept"] is False and r["questions"]["validity"] == {"value": "No", "provenance": "majority", "label_counts": {"Yes": 1, "No": 2}}
    assert rows[order[0]]["questions"]["validity"]["provenance"] == "unanimous"
    assert rows["f-robot-og"]["checked"] is False
    kept = importers.parse("beir", [tmp_path / "validated_instances"])
    assert order[1] not in {i.instance_id for i in kept.instances}


def test_report_like_table7(labelled, tmp_path):
    db, sid, _ = labelled
    export_project(db, projects.get_project(db, "demo"), "report", tmp_path, study_ids=[sid])
    md = (tmp_path / "report.md").read_text()
    assert "kappa coefficient (Randolph, 2005)" in md and "Top-1 Accuracy" in md
    # the design-aware estimate is THE estimate; the old Wilson-only extrapolation table is gone
    assert "## Benchmark-wide estimates" in md and "Extrapolation" not in md
    rows = monitor.table7(db, sid, n_boot=0)
    top1 = next(r for r in rows if r["statistic"] == "Top-1 Accuracy")
    assert top1["value"] == pytest.approx(7 / 8)  # screens 1 and 3-8: ann1 and ann2 pick the target; screen 2 only ann1
    assert "\\begin{tabular}" in (tmp_path / "report.tex").read_text()
    assert (tmp_path / "report.csv").read_text().startswith("question,statistic,value,ci_low,ci_high,band,undefined_reason")


def test_report_carries_the_benchmark_wide_estimates(labelled, tmp_path):
    db, sid, _ = labelled
    export_project(db, projects.get_project(db, "demo"), "report", tmp_path, study_ids=[sid])
    md = (tmp_path / "report.md").read_text()
    est = benchmark_estimates(db, sid)
    assert f"Design: {est['design']['description']}." in md and est["method"] in md  # the design and the method stated
    for e in est["estimates"]:  # every row as the library gives it (design CI, naive CI, deff, n*, counts)
        n = e["naive_independent"]
        assert (f"| {e['estimand'].replace('_', chr(92) + '_')} | {e['share']:.3f} | [{e['low']:.3f}, {e['high']:.3f}] | "
                f"[{n['low']:.3f}, {n['high']:.3f}] | {e['deff']:.3f} | {e['n_effective']:.3f} | {e['n_items']} | "
                f"{e['n_groups']} | {e['to_halve']['further_labels']} |") in md
    # by hand: 4 of the 5 groups sampled, 2 of each group's 3 instances; screen 2 is the one invalid
    # instance, so R = 7/8 with equal weights 5/4 * 3/2. Group totals t_g = 3/2 * sum(y - R):
    # -9/8 for its group, 3/8 for the three others (variance 0.5625); within its group var(u) = 0.5.
    # V = [5^2 (1 - 4/5) 0.5625 / 4 + 5/4 * 3^2 (1 - 2/3) 0.5 / 2] / 15^2 = 1.640625 / 225, and the SRS
    # variance of 8 of 15 items is (1 - 8/15) (7/8)(1/8) / 7 -- the same: design effect 1, n* = 8.
    v = (25 * 0.2 * 0.5625 / 4 + 5 / 4 * 9 * (1 / 3) * 0.5 / 2) / 15**2
    srs = (1 - 8 / 15) * (7 / 8) * (1 / 8) / 7
    assert v / srs == pytest.approx(1.0)
    def wilson(p, k, z):
        centre = (p + z * z / (2 * k)) / (1 + z * z / k)
        half = z / (1 + z * z / k) * (p * (1 - p) / k + z * z / (4 * k * k)) ** 0.5
        return f"[{centre - half:.3f}, {centre + half:.3f}]"

    # the design interval: Wilson at n* = R (1 - R) / V = 7 / (1 - 8/15) = 15 (the finite population
    # helps; below the cap 8 / (1 - 8/15) = 17.1 of 8 equal weights), z = t(3) (4 groups - 1 stratum);
    # the naive independent comparison: Wilson for 7 of 8 at z = 1.96
    design, naive = wilson(7 / 8, 15, stats.t.ppf(0.975, 3)), wilson(7 / 8, 8, 1.959963984540054)
    assert f"| valid instruction | 0.875 | {design} | {naive} | 1.000 | 8.000 | 8 | 4 |" in md
    csv_text = (tmp_path / "report.csv").read_text()
    assert (f"benchmark-wide: valid instruction,\"share (design-aware, Wilson at the effective size)\",0.875,"
            f"{est['estimates'][0]['low']!r},") in csv_text
    assert "benchmark-wide: valid instruction,design effect," in csv_text
    tex = (tmp_path / "report.tex").read_text()
    assert f"valid instruction & 0.875 & {design} &" in tex


def test_report_leaderboard_undefined_below_three_systems(labelled, tmp_path):
    db, sid, _ = labelled
    export_project(db, projects.get_project(db, "demo"), "report", tmp_path, study_ids=[sid])
    md = (tmp_path / "report.md").read_text()
    assert "## Does the leaderboard change?" in md
    assert "Undefined: no stored evaluation on both a published and its validated qrels version (have: none)" in md
    pid = projects.get_project(db, "demo")["id"]
    for version in ("original", "validated"):
        for k, model in enumerate(("bm25", "dense")):  # two systems: a ranking, but no Kendall tau
            eval_runs.store_eval_run(db, pid, model=model, template="query", settings={}, qrels_version=version,
                                     metrics={"nDCG@10": 0.5}, per_query={f"q{i:02d}": {"nDCG@10": 0.1 * (i % 4) + 0.3 * k}
                                                                          for i in range(12)}, run={})
    export_project(db, projects.get_project(db, "demo"), "report", tmp_path, study_ids=[sid])
    md = (tmp_path / "report.md").read_text()
    assert ("original (12 queries) vs validated (12 queries), 2 systems, 1000 bootstrap replicates (seed 0), studentized "
            "(bootstrap-t) intervals. Note: validated was not built from a study here (imported): which queries were "
            "checked is unknown.") in md
    assert ("Kendall tau (published vs validated): — (undefined with 12 queries and 2 systems: needs at least "
            "10 queries and 3 systems) (validated was not built from a study here") in md  # the note beside it
    assert "Verdict: no pair's order changed (one-sided bootstrap p-values, Holm's adjustment over the 1 pair (" in md
    # the rank table holds by hand: dense = bm25 + 0.3 on every query; bm25's mean over q00..q11 is 0.15
    assert "| bm25 \\[query\\] | 0.150 |" in md and "| dense \\[query\\] | 0.450 |" in md
    assert "Kendall tau (published vs validated),,,,,undefined with 12 queries and 2 systems" in (tmp_path / "report.csv").read_text()
    assert "order changed bm25 [query] vs dense [query] (Holm-adjusted one-sided p)" in (tmp_path / "report.csv").read_text()


def test_extrapolation_has_wilson_intervals(labelled):
    db, sid, _ = labelled
    e = monitor.extrapolation(db, sid)
    assert e["invalid"]["k"] == 1 and e["invalid"]["n"] == 8
    assert 0 < e["invalid"]["low"] < 1 / 8 < e["invalid"]["high"] < 1
    rows = {r["annotator"]: r for r in monitor.annotator_table(db, sid)}
    assert rows["ann1"]["done"] == 8 and rows["ann1"]["agreement_with_gold"] == 1.0


def test_export_cli(run_cli, labelled, db_path, tmp_path):
    code, out, _ = run_cli("export", "--db", db_path, "--project", "demo", "--format", "trec", "--out", tmp_path / "t", "--study", labelled[1], "--json")
    assert code == 0 and json.loads(out)["format"] == "trec"
    # the demo mixes 4 InstructIR groups (12 instances, one target each) with one FollowIR query (6 original
    # and 6 changed judgments): MTEB's generic layout holds all of it, one query per instance
    code, out, err = run_cli("export", "--db", db_path, "--project", "demo", "--format", "mteb", "--out", tmp_path / "m", "--json")
    assert code == 0, err
    assert "warning" not in err
    manifest = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert manifest["left_out"] == []
    from formats.readers import mteb

    back = mteb.parse([tmp_path / "m"])
    assert len(back.queries) == len(back.instances) == 14 and len(back.documents) == 18
    assert {q.query_id for q in back.queries} >= {"q-endo_1", "f-robot-og", "f-robot-changed"}
    by_query = Counter(q.qid for q in back.qrels)
    assert by_query["q-endo_1"] == 1 and by_query["f-robot-og"] == 6 and by_query["f-robot-changed"] == 6
    assert len(back.qrels) == 12 + 6 + 6
    # the FollowIR hub layout holds the FollowIR query only, and says on the terminal what it leaves out
    code, out, err = run_cli("export", "--db", db_path, "--project", "demo", "--format", "followir", "--out", tmp_path / "f")
    assert code == 0
    assert "warning: followir export left out 12 instances" in err
    assert "warning: followir export left out 12 documents" in err
    left = {e["what"]: e["count"] for e in json.loads((tmp_path / "f" / "manifest.json").read_text())["left_out"]}
    assert left == {"instances": 12, "queries": 4, "documents": 12}


def test_agreement_cli_from_database_equals_file_form(run_cli, labelled, db_path, tmp_path):
    from annotation.outcomes.items import labels_frame

    db, sid, _ = labelled
    code, out, _ = run_cli("agreement", "--db", db_path, "--study", sid, "--question", "best_passage", "--json")
    assert code == 0
    from_db = json.loads(out)
    frame, cats, gold = labels_frame(db, sid, "best_passage")
    frame.to_csv(tmp_path / "l.csv", index=False)
    (tmp_path / "g.csv").write_text("item,label\n" + "".join(f"{k},{v}\n" for k, v in gold.items()))
    code, out, _ = run_cli("agreement", "--labels", tmp_path / "l.csv", "--gold", tmp_path / "g.csv",
                           "--categories", ",".join(cats), "--json")
    from_file = json.loads(out)
    assert from_db["top1_accuracy_ties_count_as_wrong"] == from_file["top1_accuracy_ties_count_as_wrong"] == 7 / 8
    assert from_db["randolph_kappa"] == from_file["randolph_kappa"]
    code, _, err = run_cli("agreement", "--db", db_path, "--study", sid, "--json")
    assert code == 2 and "--db needs --study ID and --question Q" in err
