"""The IFIR release layout in and out: ``ifjudge import --format ifir`` on the published folders
(root, one domain, files one by one), what it refuses, ``export --format ifir`` and back, and the
excluded passages of IFIR's human validation (Table 2)."""
from __future__ import annotations

import doctest
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

import formats.readers.ifir as ifir_module
from formats import writers
from formats.bundle import Instance, Qrel, Query
from formats.errors import ImportFailure
from formats.readers import parse
from formats.readers.ifir import bare_instance_id, detect, excluded_passages
from storage import projects
from storage.db import connect

PUB = Path(__file__).parent / "fixtures" / "published" / "ifir"
FIQA, NFCORPUS = PUB / "fiqa", PUB / "nfcorpus"


def content(b) -> tuple:
    return (b.documents, b.queries, b.instances, b.qrels)


def stored(db_path: Path, project: str):
    db = connect(db_path)
    return projects.project_bundle(db, projects.get_project(db, project)["id"])


def dump(db_path: Path) -> dict:
    conn = sqlite3.connect(db_path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: sorted(map(repr, conn.execute(f'SELECT * FROM "{t}"'))) for t in tables}
    finally:
        conn.close()


# --------------------------------------------------------------------------- import through the CLI

def test_root_folder_imports_every_domain_with_exact_counts(run_cli, db_path):
    code, out, err = run_cli("import", "--db", db_path, "--project", "ifir", "--format", "ifir", PUB, "--json")
    assert code == 0, err
    counts = json.loads(out)
    # fiqa: 10 corpus rows, 2 with empty text; 2 items with 3 and 2 instructions, each with its bare query
    # nfcorpus: 6 corpus rows, 2 empty; 2 items with one level-0 instruction each
    assert counts["documents"] == 8 + 4
    assert counts["queries"] == 2 + 2
    assert counts["instances"] == (4 + 3) + (2 + 2)
    assert counts["groups"] == 4
    # fiqa: bare 4 + 4, gold 3 + 2 + 1 and 3 + 2; nfcorpus: bare 3 + 1 (MED-13 is empty), gold 2 + 1
    assert counts["qrels_original"] == 19 + 7
    assert counts["subsets"] == 2
    notes = [line for line in err.splitlines() if line.startswith("note: ")]
    assert "note: fiqa-corpus.jsonl: 2 documents with empty text skipped" in notes
    assert "note: nfcorpus-corpus.jsonl: 2 documents with empty text skipped" in notes
    assert "note: nfcorpus: 1 judgment of documents with empty text dropped" in notes


def test_each_query_carries_its_domain(run_cli, db_path):
    assert run_cli("import", "--db", db_path, "--project", "ifir", "--format", "ifir", PUB)[0] == 0
    db = connect(db_path)
    subsets = projects.query_subsets(db, projects.get_project(db, "ifir")["id"])
    assert subsets == {"fiqa/12": "fiqa", "fiqa/47": "fiqa", "nfcorpus/PLAIN-1": "nfcorpus", "nfcorpus/PLAIN-2": "nfcorpus"}


def test_one_domain_keeps_the_published_ids(run_cli, db_path):
    code, out, err = run_cli("import", "--db", db_path, "--project", "fiqa", "--format", "ifir", FIQA, "--json")
    assert code == 0, err
    b = stored(db_path, "fiqa")
    assert b.queries == [Query("12", "best business structure for taxes with a side business", "fiqa"),
                         Query("47", "should I pay off my student loans before investing", "fiqa")]
    assert [(i.instance_id, i.variant) for i in b.instances] == [
        ("12_0", "bare"), ("12_1", "level1"), ("12_2", "level2"), ("12_3", "level3"),
        ("47_0", "bare"), ("47_1", "level1"), ("47_2", "level2")]
    assert b.instances[4] == Instance("47_0", "47", "47", "", "bare")
    assert b.instances[6].instruction == "I am a 27-year-old nurse with $40,000 of student loans at 7% and no savings."
    assert {d.doc_id for d in b.documents} == {str(n) for n in range(501, 509)}
    # the qrels file's score is kept (12_1 / 501 is graded 2), the gold of each level is test_data.json's rel
    assert [(q.doc_id, q.relevance) for q in b.qrels if q.qid == "12_1"] == [("501", 2), ("502", 1), ("503", 1)]
    assert [q.doc_id for q in b.qrels if q.qid == "12_0"] == ["501", "502", "503", "504"]


