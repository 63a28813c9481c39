"""The one CSV reader (formats.csv_table): each CSV a user gives IFJudge is refused for the same
defects with the same words, naming file, line and field, and read the same way when sound."""
from __future__ import annotations

import pytest

from annotation.judges.labels import read_judge_labels
from cli.agreement_cmd import read_csv_table as read_agreement_labels
from evaluation.instfol import read_judge_scores
from formats.errors import ImportFailure

READERS = {  # reader, its header
    "judge labels": (read_judge_labels, "instance_id,question,value"),
    "judge scores": (read_judge_scores, "query,mode,rank,score"),
    "agreement labels": (lambda p: read_agreement_labels(str(p), ("item", "annotator", "label")), "item,annotator,label"),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("body, line, field, words", [
    (b"", 1, None, "empty file: expected a header line "),
    (b"\n\n", 1, None, "empty file"),
    (b"HEADER\n", 1, None, "no rows after the header"),
    (b"HEADER\nROW\n\nSHORT\n", 4, "LAST", "expected 3 fields"),  # the field: the first one missing
    (b"HEADER\nROW,extra\n", 2, None, "fields (HEADER), got"),
    (b"HEADER\nROW\n\xff\n", 3, None, "not UTF-8: byte 0xff"),
    (b"HEADER\nROW\x00\n", 2, None, "NUL byte in the file"),
])
def test_every_csv_reader_refuses_the_same_defects_naming_file_line_and_field(tmp_path, reader, body, line, field, words):
    read, header = READERS[reader]
    columns = header.split(",")
    if reader == "judge scores":
        row, short = "q1,query,1,2", "q1,query,1"
    else:
        row, short = "a,validity,Yes", "a,validity"
    text = (body.replace(b"HEADER", header.encode()).replace(b"SHORT", short.encode()).replace(b"ROW", row.encode()))
    path = tmp_path / "input.csv"
    path.write_bytes(text)
    words = words.replace("HEADER", header).replace("expected 3 fields", f"expected {len(columns)} fields")
    with pytest.raises(ImportFailure) as info:
        read(path)
    err = info.value
    assert (err.file, err.line, err.field) == (str(path), line, columns[-1] if field == "LAST" else field)
    assert words in err.message


def test_a_missing_column_is_named_with_the_header_read_and_the_one_expected(tmp_path):
    path = tmp_path / "judge.csv"
    path.write_text("\n Instance_ID ,Question\na,validity\n")  # blank first line; names in any case
    with pytest.raises(ImportFailure) as info:
        read_judge_labels(path)
    assert (info.value.line, info.value.field) == (2, "value")
    assert info.value.message == ("missing header column 'value' (header is 'Instance_ID,Question'; "
                                  "expected instance_id,question,value[,doc_id])")
    path.write_text("\ufeffINSTANCE_ID,question,value,doc_id\r\na, validity ,Yes,d1\r\n")  # BOM, CRLF, spaces
    assert read_judge_labels(path) == {("a", "validity", "d1"): "Yes"}
