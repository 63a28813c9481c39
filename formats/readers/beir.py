"""BEIR layout: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``.

- ``corpus.jsonl``: ``{"_id", "title"?, "text"}``; a document needs a non-blank text or title.
- ``queries.jsonl``: ``{"_id", "text", "instruction"?}``. A query with an ``instruction`` field
  also becomes an instance (instance id = group id = query id, variant ``og``).
- ``qrels/*.tsv``: header ``query-id<TAB>corpus-id<TAB>score``; every file (each file's stem is a
  split) goes to qrels version ``original``. The split is not kept (the Bundle has no split).

The corpus, query and qrels readers here are shared by the FollowIR/MTEB, InfoSearch, InstructIR
and IFIR importers.
"""
from __future__ import annotations

from pathlib import Path

from formats.bundle import Bundle, Document, Instance, Qrel, Query
from formats.errors import ImportFailure

from formats.text import IdTable, optional_str, parse_int, parse_relevance, read_jsonl, read_tsv, require_str

QRELS_HEADERS = (("query-id", "corpus-id", "score"), ("qid", "pid", "score"))


def read_corpus(path: Path, sources: list[tuple[str, str]], ids: IdTable | None = None) -> list[Document]:
    """Documents of a BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``); duplicates refused
    (across files too when the same ``ids`` table is passed)."""
    return corpus_from_records(path, read_jsonl(path, sources), ids)


def corpus_from_records(path: Path, records: list[tuple[int, dict]], ids: IdTable | None = None) -> list[Document]:
    """Documents of already-read corpus records (see :func:`read_corpus`)."""
    ids = ids if ids is not None else IdTable("document id")
    documents: list[Document] = []
    for line, record in records:
        doc_id = require_str(record, "_id", path, line)
        ids.add(doc_id, path, line, "_id")
        text = require_str(record, "text", path, line, blank_ok=True)
        title = optional_str(record, "title", path, line)
        if (not text or text.isspace()) and (not title or title.isspace()):  # strip() would copy the text
            raise ImportFailure(
                str(path), line, "text",
                f"document {doc_id!r} has a blank text and no title; expected a non-blank text or title",
            )
        documents.append(Document(doc_id=doc_id, text=text, title=title))
    return documents


def check_known(
    value: str, known: set[str] | None, path: Path, line: int, field: str, what: str, where: str
) -> None:
    """Refuse an id that is not defined in the import (``known`` None: nothing to check against)."""
    if known is not None and value not in known:
        sample = ", ".join(repr(k) for k in sorted(known)[:3])
        raise ImportFailure(
            str(path), line, field,
            f"unknown {what} {value!r}; expected one defined in {where} (e.g. {sample})",
        )


class QrelsReader:
    """Reads qrels files into one list, refusing duplicate (qid, doc, version) judgments and ids
    unknown to the import."""

    def __init__(self, *, qids: set[str], qid_where: str, doc_ids: set[str] | None, doc_where: str = "corpus.jsonl"):
        self.qids = qids
        self.qid_where = qid_where
        self.doc_ids = doc_ids
        self.doc_where = doc_where
        self.seen = IdTable("judgment")
        self.qrels: list[Qrel] = []

    def add(self, path: Path, line: int, qid: str, doc_id: str, score: str | int, version: str,
            fields: tuple[str, str, str]) -> None:
        qid_field, doc_field, score_field = fields
        if not qid:
            raise ImportFailure(str(path), line, qid_field, "received a blank query id; expected a query id")
        if not doc_id:
            raise ImportFailure(str(path), line, doc_field, "received a blank document id; expected a document id")
        check_known(qid, self.qids, path, line, qid_field, "query id", self.qid_where)
        check_known(doc_id, self.doc_ids, path, line, doc_field, "document id", self.doc_where)
        relevance = score if isinstance(score, int) else parse_int(score, path, line, score_field)
        self.seen.add(f"{qid} / {doc_id} / {version}", path, line, doc_field)
        self.qrels.append(Qrel(qid=qid, doc_id=doc_id, relevance=relevance, version=version))

    def read_tsv(self, path: Path, sources: list[tuple[str, str]], *, version: str) -> None:
        """A BEIR qrels TSV (header ``query-id corpus-id score`` or ``qid pid score``)."""
        rows = read_tsv(path, sources, columns=3, headers=QRELS_HEADERS)
        for line, (qid, doc_id, score) in rows:
            self.add(path, line, qid, doc_id, score, version, ("query-id", "corpus-id", "score"))

    def read_jsonl(self, path: Path, sources: list[tuple[str, str]], *, version: str) -> None:
        """A JSONL qrels file (``{"query-id", "corpus-id", "score"}`` per line; see :func:`qrels_jsonl_rows`)."""
        self.add_rows(path, qrels_jsonl_rows(path, sources), version=version)

    def add_rows(self, path: Path, rows: list[tuple[int, str, str, int]], *, version: str) -> None:
        """Rows already parsed by :func:`qrels_jsonl_rows` or :func:`qrels_tsv_rows`."""
        for line, qid, doc_id, relevance in rows:
            self.add(path, line, qid, doc_id, relevance, version, ("query-id", "corpus-id", "score"))


