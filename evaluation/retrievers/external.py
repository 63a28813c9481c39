"""Runs that were produced elsewhere: TREC run files, and runs stored by an import."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from evaluation.retrievers import Progress, Run
from formats.trec_io import read_run
from storage.errors import IFJudgeError

EXTERNAL_PREFIX = "external:"
MODES = ("og", "changed", "reversed")  # one run file per mode: the variants of a paired benchmark


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

    A topic's ranking is found under its id in the project (``qid``) or, for paired benchmarks
    (FollowIR, InfoSearch), under MTEB's id of its instance, ``<query id>-<variant>``
    (``401-og``, ``401-changed``, ``401-reversed``), which comes first when the run has both.
    With ``by_variant`` (one run file per mode) the ranking of a topic of variant ``v`` is read
    from ``by_variant[v]``.

    Parameters
    ----------
    run : dict
        ``run[qid][doc_id] -> score``.
    name : str
        ``"external:<name>"``, the eval run's label.
    sha : str
        SHA-256 of the run's content: its identity, so an edited file is another retrieval.
    by_variant : dict, optional
        ``{variant: run}``: the run of each mode (``og``, ``changed``, ``reversed``).

    Examples
    --------
    >>> r = ExternalRun({"q1": {"d1": 2.0}, "q9": {"d2": 1.0}}, name="external:sys", sha="ab")
    >>> r.retrieve([{"qid": "q1"}], {}, template=None), r.identity()
    ({'q1': {'d1': 2.0}}, {'external': 'external:sys', 'sha': 'ab'})
    >>> m = ExternalRun({"401-og": {"d1": 2.0}, "401-changed": {"d2": 1.0}}, name="external:m", sha="cd")
    >>> m.retrieve([{"qid": "401", "query_id": "401", "variant": "changed"}], {})
    {'401': {'d2': 1.0}}
    """

    external = True
    reranker = None

    def __init__(self, run: Mapping[str, Mapping[str, float]], *, name: str, sha: str,
                 by_variant: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None):
        self.run, self.name, self.sha, self.by_variant = run, name, sha, by_variant

    @classmethod
    def from_file(cls, path: str | Path) -> ExternalRun:
        """A TREC run file, labelled ``external:<file name>``, identified by the file's bytes."""
        return cls(read_trec_run(path), name=f"{EXTERNAL_PREFIX}{Path(path).name}",
                   sha=hashlib.sha256(Path(path).read_bytes()).hexdigest())

    @classmethod
    def from_files(cls, paths: Mapping[str, str | Path]) -> ExternalRun:
        """One TREC run file per mode, ``{"og": path, "changed": path[, "reversed": path]}``,
        labelled by the og file's name and identified by every file's bytes.

        Raises
        ------
        IFJudgeError
            A mode other than og / changed / reversed, or no og file.
        """
        unknown = sorted(set(paths) - set(MODES))
        if unknown or "og" not in paths:
            raise IFJudgeError(f"run files per mode: expected {', '.join(MODES)} (og required), got "
                               f"{', '.join(sorted(paths)) or 'none'}")
        runs = {v: read_trec_run(p) for v, p in paths.items()}
        digest = hashlib.sha256()
        for v in sorted(paths):
            digest.update(v.encode() + b"\0" + Path(paths[v]).read_bytes() + b"\0")
        return cls(runs["og"], name=f"{EXTERNAL_PREFIX}{Path(paths['og']).name}", sha=digest.hexdigest(),
                   by_variant=runs)

    @classmethod
    def from_stored(cls, run: Mapping[str, Mapping[str, float]], name: str) -> ExternalRun:
        """A run an import stored under ``name`` (``external:<name>``), identified by its content."""
        return cls(run, name=name, sha=hashlib.sha256(json.dumps(run, sort_keys=True).encode()).hexdigest())

    def identity(self) -> dict:
        return {"external": self.name, "sha": self.sha}

    def query_ids(self) -> list[str]:
        """Every query id of the run (of every mode's run)."""
        runs = self.by_variant.values() if self.by_variant else [self.run]
        return sorted({q for r in runs for q in r})

    def ranking(self, topic: Mapping) -> dict[str, float] | None:
        """The ranking of one topic: MTEB's ``<query id>-<variant>`` id first, then its ``qid``."""
        run = self.by_variant.get(topic.get("variant"), {}) if self.by_variant else self.run
        for key in (f"{topic['query_id']}-{topic['variant']}" if topic.get("query_id") and topic.get("variant")
                    else None, topic["qid"]):
            if key is not None and key in run:
                return dict(run[key])
        return None

    def retrieve(self, topics: Sequence[Mapping], documents: Mapping[str, Mapping], *, template=None, k: int = 100,
                 candidates: Mapping[str, Sequence[str]] | None = None, progress: Progress | None = None) -> Run:
        out: Run = {}
        for t in topics:
            docs = self.ranking(t)
            if docs is not None:
                out[t["qid"]] = docs
        return out
