"""`ifjudge eval run` on its defaults follows MTEB's conventions, each rule with a hand-computed
value: every top_ranked candidate ranked (more than 100, zero BM25 scores too, ties by doc id
descending), the query-then-instruction template, measures by name with per-benchmark defaults,
run order kept when a stored run is reused, external runs keyed by MTEB's ``<qid>-og`` /
``<qid>-changed`` ids or given one file per mode, a run matching nothing refused, and generic
queries without instruction evaluated."""
import json

import pytest

from evaluation.runner import run_eval
from formats.bundle import Bundle, Document, Instance, Qrel, Query
from storage import projects
from storage.db import connect
from storage.eval_runs import list_eval_runs, load_eval_run
from storage.projects import import_bundle

N_DOCS = 120  # more than the old default depth of 100


def candidates_bundle() -> Bundle:
    """One FollowIR query over 120 candidates. Only d000 holds "apple" (the query) and only d050
    "banana" (the changed instruction); every other document shares no term with the query."""
    docs = [Document(f"d{i:03d}", "apple filler" if i == 0 else "banana filler" if i == 50 else "filler text")
            for i in range(N_DOCS)]
    return Bundle(
        documents=docs,
        queries=[Query("1", "apple")],
        instances=[Instance("1-og", "1", "1", "", "og"), Instance("1-changed", "1", "1", "banana", "changed")],
        # original: d000 and d005 relevant; changed: d000 is not relevant any more (its changed document)
        qrels=[Qrel("1", "d000", 1), Qrel("1", "d005", 1), Qrel("1", "d000", 0, "changed"), Qrel("1", "d005", 1, "changed")],
        top_ranked={"1": [d.doc_id for d in docs]},
    )


@pytest.fixture
def cand_db(tmp_path):
    path = tmp_path / "c.db"
    import_bundle(connect(path), "cand", candidates_bundle(), fmt="followir")
    return path


def test_every_candidate_is_ranked_zero_scores_last_by_doc_id(cand_db, run_cli):
    code, out, err = run_cli("eval", "run", "--db", cand_db, "--project", "cand", "--model", "bm25",
                             "--measures", "RR,nDCG@10,p-MRR", "--json")
    assert code == 0, err
    summary = json.loads(out)
    stored = load_eval_run(connect(cand_db), summary["eval_run_id"])
    assert stored["template"] == "query_instruction" and stored["settings"]["k"] is None  # all candidates
    run = stored["run"]["1"]
    # all 120 candidates, d000 first (the only one with "apple"), then the 119 zero scores by doc id descending
    assert len(run) == N_DOCS
    assert list(run) == ["d000"] + [f"d{i:03d}" for i in range(N_DOCS - 1, 0, -1)]
    assert all(v == 0.0 for d, v in run.items() if d != "d000")
    # RR of the og run: d000 at rank 1 -> 1.0; nDCG@10: d000 at 1, d005 at rank 2 + (119 - 5) = 116 (beyond 10):
    # DCG = 1, IDCG = 1 + 1/log2(3)
    import math
    assert summary["metrics"]["RR"] == pytest.approx(1.0)
    assert summary["metrics"]["nDCG@10"] == pytest.approx(1 / (1 + 1 / math.log2(3)))
    # changed run ("apple banana"): d000 and d050 score the same (one term each, df 1, same length);
    # the tie goes to the higher doc id, d050: d000 moves from rank 1 to 2 -> 1 - 1/2 = 0.5
    assert summary["metrics"]["p-MRR"] == pytest.approx(0.5)
    changed = load_eval_run(connect(cand_db), summary["eval_run_id"])["settings"]["paired_run"]["run"]["1"]
    assert list(changed)[:2] == ["d050", "d000"] and len(changed) == N_DOCS


def test_rank_of_a_zero_score_relevant_candidate_beyond_100(cand_db, run_cli):
    # on the changed qrels only d005 is relevant: BM25 scores it 0; it is ranked in the changed run after
    # d050, d000 and the 113 zeros d119..d006 (d050 excepted): rank 116 -> RR = 1/116; with the old cut at
    # 100 (and zero scores dropped) it was absent: 0
    code, out, err = run_cli("eval", "run", "--db", cand_db, "--project", "cand", "--model", "bm25",
                             "--qrels-version", "changed", "--measures", "RR", "--json")
    assert code == 0, err
    assert json.loads(out)["metrics"]["RR"] == pytest.approx(1 / 116)


