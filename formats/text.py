"""Strict, line-numbered reading of the text files every importer shares (JSONL, TSV, plain lines).

Every defect becomes one :class:`formats.errors.ImportFailure` naming the file, the 1-based line
and the field, with what was received and what would have been accepted. Real files are accepted
as they come: a UTF-8 byte-order mark, CRLF line endings and trailing blank lines are fine.
"""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from formats.errors import ImportFailure

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


def read_lines(path: Path, sources: list[tuple[str, str]]) -> list[tuple[int, str]]:
    """Non-blank lines of a record-per-line file with their 1-based line numbers.

    Trailing blank lines are accepted; a blank line between records is refused.
    """
    lines = read_text(path, sources).split("\n")
    while lines and (not lines[-1] or lines[-1].isspace()):
        lines.pop()
    out: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        if not line or line.isspace():  # blank; isspace stops at the first other character, strip copies the line
            raise ImportFailure(
                str(path), number, None,
                "blank line between records; expected one record per line (blank lines only at the end)",
            )
        out.append((number, line))
    return out


def read_jsonl(path: Path, sources: list[tuple[str, str]]) -> list[tuple[int, dict]]:
    """Parse a JSONL file: one JSON object per line, returned with line numbers."""
    records: list[tuple[int, dict]] = []
    for number, line in read_lines(path, sources):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ImportFailure(
                str(path), number, None,
                f"malformed JSON ({exc.msg} at column {exc.colno}): received {_shorten(line.strip())!r}; "
                "expected one JSON object per line",
            ) from None
        except (ValueError, RecursionError) as exc:  # a >4300-digit number; nesting deeper than the stack
            raise ImportFailure(
                str(path), number, None,
                f"unreadable JSON ({type(exc).__name__}: {_shorten(str(exc))}); expected one JSON object per line",
            ) from None
        if "\\u" in line and _has_lone_surrogate(obj):
            raise ImportFailure(
                str(path), number, None,
                "a \\uD800-\\uDFFF escape without its pair (a lone surrogate) cannot be stored as text; "
                "expected valid Unicode",
            )
        if not isinstance(obj, dict):
            raise ImportFailure(
                str(path), number, None,
                f"received a JSON {type(obj).__name__}; expected a JSON object per line",
            )
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
    if not blank_ok and not value.strip():
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
