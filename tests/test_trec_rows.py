"""One reader of TREC rows: `ifjudge eval` (formats.trec_io) and `ifjudge import --format trec`
(formats.readers.trec) accept the same rows and refuse the same defects with the same file, line,
field and message."""
import shutil
from pathlib import Path

import pytest

from formats import trec_io
from formats.errors import ImportFailure
from formats.readers import parse

TREC = Path(__file__).parent / "fixtures" / "importers" / "trec"
GOOD_RUN = "301 Q0 FBIS3-10082 1 12.5 bm25\n"


def _import(tmp_path: Path, name: str, content: str) -> tuple:
    """Import the TREC fixture with ``name`` replaced by ``content``: (bundle or ImportFailure)."""
    root = tmp_path / "imp"
    shutil.copytree(TREC, root, dirs_exist_ok=True)
    (root / name).write_bytes(content.encode("utf-8"))
    try:
        return parse("trec", [root])
    except ImportFailure as exc:
        return exc


def _read(tmp_path: Path, reader, content: str):
    path = tmp_path / "file.txt"
    path.write_bytes(content.encode("utf-8"))
    try:
        return reader(path)
    except ImportFailure as exc:
        return exc


@pytest.mark.parametrize("row, field, words", [
    ("301 Q0 FBIS3-10169 2 nan bm25", "score", "received 'nan'; expected a finite number"),
    ("301 Q0 FBIS3-10169 2 -inf bm25", "score", "received '-inf'; expected a finite number"),
    ("301 Q0 FBIS3-10169 2 1e999 bm25", "score", "received '1e999'; expected a finite number"),
    ("301 Q0 FBIS3-10169 2 high bm25", "score", "received 'high'; expected a number"),
    ("301 Q0 FBIS3-10169 2.5 11.0 bm25", "rank", "received '2.5'; expected an integer rank"),
    ("301 Q0 FBIS3-10169 ２ 11.0 bm25", "rank", "expected an integer rank"),  # a full-width digit
    ("301 Q0 FBIS3-10169", None, "received 3 whitespace-separated columns; expected"),
    # \x85 and \u00a0 are neither line breaks nor separators: line 2, and 4 columns
    ("301 Q0 FBIS3\x8510169\u00a02 11.0", None, "received 4 whitespace-separated columns"),
])
def test_a_bad_run_row_is_refused_alike_by_eval_and_import(tmp_path, row, field, words):
    content = GOOD_RUN + row + "\n"
    evaluated = _read(tmp_path, trec_io.read_run, content)
    imported = _import(tmp_path, "run.txt", content)
    assert isinstance(evaluated, ImportFailure) and isinstance(imported, ImportFailure), (evaluated, imported)
    assert (evaluated.line, evaluated.field) == (imported.line, imported.field) == (2, field)
    assert words in evaluated.message
    # the same message, but that the import also takes a run without its tag column
    assert evaluated.message.replace("expected 6 columns", "expected 5 or 6 columns") == imported.message


def test_lines_are_counted_at_newlines_only(tmp_path):
    """A carriage return alone, \\x85 or \\u2028 inside a row do not start a line: a defect two
    rows down is on line 3 in both readers (the import used to count a lone \\r as a line)."""
    content = GOOD_RUN + "301 Q0 FBIS3-10169 2 11.0 bm25\r301 Q0 x\u2028y 3 1.0 bm25\n303 Q0 FT911-1 x 9.0 bm25\n"
    evaluated = _read(tmp_path, trec_io.read_run, content)
    imported = _import(tmp_path, "run.txt", content)
    assert (evaluated.line, evaluated.field) == (imported.line, imported.field) == (2, None)  # \r joins two rows
    content = GOOD_RUN + "301 Q0 FBIS3\x85-10169 2 11.0 bm25\r\n\n303 Q0 FT911-1 x 9.0 bm25\r\n"
    evaluated = _read(tmp_path, trec_io.read_run, content)
    imported = _import(tmp_path, "run.txt", content)
    assert (evaluated.line, evaluated.field) == (imported.line, imported.field) == (4, "rank")


@pytest.mark.parametrize("rel, accepted", [("2", 2), ("2.0", 2), ("0.5", None), ("inf", None), ("R", None)])
def test_qrels_relevance_is_read_alike(tmp_path, rel, accepted):
    content = f"301 0 FBIS3-10082 1\n303 0 FT911-1 {rel}\n"
    evaluated = _read(tmp_path, trec_io.read_qrels, content)
    imported = _import(tmp_path, "qrels.txt", content)
    if accepted is None:
        assert (evaluated.line, evaluated.field) == (imported.line, imported.field) == (2, "rel")
        assert evaluated.message == imported.message and "integer" in evaluated.message
    else:
        assert evaluated["303"]["FT911-1"] == accepted
        assert {(q.qid, q.doc_id): q.relevance for q in imported.qrels}[("303", "FT911-1")] == accepted


def test_a_good_run_reads_the_same_in_both(tmp_path):
    content = GOOD_RUN + "\n301\tQ0  FBIS3-10169 2 11.25 bm25\r\n303 Q0 FT911-1 1 9 bm25\n"
    evaluated = _read(tmp_path, trec_io.read_run, content)
    imported = _import(tmp_path, "run.txt", content)
    assert evaluated == {"301": {"FBIS3-10082": 12.5, "FBIS3-10169": 11.25}, "303": {"FT911-1": 9.0}}
    assert {(r.qid, r.doc_id): r.score for r in imported.runs["bm25"]} == {
        (q, d): s for q, docs in evaluated.items() for d, s in docs.items()}
    assert [r.rank for r in imported.runs["bm25"]] == [1, 2, 1]