def qrels_jsonl_rows(path: Path, sources: list[tuple[str, str]]) -> list[tuple[int, str, str, int]]:
    """(line, query id, document id, relevance) of a JSONL qrels file, one
    ``{"query-id": str, "corpus-id": str, "score": 2 | 2.0 | "2"}`` per line (the Hugging Face
    hub's qrels configs; ids written as JSON integers are read as their decimal strings)."""
    rows = []
    for line, record in read_jsonl(path, sources):
        qid = require_str(record, "query-id", path, line)
        doc_id = require_str(record, "corpus-id", path, line)
        if "score" not in record:
            present = ", ".join(sorted(record)) or "none"
            raise ImportFailure(str(path), line, "score", f"required field is missing (fields present: {present})")
        rows.append((line, qid, doc_id, parse_relevance(record["score"], path, line, "score")))
    return rows


def qrels_tsv_rows(path: Path, sources: list[tuple[str, str]]) -> list[tuple[int, str, str, int]]:
    """(line, query id, document id, relevance) of a BEIR qrels TSV whose scores may be written
    ``2`` or ``2.0`` (as MTEB reads them: float, then int)."""
    return [(line, qid, doc_id, parse_relevance(score, path, line, "score"))
            for line, (qid, doc_id, score) in read_tsv(path, sources, columns=3, headers=QRELS_HEADERS)]


def read_queries(path: Path, sources: list[tuple[str, str]], ids: IdTable) -> list[tuple[int, dict, Query]]:
    """Queries of a ``queries.jsonl`` with their line and record (for format-specific fields)."""
    out = []
    for line, record in read_jsonl(path, sources):
        query_id = require_str(record, "_id", path, line)
        ids.add(query_id, path, line, "_id")
        text = require_str(record, "text", path, line)
        out.append((line, record, Query(query_id=query_id, text=text)))
    return out


def _collect(paths: list[Path]) -> tuple[list[Path], list[Path], list[Path]]:
    corpus: list[Path] = []
    queries: list[Path] = []
    qrels: list[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            found = False
            if (path / "corpus.jsonl").is_file():
                corpus.append(path / "corpus.jsonl")
                found = True
            if (path / "queries.jsonl").is_file():
                queries.append(path / "queries.jsonl")
                found = True
            if (path / "qrels").is_dir():
                qrels.extend(sorted((path / "qrels").glob("*.tsv")))
                found = True
            if not found:
                raise ImportFailure(
                    str(path), None, None,
                    "directory holds none of corpus.jsonl, queries.jsonl, qrels/*.tsv; expected a BEIR layout",
                )
        elif not path.exists():
            raise ImportFailure(str(path), None, None, "no such file or directory")
        elif path.suffix == ".tsv":
            qrels.append(path)
        elif path.suffix == ".jsonl" and path.name.startswith("corpus"):
            corpus.append(path)
        elif path.suffix == ".jsonl" and path.name.startswith("queries"):
            queries.append(path)
        else:
            raise ImportFailure(
                str(path), None, None,
                f"cannot tell what {path.name!r} holds; expected corpus*.jsonl, queries*.jsonl or qrels *.tsv",
            )
    if not queries:
        raise ImportFailure(str(paths[0]) if paths else "(no files)", None, None,
                            "no queries.jsonl given; a BEIR import needs queries.jsonl")
    return corpus, queries, qrels


def parse(paths: list[Path]) -> Bundle:
    """Parse a BEIR layout (directory or files) into a validated :class:`Bundle`."""
    corpus_files, query_files, qrels_files = _collect(paths)
    bundle = Bundle()
    sources = bundle.source_files
    doc_ids = IdTable("document id")
    for path in corpus_files:
        bundle.documents.extend(read_corpus(path, sources, doc_ids))
    query_ids = IdTable("query id")
    for path in query_files:
        for line, record, query in read_queries(path, sources, query_ids):
            bundle.queries.append(query)
            if "instruction" in record:
                instruction = require_str(record, "instruction", path, line)
                bundle.instances.append(Instance(
                    instance_id=query.query_id, query_id=query.query_id, group_id=query.query_id,
                    instruction=instruction, variant="og",
                ))
    reader = QrelsReader(qids=set(query_ids.seen), qid_where="queries.jsonl",
                         doc_ids=set(doc_ids.seen) if corpus_files else None)
    for path in qrels_files:
        reader.read_tsv(path, sources, version="original")
    bundle.qrels = reader.qrels
    return bundle


__all__ = ["parse", "read_corpus", "corpus_from_records", "read_queries", "QrelsReader", "check_known", "QRELS_HEADERS",
           "qrels_jsonl_rows", "qrels_tsv_rows"]