def test_measures_by_name_are_stored_under_canonical_names(cand_db, run_cli):
    code, out, err = run_cli("eval", "run", "--db", cand_db, "--project", "cand", "--model", "bm25",
                             "--measures", "ndcg_cut_10, MAP@1000,P_5,recip_rank,RR@1,p-MRR", "--json")
    assert code == 0, err
    metrics = json.loads(out)["metrics"]
    assert list(metrics) == ["nDCG@10", "AP@1000", "P@5", "RR", "RR@1", "p-MRR(qrels='changed')", "p-MRR"]
    # AP@1000 of the og run: d000 at 1 (precision 1), d005 at 116 (precision 2/116), over 2 relevant
    assert metrics["AP@1000"] == pytest.approx((1 + 2 / 116) / 2)
    assert metrics["P@5"] == pytest.approx(1 / 5) and metrics["RR@1"] == pytest.approx(1.0)


def test_a_followir_project_gets_followirs_headline_measures_by_default(cand_db, run_cli):
    code, out, _ = run_cli("eval", "run", "--db", cand_db, "--project", "cand", "--model", "bm25", "--json")
    assert code == 0
    assert set(json.loads(out)["metrics"]) == {"nDCG@10", "AP@1000", "nDCG@5", "p-MRR", "p-MRR(qrels='changed')"}


def test_an_unknown_measure_is_refused_in_one_line_listing_the_accepted_ones(cand_db, run_cli):
    code, out, err = run_cli("eval", "run", "--db", cand_db, "--project", "cand", "--model", "bm25",
                             "--measures", "nDCG@10,ndgc@10")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "unknown measure 'ndgc@10'" in err
    assert "nDCG[@k]" in err and "p-MRR" in err and "Robustness@k" in err  # what is accepted
    assert list_eval_runs(connect(cand_db), 1) == []


def test_a_measure_the_project_cannot_compute_is_undefined_with_its_reason(cand_db, run_cli):
    code, out, _ = run_cli("eval", "run", "--db", cand_db, "--project", "cand", "--model", "bm25",
                           "--measures", "nDCG@10,WISE,Robustness@10", "--json")
    summary = json.loads(out)
    assert code == 0 and summary["metrics"]["WISE"] is None and summary["metrics"]["Robustness@10"] is None
    assert "reversed" in summary["undefined"]["WISE"] and "more than one" in summary["undefined"]["Robustness@10"]


# --- run order: one answer whether the stored run is reused or not -------------------------------

class ListedTies:
    """A retriever whose changed run lists two equal scores as f3 then f1 (not in sorted-key order)."""

    name = "listed-ties"
    external = False
    reranker = None

    def identity(self):
        return {"retriever": self.name}

    def retrieve(self, topics, documents, *, template, k, candidates, progress):
        runs = {"og": {"f1": 0.9, "f2": 0.8, "f3": 0.1}, "changed": {"f3": 0.5, "f1": 0.5, "f2": 0.1}}
        return {t["qid"]: dict(runs[t["variant"]]) for t in topics}


def paired_bundle() -> Bundle:
    """FollowIR query 101: f1, f2 relevant originally; f1 not relevant under the changed narrative.
    Query 102 likewise with f5 (changed document) and f6."""
    return Bundle(
        documents=[Document(f"f{i}", f"text {i}") for i in range(1, 7)],
        queries=[Query("101", "electric cars"), Query("102", "solar")],
        instances=[Instance(f"{q}-{v}", q, q, f"{q} {v} instruction", v) for q in ("101", "102") for v in ("og", "changed")],
        qrels=[Qrel("101", "f1", 1), Qrel("101", "f2", 1), Qrel("101", "f1", 0, "changed"), Qrel("101", "f2", 1, "changed"),
               Qrel("102", "f5", 1), Qrel("102", "f6", 1), Qrel("102", "f5", 0, "changed"), Qrel("102", "f6", 1, "changed")],
    )


