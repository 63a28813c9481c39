"""The one reader of the CSV files a user gives IFJudge (agreement labels and gold, an automatic
judge's answers, judge scores for INSTFOL: :func:`read_csv_table`; and the two-column ``qid group``
files of Robustness, tab, comma or space separated: :func:`read_pairs`): strict UTF-8, a header
with the expected columns, one :class:`formats.errors.ImportFailure` naming the file, the 1-based
line and the field for the first defect, and nothing returned unless the whole file is read
(all-or-nothing).

What each file means (which values a column accepts, which rows may not repeat) is its reader's;
this module only checks the shape: encoding, header, number of fields, at least one row.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from formats.errors import ImportFailure
from formats.text import decode_utf8


@dataclass
class CsvTable:
    """The rows of a CSV file: ``columns`` (column -> its values, stripped, in file order: the
    required columns and the optional ones the header has), ``lines`` (the file line of each row),
    ``header`` (the header's names, stripped) and ``header_line``."""

    path: str
    header: list[str]
    header_line: int
    columns: dict[str, list[str]]
    lines: list[int]

    def rows(self):
        """(line, {column: value}) of each row."""
        names = list(self.columns)
        for j, line in enumerate(self.lines):
            yield line, {c: self.columns[c][j] for c in names}


def expected_header(columns: tuple[str, ...], optional: tuple[str, ...] = ()) -> str:
    """The header a message asks for: ``instance_id,question,value[,doc_id]``.

    >>> expected_header(("item", "label"), ("doc_id",))
    'item,label[,doc_id]'
    """
    return ",".join(columns) + "".join(f"[,{c}]" for c in optional)


def read_csv_table(path: str | Path, columns: tuple[str, ...], *, optional: tuple[str, ...] = (),
                   fold_case: bool = False) -> CsvTable:
    """Read the CSV file ``path`` whose header has (at least) ``columns``, and ``optional`` ones
    when present. Blank lines are skipped (before the header too); header names and values are
    stripped; ``fold_case``: header names are matched in any case. Refused, naming file, line and
    field: a file that is not UTF-8 or holds a NUL byte, an empty file, a missing column, a row
    with fewer fields than the header (the field: the first one missing) or more, malformed
    quoting, a header without rows. A field may be long (an id of a megabyte is data).

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "labels.csv")
    >>> _ = open(p, "w").write(" Item ,label\\n1, Yes\\n\\n2,No\\n")
    >>> t = read_csv_table(p, ("item", "label"), fold_case=True)
    >>> t.columns, t.lines
    ({'item': ['1', '2'], 'label': ['Yes', 'No']}, [2, 4])
    >>> _ = open(p, "w").write("item,label\\n1\\n")
    >>> read_csv_table(p, ("item", "label"))
    Traceback (most recent call last):
    ...
    formats.errors.ImportFailure: ...labels.csv, line 2, field 'label': expected 2 fields (item,label), got 1
    """
    path = str(path)
    text = decode_utf8(Path(path).read_bytes(), path)
    if "\x00" in text:
        raise ImportFailure(path, text[: text.index("\x00")].count("\n") + 1, None,
                            "NUL byte in the file: expected a UTF-8 text CSV")
    expected = expected_header(columns, optional)
    csv.field_size_limit(1 << 30)  # long ids and labels are data, not an error
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        while header is not None and not any(h.strip() for h in header):
            header = next(reader, None)
        if header is None:
            raise ImportFailure(path, 1, None, f"empty file: expected a header line {expected}")
        header = [h.strip() for h in header]
        header_line = reader.line_num
        names = [h.lower() for h in header] if fold_case else header
        for c in columns:
            if c not in names:
                raise ImportFailure(path, header_line, c, f"missing header column {c!r} (header is "
                                                          f"{','.join(header)!r}; expected {expected})")
        wanted = [*columns, *(c for c in optional if c in names)]
        pos = [names.index(c) for c in wanted]
        data: dict[str, list[str]] = {c: [] for c in wanted}
        lines: list[int] = []
        for row in reader:
            if not any(v.strip() for v in row):
                continue
            if len(row) != len(header):
                raise ImportFailure(path, reader.line_num, header[len(row)] if len(row) < len(header) else None,
                                    f"expected {len(header)} fields ({','.join(header)}), got {len(row)}")
            for c, i in zip(wanted, pos):
                data[c].append(row[i].strip())
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise ImportFailure(path, reader.line_num or 1, None, f"malformed CSV: {exc}") from None
    if not lines:
        raise ImportFailure(path, header_line, None, "no rows after the header")
    return CsvTable(path, header, header_line, data, lines)


def read_pairs(path: str | Path, names: tuple[str, str], *,
               header: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())) -> list[tuple[int, str, str]]:
    """(line, first, second) of a two-column file whose columns are separated by a tab, a comma
    (CSV quoting) or spaces, one pair a line: a mapping such as ``qid group``. A first line whose
    two names are among ``header`` (the accepted names of each column, in any case) is a header
    and skipped. Blank lines are skipped; lines end at ``\\n`` only, so the line numbers are the
    ones an editor shows. Refused, naming file, line and field: a file that is not UTF-8, an empty
    file, a line without two columns, an empty value, malformed quoting.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "groups.tsv")
    >>> _ = open(p, "w").write("qid\\tgroup\\nq1\\tA\\n\\nq2, B\\n")
    >>> read_pairs(p, ("qid", "group"), header=(("qid",), ("group",)))
    [(2, 'q1', 'A'), (4, 'q2', 'B')]
    """
    path = str(path)
    text = decode_utf8(Path(path).read_bytes(), path)
    csv.field_size_limit(1 << 30)  # a long id is data, not an error
    what = f"'{names[0]} {names[1]}'"
    rows = [(n, line.removesuffix("\r")) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    if not rows:
        raise ImportFailure(path, None, None, f"empty file: expected lines {what}")
    out = []
    for number, line in rows:
        if "\t" in line:
            parts = [p.strip() for p in line.split("\t")]
        elif "," in line:
            try:
                parts = [p.strip() for p in next(csv.reader([line]))]
            except csv.Error as exc:
                raise ImportFailure(path, number, None, f"malformed CSV: {exc}") from None
        else:
            parts = line.split()
        if len(parts) != 2:
            raise ImportFailure(path, number, None, f"expected 2 columns {what}, got {len(parts)}")
        first, second = parts
        if number == rows[0][0] and first.lower() in header[0] and second.lower() in header[1]:
            continue
        if not first or not second:
            raise ImportFailure(path, number, names[0] if not first else names[1], "empty value")
        out.append((number, first, second))
    return out
