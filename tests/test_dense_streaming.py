"""Dense retrieval reads the corpus in a stream: it pulls the documents of one ``doc_chunk`` at a
time, encodes them, scores them and lets them go before pulling the next chunk, so at no moment
more than ``doc_chunk`` document texts (and their vectors) are held beyond the embedding cache,
whatever the corpus size. Proved with a corpus that builds each document when it is read and
counts how many were read ahead of the encoder; the encoder is a fake (deterministic vectors from
the text) so no model is loaded."""
from collections.abc import Mapping

import numpy as np

from evaluation.retrievers.dense import DenseRetriever
from evaluation.templates import get_template


class CountingCorpus(Mapping):
    """``n`` documents made on demand (``d00000`` ...); ``pulled``: how many distinct documents
    have been read so far (the retriever reads a document's title and text in two look-ups)."""

    def __init__(self, n: int):
        self.ids = [f"d{i:05d}" for i in range(n)]
        self.read: set[str] = set()

    @property
    def pulled(self) -> int:
        return len(self.read)

    def __getitem__(self, doc_id):
        self.read.add(doc_id)
        i = int(doc_id[1:])
        return {"title": "", "text": f"document {i} words {' '.join(str(j) for j in range(i % 7))}"}

    def __iter__(self):
        return iter(self.ids)

    def __len__(self):
        return len(self.ids)

    def __contains__(self, doc_id):
        return isinstance(doc_id, str) and doc_id[:1] == "d" and doc_id[1:].isdigit() and int(doc_id[1:]) < len(self.ids)


def fake_vectors(texts):
    rng = [np.random.default_rng(abs(hash(t)) % 2**32) for t in texts]
    return np.array([r.random(8) for r in rng], dtype=np.float32).reshape(len(texts), 8)


def test_documents_are_read_one_chunk_ahead_of_the_encoder_at_most(tmp_path):
    corpus = CountingCorpus(1_000)
    r = DenseRetriever("minilm", cache_dir=tmp_path, doc_chunk=64, batch_size=16)
    encoded_docs, ahead, batches = [0], [], []

    def encode(texts):
        batches.append(len(texts))
        docs = [t for t in texts if t.startswith("document")]
        ahead.append(corpus.pulled - encoded_docs[0])  # read but not yet encoded, at this moment
        encoded_docs[0] += len(docs)
        return fake_vectors(texts)

    r._encode = encode  # the instance's encoder: no model is loaded
    topics = [{"qid": f"q{i}", "query": f"words {i}", "instruction": ""} for i in range(3)]
    run = r.retrieve(topics, corpus, template=get_template("query"), k=5)
    assert corpus.pulled == 1_000 and encoded_docs[0] == 1_000  # each document read once, all encoded
    assert max(ahead) <= 64  # never more than one doc_chunk of texts read ahead of the encoder
    assert max(batches) <= 64  # the encoder gets at most a cache chunk (4 x 16) per call
    assert all(len(docs) == 5 for docs in run.values())


def test_the_bound_does_not_grow_with_the_corpus_and_ranks_equal_the_one_shot_matrix(tmp_path):
    """Same 64-text bound on a corpus 4x larger; the top 5 are those of the full queries x corpus product."""
    corpus = CountingCorpus(4_000)
    r = DenseRetriever("minilm", cache_dir=tmp_path, doc_chunk=64, batch_size=16)
    ahead, done = [], [0]

    def encode(texts):
        ahead.append(corpus.pulled - done[0])
        done[0] += sum(t.startswith("document") for t in texts)
        return fake_vectors(texts)

    r._encode = encode
    topics = [{"qid": "q", "query": "words 3", "instruction": ""}]
    run = r.retrieve(topics, corpus, template=get_template("query"), k=5)
    assert max(ahead) <= 64
    q = fake_vectors(["words 3"])[0]
    # the texts the retriever encodes: the template's document side ("document 7 words " loses its trailing space)
    docs = fake_vectors([get_template("query").document(corpus[d]["text"]) for d in corpus.ids])
    scores = (docs / np.linalg.norm(docs, axis=1, keepdims=True)) @ (q / np.linalg.norm(q))
    best = np.sort(scores)[::-1][:5]  # the 5 best scores of the one-shot product (float32 rounding apart)
    assert np.allclose(list(run["q"].values()), best, atol=1e-5)
    assert all(abs(run["q"][d] - scores[corpus.ids.index(d)]) < 1e-5 for d in run["q"])
