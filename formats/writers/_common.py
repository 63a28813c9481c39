"""Helpers shared by the layout writers: JSONL and qrels TSV files, cells and tokens that refuse
what a layout cannot hold."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from formats.bundle import Bundle, Instance, Qrel
from formats.writers.jsonl import write_jsonl as _write_jsonl

BEIR_QRELS_HEADER = "query-id\tcorpus-id\tscore"
INSTRUCTIR_QRELS_HEADER = "qid\tpid\tscore"


def _cell(value: str, what: str) -> str:
    if not value or any(c in value for c in "\t\r\n"):
        raise ValueError(f"{what} {value!r} cannot be written to a TSV cell; expected a non-blank id without tabs or line breaks")
    return value


def _token(value: str, what: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"{what} {value!r} cannot be written to a TREC file; expected a non-blank id without whitespace")
    return value


def _write_qrels_tsv(path: Path, qrels: list[Qrel], header: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.write(header + "\n")
        for q in qrels:
            out.write(f"{_cell(q.qid, 'query id')}\t{_cell(q.doc_id, 'document id')}\t{q.relevance}\n")
    return path


def _qrels_of(bundle: Bundle, version: str) -> list[Qrel]:
    return [q for q in bundle.qrels if q.version == version]


def _write_corpus(bundle: Bundle, out_dir: Path) -> list[Path]:
    if not bundle.documents:
        return []
    records = ({"_id": d.doc_id, "title": d.title, "text": d.text} for d in bundle.documents)
    return [_write_jsonl(out_dir / "corpus.jsonl", records)]


def _instances_by_query(bundle: Bundle) -> dict[tuple[str, str], Instance]:
    return {(i.query_id, i.variant): i for i in bundle.instances}


def _write_qrels_jsonl(path: Path, qrels: list[Qrel], score: Callable[[int], object]) -> Path:
    return _write_jsonl(path, ({"query-id": _cell(q.qid, "query id"), "corpus-id": _cell(q.doc_id, "document id"),
                                "score": score(q.relevance)} for q in qrels))
