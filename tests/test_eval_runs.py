"""Eval runs: retrieve, evaluate on a qrels version, store; reuse across versions; the CLI."""
import json

import pytest

from evaluation import measures, pmrr
from evaluation.retrievers.bm25 import BM25Retriever
from evaluation.retrievers.dense import DenseRetriever
from evaluation.runner import run_eval
from formats.bundle import Bundle, Document, Instance, Qrel, Query
from storage import projects
from storage.db import connect
from storage.errors import IFJudgeError, NotFound
from storage.eval_runs import list_eval_runs, load_eval_run
from storage.projects import import_bundle, qrels
from tests.builders import DOCS

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL


@pytest.fixture
def db(instructir_db):
    """The InstructIR-like project "demo" (tests/builders.py) with qrels "validated"."""
    return instructir_db


def test_bm25_run_is_evaluated_and_stored(db, tmp_path):
    seen = []
    rid = run_eval(db, projects.get_project(db, "demo"), model="bm25", template="instruction_query", qrels_version="original",
                   cache_dir=tmp_path / "c", progress=lambda d, t, m: seen.append(m))
    stored = load_eval_run(db, rid)
    assert stored["model"] == "bm25" and stored["template"] == "instruction_query"
    assert stored["qrels_version"] == "original"
    # Every instance's target is BM25's first document (see the instructions' words).
    assert [next(iter(stored["run"][q])) for q in ("q1_1", "q1_2", "q2_1", "q2_2")] == ["d2", "d1", "d4", "d3"]
    assert stored["metrics"]["nDCG@10"] == pytest.approx(1.0)
    # the demo is an InstructIR project: InstructIR's headline measures by default
    assert set(stored["metrics"]) == {"nDCG@10", "Robustness@10"}
    # Per-query results are those of evaluation.measures on the stored run.
    expected = measures.evaluate(qrels(db, 1, "original"), stored["run"], ["nDCG@10"])["per_query"]
    assert {q: v["nDCG@10"] for q, v in stored["per_query"].items()} == pytest.approx(
        {q: v["nDCG@10"] for q, v in expected.items()})
    assert stored["settings"]["reused_run"] is False and stored["settings"]["k"] == 1000  # MTEB's depth
    assert "evaluating" in seen


def test_other_qrels_version_reuses_the_stored_run_without_retrieving(db, tmp_path, monkeypatch):
    first = run_eval(db, projects.get_project(db, "demo"), model="bm25", template="query", qrels_version="original")

    def boom(*a, **k):
        raise AssertionError("retrieval must not run again")

    monkeypatch.setattr(BM25Retriever, "retrieve", boom)
    second = run_eval(db, projects.get_project(db, "demo"), model="bm25", template="query", qrels_version="validated")
    a, b = load_eval_run(db, first), load_eval_run(db, second)
    assert b["settings"]["reused_run"] is True and b["run"] == a["run"]
    # q2_1's target moved to d3; the metrics follow the validated qrels.
    exp = measures.evaluate(qrels(db, 1, "validated"), a["run"], ["nDCG@10"], missing="zero")
    assert b["metrics"]["nDCG@10"] == pytest.approx(exp["measures"]["nDCG@10"])
    # A different template is a different retrieval: it does run.
    with pytest.raises(AssertionError, match="must not run"):
        run_eval(db, projects.get_project(db, "demo"), model="bm25", template="sep", qrels_version="validated")


def test_minilm_second_evaluation_encodes_nothing(db, tmp_path, monkeypatch):
    calls = []
    real = DenseRetriever._encode

    def counting(self, texts):
        calls.append(len(texts))
        return real(self, texts)

    monkeypatch.setattr(DenseRetriever, "_encode", counting)
    cache = tmp_path / "emb"
    rid = run_eval(db, projects.get_project(db, "demo"), model="minilm", template="instruction_query", qrels_version="original", cache_dir=cache)
    assert sum(calls) == len(DOCS) + 4
    stored = load_eval_run(db, rid)
    assert stored["model"] == "minilm" and len(stored["run"]) == 4 and stored["metrics"]["nDCG@10"] > 0
    calls.clear()
    # Forced re-retrieval on the corrected qrels: every embedding comes from the cache.
    rid2 = run_eval(db, projects.get_project(db, "demo"), model="minilm", template="instruction_query", qrels_version="validated",
                    cache_dir=cache, reuse=False)
    assert calls == []
    assert load_eval_run(db, rid2)["run"] == stored["run"]


