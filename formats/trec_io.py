"""Read and write TREC runs and qrels (and BEIR TSV qrels).

The in-memory shapes are the ones ``pytrec_eval`` takes:

- a run is ``dict[qid][docid] -> float`` (the score). Documents of a query keep the order in
  which the file lists them (dict insertion order), which the ``ties="run-order"`` option of
  the instruction-following metrics relies on.
- qrels are ``dict[qid][docid] -> int`` (the relevance label).

Formats
-------
run     ``qid Q0 docid rank score tag`` -- six whitespace-separated columns (the rank column is
        checked to be an integer but otherwise ignored, as trec_eval ignores it).
qrels   TREC ``qid 0 docid rel`` (four whitespace-separated columns), or BEIR TSV: a header
        ``query-id<TAB>corpus-id<TAB>score`` (InstructIR's ``qid<TAB>pid<TAB>score`` is accepted
        too) and three tab-separated columns. The format is detected from the first line.

The rows are read by :mod:`formats.trec_rows` (as the TREC importer reads them): every malformed
file raises :class:`formats.errors.ImportFailure` naming the file, the 1-based line and the field.
Blank lines are skipped.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Mapping

from formats.errors import ImportFailure
from formats.text import parse_relevance
from formats.trec_rows import qrels_rows, read_trec_text, run_rows, trec_lines

BEIR_HEADERS = {
    ("query-id", "corpus-id", "score"),
    ("qid", "pid", "score"),
}


def read_run(path: str | Path) -> dict[str, dict[str, float]]:
    """Read a TREC run file ``qid Q0 docid rank score tag``.

    Parameters
    ----------
    path : str or Path
        The run file (UTF-8, whitespace separated, six columns).

    Returns
    -------
    dict
        ``run[qid][docid] -> score`` (float); documents in file order.

    Raises
    ------
    ImportFailure
        Empty file, not UTF-8, a line without six columns, a rank that is not an integer, a
        score that is not a finite number, or the same (qid, docid) twice.

    Examples
    --------
    A file with the line ``q1 Q0 d7 1 12.5 bm25`` reads as ``{"q1": {"d7": 12.5}}``.
    """
    run: dict[str, dict[str, float]] = {}
    for number, qid, docid, _rank, score, _tag in run_rows(path, read_trec_text(path)):
        docs = run.setdefault(qid, {})
        if docid in docs:
            raise ImportFailure(
                str(path), number, "docid", f"document {docid!r} appears twice for query {qid!r}"
            )
        docs[docid] = score
    return run


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Read qrels, TREC (``qid 0 docid rel``) or BEIR TSV (header ``query-id corpus-id score``).

    The format is detected from the first non-blank line: a BEIR / InstructIR header means
    BEIR TSV (tab separated, three columns); anything else is read as TREC qrels (four
    whitespace-separated columns). Relevance labels must be integers (``"1.0"`` is accepted as 1).

    Parameters
    ----------
    path : str or Path
        The qrels file (UTF-8).

    Returns
    -------
    dict
        ``qrels[qid][docid] -> int``.

    Raises
    ------
    ImportFailure
        Empty file, not UTF-8, wrong column count, a non-integer relevance, or the same
        (qid, docid) twice with two different labels.

    Examples
    --------
    ``q1 0 d7 2`` and the TSV ``query-id\\tcorpus-id\\tscore`` / ``q1\\td7\\t2`` both read as
    ``{"q1": {"d7": 2}}``.
    """
    text = read_trec_text(path)
    first = next(trec_lines(text))[1]
    header = tuple(c.strip().lower() for c in first.split("\t"))
    qrels: dict[str, dict[str, int]] = {}
    rows = _beir_rows(path, text) if header in BEIR_HEADERS else qrels_rows(path, text)
    for number, qid, docid, rel in rows:
        docs = qrels.setdefault(qid, {})
        if docid in docs and docs[docid] != rel:
            raise ImportFailure(
                str(path), number, "docid",
                f"document {docid!r} of query {qid!r} judged twice ({docs[docid]} and {rel})",
            )
        docs[docid] = rel
    if not qrels:
        raise ImportFailure(str(path), None, None, "no judgement after the header")
    return qrels


def _beir_rows(path, text: str):
    """``(line, qid, docid, relevance)`` of a BEIR TSV's rows (after its header)."""
    lines = trec_lines(text)
    next(lines)
    for number, line in lines:
        parts = line.split("\t")
        if len(parts) != 3:
            raise ImportFailure(
                str(path), number, None,
                f"expected 3 tab-separated columns 'query-id corpus-id score', got {len(parts)}",
            )
        qid, docid, score = (p.strip() for p in parts)
        yield number, qid, docid, parse_relevance(score, path, number, "score")


def trec_order(docs: Mapping[str, float]) -> list[tuple[str, float]]:
    """Documents in trec_eval's order: score descending, then doc id descending.

    Examples
    --------
    >>> trec_order({"a": 1.0, "b": 1.0, "c": 2.0})
    [('c', 2.0), ('b', 1.0), ('a', 1.0)]
    """
    return sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)


def write_run(run: Mapping[str, Mapping[str, float]], path: str | Path, *, tag: str = "ifjudge") -> None:
    """Write a TREC run ``qid Q0 docid rank score tag``; ranks follow trec_eval's order.

    Scores are written with ``repr`` so that reading the file back gives the same floats.
    """
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.writelines(run_lines(run, tag=tag))


def run_lines(run: Mapping[str, Mapping[str, float]], *, tag: str = "ifjudge") -> Iterator[str]:
    """The lines of :func:`write_run` (each ending in a newline), for a download with no file.

    >>> list(run_lines({"q1": {"d2": 0.5, "d1": 0.5}}, tag="t"))
    ['q1 Q0 d2 1 0.5 t\\n', 'q1 Q0 d1 2 0.5 t\\n']
    """
    for qid, docs in run.items():
        for rank, (docid, score) in enumerate(trec_order(docs), start=1):
            yield f"{qid} Q0 {docid} {rank} {float(score)!r} {tag}\n"


def write_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | Path, *, format: str = "trec") -> None:
    """Write qrels as TREC (``qid 0 docid rel``) or BEIR TSV (``format="beir"``, with header)."""
    if format not in ("trec", "beir"):
        raise ValueError(f"format must be 'trec' or 'beir', got {format!r}")
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        if format == "beir":
            fh.write("query-id\tcorpus-id\tscore\n")
        for qid, docs in qrels.items():
            for docid, rel in docs.items():
                if format == "beir":
                    fh.write(f"{qid}\t{docid}\t{int(rel)}\n")
                else:
                    fh.write(f"{qid} 0 {docid} {int(rel)}\n")
