"""One further file of a published layout, added to a project already stored: its corpus, more
qrels, or candidate lists.

Releases are often published in pieces: InstructIR's repository holds the instructions and qrels,
its 16,072 revised passages a separate ``corpus.jsonl``; a FollowIR or InfoSearch dataset's
``corpus.jsonl`` or ``top_ranked.jsonl`` may come later. :func:`parse_part` reads the files of one
``role`` into a :class:`~formats.bundle.Bundle` holding only that role's rows, checked against what
the project already holds (its query ids, its document ids) with the same messages as an import;
``storage.projects.add_to_project`` stores them all-or-nothing.

=============  =============================================================================
role           files
=============  =============================================================================
``corpus``     ``corpus.jsonl`` (``{"_id", "title"?, "text"}``: BEIR, InstructIR, FollowIR,
               InfoSearch; IFIR's ``<s>-corpus.jsonl``), or a folder holding one
``qrels``      a BEIR qrels TSV (``query-id corpus-id score`` or ``qid pid score``), a JSONL
               qrels file (``{"query-id", "corpus-id", "score"}``) or a TREC qrels file
               (``qid iter docid rel``), as qrels version ``version``
``top_ranked`` ``top_ranked.jsonl`` (``{"qid", "pid"}`` per pair, or one list per query)
=============  =============================================================================
"""
from __future__ import annotations

from pathlib import Path

from formats.bundle import PUBLISHED_QRELS_VERSIONS, Bundle
from formats.errors import ImportFailure
from formats.text import IdTable
from formats.trec_rows import qrels_rows, read_trec_text

from .beir import QrelsReader, qrels_jsonl_rows, qrels_tsv_rows, read_corpus
from .followir import _read_top_ranked

ROLES = ("corpus", "qrels", "top_ranked")


def _files(paths: list[Path], role: str) -> list[Path]:
    """The files of ``paths`` (a folder: its ``corpus.jsonl`` / ``*-corpus.jsonl`` or
    ``top_ranked.jsonl``)."""
    out = []
    for path in map(Path, paths):
        if path.is_dir():
            names = {"corpus": ["corpus.jsonl", *sorted(p.name for p in path.glob("*-corpus.jsonl"))],
                     "top_ranked": ["top_ranked.jsonl"], "qrels": []}[role]
            found = [path / n for n in names if (path / n).is_file()]
            if not found:
                raise ImportFailure(str(path), None, None, f"this folder holds no {role} file; expected "
                                    + (" or ".join(names) if names else "qrels files given one by one"))
            out += found[:1]
        elif not path.is_file():
            raise ImportFailure(str(path), None, None, "no such file or directory")
        else:
            out.append(path)
    if not out:
        raise ImportFailure("(no files)", None, None, f"no {role} file given")
    return out


def parse_part(role: str, paths: list[Path], *, qids: set[str], doc_ids: set[str], version: str = "original") -> Bundle:
    """The rows of the ``role`` files (:data:`ROLES`) as a Bundle, checked against the project:
    ``qids`` its query and instance ids, ``doc_ids`` its documents (a document the project already
    holds is refused as a duplicate; qrels and candidates must name known queries, and known
    documents when the project has a corpus).

    Raises
    ------
    ImportFailure
        Naming the file, the line and the field of the first defect.

    Examples
    --------
    >>> b = parse_part("corpus", [Path("datasets/instructir/msmarco-seed/corpus.jsonl")], qids=set(), doc_ids=set())
    >>> len(b.documents), b.qrels
    (1743, [])
    """
    if role not in ROLES:
        raise ImportFailure(", ".join(map(str, paths)) or "(no files)", None, "role",
                            f"unknown part {role!r}; expected one of {', '.join(ROLES)}")
    bundle = Bundle()
    files = _files(paths, role)
    if role == "corpus":
        ids = IdTable("document id")
        for path in files:
            for doc in read_corpus(path, bundle.source_files, ids):
                if doc.doc_id in doc_ids:
                    raise ImportFailure(str(path), None, "_id", f"document {doc.doc_id!r} is already in the project; "
                                        "expected only documents it does not hold")
                bundle.documents.append(doc)
        return bundle
    known_docs = doc_ids or None  # a project without a corpus: document ids cannot be checked yet
    if role == "qrels":
        if version not in PUBLISHED_QRELS_VERSIONS:
            raise ImportFailure(", ".join(map(str, files)), None, "version",
                                f"qrels version {version!r} cannot be added; expected one of "
                                f"{', '.join(PUBLISHED_QRELS_VERSIONS)} (validated versions are built from studies)")
        reader = QrelsReader(qids=qids, qid_where="the project's queries and instances", doc_ids=known_docs,
                             doc_where="the project's corpus")
        for path in files:
            reader.add_rows(path, _qrels_rows(path, bundle.source_files), version=version)
        bundle.qrels = reader.qrels
        return bundle
    origin: dict = {}
    pairs: dict = {}
    for path in files:
        _read_top_ranked(path, bundle.source_files, bundle, qids, known_docs, origin, pairs)
    return bundle


def _qrels_rows(path: Path, sources: list[tuple[str, str]]) -> list[tuple[int, str, str, int]]:
    """(line, qid, doc id, relevance) of a qrels file: JSONL, a 3-column TSV (BEIR) or TREC's 4 columns."""
    if path.suffix == ".jsonl":
        return qrels_jsonl_rows(path, sources)
    first = next((line for line in read_trec_text(path).splitlines() if line.strip()), "")
    if len(first.split()) == 4:
        return list(qrels_rows(path, read_trec_text(path, sources)))
    return qrels_tsv_rows(path, sources)


__all__ = ["ROLES", "parse_part"]