def test_errors_name_what_exists(db):
    with pytest.raises(NotFound, match="original, validated"):
        run_eval(db, projects.get_project(db, "demo"), model="bm25", template="query", qrels_version="changed")
    with pytest.raises(IFJudgeError, match="instruction_query"):
        run_eval(db, projects.get_project(db, "demo"), model="bm25", template="prefix", qrels_version="original")
    with pytest.raises(NotFound, match="demo"):
        run_eval(db, projects.get_project(db, "nope"), model="bm25", template="query")


def test_external_trec_run_file_is_evaluated(db, tmp_path):
    path = tmp_path / "sys.run"
    path.write_text("q1_1 Q0 d2 1 9.0 sys\nq1_1 Q0 d1 2 5.0 sys\nq1_2 Q0 d2 1 3.0 sys\nq1_2 Q0 d1 2 2.0 sys\n")
    rid = run_eval(db, projects.get_project(db, "demo"), model=str(path), qrels_version="original", measures=["RR@10"])
    stored = load_eval_run(db, rid)
    assert stored["model"] == "external:sys.run" and stored["template"] == "external"
    assert stored["per_query"]["q1_1"]["RR@10"] == 1.0 and stored["per_query"]["q1_2"]["RR@10"] == 0.5
    # q2_* are judged but absent from the run: counted as 0 and listed.
    assert stored["settings"]["evaluation"]["missing_queries"] == ["q2_1", "q2_2"]
    assert stored["metrics"]["RR@10"] == pytest.approx((1 + 0.5) / 4)


def followir_bundle() -> Bundle:
    """One query, og and changed instructions; the changed one makes f2 non-relevant."""
    docs = {
        "f1": "Electric cars reduce urban air pollution according to city measurements.",
        "f2": "Electric cars in Norway: tax incentives and sales figures for 2020.",
        "f3": "Electric car battery recycling recovers lithium and cobalt.",
        "f4": "Gardening tips for tomatoes in cold climates.",
    }
    return Bundle(
        documents=[Document(k, v) for k, v in docs.items()],
        queries=[Query("101", "electric cars")],
        instances=[
            Instance("101-og", "101", "101", "Relevant documents discuss electric cars.", "og"),
            Instance("101-changed", "101", "101",
                     "Relevant documents discuss electric cars, but not sales figures or tax incentives.", "changed"),
        ],
        qrels=[Qrel("101", d, 1) for d in ("f1", "f2", "f3")]
        + [Qrel("101", "f1", 1, "changed"), Qrel("101", "f2", 0, "changed"), Qrel("101", "f3", 1, "changed")],
        top_ranked={"101": ["f1", "f2", "f3"]},
    )


def test_followir_project_gets_p_mrr_from_og_and_changed_runs(tmp_path):
    db = connect(tmp_path / "f.db")
    import_bundle(db, "fir", followir_bundle(), fmt="followir")
    rid = run_eval(db, projects.get_project(db, "fir"), model="bm25", template="instruction_query", qrels_version="original")
    stored = load_eval_run(db, rid)
    s = stored["settings"]
    assert s["variant"] == "og" and s["candidates"] == "top_ranked"
    assert set(stored["run"]["101"]) <= {"f1", "f2", "f3"}  # f4 is not a candidate
    paired = s["paired_run"]
    assert paired["variant"] == "changed"
    expected = pmrr.p_mrr(qrels(db, 1, "original"), qrels(db, 1, "changed"), stored["run"], paired["run"])
    assert stored["metrics"]["p-MRR"] == pytest.approx(expected["p-MRR"])
    assert "Robustness@10" not in stored["metrics"]  # one instance per group once a variant is chosen
    # The changed qrels judge the changed instruction; both runs are already stored.
    rid2 = run_eval(db, projects.get_project(db, "fir"), model="bm25", template="instruction_query", qrels_version="changed")
    s2 = load_eval_run(db, rid2)["settings"]
    assert s2["variant"] == "changed" and s2["reused_run"] is True and s2["paired_run"]["reused"] is True
    assert load_eval_run(db, rid2)["metrics"]["p-MRR"] == pytest.approx(expected["p-MRR"])


