"""Strict, line-numbered reading of the text files every importer shares (JSONL, TSV, plain lines).

Every defect becomes one :class:`formats.errors.ImportFailure` naming the file, the 1-based line
and the field, with what was received and what would have been accepted. Real files are accepted
as they come: a UTF-8 byte-order mark, CRLF line endings and trailing blank lines are fine.
"""
from __future__ import annotations

import hashlib
import json
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from formats.errors import ImportFailure
from formats.limits import TOO_DEEP

_BOM = "\ufeff"
# fields that hold an id: a JSON integer there is read as its decimal string
ID_FIELDS = frozenset({"_id", "id", "qid", "query_id", "query-id", "pid", "corpus-id"})


def _shorten(value: object, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def received(value: object) -> str:
    """How a received value is quoted in an error message (type and a short excerpt)."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"{_shorten(value)!r}"
    return f"{type(value).__name__} {_shorten(value)}"


def decode_utf8(data: bytes, path: str | Path) -> str:
    r"""``data`` as text, strictly UTF-8 (a leading byte-order mark dropped). A file that is not
    UTF-8 is refused naming the line of the first bad byte. The one place every reader of
    IFJudge (imports, runs, qrels, CSV inputs) decodes a file.

    Examples
    --------
    >>> decode_utf8("\ufeffqid\tdoc\n".encode("utf-8"), "x.tsv")
    'qid\tdoc\n'
    >>> decode_utf8(b"ok\n\xff", "x.tsv")
    Traceback (most recent call last):
    ...
    formats.errors.ImportFailure: x.tsv, line 2: not UTF-8: byte 0xff at offset 3 cannot be decoded; expected a UTF-8 text file (re-save it as UTF-8)
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFailure(
            str(path), line, None,
            f"not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start} cannot be decoded; "
            "expected a UTF-8 text file (re-save it as UTF-8)",
        ) from None
    return text[1:] if text.startswith(_BOM) else text


def read_text(path: Path, sources: list[tuple[str, str]]) -> str:
    """Read a whole file as UTF-8 text, record ``(path, sha256)`` in ``sources``.

    Raises :class:`ImportFailure` for a missing file, a file that is not UTF-8 (with the line of
    the first bad byte) and an empty file (nothing but whitespace). A leading BOM is dropped and
    CRLF / CR line endings become ``\\n``.
    """
    path = Path(path)
    if not path.is_file():
        raise ImportFailure(str(path), None, None, "no such file")
    data = path.read_bytes()
    text = decode_utf8(data, path)
    if not text or text.isspace():  # not text.strip(), which copies the whole file
        raise ImportFailure(str(path), None, None, "the file is empty; expected at least one record")
    sources.append((str(path), hashlib.sha256(data).hexdigest()))
    return text.replace("\r\n", "\n").replace("\r", "\n")


_CHUNK = 1 << 23  # bytes read (and hashed) at a time: 8 MiB


class _LineStream:
    """The non-blank lines of a record-per-line file, read once in chunks: hashed, decoded as UTF-8
    and split exactly as :func:`read_text` then ``split("\n")`` would, without holding the file
    (the bytes, the text and the list of lines) in memory three times over.

    Refusals keep :func:`read_lines`'s order whatever line they are on: a byte that is not UTF-8
    anywhere in the file first, then an empty file, then a blank line between records, then what
    the caller refuses in a line (:meth:`refuse`).
    """

    def __init__(self, path: Path, sources: list[tuple[str, str]]):
        self.path = Path(path)
        if not self.path.is_file():
            raise ImportFailure(str(path), None, None, "no such file")
        self.sources = sources
        self._lines = self._read()

    def __iter__(self):
        return self._lines

    def _segments(self):
        """(1-based line by ``\n``, byte offset, bytes, whether a ``\n`` follows) of each
        ``\n``-separated segment; the file's sha256 is recorded once the last one is read."""
        digest = hashlib.sha256()
        number, offset, tail = 1, 0, b""
        # hashlib lets go of the GIL on large updates: the file is hashed beside the parsing
        hasher, finished = ThreadPoolExecutor(1), False
        try:
            with self.path.open("rb") as f:
                while chunk := f.read(_CHUNK):
                    hasher.submit(digest.update, chunk)
                    parts = chunk.split(b"\n")
                    parts[0] = tail + parts[0]
                    tail = parts.pop()
                    for part in parts:
                        yield number, offset, part, True
                        number += 1
                        offset += len(part) + 1
            yield number, offset, tail, False
            hasher.shutdown(wait=True)  # every chunk hashed
            finished = True
            self.sources.append((str(self.path), digest.hexdigest()))
        finally:
            if not finished:
                # left unread (a refused line): this may run in a garbage-collector pass on any
                # thread, even one being started, where joining a thread deadlocks; never join here
                hasher.shutdown(wait=False, cancel_futures=True)

    def _decoded(self, segments):
        """(line, text) after decoding (a leading BOM dropped) and CR / CRLF line ends split."""
        number = 0
        for by_newline, offset, raw, newline in segments:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ImportFailure(
                    str(self.path), by_newline, None,
                    f"not UTF-8: byte 0x{raw[exc.start]:02x} at offset {offset + exc.start} cannot be decoded; "
                    "expected a UTF-8 text file (re-save it as UTF-8)",
                ) from None
            if by_newline == 1 and text.startswith(_BOM):
                text = text[1:]
            if "\r" in text:
                parts = (text[:-1] if newline and text.endswith("\r") else text).split("\r")  # CRLF, CR
                for part in parts:
                    number += 1
                    yield number, part
            else:
                number += 1
                yield number, text

    def _read(self):
        decoded = self._decoded(self._segments())
        blank = None  # the first blank line since the last record
        records = 0
        for number, line in decoded:
            if not line or line.isspace():  # isspace stops at the first other character; strip copies
                blank = blank or number
                continue
            if blank is not None:
                self._drain(decoded)  # a byte that is not UTF-8 further on is said first
                raise ImportFailure(
                    str(self.path), blank, None,
                    "blank line between records; expected one record per line (blank lines only at the end)",
                )
            records += 1
            yield number, line
        if not records:
            raise ImportFailure(str(self.path), None, None, "the file is empty; expected at least one record")

    @staticmethod
    def _drain(lines) -> None:
        for _ in lines:
            pass

    def refuse(self, failure: ImportFailure) -> ImportFailure:
        """What to raise for a defect the caller found in a line: a defect of the file further on
        that :func:`read_lines` would have said first, else ``failure``."""
        try:
            self._drain(self._lines)
        except ImportFailure as earlier:
            return earlier
        return failure


def read_lines(path: Path, sources: list[tuple[str, str]]) -> list[tuple[int, str]]:
    """Non-blank lines of a record-per-line file with their 1-based line numbers.

    Trailing blank lines are accepted; a blank line between records is refused.
    """
    return list(_LineStream(path, sources))


def read_jsonl(path: Path, sources: list[tuple[str, str]]) -> list[tuple[int, dict]]:
    """Parse a JSONL file: one JSON object per line, returned with line numbers."""
    records: list[tuple[int, dict]] = []
    lines = _LineStream(path, sources)
    loads = json.loads
    for number, line in lines:
        try:
            obj = loads(line)
        except json.JSONDecodeError as exc:
            raise lines.refuse(ImportFailure(
                str(path), number, None,
                f"malformed JSON ({exc.msg} at column {exc.colno}): received {_shorten(line.strip())!r}; "
                "expected one JSON object per line",
            )) from None
        except RecursionError:
            raise lines.refuse(ImportFailure(
                str(path), number, None, f"{TOO_DEEP}; expected one flat JSON object per line",
            )) from None
        except ValueError as exc:  # a number of more than 4,300 digits
            raise lines.refuse(ImportFailure(
                str(path), number, None,
                f"unreadable JSON ({type(exc).__name__}: {_shorten(str(exc))}); expected one JSON object per line",
            )) from None
        # a lone surrogate can only come from a \uD800-\uDFFF escape (the text itself was UTF-8);
        # looking for a backslash first is 10x cheaper than for "\u" in a long line
        if "\\" in line and ("\\ud" in line or "\\uD" in line) and _has_lone_surrogate(obj):
            raise lines.refuse(ImportFailure(
                str(path), number, None,
                "a \\uD800-\\uDFFF escape without its pair (a lone surrogate) cannot be stored as text; "
                "expected valid Unicode",
            ))
        if not isinstance(obj, dict):
            raise lines.refuse(ImportFailure(
                str(path), number, None,
                f"received a JSON {type(obj).__name__}; expected a JSON object per line",
            ))
        records.append((number, obj))
    return records


def _has_lone_surrogate(value: object) -> bool:
    """True when a decoded JSON value holds a string that is not encodable as UTF-8 (iterative:
    any nesting depth json.loads accepted is fine)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def require_str(record: dict, field: str, path: Path, line: int, *, blank_ok: bool = False) -> str:
    """The value of a required string field; missing, non-string or blank values are refused."""
    if field not in record:
        present = ", ".join(sorted(record)) or "none"
        raise ImportFailure(
            str(path), line, field,
            f"required field is missing (fields present: {present})",
        )
    value = record[field]
    if field in ID_FIELDS and isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # integer ids written as JSON numbers (e.g. TREC topic numbers)
    if not isinstance(value, str):
        raise ImportFailure(str(path), line, field, f"received {received(value)}; expected a string")
    if not blank_ok and (not value or value.isspace()):  # not value.strip(), which copies a long text
        raise ImportFailure(str(path), line, field, f"received {received(value)}; expected a non-blank string")
    return value


def optional_str(record: dict, field: str, path: Path, line: int) -> str:
    """The value of an optional string field ('' when absent or null)."""
    value = record.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ImportFailure(str(path), line, field, f"received {received(value)}; expected a string")
    return value


def parse_int(value: str, path: Path, line: int, field: str) -> int:
    """Parse an integer column (relevance, rank); anything else is refused."""
    try:
        number = int(value.strip())
    except ValueError:
        raise ImportFailure(
            str(path), line, field, f"received {received(value)}; expected an integer such as 0, 1 or 2"
        ) from None
    if not -(2**63) <= number < 2**63:  # SQLite stores 64-bit integers
        raise ImportFailure(
            str(path), line, field, f"received {received(value)}; expected an integer between -2^63 and 2^63-1"
        )
    return number


def parse_relevance(value: object, path: Path, line: int, field: str) -> int:
    """Parse a relevance score written as a JSON number, a JSON string or a TSV cell.

    Published qrels write the same grade as ``2``, ``2.0`` or ``"2"`` (MTEB casts the score to
    float, then to int); all three give 2. A fractional, non-finite, boolean or missing score is
    refused: a grade is an integer.

    Examples
    --------
    >>> [parse_relevance(v, Path("q.jsonl"), 1, "score") for v in (2, 2.0, "2", " 1.0 ")]
    [2, 2, 2, 1]
    """
    number: object = value
    if isinstance(value, str):
        text = value.strip()
        try:
            number = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                number = None
    if isinstance(number, float) and math.isfinite(number) and number.is_integer():
        number = int(number)
    if isinstance(number, bool) or not isinstance(number, int):
        raise ImportFailure(
            str(path), line, field,
            f"received {received(value)}; expected an integer score such as 0, 1 or 2 (written 2, 2.0 or \"2\")",
        )
    if not -(2**63) <= number < 2**63:  # SQLite stores 64-bit integers
        raise ImportFailure(
            str(path), line, field, f"received {received(value)}; expected an integer between -2^63 and 2^63-1"
        )
    return number


def read_tsv(
    path: Path,
    sources: list[tuple[str, str]],
    *,
    columns: int,
    headers: tuple[tuple[str, ...], ...] = (),
) -> list[tuple[int, list[str]]]:
    """Rows of a tab-separated file with exactly ``columns`` columns.

    When ``headers`` is given the first line must be one of them (compared exactly, after
    stripping); rows follow. Cells are stripped of surrounding spaces.
    """
    lines = read_lines(path, sources)
    if headers:
        number, first = lines[0]
        got = tuple(cell.strip() for cell in first.split("\t"))
        if got not in headers:
            accepted = " or ".join("'" + "<TAB>".join(h) + "'" for h in headers)
            raise ImportFailure(
                str(path), number, "header",
                f"received header '{'<TAB>'.join(got)}'; expected {accepted}",
            )
        lines = lines[1:]
        if not lines:
            raise ImportFailure(str(path), None, None, "the file has a header but no rows; expected at least one row")
    rows: list[tuple[int, list[str]]] = []
    for number, line in lines:
        cells = [cell.strip() for cell in line.split("\t")]
        if len(cells) != columns:
            raise ImportFailure(
                str(path), number, None,
                f"received {len(cells)} tab-separated columns; expected {columns}",
            )
        rows.append((number, cells))
    return rows


class IdTable:
    """Remembers where each id was first defined, to refuse duplicates with both locations."""

    def __init__(self, what: str):
        self.what = what
        self.seen: dict[str, tuple[str, int]] = {}

    def add(self, key: str, path: Path, line: int, field: str) -> None:
        if key in self.seen:
            first_file, first_line = self.seen[key]
            raise ImportFailure(
                str(path), line, field,
                f"duplicate {self.what} {key!r} (first defined in {first_file}, line {first_line}); "
                f"expected each {self.what} once",
            )
        self.seen[key] = (str(path), line)

    def __contains__(self, key: object) -> bool:
        return key in self.seen

    def __len__(self) -> int:
        return len(self.seen)
