"""Helpers shared by the layout writers: JSONL and qrels TSV files, cells and tokens that refuse
what a layout cannot hold."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from formats.bundle import Bundle, Instance, Qrel
from formats.corpus import utf8_rows
from formats.writers.jsonl import write_corpus_jsonl, write_jsonl as _write_jsonl, write_jsonl_rows

BEIR_QRELS_HEADER = "query-id\tcorpus-id\tscore"
INSTRUCTIR_QRELS_HEADER = "qid\tpid\tscore"


def _cell(value: str, what: str) -> str:
    if not value or "\t" in value or "\n" in value or "\r" in value:
        raise ValueError(f"{what} {value!r} cannot be written to a TSV cell; expected a non-blank id without tabs or line breaks")
    return value


def _token(value: str, what: str) -> str:
    if value.split() != [value]:  # blank, or whitespace in it (str.split splits where isspace is true)
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
    return [write_corpus_jsonl(out_dir / "corpus.jsonl", utf8_rows(bundle.documents))]


def _instances_by_query(bundle: Bundle) -> dict[tuple[str, str], Instance]:
    return {(i.query_id, i.variant): i for i in bundle.instances}


def _write_qrels_jsonl(path: Path, qrels: list[Qrel], score: Callable[[int], object]) -> Path:
    return write_jsonl_rows(path, ("query-id", "corpus-id", "score"),
                            ((_cell(q.qid, "query id"), _cell(q.doc_id, "document id"), score(q.relevance)) for q in qrels))
