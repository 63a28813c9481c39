"""Second stage: re-score the top k of a first-stage run (or given candidate lists) with a
CrossEncoder, or with any function scoring (query text, document text) pairs."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from evaluation.retrievers import Progress, Retriever, Run, read_documents
from evaluation.retrievers.topk import top_k
from evaluation.templates import Template
from storage.errors import IFJudgeError

PairScorer = Callable[[list[tuple[str, str]]], Sequence[float]]


class Reranker:
    """Re-score the ``k`` best documents of each query of ``run`` with ``score_pairs``.

    score(q, d) = f(T_q(instruction, query), title + " " + text), f the pair scorer (a
    CrossEncoder reads both texts together: Nogueira & Cho, 2019, "Passage Re-ranking with BERT").
    The query text follows the template; documents are given without the embedding prompts of
    ``instructor`` (those are for bi-encoders). Documents of the first stage beyond its top ``k``
    are dropped, as in any two-stage pipeline.

    Parameters
    ----------
    score_pairs : callable
        ``[(query_text, doc_text), ...] -> scores``.
    name : str
        Stored with the eval run.

    Examples
    --------
    >>> from evaluation.templates import get_template
    >>> overlap = lambda pairs: [len(set(q.split()) & set(d.split())) for q, d in pairs]
    >>> r = Reranker(overlap, name="overlap")
    >>> r.rerank({"q": {"d1": 9.0, "d2": 1.0}}, [{"qid": "q", "query": "red apple", "instruction": ""}],
    ...          {"d1": {"text": "green pear"}, "d2": {"text": "a red apple"}}, template=get_template("query"))
    {'q': {'d2': 2.0, 'd1': 0.0}}
    """

    def __init__(self, score_pairs: PairScorer, *, name: str, batch_size: int = 64):
        self.score_pairs = score_pairs
        self.name = name
        self.batch_size = batch_size
        self.pairs_scored = 0

    def rerank(
        self,
        run: Mapping[str, Mapping[str, float]],
        topics: Sequence[Mapping],
        documents: Mapping[str, Mapping],
        *,
        template: Template,
        k: int = 100,
        progress: Progress | None = None,
    ) -> Run:
        """The re-scored run, ``run[qid][doc_id] -> pair score``, best first."""
        by_qid = {t["qid"]: t for t in topics}
        jobs: list[tuple[str, list[str]]] = []
        for qid, docs in run.items():
            if qid not in by_qid:
                continue
            first = list(top_k(np.array(list(docs.values()), dtype=float), list(docs), k))
            jobs.append((qid, [d for d in first if d in documents]))
        total = sum(len(ds) for _, ds in jobs)
        out: Run = {}
        done = 0
        for qid, doc_ids in jobs:
            topic = by_qid[qid]
            qtext = template.query(topic["query"], topic.get("instruction", ""))
            # only this query's candidates are read (one batch read of a StoredDocuments)
            pairs = [(qtext, " ".join(f"{doc.get('title', '')} {doc.get('text', '')}".split()))
                     for doc in read_documents(documents, doc_ids)]
            scores: list[float] = []
            for start in range(0, len(pairs), self.batch_size):
                scores.extend(float(s) for s in self.score_pairs(pairs[start : start + self.batch_size]))
            self.pairs_scored += len(pairs)
            out[qid] = top_k(np.array(scores, dtype=float), doc_ids, len(doc_ids))
            done += len(pairs)
            if progress:
                progress(done, total, "reranking")
        return out


class Reranked:
    """A first stage and a :class:`Reranker` re-scoring its top ``k``, as one
    :class:`~evaluation.retrievers.Retriever`.

    The label and identity are the first stage's; the reranker's name is :attr:`reranker`
    (:mod:`evaluation.runner` stores it beside the identity and puts it in the retrieval key).

    Examples
    --------
    >>> from evaluation.retrievers.external import ExternalRun
    >>> from evaluation.templates import get_template
    >>> first = ExternalRun({"q": {"d1": 9.0, "d2": 1.0}}, name="external:sys", sha="0")
    >>> overlap = Reranker(lambda pairs: [len(set(q.split()) & set(d.split())) for q, d in pairs], name="overlap")
    >>> two = Reranked(first, overlap)
    >>> two.name, two.reranker
    ('external:sys', 'overlap')
    >>> two.retrieve([{"qid": "q", "query": "red apple", "instruction": ""}],
    ...              {"d1": {"text": "green pear"}, "d2": {"text": "a red apple"}}, template=get_template("query"))
    {'q': {'d2': 2.0, 'd1': 0.0}}
    """

    lists_ties_by_docid = True  # the second stage's top_k order

    def __init__(self, first: Retriever, reranker: Reranker):
        self.first, self.second = first, reranker
        self.name, self.external, self.reranker = first.name, first.external, reranker.name

    def identity(self) -> dict:
        return self.first.identity()

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
        run = self.first.retrieve(topics, documents, template=template, k=k, candidates=candidates, progress=progress)
        return self.second.rerank(run, topics, documents, template=template, k=k, progress=progress)


def cross_encoder_reranker(
    model: str,
    *,
    device: str | None = None,
    backend: str = "torch",
    fp16: bool = True,
    batch_size: int | None = None,
    cache_dir=None,
) -> Reranker:
    """A :class:`Reranker` over a sentence-transformers ``CrossEncoder`` at a local path (or a hub
    name when a hub is reachable). The scores are ``CrossEncoder.predict``'s (its activation on
    the logits: a sigmoid for a one-label model).

    Device, backend, precision and batch size follow the bi-encoder's rules
    (:mod:`evaluation.retrievers.encoders`): ``device`` ``None`` or ``"auto"`` picks CUDA, then MPS,
    then the CPU (:func:`~evaluation.retrievers.encoders.pick_device`); an unavailable device is
    refused with the list of those available. ``backend``: ``torch`` (half precision, fp16, on CUDA
    unless ``fp16=False``; fp32 elsewhere), ``onnx`` (the transformer exported to ONNX and run by
    ONNX Runtime, fp32: scores within 1e-5 of torch) or ``onnx-int8`` (its weights quantised to
    int8), with the export, optimisation and quantisation recipe of
    :func:`~evaluation.retrievers.encoders.export_onnx`, written once under
    ``<cache_dir>/onnx/`` (``cache_dir``: the embedding cache root, by default
    ``$IFJUDGE_CACHE_DIR`` or ``.cache/embeddings``). ONNX Runtime runs on CUDA when its CUDA
    provider is installed and ``device`` is CUDA, else on the CPU. ``batch_size`` defaults to 128
    pairs on CUDA, 64 on MPS, 32 on a CPU.

    The reranker's ``device``, ``precision`` and ``backend`` attributes say where it runs; its
    name carries the precision when it is fp16 and the backend (with the ONNX recipe) when it is
    not torch, so scores of one never reuse a run of another.
    """
    from evaluation.embedding_cache import default_cache_dir, model_identity
    from evaluation.retrievers.encoders import (
        OnnxCrossEncoder, check_backend, default_batch_size, export_onnx, onnx_dir, pick_device, precision_for, recipe_tag,
    )

    check_backend(backend)
    where = pick_device(device)
    precision = precision_for(where, backend, fp16=fp16)
    batch = batch_size or default_batch_size(where)
    if batch < 1:
        raise IFJudgeError(f"batch size must be >= 1, got {batch}")
    from sentence_transformers import CrossEncoder

    local = Path(model).exists()
    name = str(Path(model).resolve()) if local else model
    try:
        # the ONNX backends keep the torch model on the CPU for tokenising and the activation
        ce = CrossEncoder(name, device=where if backend == "torch" else "cpu", local_files_only=local)
    except Exception as exc:
        raise IFJudgeError(f"cannot load CrossEncoder {model!r}: {exc}") from None
    if precision == "fp16":
        ce.half()
    if backend == "torch":
        def score(pairs):
            return ce.predict(pairs, batch_size=batch, show_progress_bar=False)
        runner = ce
    else:
        root = default_cache_dir() if cache_dir is None else Path(cache_dir)
        runner = OnnxCrossEncoder(ce, export_onnx(ce, onnx_dir(model_identity(name), root), int8=backend == "onnx-int8"),
                                  device=where)

        def score(pairs):
            return runner.predict(pairs, batch_size=batch)

    tag = f"{backend}{recipe_tag(backend)}" if backend != "torch" else ("fp16" if precision == "fp16" else "")
    reranker = Reranker(score, name=f"{name} [{tag}]" if tag else name, batch_size=batch)
    reranker.device, reranker.precision, reranker.backend, reranker.model = where, precision, backend, ce
    reranker.runner = runner  # what scores: the CrossEncoder (torch) or its OnnxCrossEncoder
    return reranker
