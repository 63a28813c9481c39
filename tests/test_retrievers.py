"""Templates, the embedding cache, BM25, the bundled MiniLM bi-encoder and CrossEncoder reranking."""
from pathlib import Path

import numpy as np
import pytest

from evaluation.embedding_cache import EmbeddingCache, default_cache_dir, model_identity
from evaluation.retrievers.bm25 import BM25Retriever
from evaluation.retrievers.dense import DenseRetriever, ModelUnavailable
from evaluation.retrievers.rerank import Reranker, cross_encoder_reranker
from evaluation.retrievers.topk import top_k
from evaluation.templates import TEMPLATES, UnknownTemplate, get_template

DOCS = {
    "pizza": {"title": "Pizza", "text": "Neapolitan pizza dough is made with flour, water, salt and yeast."},
    "gluten": {"title": "", "text": "Gluten-free pizza crust uses rice flour instead of wheat flour."},
    "colosseum": {"title": "Colosseum", "text": "The Roman Colosseum was completed in 80 AD under emperor Titus."},
    "python": {"title": "", "text": "Python lists are mutable sequences while tuples are immutable."},
    "marathon": {"title": "", "text": "Marathon training plans increase the weekly running distance slowly."},
}
TOPICS = [
    {"qid": "t1", "query": "when was the Colosseum completed", "instruction": "I need an exact date."},
    {"qid": "t2", "query": "pizza dough recipe", "instruction": "I cannot eat wheat."},
]


# --- templates -------------------------------------------------------------------------------

def test_templates_format_instruction_and_query_as_named():
    assert get_template("query").query("q text", "instr") == "q text"
    assert get_template("instruction_query").query("q text", "instr") == "instr q text"
    assert get_template("query_instruction").query("q text", "instr") == "q text instr"
    assert get_template("sep").query("q text", "instr") == "instr [SEP] q text"
    inst = get_template("instructor")
    assert inst.query("q text", "instr") == "Represent the question for retrieving supporting documents: instr q text"
    assert inst.document("body", "Title") == "Represent the document for retrieval: Title body"
    assert get_template("query").document("body", "") == "body"  # no stray space without a title


def test_unknown_template_names_the_known_ones():
    with pytest.raises(UnknownTemplate) as err:
        get_template("nope")
    for name in TEMPLATES:
        assert name in str(err.value)


# --- top-k -----------------------------------------------------------------------------------

def test_top_k_orders_by_score_then_doc_id_descending():
    run = top_k(np.array([1.0, 3.0, 1.0, 1.0, 0.0]), ["a", "b", "c", "d", "e"], 3)
    assert list(run) == ["b", "d", "c"]
    assert top_k(np.array([0.0, 2.0]), ["x", "y"], 5, drop_zero=True) == {"y": 2.0}


# --- embedding cache -------------------------------------------------------------------------

def test_cache_encodes_only_missing_distinct_texts_and_persists(tmp_path):
    calls = []

    def encoder(texts):
        calls.append(list(texts))
        return np.array([[len(t), t.count("a")] for t in texts], dtype=float)

    seen = []
    cache = EmbeddingCache("toy-model", cache_dir=tmp_path)
    out = cache.encode(["aa", "b", "aa"], encoder, progress=lambda d, t, m: seen.append((d, t)))
    assert calls == [["aa", "b"]]  # the duplicate is encoded once
    np.testing.assert_array_equal(out, [[2, 2], [1, 0], [2, 2]])
    assert seen[-1] == (3, 3)

    again = EmbeddingCache("toy-model", cache_dir=tmp_path)  # a new process would do the same
    out2 = again.encode(["b", "ccc", "aa"], encoder)
    assert calls[-1] == ["ccc"]
    np.testing.assert_array_equal(out2, [[1, 0], [3, 0], [2, 2]])
    assert again.hits == 2 and again.misses == 1

    other = EmbeddingCache("another-model", cache_dir=tmp_path)
    other.encode(["aa"], encoder)
    assert calls[-1] == ["aa"]  # keyed by model identity too


