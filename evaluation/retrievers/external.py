"""Runs that were produced elsewhere: TREC run files, and runs stored by an import."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from evaluation.retrievers import Progress, Run
from formats.trec_io import read_run

EXTERNAL_PREFIX = "external:"


def read_trec_run(path: str | Path) -> Run:
    """A TREC run file ``qid Q0 doc_id rank score tag`` as ``run[qid][doc_id] -> score``
    (parsing and its errors: :func:`formats.trec_io.read_run`)."""
    return read_run(path)


def looks_like_run_file(model: str) -> bool:
    """True when ``model`` names an existing file (not a model directory)."""
    return Path(model).is_file()


def names_external_run(model: str) -> bool:
    """True when a ``--model`` value names a run produced elsewhere: ``external:<name>`` (stored by
    an import) or a TREC run file.

    Examples
    --------
    >>> names_external_run("external:bm25"), names_external_run("bm25")
    (True, False)
    """
    return model.startswith(EXTERNAL_PREFIX) or looks_like_run_file(model)


class ExternalRun:
    """A run produced elsewhere, as a :class:`~evaluation.retrievers.Retriever`: retrieving
    returns its rankings of the evaluated topics, as they are (the template, ``k`` and the
    documents are not used; candidate lists neither: the run is what the system returned).

    Parameters
    ----------
    run : dict
        ``run[qid][doc_id] -> score``.
    name : str
        ``"external:<name>"``, the eval run's label.
    sha : str
        SHA-256 of the run's content: its identity, so an edited file is another retrieval.

    Examples
    --------
    >>> r = ExternalRun({"q1": {"d1": 2.0}, "q9": {"d2": 1.0}}, name="external:sys", sha="ab")
    >>> r.retrieve([{"qid": "q1"}], {}, template=None), r.identity()
    ({'q1': {'d1': 2.0}}, {'external': 'external:sys', 'sha': 'ab'})
    """

    external = True
    reranker = None

    def __init__(self, run: Mapping[str, Mapping[str, float]], *, name: str, sha: str):
        self.run, self.name, self.sha = run, name, sha

    @classmethod
    def from_file(cls, path: str | Path) -> ExternalRun:
        """A TREC run file, labelled ``external:<file name>``, identified by the file's bytes."""
        return cls(read_trec_run(path), name=f"{EXTERNAL_PREFIX}{Path(path).name}",
                   sha=hashlib.sha256(Path(path).read_bytes()).hexdigest())

    @classmethod
    def from_stored(cls, run: Mapping[str, Mapping[str, float]], name: str) -> ExternalRun:
        """A run an import stored under ``name`` (``external:<name>``), identified by its content."""
        return cls(run, name=name, sha=hashlib.sha256(json.dumps(run, sort_keys=True).encode()).hexdigest())

    def identity(self) -> dict:
        return {"external": self.name, "sha": self.sha}

    def retrieve(self, topics: Sequence[Mapping], documents: Mapping[str, Mapping], *, template=None, k: int = 100,
                 candidates: Mapping[str, Sequence[str]] | None = None, progress: Progress | None = None) -> Run:
        wanted = {t["qid"] for t in topics}
        return {q: dict(docs) for q, docs in self.run.items() if q in wanted}
