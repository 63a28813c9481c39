"""The retriever a ``model`` / ``rerank`` value names (the ``--model`` and ``--rerank`` of
``ifjudge eval run``, the fields of the Evaluate page, the parameters of a job).

==================================== =====================================================
``model``                            retriever
==================================== =====================================================
``"bm25"``                           :class:`~.bm25.BM25Retriever`
``"external:<name>"``                :class:`~.external.ExternalRun` of a run stored by an import
an existing file                     :class:`~.external.ExternalRun` of a TREC run file
anything else                        :class:`~.dense.DenseRetriever` (``"minilm"``, a local
                                     sentence-transformers directory, a hub name)
an object                            itself (a :class:`~evaluation.retrievers.Retriever`)
==================================== =====================================================

``rerank`` (a CrossEncoder path or a :class:`~.rerank.Reranker`) wraps the first stage in
:class:`~.rerank.Reranked`.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from evaluation.retrievers import Progress, Retriever, Run
from evaluation.retrievers.external import EXTERNAL_PREFIX, ExternalRun, looks_like_run_file
from evaluation.retrievers.rerank import Reranked, Reranker, cross_encoder_reranker
from storage.errors import IFJudgeError


def build_retriever(model, *, rerank=None, score: str = "cosine", cache_dir=None,
                    stored_run: Callable[[str], Run] | None = None) -> Retriever:
    """The :class:`~evaluation.retrievers.Retriever` ``model`` names, reranked by ``rerank``.

    Parameters
    ----------
    model : str or Retriever
        See the table of the module.
    rerank : str or Reranker, optional
        A CrossEncoder directory (or hub name), or a :class:`~.rerank.Reranker`.
    score : {"cosine", "dot"}
        Similarity of a dense model.
    cache_dir : path, optional
        Embedding cache root of a dense model.
    stored_run : callable, optional
        ``stored_run("external:<name>") -> run``: the run an import stored (the runner reads it
        from the project).

    Examples
    --------
    >>> build_retriever("bm25").identity()
    {'retriever': 'bm25', 'k1': 1.5, 'b': 0.75, 'method': 'lucene', 'stopwords': 'en'}
    >>> r = build_retriever("external:sys", stored_run=lambda name: {"q1": {"d1": 1.0}})
    >>> r.name, r.external
    ('external:sys', True)
    """
    first = _first_stage(model, score=score, cache_dir=cache_dir, stored_run=stored_run)
    if rerank is None:
        return first
    return Reranked(first, rerank if isinstance(rerank, Reranker) else cross_encoder_reranker(str(rerank), cache_dir=cache_dir))


def _first_stage(model, *, score, cache_dir, stored_run) -> Retriever:
    if isinstance(model, Retriever):
        return model
    if not isinstance(model, str):
        if callable(getattr(model, "retrieve", None)):
            return _Adapted(model)
        raise IFJudgeError(f"a model must be a name, a path or a retriever, got {type(model).__name__}")
    if model == "bm25":
        from evaluation.retrievers.bm25 import BM25Retriever

        return BM25Retriever()
    if model.startswith(EXTERNAL_PREFIX):
        if stored_run is None:
            raise IFJudgeError(f"{model!r} names a run stored by an import; no project to read it from")
        return ExternalRun.from_stored(stored_run(model), model)
    if looks_like_run_file(model):
        return ExternalRun.from_file(model)
    from evaluation.retrievers.dense import DenseRetriever

    return DenseRetriever(model, score=score, cache_dir=cache_dir)


class _Adapted:
    """An object with ``name``, ``retrieve`` and optionally ``settings()`` (the retriever
    interface before :class:`~evaluation.retrievers.Retriever`) as a Retriever: its identity is
    ``{"retriever": name, **settings()}``."""

    external = False
    reranker = None

    def __init__(self, inner):
        self.inner, self.name = inner, str(inner.name)

    def identity(self) -> dict:
        settings = getattr(self.inner, "settings", None)
        return {"retriever": self.name, **(settings() if callable(settings) else {})}

    def retrieve(self, topics: Sequence[Mapping], documents: Mapping[str, Mapping], *, template, k: int = 100,
                 candidates: Mapping[str, Sequence[str]] | None = None, progress: Progress | None = None) -> Run:
        return self.inner.retrieve(topics, documents, template=template, k=k, candidates=candidates, progress=progress)