def test_level_zero_domain_bare_query_and_instruction(run_cli, db_path):
    assert run_cli("import", "--db", db_path, "--project", "nf", "--format", "ifir", NFCORPUS)[0] == 0
    b = stored(db_path, "nf")
    assert [(i.instance_id, i.variant, bool(i.instruction)) for i in b.instances] == [
        ("PLAIN-1_0", "bare", False), ("PLAIN-1_inst", "og", True), ("PLAIN-2_0", "bare", False), ("PLAIN-2_inst", "og", True)]
    assert [q.doc_id for q in b.qrels if q.qid == "PLAIN-1_inst"] == ["MED-10", "MED-11"]
    assert [q.doc_id for q in b.qrels if q.qid == "PLAIN-2_0"] == ["MED-14"]  # MED-13 has no text


def test_files_given_one_by_one_equal_the_folder(tmp_path):
    files = sorted(FIQA.iterdir())
    assert content(parse("ifir", files)) == content(parse("ifir", [FIQA]))
    # a copy elsewhere: test_data.json joins the subset of the files given beside it
    shutil.copytree(FIQA, tmp_path / "download")
    assert content(parse("ifir", sorted((tmp_path / "download").iterdir()))) == content(parse("ifir", [FIQA]))


def test_two_domain_folders_equal_the_root():
    assert content(parse("ifir", [FIQA, NFCORPUS])) == content(parse("ifir", [PUB]))


def test_detect_recognises_the_root_and_a_domain_folder():
    assert detect(PUB) and detect(FIQA) and detect(NFCORPUS)
    assert not detect(PUB.parent.parent / "importers" / "beir")
    assert not detect(FIQA / "test_data.json")