@pytest.fixture
def paired_db(tmp_path):
    path = tmp_path / "p.db"
    import_bundle(connect(path), "fir", paired_bundle(), fmt="followir")
    return path


def test_run_order_gives_one_answer_whether_the_stored_run_is_reused_or_not(tmp_path):
    db = connect(tmp_path / "r.db")
    b = paired_bundle()
    b.queries, b.instances = b.queries[:1], b.instances[:2]
    b.qrels = [q for q in b.qrels if q.qid == "101"]
    import_bundle(db, "fir", b, fmt="followir")
    # the first evaluation stores the og run, and the changed run as its paired run
    run_eval(db, projects.get_project(db, "fir"), model=ListedTies(), qrels_version="original", ties="run-order")
    reused = load_eval_run(db, run_eval(db, projects.get_project(db, "fir"), model=ListedTies(), qrels_version="changed", ties="run-order"))
    fresh = load_eval_run(db, run_eval(db, projects.get_project(db, "fir"), model=ListedTies(), qrels_version="changed", ties="run-order",
                                       reuse=False))
    assert reused["settings"]["reused_run"] is True and fresh["settings"]["reused_run"] is False
    # f1 (changed document): og rank 1; changed run as listed f3, f1 -> rank 2: 1 - 1/2 = 0.5
    # (read back with sorted keys, f1 would come first: rank 1, p-MRR 0)
    name = "p-MRR(ties='run-order')"  # the tie rule is in the stored name
    assert reused["metrics"][name] == pytest.approx(0.5) and fresh["metrics"][name] == pytest.approx(0.5)
    assert list(reused["run"]["101"]) == ["f3", "f1", "f2"]


# --- external runs of paired benchmarks ----------------------------------------------------------

OG = {"101": [("f1", 3.0), ("f2", 2.0), ("f3", 1.0)], "102": [("f5", 2.0), ("f6", 1.0)]}
CHANGED = {"101": [("f2", 3.0), ("f3", 2.0), ("f1", 1.0)], "102": [("f6", 2.0), ("f5", 1.0)]}
# hand-computed p-MRR: 101: f1 moves 1 -> 3: 1 - 1/3 = 2/3; 102: f5 moves 1 -> 2: 1 - 1/2 = 1/2
PMRR = (2 / 3 + 1 / 2) / 2


def trec_lines(runs: dict, suffix: str = "") -> str:
    return "".join(f"{q}{suffix} Q0 {d} {r} {s} sys\n" for q, docs in runs.items() for r, (d, s) in enumerate(docs, 1))


