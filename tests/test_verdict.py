"""The verdict paragraph (exports/verdict.py) states numbers a lead can compute by hand: the
ranks before and after, Kendall's tau, the largest score change on the checked queries, the
decided shares and what the validated qrels cover. Every number asserted below is worked out in
the comments from the labels and the per-query scores the test writes."""
from __future__ import annotations

import json

import pytest

from annotation.outcomes.qrels_builds import store_versions
from exports.benchmark_report import benchmark_report, csv_rows, to_markdown
from exports.verdict import change_sentence, project_verdict, ranking_sentence
from storage import eval_runs, projects, studies
from tests.builders import label_by_plan

pytestmark = pytest.mark.both_engines


@pytest.fixture
def validated(demo):
    """The demo study labelled by PLAN, its validated qrels stored, three systems evaluated.

    PLAN's second screen: validity Yes / No / No and naturalness Yes / No / No -> invalid and
    unnatural by majority: its instance X is left out. Every other screen is valid and natural by
    majority (validity Yes, Yes, Yes; naturalness: screen 1 Yes, Yes, No, then Yes, Yes, Yes).
    """
    db, r = demo
    sid = r["study_id"]
    order = label_by_plan(db, sid)
    left_out = studies.screen_items(db, sid, order[1])[0]["instance_id"]
    store_versions(db, projects.get_project(db, "demo"), [sid], created_by="lead")
    pid = projects.get_project(db, "demo")["id"]
    original = sorted(projects.qrels(db, pid, "original"))
    kept = sorted(projects.qrels(db, pid, "validated"))
    assert len(original) == 13 and kept == [q for q in original if q != left_out]
    # per query: A 0.5 everywhere but 1.0 on X; B 0.52 everywhere but 0.0 on X; C 0.1 everywhere
    values = {"A": (0.5, 1.0), "B": (0.52, 0.0), "C": (0.1, 0.1)}
    for model, (v, on_x) in values.items():
        for version, qids in (("original", original), ("validated", kept)):
            pq = {q: {"nDCG@10": on_x if q == left_out else v} for q in qids}
            mean = sum(x["nDCG@10"] for x in pq.values()) / len(pq)
            eval_runs.store_eval_run(db, pid, model=model, template="query", settings={}, qrels_version=version,
                                     metrics={"nDCG@10": mean}, per_query=pq, run={})
    return db, sid, left_out


def test_the_verdict_states_hand_computed_numbers(validated):
    db, sid, _ = validated
    v = project_verdict(db, projects.get_project(db, "demo"), n_boot=200)
    text = v["text"]
    # ranks over every judged query: original (13 queries) A 7/13 = 0.538 > B 6.24/13 = 0.480 > C 0.1;
    # validated (12 queries, X dropped) B 0.52 > A 0.5 > C 0.1. Tau: (A,B) discordant, (A,C) and (B,C)
    # concordant: (2 - 1) / 3 = 0.333
    assert ("The ranking of the 3 systems by nDCG@10 changes from the original to the validated qrels: "
            "A [query] moves from 1st to 2nd; B [query] moves from 2nd to 1st (Kendall tau 0.333, 95% interval ") in text
    (ver,) = v["versions"]
    assert ver["ranking"]["changed"] and round(ver["ranking"]["tau"], 3) == 0.333
    # the checked view: the 8 sampled instances. A: published (7 x 0.5 + 1.0) / 8 = 0.5625, validated 0.5 over
    # the 7 kept -> -0.0625; B: (7 x 0.52 + 0) / 8 = 0.455 -> 0.52: +0.065, the largest; over every query B
    # goes from 6.24 / 13 = 0.48 to 0.52: +0.04
    assert ("The largest score change is B [query]: nDCG@10 0.4550 with the original qrels and 0.5200 with the "
            "validated ones (+0.0650) on the 8 queries the study checked (the validated qrels keep 7 of them); over "
            "every query each version judges (13 and 12 queries) it changes by +0.0400.") in text
    # coverage: 13 published qrels rows of 13 queries (12 instances + the FollowIR query's 6 judgments are
    # counted as rows): the build's judgments; 8 checked, 1 left out, 7 kept
    n_rows = sum(len(d) for d in projects.qrels(db, 1, "original").values())
    assert (f"The validated qrels cover 8 of the benchmark's {n_rows} judgments with a human check "
            f"({100 * 8 / n_rows:.1f}%): 1 left out, 7 kept; the other {n_rows - 8} keep their original judgment "
            "unchecked.") in text
    # shares: validity Yes on 7 of 8 screens (87.5%), naturalness Yes on 7 of 8
    assert "Valid instruction: 7 of 8 decided instances (87.5%); over the whole benchmark an estimated " in text
    assert "Natural instruction: 7 of 8 decided instances (87.5%)" in text
    # the paragraph is the pieces' sentences in order: ranking, change, coverage, shares
    assert text.index("The ranking") < text.index("The largest") < text.index("The validated qrels cover") < text.index(
        "Valid instruction")


def test_the_report_opens_with_the_verdict(validated):
    db, sid, _ = validated
    report = benchmark_report(db, [sid], n_boot=100)
    md = to_markdown(report)
    assert md.startswith("# Do the benchmark's conclusions survive?\n\n## Verdict\n\n")
    paragraph = md.split("## Verdict\n\n", 1)[1].split("\n\n", 1)[0]
    assert "The ranking of the 3 systems by nDCG@10 changes" in paragraph and "\n" not in paragraph
    assert md.index("## Verdict") < md.index("## Methods") < md.index("## Does the leaderboard change?")
    rows = [r for r in csv_rows(report) if r[0] == "verdict"]
    assert rows and rows[0][1] == "demo" and rows[0][-1].startswith("The ranking of the 3 systems")
    json.dumps(report, allow_nan=False)  # JSON-ready


def test_sentences_when_the_figures_do_not_exist():
    assert ranking_sentence({"known": False}, "original", "validated") == (
        "Whether the ranking of retrievers changes is not known yet: no retriever has been evaluated on both the "
        "original and the validated qrels.")
    two = {"known": True, "measure": "nDCG@10", "changed": False, "n_systems": 2, "moves": [], "tau": None,
           "low": None, "high": None, "why_no_interval": "undefined with 12 queries and 2 systems: needs at least "
           "10 queries and 3 systems", "p_order_differs": 0.125}
    assert ranking_sentence(two, "original", "validated") == (
        "The ranking of the 2 systems by nDCG@10 does not change from the original to the validated qrels (no "
        "interval for Kendall tau: undefined with 12 queries and 2 systems: needs at least 10 queries and 3 systems); "
        "the two systems swap order in 12.5% of the bootstrap replicates.")
    same = {"known": True, "view": "checked", "system": "a", "measure": "nDCG@10", "delta": 0.0, "queries_changed": 0,
            "n_systems": 2}
    assert change_sentence(same) == "No system's nDCG@10 changes on the queries the study checked (2 systems)."
    assert change_sentence({"known": False}) == ""
