"""Retrievers: each turns topics (instruction + query) and documents into a run,
``run[qid][doc_id] -> score`` (the shape pytrec_eval takes). BM25 and the dense retriever return
it as arrays, an :class:`evaluation.runs.RankedRun` (read as that mapping; p-MRR, WISE and SICR
read its arrays); the reranker and external runs return dicts.

Every retriever implements :class:`Retriever`, which is all :mod:`evaluation.runner` knows of it:

- :mod:`.bm25` -- BM25 with ``bm25s``;
- :mod:`.dense` -- a sentence-transformers bi-encoder with the on-disk embedding cache;
- :mod:`.rerank` -- a CrossEncoder (or any scoring function) over a first stage's top k
  (:class:`~.rerank.Reranked` is the two stages as one retriever);
- :mod:`.external` -- runs read from TREC files or stored with an import;
- :mod:`.build` -- the retriever a ``--model`` / ``--rerank`` value names;
- :mod:`.topk` -- the shared top-k selection.

A *topic* is a dict with ``qid``, ``query`` and ``instruction`` (see
``storage.projects.eval_topics``); *documents* map ``doc_id -> {"title", "text"}``.
*documents* may be a plain dict or a mapping backed by storage
(``storage.projects.StoredDocuments``): a retriever reads texts a bounded chunk at a time through
:func:`read_documents` and never holds the corpus.
*candidates*, when given, maps ``qid -> [doc_id, ...]``: only those documents are scored for that
query (FollowIR's ``top_ranked`` lists); a query without candidates gets an empty ranking.

A new retriever is a class with the members of :class:`Retriever` (copy
:class:`~.bm25.BM25Retriever`) and a branch of :func:`.build.build_retriever` for its name.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from evaluation.templates import Template

Run = dict[str, dict[str, float]]
Progress = Callable[[int, int, str], None]


def read_documents(documents: Mapping[str, Mapping], doc_ids: Sequence[str]) -> list[Mapping]:
    """The documents of ``doc_ids``, in order: through the mapping's batch read ``many`` when it
    has one (``storage.projects.StoredDocuments``: one query per chunk of ids), else one by one.

    >>> read_documents({"a": {"text": "x"}, "b": {"text": "y"}}, ["b", "a"])
    [{'text': 'y'}, {'text': 'x'}]
    """
    many = getattr(documents, "many", None)
    return many(doc_ids) if many is not None else [documents[d] for d in doc_ids]


@runtime_checkable
class Retriever(Protocol):
    """What the evaluation runner needs of a retriever.

    Attributes
    ----------
    name : str
        The label its eval runs are stored under (``"bm25"``, ``"minilm"``, a model path,
        ``"external:<name>"``).
    external : bool
        True for a run produced elsewhere: it reads neither the template nor the documents (the
        eval run's template is stored as ``"external"``, and documents are loaded only for a
        reranker).
    reranker : str or None
        The name of a second stage re-scoring this retriever's top k (:class:`.rerank.Reranked`),
        None for one stage.

    Examples
    --------
    >>> from evaluation.retrievers.bm25 import BM25Retriever
    >>> from evaluation.retrievers.external import ExternalRun
    >>> [isinstance(r, Retriever) for r in (BM25Retriever(), ExternalRun({}, name="external:x", sha="0"))]
    [True, True]
    """

    name: str
    external: bool
    reranker: str | None

    def identity(self) -> dict:
        """What makes two of its runs differ (model files, settings): stored with the eval run
        and hashed into its retrieval key, so that an equal identity reuses a stored run."""
        ...

    def retrieve(
        self,
        topics: Sequence[Mapping],
        documents: Mapping[str, Mapping],
        *,
        template: Template,
        k: int = 100,
        candidates: Mapping[str, Sequence[str]] | None = None,
        progress: Progress | None = None,
    ) -> Mapping[str, Mapping[str, float]]:
        """``run[qid][doc_id] -> score`` for every topic, best first, at most ``k`` documents each
        (a dict, or an :class:`evaluation.runs.RankedRun`)."""
        ...