def test_an_external_run_with_mteb_ids_is_scored(paired_db, tmp_path, run_cli):
    path = tmp_path / "mteb.run"
    path.write_text(trec_lines(OG, "-og") + trec_lines(CHANGED, "-changed"))
    code, out, err = run_cli("eval", "run", "--db", paired_db, "--project", "fir", "--model", path, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["metrics"]["p-MRR"] == pytest.approx(PMRR) and summary["n_queries"] == 2
    assert summary["missing_queries"] == []
    # nDCG@10 of the og run on the original qrels: f1, f2 at ranks 1, 2 (101); f5, f6 at 1, 2 (102) -> 1.0
    assert summary["metrics"]["nDCG@10"] == pytest.approx(1.0)


def test_one_external_run_file_per_mode_is_scored(paired_db, tmp_path, run_cli):
    (tmp_path / "og.run").write_text(trec_lines(OG))
    (tmp_path / "changed.run").write_text(trec_lines(CHANGED))
    code, out, err = run_cli("eval", "run", "--db", paired_db, "--project", "fir", "--model", tmp_path / "og.run",
                             "--changed-run", tmp_path / "changed.run", "--json")
    assert code == 0, err
    assert json.loads(out)["metrics"]["p-MRR"] == pytest.approx(PMRR)


def test_an_external_run_keyed_by_query_id_alone_gives_no_p_mrr(paired_db, tmp_path, run_cli):
    path = tmp_path / "plain.run"
    path.write_text(trec_lines(OG))
    code, out, _ = run_cli("eval", "run", "--db", paired_db, "--project", "fir", "--model", path, "--json")
    summary = json.loads(out)
    # one ranking per query serves og and changed alike: p-MRR would be 0 by construction
    assert code == 0 and summary["metrics"]["p-MRR"] is None and "-og" in summary["undefined"]["p-MRR"]


def test_an_external_run_matching_no_query_is_refused(paired_db, tmp_path, run_cli):
    path = tmp_path / "other.run"
    path.write_text("999-og Q0 f1 1 1.0 sys\n999-changed Q0 f2 1 1.0 sys\n")
    code, out, err = run_cli("eval", "run", "--db", paired_db, "--project", "fir", "--model", path)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "ranks none of the 2 evaluated queries" in err and "999-changed" in err and "101-og" in err
    assert list_eval_runs(connect(paired_db), 1) == []


# --- generic projects: a query without instruction is evaluated ----------------------------------

def test_a_generic_query_without_instruction_is_evaluated(tmp_path):
    db = connect(tmp_path / "g.db")
    import_bundle(db, "g", Bundle(
        documents=[Document("d1", "apple pie"), Document("d2", "banana bread"), Document("d3", "cherry jam")],
        queries=[Query("q1", "banana"), Query("q2", "apple")],
        instances=[Instance("q1", "q1", "q1", "bread please", "og")],  # q2 has no instruction
        qrels=[Qrel("q1", "d2", 1), Qrel("q2", "d1", 1)],
    ), fmt="beir", kind="generic")
    r = load_eval_run(db, run_eval(db, projects.get_project(db, "g"), model="bm25", measures=["nDCG@10"]))
    # both queries find their document first: nDCG@10 = 1 each, mean 1 (q2 left out before: 0.5 with missing=zero)
    assert set(r["per_query"]) == {"q1", "q2"} and r["settings"]["evaluation"]["n_queries"] == 2
    assert r["metrics"]["nDCG@10"] == pytest.approx(1.0)


def test_an_infosearch_run_with_mteb_ids_or_one_file_per_mode_is_scored(tmp_path, run_cli):
    db = tmp_path / "is.db"
    import_bundle(connect(db), "is", Bundle(
        documents=[Document(d, f"text {d}") for d in ("a", "b", "c")],
        queries=[Query("1", "topic")],
        instances=[Instance(f"1-{v}", "1", "1", f"{v} instruction", v) for v in ("og", "changed", "reversed")],
        # a relevant under both instructions (a positive); b relevant originally, not under the instruction
        qrels=[Qrel("1", "a", 1), Qrel("1", "b", 1), Qrel("1", "a", 1, "changed"), Qrel("1", "b", 0, "changed"),
               Qrel("1", "a", 0, "reversed"), Qrel("1", "b", 1, "reversed")],
    ), fmt="infosearch")
    runs = {"og": [("b", 3.0), ("a", 2.0), ("c", 1.0)], "changed": [("a", 5.0), ("b", 1.0)],
            "reversed": [("b", 3.0), ("c", 2.0), ("a", 1.0)]}
    (tmp_path / "mteb.run").write_text("".join(trec_lines({"1": docs}, f"-{v}") for v, docs in runs.items()))
    for v, docs in runs.items():
        (tmp_path / f"{v}.run").write_text(trec_lines({"1": docs}))
    one = run_cli("eval", "run", "--db", db, "--project", "is", "--model", tmp_path / "mteb.run",
                  "--measures", "SICR,p-MRR", "--json")
    per_mode = run_cli("eval", "run", "--db", db, "--project", "is", "--model", tmp_path / "og.run",
                       "--changed-run", tmp_path / "changed.run", "--reversed-run", tmp_path / "reversed.run",
                       "--measures", "SICR,p-MRR", "--json")
    for code, out, err in (one, per_mode):
        assert code == 0, err
        metrics = json.loads(out)["metrics"]
        # positive a: R_ins 1 < R_ori 2 < R_rev 3 and S 5 > 2 > 1 -> SICR 1
        # b (relevant originally only): rank 1 originally, 2 with the instruction -> p-MRR 1 - 1/2 = 0.5
        assert metrics["SICR"] == pytest.approx(1.0) and metrics["p-MRR"] == pytest.approx(0.5)