def test_cache_dir_defaults_to_env_then_dot_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("IFJUDGE_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("IFJUDGE_CACHE_DIR")
    assert default_cache_dir() == Path(".cache") / "embeddings"


def test_model_identity_changes_when_local_files_change(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    first = model_identity(str(tmp_path))
    (tmp_path / "weights.bin").write_bytes(b"123")
    assert model_identity(str(tmp_path)) != first


# --- BM25 ------------------------------------------------------------------------------------

def test_bm25_ranks_the_obviously_matching_document_first():
    run = BM25Retriever().retrieve(TOPICS, DOCS, template=get_template("query"), k=10)
    assert next(iter(run["t1"])) == "colosseum"
    assert next(iter(run["t2"])) == "pizza"
    assert "marathon" not in run["t1"]  # no term in common: not retrieved
    scores = list(run["t2"].values())
    assert scores == sorted(scores, reverse=True)


def test_bm25_instruction_terms_count_under_instruction_query_template():
    bare = BM25Retriever().retrieve(TOPICS[1:], DOCS, template=get_template("query"), k=10)
    run = BM25Retriever().retrieve(TOPICS[1:], DOCS, template=get_template("instruction_query"), k=10)
    assert run["t2"]["gluten"] > bare["t2"]["gluten"]  # "wheat" comes from the instruction
    assert run["t2"]["pizza"] == pytest.approx(bare["t2"]["pizza"])  # nothing of it in the pizza doc


def test_bm25_scores_only_the_candidate_lists():
    run = BM25Retriever().retrieve(TOPICS, DOCS, template=get_template("query"), k=10,
                                   candidates={"t1": ["python", "colosseum"]})
    # every candidate is ranked, as MTEB ranks its top_ranked lists: "python" shares no term with
    # the query (BM25 score 0) and comes last instead of being dropped
    assert list(run["t1"]) == ["colosseum", "python"] and run["t1"]["python"] == 0.0
    assert run["t2"] == {}


# --- MiniLM (the bundled model) --------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("emb")


def test_minilm_retrieves_and_second_run_hits_the_cache(minilm_cache):
    first = DenseRetriever("minilm", cache_dir=minilm_cache)
    run = first.retrieve(TOPICS, DOCS, template=get_template("query"), k=3)
    assert first.encode_calls >= 1 and first.texts_encoded == len(DOCS) + len(TOPICS)
    assert next(iter(run["t1"])) == "colosseum"
    assert next(iter(run["t2"])) in ("pizza", "gluten")
    assert all(len(docs) == 3 for docs in run.values())
    assert all(-1.0 <= s <= 1.0 + 1e-6 for docs in run.values() for s in docs.values())  # cosine

    second = DenseRetriever("minilm", cache_dir=minilm_cache)
    run2 = second.retrieve(TOPICS, DOCS, template=get_template("query"), k=3)
    assert second.encode_calls == 0 and second._model is None  # not even loaded
    assert run2 == run

    # Another query template re-encodes the queries only; documents are the same texts.
    third = DenseRetriever("minilm", cache_dir=minilm_cache)
    third.retrieve(TOPICS, DOCS, template=get_template("sep"), k=3)
    assert third.texts_encoded == len(TOPICS)


def test_hub_name_is_refused_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    r = DenseRetriever("some-org/not-a-local-model", cache_dir=tmp_path)
    with pytest.raises(ModelUnavailable, match="HF_HUB_OFFLINE"):
        r.retrieve(TOPICS, DOCS, template=get_template("query"), k=3)


# --- reranking -------------------------------------------------------------------------------

def test_reranker_rescoring_keeps_first_stage_top_k_only():
    overlap = lambda pairs: [len(set(q.lower().split()) & set(d.lower().split())) for q, d in pairs]  # noqa: E731
    first = {"t1": {"python": 3.0, "colosseum": 2.0, "marathon": 1.0}}
    out = Reranker(overlap, name="overlap").rerank(first, TOPICS, DOCS, template=get_template("query"), k=2)
    assert list(out["t1"]) == ["colosseum", "python"]  # marathon was beyond the first stage's top 2


def _tiny_cross_encoder(path):
    """A randomly initialised 1-layer BERT CrossEncoder with a tokenizer built from a word list."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(
        {w.strip(".,").lower() for d in DOCS.values() for w in (d["title"] + " " + d["text"]).split()}
        | {w.lower() for t in TOPICS for w in t["query"].split()}
    )
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(words) + "\n")
    tok = BertTokenizerFast(vocab_file=str(path / "vocab.txt"))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=128, num_labels=1)
    BertForSequenceClassification(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_cross_encoder_reranker_from_a_local_directory(tmp_path):
    from sentence_transformers import CrossEncoder

    path = _tiny_cross_encoder(tmp_path / "ce")
    reranker = cross_encoder_reranker(str(path))
    first = BM25Retriever().retrieve(TOPICS, DOCS, template=get_template("query"), k=10)
    out = reranker.rerank(first, TOPICS, DOCS, template=get_template("query"), k=10)
    assert set(out["t2"]) == set(first["t2"])
    ce = CrossEncoder(str(path))
    expected = ce.predict([("pizza dough recipe", f"{DOCS[d]['title']} {DOCS[d]['text']}".strip()) for d in first["t2"]])
    for d, s in zip(first["t2"], expected):
        assert out["t2"][d] == pytest.approx(float(s), abs=1e-6)
    scores = list(out["t2"].values())
    assert scores == sorted(scores, reverse=True)
    assert reranker.pairs_scored == sum(len(v) for v in first.values())
