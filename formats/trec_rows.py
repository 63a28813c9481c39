"""The one reader of TREC rows: run lines ``qid Q0 docid rank score tag`` and qrels lines
``qid 0 docid rel``, as :mod:`formats.trec_io` (runs and qrels as dicts, for the evaluation
commands) and :mod:`formats.readers.trec` (the Bundle of an import) both read them.

Lines end at ``\\n`` only (a ``\\r`` before it is dropped), as a text editor counts them:
``str.splitlines`` would also break at ``\\x85``, ``\\u2028`` or a form feed and report line
numbers the user cannot find. Columns are separated by ASCII whitespace only, as trec_eval reads
them (``str.split`` would also split at ``\\xa0`` or ``\\u2028`` inside an id). Blank lines are
skipped. A rank is an integer, a score a finite number, a relevance an integer (written ``2`` or
``2.0``). Every defect is one :class:`~formats.errors.ImportFailure` naming the file, the 1-based
line and the field, with what was received and what is accepted.

Examples
--------
>>> list(run_rows("run.txt", "q1 Q0 d7 1 12.5 bm25\\r\\n\\nq1\\tQ0 d8 2 3 bm25\\n"))
[(1, 'q1', 'd7', 1, 12.5, 'bm25'), (3, 'q1', 'd8', 2, 3.0, 'bm25')]
>>> list(qrels_rows("qrels.txt", "q1 0 d7 2.0\\n"))
[(1, 'q1', 'd7', 2)]
>>> list(run_rows("run.txt", "q1 Q0 d7 1 nan bm25\\n"))
Traceback (most recent call last):
...
formats.errors.ImportFailure: run.txt, line 1, field 'score': received 'nan'; expected a finite number
"""
from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator
from pathlib import Path

from formats.errors import ImportFailure
from formats.text import decode_utf8, parse_relevance, received

RUN_LAYOUT = "qid Q0 docid rank score tag"
QRELS_LAYOUT = "qid 0 docid rel"

_ASCII_WHITESPACE = " \t\f\v\r"
_ASCII_SPACE = re.compile(f"[{_ASCII_WHITESPACE}]+")
_SEPARATORS = re.compile("[\x1c-\x1f]")  # str.split takes them for whitespace
_INTEGER = re.compile(r"[+-]?[0-9]+")


def read_trec_text(path: str | Path, sources: list[tuple[str, str]] | None = None) -> str:
    """The text of a TREC file, decoded as UTF-8 (a BOM dropped, ``\\r\\n`` read as ``\\n``);
    ``(path, sha256)`` is appended to ``sources`` when given. A missing, non-UTF-8 or empty file is
    refused."""
    path = Path(path)
    if not path.is_file():
        raise ImportFailure(str(path), None, None,
                            "is a directory; expected a file" if path.is_dir() else "no such file")
    data = path.read_bytes()
    if not data.strip():
        raise ImportFailure(str(path), None, None, "empty file: expected at least one line")
    text = decode_utf8(data, path)
    if not text.strip():
        raise ImportFailure(str(path), None, None, "empty file: expected at least one line")
    if sources is not None:
        sources.append((str(path), hashlib.sha256(data).hexdigest()))
    return text.replace("\r\n", "\n")


def trec_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(1-based line number, line)`` of every non-blank line, lines ending at ``\\n`` only.

    >>> list(trec_lines("a\\x85b\\r\\n\\n c\\n"))
    [(1, 'a\\x85b'), (3, ' c')]
    """
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if line.strip():
            yield number, line


def trec_fields(line: str) -> list[str]:
    """The columns of a TREC line, split at ASCII whitespace only.

    >>> trec_fields(" q1\\tQ0  d\\xa07 ")
    ['q1', 'Q0', 'd\\xa07']
    """
    line = line.strip(_ASCII_WHITESPACE)
    return _ASCII_SPACE.split(line) if line else []


def _cells(path, number: int, line: str, columns: tuple[int, ...], layout: str, hint: str = "") -> list[str]:
    cells = trec_fields(line)
    if len(cells) not in columns:
        accepted = " or ".join(str(c) for c in columns)
        raise ImportFailure(str(path), number, None,
                            f"received {len(cells)} whitespace-separated columns; expected {accepted} columns "
                            f"'{layout}'{hint if len(cells) == 3 else ''}")
    return cells


def parse_rank(value: str, path, number: int) -> int:
    """A run's rank column: an integer (trec_eval orders by score and ignores it, but a file where
    it is not one is not a run). SQLite stores it, so it fits in 64 bits."""
    if not _INTEGER.fullmatch(value):
        raise ImportFailure(str(path), number, "rank",
                            f"received {received(value)}; expected an integer rank, a number such as 1")
    rank = int(value)
    if not -(2**63) <= rank < 2**63:
        raise ImportFailure(str(path), number, "rank",
                            f"received {received(value)}; expected an integer between -2^63 and 2^63-1")
    return rank


def parse_score(value: str, path, number: int) -> float:
    """A run's score column: a finite number (``nan`` and ``inf`` are refused: they cannot be ranked)."""
    try:
        score = float(value)
    except ValueError:
        raise ImportFailure(str(path), number, "score", f"received {received(value)}; expected a number") from None
    if not math.isfinite(score):
        raise ImportFailure(str(path), number, "score", f"received {received(value)}; expected a finite number")
    return score


def run_rows(path: str | Path, text: str, *, tag_optional: bool = False
             ) -> Iterator[tuple[int, str, str, int, float, str | None]]:
    """``(line, qid, docid, rank, score, tag)`` of every row of a run file's ``text``.

    ``tag_optional`` also accepts five columns (no tag: ``tag`` is None), as the import does."""
    columns = (5, 6) if tag_optional else (6,)
    split = _splitter(text)
    for number, line in trec_lines(text):
        cells = split(line)
        if len(cells) not in columns:
            _cells(path, number, line, columns, RUN_LAYOUT)  # raises, naming what was received
        rank = cells[3]
        rank = int(rank) if rank.isdigit() and rank.isascii() and len(rank) < 19 else parse_rank(rank, path, number)
        try:
            score = float(cells[4])
        except ValueError:
            score = math.nan
        if score - score != 0.0:  # not a number, inf or nan
            parse_score(cells[4], path, number)  # raises, naming what was received
        yield number, cells[0], cells[2], rank, score, cells[5] if len(cells) == 6 else None


def qrels_rows(path: str | Path, text: str) -> Iterator[tuple[int, str, str, int]]:
    """``(line, qid, docid, relevance)`` of every row of a TREC qrels file's ``text``."""
    hint = " (a 3-column BEIR TSV needs the header 'query-id<TAB>corpus-id<TAB>score')"
    split = _splitter(text)
    for number, line in trec_lines(text):
        cells = split(line)
        if len(cells) != 4:
            _cells(path, number, line, (4,), QRELS_LAYOUT, hint)  # raises
        yield number, cells[0], cells[2], parse_relevance(cells[3], path, number, "rel")


def _splitter(text: str):
    """:func:`trec_fields`, or ``str.split`` where it splits the same: an ASCII text without the
    separators \\x1c-\\x1f (which ``str.split`` takes for whitespace). Twice as fast."""
    return str.split if text.isascii() and not _SEPARATORS.search(text) else trec_fields
