"""The bytes of the corpus files an export writes, on text that needs escaping: Persian (kept as
UTF-8), quotes, backslashes, line breaks, tabs and control characters. The corpus is streamed from
storage in chunks (``storage.projects.document_chunks``) and formatted per row; the files must be
what ``json.dumps(..., ensure_ascii=False)`` per record and ``pyarrow`` on the strings write."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from exports.validated import export_project
from formats import writers
from formats.bundle import Bundle, Document, Instance, Qrel, Query
from formats.corpus import StreamedCorpus, corpus_ids, utf8_rows
from formats.readers import parse
from storage import projects
from storage.db import connect
from storage.errors import IFJudgeError

pytestmark = pytest.mark.both_engines

DOCS = [
    Document("d-fa", "بازیابی اطلاعات «دستورالعمل» ۱۴۰۲", "سلام"),
    Document("d-quote", 'He said "stop" \\ then\nleft\ttab\rend', 'a "quoted" title'),
    Document("d-ctl", "bell\x07 soh\x01 us\x1f del\x7f ls\u2028end", ""),
    Document("سند-۲", "plain text", "T"),
]
# json.dumps(record, ensure_ascii=False) of each, written out by hand: non-ASCII kept, '"' and '\'
# escaped, \n \t \r as such, other control characters as \u00XX (lowercase), DEL and U+2028 kept
# (no NUL here: PostgreSQL cannot store it; see the test of NUL at the end)
CORPUS_LINES = [
    '{"_id": "d-fa", "title": "سلام", "text": "بازیابی اطلاعات «دستورالعمل» ۱۴۰۲"}',
    '{"_id": "d-quote", "title": "a \\"quoted\\" title", "text": "He said \\"stop\\" \\\\ then\\nleft\\ttab\\rend"}',
    '{"_id": "d-ctl", "title": "", "text": "bell\\u0007 soh\\u0001 us\\u001f del\x7f ls\u2028end"}',
    '{"_id": "سند-۲", "title": "T", "text": "plain text"}',
]


def followir_project() -> Bundle:
    return Bundle(
        documents=list(DOCS),
        queries=[Query("q1", 'what "matters"')],
        instances=[Instance("q1-og", "q1", "q1", "find «this»", "og"), Instance("q1-changed", "q1", "q1", "only\nthat", "changed")],
        qrels=[Qrel("q1", "d-fa", 1, "original"), Qrel("q1", "d-quote", 1, "original"), Qrel("q1", "d-ctl", 0, "original"),
               Qrel("q1", "d-fa", 1, "changed"), Qrel("q1", "d-quote", 0, "changed"), Qrel("q1", "d-ctl", 0, "changed")],
        top_ranked={"q1": ["d-quote", "d-fa", "d-ctl", "سند-۲"]},
    )


@pytest.fixture
def stored(db_path):
    db = connect(db_path)
    projects.import_bundle(db, "fa", followir_project(), fmt="followir")
    return db


def test_the_hand_written_lines_are_what_json_dumps_writes():
    # the reference the expected lines stand for (the writer used json.dumps per record before)
    assert CORPUS_LINES == [json.dumps({"_id": d.doc_id, "title": d.title, "text": d.text}, ensure_ascii=False) for d in DOCS]


@pytest.mark.parametrize("fmt", ["beir", "followir"])
def test_exported_corpus_jsonl_has_the_escaped_bytes(stored, tmp_path, fmt):
    export_project(stored, projects.get_project(stored, "fa"), fmt, tmp_path)
    data = (tmp_path / "corpus.jsonl").read_bytes()
    assert data == ("\n".join(CORPUS_LINES) + "\n").encode("utf-8")
    # and reads back as the stored text, character for character
    assert [json.loads(line)["text"] for line in data.decode("utf-8").split("\n")[:-1]] == [d.text for d in DOCS]


def test_writer_on_a_list_and_on_a_stream_write_the_same_bytes(stored, tmp_path):
    pid = projects.get_project(stored, "fa")["id"]
    streamed = projects.streamed_corpus(stored, pid)
    assert corpus_ids(streamed) == [d.doc_id for d in DOCS] and len(streamed) == 4
    assert streamed == DOCS  # read back from storage, as Documents
    a = writers.write_beir(Bundle(documents=list(DOCS)), tmp_path / "list")[0]
    b = writers.write_beir(Bundle(documents=streamed), tmp_path / "stream")[0]
    assert a.read_bytes() == b.read_bytes() == ("\n".join(CORPUS_LINES) + "\n").encode("utf-8")


def test_chunks_of_chosen_ids_come_in_the_order_asked(stored):
    pid = projects.get_project(stored, "fa")["id"]
    rows = [r for chunk in projects.document_chunks(stored, pid, ["سند-۲", "missing", "d-fa"]) for r in chunk]
    assert rows == [("سند-۲".encode(), b"T", b"plain text"), (b"d-fa", "سلام".encode(), DOCS[0].text.encode())]
    chunks = list(projects.document_chunks(stored, pid, size=3))  # the whole corpus, 3 rows at a time
    assert [len(c) for c in chunks] == [3, 1]
    assert [r[2].decode() for c in chunks for r in c] == [d.text for d in DOCS]
    sub = projects.streamed_corpus(stored, pid, ["d-ctl", "nope", "d-fa"])
    assert sub.ids == ["d-ctl", "d-fa"] and list(sub) == [DOCS[2], DOCS[0]]


def test_utf8_rows_of_a_list_and_a_stream_agree():
    rows = [(d.doc_id.encode(), d.title.encode(), d.text.encode()) for d in DOCS]
    streamed = StreamedCorpus([d.doc_id for d in DOCS], lambda: iter([rows[:2], rows[2:]]))
    assert [r for c in utf8_rows(DOCS, size=3) for r in c] == rows == [r for c in utf8_rows(streamed) for r in c]
    assert [len(c) for c in utf8_rows(DOCS, size=3)] == [3, 1]


def test_exported_mteb_corpus_parquet_is_what_pyarrow_writes_from_the_strings(stored, tmp_path):
    export_project(stored, projects.get_project(stored, "fa"), "mteb", tmp_path / "mteb")
    path = tmp_path / "mteb" / "corpus" / "corpus-00000-of-00001.parquet"
    s = pa.string()
    reference = pa.table({"_id": pa.array([d.doc_id for d in DOCS], s), "title": pa.array([d.title for d in DOCS], s),
                          "text": pa.array([d.text for d in DOCS], s)})
    pq.write_table(reference, tmp_path / "reference.parquet")
    assert path.read_bytes() == (tmp_path / "reference.parquet").read_bytes()
    assert pq.read_table(path).column("text").to_pylist() == [d.text for d in DOCS]


def test_exported_layouts_import_back_with_the_same_text(stored, tmp_path):
    export_project(stored, projects.get_project(stored, "fa"), "followir", tmp_path / "fir")
    again = parse("followir", [tmp_path / "fir"])
    assert again.documents == DOCS
    assert [i.instruction for i in again.instances] == ["find «this»", "only\nthat"]
    lines = (tmp_path / "fir" / "top_ranked.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines == ['{"qid": "q1", "pid": "d-quote"}', '{"qid": "q1", "pid": "d-fa"}', '{"qid": "q1", "pid": "d-ctl"}',
                     '{"qid": "q1", "pid": "سند-۲"}']
    og = (tmp_path / "fir" / "qrels_og" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    assert og[0] == '{"query-id": "q1", "corpus-id": "d-fa", "score": 1.0}' and len(og) == 3


def test_the_manifest_hashes_are_those_of_the_files_written(stored, tmp_path):
    import hashlib

    manifest = export_project(stored, projects.get_project(stored, "fa"), "followir", tmp_path)  # corpus.jsonl hashed while written
    files = {f["path"]: f["sha256"] for f in manifest["files"]}
    assert "corpus.jsonl" in files and len(files) == len(manifest["files"])
    for name, digest in files.items():
        assert digest == hashlib.sha256((tmp_path / name).read_bytes()).hexdigest(), name


def test_a_nul_is_exported_escaped_on_sqlite_and_refused_at_import_on_postgresql(db_path, engine, tmp_path):
    """SQLite stores a NUL and the export escapes it as json.dumps does; PostgreSQL's text columns
    cannot hold one, so the import says which record and field, and stores nothing."""
    db = connect(db_path)
    bundle = followir_project()
    bundle.documents.append(Document("d-nul", "before\x00after", "t"))
    if engine == "postgresql":
        with pytest.raises(IFJudgeError, match=r"document 'd-nul': its text contains a NUL character .*nothing was imported"):
            projects.import_bundle(db, "fa", bundle, fmt="followir")
        assert projects.list_projects(db) == []
        return
    projects.import_bundle(db, "fa", bundle, fmt="followir")
    export_project(db, projects.get_project(db, "fa"), "beir", tmp_path / "out")
    lines = (tmp_path / "out" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    assert '{"_id": "d-nul", "title": "t", "text": "before\\u0000after"}' in lines
