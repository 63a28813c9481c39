"""Evaluation reads a project's corpus in a stream from storage (``storage.projects.StoredDocuments``):
the dense retriever, BM25 and the reranker pull a bounded batch of documents at a time and let it
go before the next, and their runs equal those over the whole corpus loaded as a dict."""
import random
import weakref

import numpy as np
import pytest

from evaluation.retrievers.bm25 import BM25Retriever
from evaluation.retrievers import dense
from evaluation.retrievers.dense import DenseRetriever
from evaluation.retrievers.rerank import Reranked, Reranker
from evaluation.templates import get_template
from formats.bundle import Bundle, Document, Query
from storage import projects
from storage.db import connect

N_DOCS = 300
WORDS = "pizza dough rome arena lions yeast flour oven the a of and emperor titus wheat rice".split()
TOPICS = [{"qid": f"q{i}", "query": q, "instruction": ""}
          for i, q in enumerate(["pizza dough", "rome lions arena", "rice flour oven", "emperor"])]


def fake_vectors(texts):
    """Deterministic vectors from the text: the encoder of the dense tests, no model loaded."""
    rngs = [np.random.default_rng(abs(hash(t)) % 2**32) for t in texts]
    return np.array([r.random(8) for r in rngs], dtype=np.float32).reshape(len(texts), 8)


class Doc(dict):
    """A document dict that can be weakly referenced (to count the documents still alive)."""


class CountingDocuments(projects.StoredDocuments):
    """Records each batch read and how many documents of earlier batches are still alive at each read."""

    def __init__(self, db, pid):
        super().__init__(db, pid)
        self.batches: list[int] = []
        self.alive_at_read: list[int] = []
        self.single_reads = 0
        self._refs: list[weakref.ref] = []

    def many(self, doc_ids):
        self.alive_at_read.append(sum(r() is not None for r in self._refs))
        docs = [Doc(d) for d in super().many(doc_ids)]
        self.batches.append(len(docs))
        self._refs = [r for r in self._refs if r() is not None] + [weakref.ref(d) for d in docs]
        return docs

    def __getitem__(self, doc_id):
        self.single_reads += 1
        return super().__getitem__(doc_id)


@pytest.fixture
def stored(tmp_path):
    """A project of N_DOCS short documents, imported in shuffled id order (some of stop words only)."""
    db = connect(tmp_path / "docs.db")
    rng = random.Random(21)
    ids = [f"d{i}" for i in range(N_DOCS)]
    rng.shuffle(ids)
    b = Bundle()
    b.queries.append(Query("q0", "pizza dough"))
    for d in ids:
        b.documents.append(Document(d, " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 10))),
                                    title=rng.choice(["", "Rome", "Pizza"])))
    projects.import_bundle(db, "p", b, fmt="beir")
    return db, projects.get_project(db, "p")["id"]


def test_stored_documents_is_the_documents_dict_read_lazily(stored, monkeypatch):
    db, pid = stored
    monkeypatch.setattr(projects, "READ_CHUNK", 50)  # a batch read spans several queries
    docs, plain = projects.StoredDocuments(db, pid), projects.documents(db, pid)
    assert list(docs) == list(plain)  # the same order, which ranks and ties depend on
    assert len(docs) == N_DOCS and "d7" in docs and "nope" not in docs
    assert docs["d7"] == plain["d7"]
    ids = ["d299", "d0", "d150"] + [f"d{i}" for i in range(1, 120)]  # 122 ids: three queries, in the asked order
    assert docs.many(ids) == [plain[d] for d in ids]
    with pytest.raises(KeyError, match="nope"):
        docs.many(["d1", "nope"])
    with pytest.raises(KeyError):
        docs["nope"]