def test_query_file_variants_the_loaders_allow(tmp_path):
    """The instructed query text is ``query + " " + instruction`` (IFIR's src/eval.py); the
    instruction alone is accepted too. In a level-0 domain ``<qid>_0`` may hold the instructed
    query, and its qrels the instruction's gold passages."""
    root = tmp_path / "nfcorpus"
    shutil.copytree(NFCORPUS, root)
    items = json.loads((root / "test_data.json").read_text(encoding="utf-8"))
    rows = []
    for item in items:
        rows.append({"_id": item["_id"] + "_0", "text": item["text"]})
        rows.append({"_id": item["_id"] + "_0", "text": item["text"] + " " + item["instructions"][0]["instruction"]})
    (root / "nfcorpus-query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (root / "nfcorpus-qrel.tsv").write_text("query-id\tcorpus-id\tscore\nPLAIN-1_0\tMED-10\t1\nPLAIN-1_0\tMED-11\t1\n",
                                            encoding="utf-8")
    assert content(parse("ifir", [root])) == content(parse("ifir", [NFCORPUS]))
    fiqa = tmp_path / "fiqa"
    shutil.copytree(FIQA, fiqa)
    lines = (fiqa / "fiqa-query.jsonl").read_text(encoding="utf-8").splitlines()
    lines[1] = json.dumps({"_id": "12_1", "text": "Please help me to find a financial suggestion for the query."})
    (fiqa / "fiqa-query.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert content(parse("ifir", [fiqa])) == content(parse("ifir", [FIQA]))


# --------------------------------------------------------------------------- refusals

def test_qrels_that_disagree_with_test_data_are_refused_and_nothing_is_stored(run_cli, db_path, tmp_path):
    assert run_cli("import", "--db", db_path, "--project", "nf", "--format", "ifir", NFCORPUS)[0] == 0
    before = dump(db_path)
    root = tmp_path / "ifir"
    shutil.copytree(PUB, root)
    qrels = root / "fiqa" / "fiqa-qrel.tsv"
    lines = qrels.read_text(encoding="utf-8").splitlines()
    assert lines[10] == "12_3\t502\t1"
    lines[10] = "12_3\t504\t1"
    qrels.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run_cli("import", "--db", db_path, "--project", "ifir", "--format", "ifir", root)
    assert code == 2
    assert err.strip().splitlines() == [
        f"ifjudge: error: {qrels}, line 11, field 'corpus-id': '504' is not gold for '12_3': test_data.json item 0 "
        "(line 2), field 'instructions[2].rel' lists ['502']; expected the same gold passages"]
    assert dump(db_path) == before


def test_test_data_errors_name_the_item_its_line_and_the_field_path(tmp_path):
    root = tmp_path / "fiqa"
    shutil.copytree(FIQA, root)
    items = json.loads((root / "test_data.json").read_text(encoding="utf-8"))
    items[1]["instructions"][1]["rel"] = [0, 9]
    (root / "test_data.json").write_text(json.dumps(items, indent=4), encoding="utf-8")
    with pytest.raises(ImportFailure) as err:
        parse("ifir", [root])
    first_line_of_item_1 = 1 + json.dumps(items, indent=4).split("\n").index('    {', 2)
    assert err.value.file == str(root / "test_data.json")
    assert err.value.line == first_line_of_item_1
    assert err.value.field == "instructions[1].rel"
    assert "item 1: received int 9; expected an index into this item's corpus (0 to 3)" in str(err.value)


@pytest.mark.parametrize("remove, words", [
    ("test_data.json", "has no test_data.json"),
    ("fiqa-corpus.jsonl", "has no fiqa-corpus.jsonl"),
])
def test_a_subset_without_test_data_or_corpus_is_refused(tmp_path, remove, words):
    shutil.copytree(FIQA, tmp_path / "fiqa")
    (tmp_path / "fiqa" / remove).unlink()
    with pytest.raises(ImportFailure, match=words):
        parse("ifir", [tmp_path / "fiqa"])


def test_a_folder_without_ifir_files_is_refused_with_its_path(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ImportFailure) as err:
        parse("ifir", [tmp_path / "empty"])
    assert err.value.file == str(tmp_path / "empty") and "holds no IFIR subset" in err.value.message


def test_query_without_test_data_item_is_refused(tmp_path):
    shutil.copytree(FIQA, tmp_path / "fiqa")
    with (tmp_path / "fiqa" / "fiqa-query.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"_id": "99_1", "text": "x"}\n')
    with pytest.raises(ImportFailure) as err:
        parse("ifir", [tmp_path / "fiqa"])
    assert (err.value.line, err.value.field) == (8, "_id") and "query '99'" in err.value.message


# --------------------------------------------------------------------------- export and back

@pytest.mark.parametrize("source", [PUB, FIQA, NFCORPUS])
def test_write_then_read_gives_the_same_bundle(tmp_path, source):
    original = parse("ifir", [source])
    writers.write_ifir(original, tmp_path / "out")
    assert content(parse("ifir", [tmp_path / "out"])) == content(original)


def test_written_fiqa_files_are_the_published_ones(tmp_path):
    """Without empty documents to drop, the writer reproduces the release byte for byte."""
    writers.write_ifir(parse("ifir", [FIQA]), tmp_path)
    for name in ("fiqa-query.jsonl", "fiqa-qrel.tsv", "test_data.json"):
        assert (tmp_path / "fiqa" / name).read_bytes() == (FIQA / name).read_bytes(), name


def test_cli_export_then_import_gives_the_same_project(run_cli, db_path, tmp_path):
    assert run_cli("import", "--db", db_path, "--project", "a", "--format", "ifir", PUB)[0] == 0
    code, out, err = run_cli("export", "--db", db_path, "--project", "a", "--format", "ifir", "--out", tmp_path / "x")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == ["fiqa", "manifest.json", "nfcorpus"]
    assert sorted(p.name for p in (tmp_path / "x" / "fiqa").iterdir()) == [
        "fiqa-corpus.jsonl", "fiqa-qrel.tsv", "fiqa-query.jsonl", "test_data.json"]
    code, out, err = run_cli("import", "--db", db_path, "--project", "b", "--format", "ifir", tmp_path / "x")
    assert code == 0, err
    assert content(stored(db_path, "b")) == content(stored(db_path, "a"))


def test_writer_refuses_what_the_layout_cannot_express(tmp_path):
    b = parse("ifir", [FIQA])
    b.instances.append(Instance("12-changed", "12", "12", "x", "changed"))
    with pytest.raises(ValueError, match="cannot be written as IFIR"):
        writers.write_ifir(b, tmp_path)
    b = parse("beir", [PUB.parent.parent / "importers" / "beir"])
    with pytest.raises(ValueError, match="no domain"):
        writers.write_ifir(b, tmp_path)


# --------------------------------------------------------------------------- excluded passages

def test_excluded_passages_are_relevant_to_the_bare_query_but_not_gold():
    b = parse("ifir", [PUB])
    assert bare_instance_id("fiqa/12") == "fiqa/12_0"
    assert excluded_passages(b.qrels, "fiqa/12_1", "fiqa/12_0") == ["fiqa/504"]
    assert excluded_passages(b.qrels, "fiqa/12_2", "fiqa/12_0") == ["fiqa/503", "fiqa/504"]
    assert excluded_passages(b.qrels, "fiqa/12_3", "fiqa/12_0") == ["fiqa/501", "fiqa/503", "fiqa/504"]
    assert excluded_passages(b.qrels, "nfcorpus/PLAIN-1_inst", "nfcorpus/PLAIN-1_0") == ["nfcorpus/MED-12"]
    assert excluded_passages(b.qrels, "nfcorpus/PLAIN-2_inst", "nfcorpus/PLAIN-2_0") == []


def test_excluded_passages_read_one_version():
    qrels = [Qrel("q_0", "d1", 1), Qrel("q_0", "d2", 1), Qrel("q_1", "d1", 1),
             Qrel("q_1", "d2", 1, "validated"), Qrel("q_0", "d3", 1, "validated")]
    assert excluded_passages(qrels, "q_1", "q_0") == ["d2"]
    assert excluded_passages(qrels, "q_1", "q_0", version="validated") == ["d3"]


def test_docstring_examples():
    result = doctest.testmod(ifir_module)
    assert result.attempted >= 3 and result.failed == 0


def test_a_domain_without_levels_may_number_its_instructed_query_1(tmp_path):
    """cds, fire and nfcorpus: test_data.json says level 0 while the query and qrels files number
    the instructed query ``<qid>_1``; it is the level-0 instruction (instance ``<qid>_inst``), with
    the qrels file's scores."""
    root = tmp_path / "nfcorpus"
    shutil.copytree(NFCORPUS, root)
    items = json.loads((root / "test_data.json").read_text(encoding="utf-8"))
    rows = []
    for item in items:
        rows.append({"_id": item["_id"] + "_0", "text": item["text"]})
        rows.append({"_id": item["_id"] + "_1", "text": item["text"] + " " + item["instructions"][0]["instruction"]})
    (root / "nfcorpus-query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    qrels = (NFCORPUS / "nfcorpus-qrel.tsv").read_text(encoding="utf-8")
    # PLAIN-1's level-0 gold is MED-10 and MED-11 (rel [0, 1]); PLAIN-2's is MED-14 (MED-13 has no text)
    qrels += "PLAIN-1_1\tMED-10\t2\nPLAIN-1_1\tMED-11\t1\nPLAIN-2_1\tMED-14\t1\n"
    (root / "nfcorpus-qrel.tsv").write_text(qrels, encoding="utf-8")
    b = parse("ifir", [root])
    published = parse("ifir", [NFCORPUS])
    assert b.instances == published.instances  # PLAIN-1_inst / PLAIN-2_inst, variant og
    assert [(q.doc_id, q.relevance) for q in b.qrels if q.qid == "PLAIN-1_inst"] == [("MED-10", 2), ("MED-11", 1)]
    # a gold row of _1 that test_data.json does not list is refused as for any level
    (root / "nfcorpus-qrel.tsv").write_text(qrels + "PLAIN-2_1\tMED-12\t1\n", encoding="utf-8")
    with pytest.raises(ImportFailure, match="'MED-12' is not gold for 'PLAIN-2_1'"):
        parse("ifir", [root])
    # _2 names no instruction in a domain without levels
    rows.append({"_id": "PLAIN-1_2", "text": items[0]["text"] + " " + items[0]["instructions"][0]["instruction"]})
    (root / "nfcorpus-qrel.tsv").write_text(qrels, encoding="utf-8")
    (root / "nfcorpus-query.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(ImportFailure, match="has no instruction of level 2"):
        parse("ifir", [root])