def test_cli_eval_run_and_compare_json(db, tmp_path, run_cli):
    dbfile = tmp_path / "t.db"
    code, out, err = run_cli("eval", "run", "--db", dbfile, "--project", "demo", "--model", "bm25",
                             "--template", "instruction_query", "--qrels-version", "original", "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["eval_run_id"] == list_eval_runs(db, 1)[-1]["id"]
    assert payload["metrics"]["nDCG@10"] == pytest.approx(1.0)
    code, out, err = run_cli("eval", "run", "--db", dbfile, "--project", "demo", "--model", "bm25",
                             "--template", "instruction_query", "--qrels-version", "validated")
    assert code == 0 and "stored run reused" in out and "nDCG@10" in out
    code, out, err = run_cli("eval", "compare", "--db", dbfile, "--project", "demo", "--json")
    assert code == 0, err
    cmp = json.loads(out)
    assert set(cmp) >= {"table", "kendall_tau", "paired_tests", "biggest_changes"}
    assert cmp["kendall_tau"][0]["tau"] is None and "1 system" in cmp["kendall_tau"][0]["reason"]
    code, out, err = run_cli("eval", "run", "--db", dbfile, "--project", "demo", "--model", "bm25",
                             "--qrels-version", "reversed")
    assert code == 2 and "no qrels version 'reversed'" in err


def test_rerank_stage_rescores_the_first_stage_and_is_part_of_the_retrieval(db):
    from evaluation.retrievers.rerank import Reranker

    # A stand-in second stage: counts words shared by the query text and the document.
    overlap = Reranker(lambda pairs: [len(set(q.lower().split()) & set(d.lower().split())) for q, d in pairs],
                       name="overlap")
    plain = load_eval_run(db, run_eval(db, projects.get_project(db, "demo"), model="bm25", template="query", k=2))
    reranked = load_eval_run(db, run_eval(db, projects.get_project(db, "demo"), model="bm25", template="query", k=2, rerank=overlap))
    assert reranked["settings"]["rerank"] == "overlap" and reranked["settings"]["reused_run"] is False
    for qid, docs in reranked["run"].items():
        assert set(docs) == set(plain["run"][qid])  # the first stage's top 2, re-scored
        assert all(float(s).is_integer() for s in docs.values())


def test_infosearch_project_gets_wise_sicr_and_its_p_mrr_from_three_runs(tmp_path):
    from pathlib import Path

    from evaluation.infosearch import infosearch_metrics
    from formats.readers import parse

    db = connect(tmp_path / "is.db")
    import_bundle(db, "is", parse("infosearch", [Path(__file__).parent / "fixtures" / "importers" / "infosearch"]),
                  fmt="infosearch")
    rid = run_eval(db, projects.get_project(db, "is"), model="bm25", template="instruction_query", qrels_version="original")
    stored = load_eval_run(db, rid)
    s = stored["settings"]
    assert s["variant"] == "og" and s["paired_run"]["variant"] == "changed"
    rev = s["paired_run"]["reversed"]["run"]
    expected = infosearch_metrics(qrels(db, 1, "original"), qrels(db, 1, "changed"),
                                  stored["run"], s["paired_run"]["run"], rev)
    for name in ("WISE", "SICR", "p-MRR"):
        assert stored["metrics"][name] == pytest.approx(expected[name])
    # each query has one document relevant under both instructions and one only originally
    assert (expected["n_queries"], expected["n_queries_pmrr"]) == (2, 2)
    assert stored["metrics"]["WISE"] is not None and not s["evaluation"]["undefined"]
    assert s["evaluation"]["infosearch"]["n_queries"] == 2