def test_dense_reads_one_bounded_chunk_at_a_time_and_ranks_as_over_the_dict(stored, tmp_path, monkeypatch):
    db, pid = stored
    docs = CountingDocuments(db, pid)

    def retriever(cache):
        r = DenseRetriever("minilm", cache_dir=tmp_path / cache, doc_chunk=32, batch_size=8)
        r._encode = fake_vectors  # no model is loaded
        return r

    run = retriever("a").retrieve(TOPICS, docs, template=get_template("query"), k=10)
    assert docs.batches == [32] * 9 + [12]  # 300 documents, 32 at a time, each read once
    assert docs.single_reads == 0
    assert max(docs.alive_at_read) == 0  # an earlier chunk's documents are gone when the next is read
    monkeypatch.setattr(dense, "READ_BATCH", 10)  # within a chunk, stored texts are read 10 at a time
    small = CountingDocuments(db, pid)
    assert retriever("c").retrieve(TOPICS, small, template=get_template("query"), k=10) == run
    # at most the last document read before (the loop variable) is alive at the next read
    assert small.batches == [10, 10, 10, 2] * 9 + [10, 2] and max(small.alive_at_read) <= 1
    plain = retriever("b").retrieve(TOPICS, projects.documents(db, pid), template=get_template("query"), k=10)
    assert run == plain and list(run["q0"]) == list(plain["q0"])


def test_bm25_tokenises_in_chunks_reports_each_and_ranks_as_over_the_dict(stored):
    db, pid = stored
    docs, seen = CountingDocuments(db, pid), []
    run = BM25Retriever(chunk=64).retrieve(TOPICS, docs, template=get_template("query"), k=20,
                                           progress=lambda done, total, msg: seen.append((done, total, msg)))
    assert docs.batches == [64, 64, 64, 64, 44] and docs.single_reads == 0 and max(docs.alive_at_read) == 0
    indexing = [(d, t) for d, t, m in seen if m == "indexing documents (BM25)"]
    assert indexing == [(0, 300), (64, 300), (128, 300), (192, 300), (256, 300), (300, 300)]
    stages = [m for i, (_, _, m) in enumerate(seen) if i == 0 or seen[i - 1][2] != m]
    assert stages == ["indexing documents (BM25)", "building the BM25 index", "retrieving (BM25)"]
    plain = BM25Retriever().retrieve(TOPICS, projects.documents(db, pid), template=get_template("query"), k=20)
    assert run == plain and all(list(run[q]) == list(plain[q]) for q in run)  # same scores, same order
    assert all(run[q] for q in run)


def test_bm25_indexes_stored_documents_once_for_several_runs(stored):
    """An evaluation's og and changed runs share one index: the second run reads no document."""
    db, pid = stored
    docs, bm25 = CountingDocuments(db, pid), BM25Retriever(chunk=100)
    og = bm25.retrieve(TOPICS, docs, template=get_template("query"), k=20)
    changed_topics = [{**t, "instruction": "lions"} for t in TOPICS]
    changed = bm25.retrieve(changed_topics, docs, template=get_template("instruction_query"), k=20)
    assert docs.batches == [100, 100, 100]  # read once, for the first run
    assert changed == BM25Retriever().retrieve(changed_topics, projects.documents(db, pid),
                                               template=get_template("instruction_query"), k=20)
    assert og != changed
    bm25.retrieve(TOPICS, docs, template=get_template("instructor"), k=20)  # another document template
    assert docs.batches == [100] * 6  # indexed again


def test_the_reranker_reads_only_each_querys_candidates(stored):
    db, pid = stored
    docs = CountingDocuments(db, pid)
    # scores a pair by the number of characters of the document: a deterministic second stage
    two = Reranked(BM25Retriever(chunk=1000), Reranker(lambda pairs: [len(p[1]) for p in pairs], name="len"))
    run = two.retrieve(TOPICS, docs, template=get_template("query"), k=5)
    first_stage = docs.batches[0]  # BM25 read the corpus in one chunk of 1000 at most
    assert first_stage == N_DOCS
    assert docs.batches[1:] == [len(run[t["qid"]]) for t in TOPICS]  # then one batch per query: its top 5
    assert all(len(run[t["qid"]]) == 5 for t in TOPICS)
    assert run == two.retrieve(TOPICS, projects.documents(db, pid), template=get_template("query"), k=5)
