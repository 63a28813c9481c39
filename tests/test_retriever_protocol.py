"""The retriever protocol: every kind of ``--model`` builds a Retriever, and run_eval evaluates any
Retriever the same way (label, identity, reuse of a stored run, documents only when read)."""
import hashlib

import pytest

from evaluation.retrievers import Retriever
from evaluation.retrievers.bm25 import BM25Retriever
from evaluation.retrievers.build import build_retriever
from evaluation.retrievers.dense import DenseRetriever
from evaluation.retrievers.external import ExternalRun, names_external_run
from evaluation.retrievers.rerank import Reranked, Reranker
from evaluation.runner import run_eval
from storage import projects
from storage.errors import IFJudgeError
from storage.eval_runs import load_eval_run

RUN = "q1_1 Q0 d2 1 9.0 sys\nq1_1 Q0 d1 2 5.0 sys\nq2_2 Q0 d3 1 3.0 sys\n"


@pytest.fixture
def db(instructir_db):
    """The InstructIR-like project "demo" (tests/builders.py)."""
    return instructir_db


class Overlap:
    """A retriever written from the protocol alone: score = words shared by query and document."""

    name = "overlap"
    external = False
    reranker = None

    def __init__(self, weight=1.0):
        self.weight, self.calls, self.documents_seen = weight, 0, 0

    def identity(self):
        return {"retriever": "overlap", "weight": self.weight}

    def retrieve(self, topics, documents, *, template, k=100, candidates=None, progress=None):
        self.calls += 1
        self.documents_seen = len(documents)
        run = {}
        for t in topics:
            words = set(template.query(t["query"], t["instruction"]).lower().split())
            scored = {d: self.weight * len(words & set(doc["text"].lower().split())) for d, doc in documents.items()}
            run[t["qid"]] = dict(sorted(((d, s) for d, s in scored.items() if s), key=lambda x: -x[1])[:k])
        return run


def test_every_model_value_builds_a_retriever(tmp_path):
    path = tmp_path / "sys.run"
    path.write_text(RUN)
    overlap = Reranker(lambda pairs: [0.0] * len(pairs), name="zero")
    built = {
        "bm25": build_retriever("bm25"),
        "file": build_retriever(str(path)),
        "stored": build_retriever("external:imported", stored_run=lambda name: {"q1_1": {"d1": 1.0}}),
        "dense": build_retriever("minilm", cache_dir=tmp_path / "emb"),
        "object": build_retriever(Overlap()),
        "reranked": build_retriever("bm25", rerank=overlap),
    }
    assert all(isinstance(r, Retriever) for r in built.values())
    assert isinstance(built["bm25"], BM25Retriever) and isinstance(built["dense"], DenseRetriever)
    assert isinstance(built["file"], ExternalRun) and isinstance(built["reranked"], Reranked)
    assert [r.external for r in built.values()] == [False, True, True, False, False, False]
    assert built["file"].name == "external:sys.run"
    assert built["file"].identity() == {"external": "external:sys.run", "sha": hashlib.sha256(RUN.encode()).hexdigest()}
    assert built["reranked"].reranker == "zero" and built["reranked"].identity() == built["bm25"].identity()
    assert names_external_run(str(path)) and names_external_run("external:x") and not names_external_run("bm25")
    with pytest.raises(IFJudgeError, match="no project"):
        build_retriever("external:imported")
    with pytest.raises(IFJudgeError, match="got int"):
        build_retriever(42)


def test_a_new_retriever_is_evaluated_stored_and_reused(db):
    first = Overlap()
    a = load_eval_run(db, run_eval(db, projects.get_project(db, "demo"), model=first, template="instruction_query", qrels_version="original"))
    assert first.calls == 1 and first.documents_seen == 6
    assert a["model"] == "overlap" and a["settings"]["model_identity"] == {"retriever": "overlap", "weight": 1.0}
    assert a["metrics"]["nDCG@10"] > 0 and a["settings"]["reused_run"] is False
    # the same identity on another qrels version: the stored run, nothing retrieved
    again = Overlap()
    b = load_eval_run(db, run_eval(db, projects.get_project(db, "demo"), model=again, template="instruction_query", qrels_version="validated"))
    assert again.calls == 0 and b["settings"]["reused_run"] is True and b["run"] == a["run"]
    assert b["settings"]["retrieval_key"] == a["settings"]["retrieval_key"]
    # another identity is another retrieval
    other = Overlap(weight=2.0)
    c = load_eval_run(db, run_eval(db, projects.get_project(db, "demo"), model=other, template="instruction_query", qrels_version="validated"))
    assert other.calls == 1 and c["settings"]["retrieval_key"] != a["settings"]["retrieval_key"]


def test_external_run_reranked_reads_documents_and_keeps_its_label(db, tmp_path):
    path = tmp_path / "sys.run"
    path.write_text(RUN)
    seen = []

    def score(pairs):
        seen.extend(d for _, d in pairs)
        return [float(len(d)) for _, d in pairs]  # longer document first

    stored = load_eval_run(db, run_eval(db, projects.get_project(db, "demo"), model=str(path), rerank=Reranker(score, name="length")))
    assert stored["model"] == "external:sys.run" and stored["template"] == "external"
    assert stored["settings"]["rerank"] == "length" and seen  # the documents' text reached the reranker
    assert list(stored["run"]["q1_1"]) == ["d2", "d1"]  # d2 is the longer text
    plain = load_eval_run(db, run_eval(db, projects.get_project(db, "demo"), model=str(path)))
    assert plain["settings"]["retrieval_key"] != stored["settings"]["retrieval_key"]
    assert plain["run"] == {"q1_1": {"d2": 9.0, "d1": 5.0}, "q2_2": {"d3": 3.0}}
