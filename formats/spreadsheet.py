"""CSV that a spreadsheet opens without running anything in it.

Excel, LibreOffice and Google Sheets read a cell that begins with ``=``, ``+``, ``-`` or ``@`` as
a formula (``=HYPERLINK(...)``, ``+cmd|' /C calc'!A0``, ``@SUM(...)``), and a leading tab or
carriage return can hide such a start. A reason or a name typed by anyone may begin so; IFJudge's
CSV files therefore prefix such a cell with an apostrophe, which spreadsheets show as text and do
not display (OWASP, "CSV Injection"). Numbers stay numbers: ``-0.12`` and ``+3e-05`` are left as
they are. ``raw=True`` (``ifjudge labels --raw``, ``ifjudge export --raw-csv``) writes every cell
as stored, for programs rather than spreadsheets.

TSV files of the benchmark layouts (qrels, runs) are data formats read back by the field's
loaders: their ids are written as they are.

>>> [neutralise(v) for v in ["=HYPERLINK(\\"x\\")", "@SUM(A1)", "-0.12", "- a dash", "\\tx", "plain", 3]]
['\\'=HYPERLINK("x")', "'@SUM(A1)", '-0.12', "'- a dash", "'\\tx", 'plain', 3]
"""
from __future__ import annotations

import csv
import re

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def neutralise(value: object) -> object:
    """``value`` with an apostrophe in front when a spreadsheet would read it as a formula."""
    if isinstance(value, str) and value.startswith(TRIGGERS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


class _SafeWriter:
    def __init__(self, writer):
        self._writer = writer

    def writerow(self, row):
        return self._writer.writerow([neutralise(v) for v in row])

    def writerows(self, rows):
        for row in rows:
            self.writerow(row)


def csv_writer(f, *, raw: bool = False, **options):
    """A ``csv.writer`` over ``f`` whose cells are :func:`neutralise`-d (unless ``raw``)."""
    writer = csv.writer(f, **options)
    return writer if raw else _SafeWriter(writer)
