"""MTEB v2 parquet layouts in and out: the published FollowIR (``jhu-clsp/*-instructions-mteb``) and
generic retrieval configs import with exact counts, bad files are refused with file, row and column,
exports read back unchanged and load the way MTEB's loader loads them."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from formats import readers
from formats import writers as layouts
from formats.bundle import Bundle, Document, Instance, Narrative, Qrel, Query
from formats.errors import ImportFailure
from formats.readers import mteb

PUBLISHED = Path(__file__).parent / "fixtures" / "published"
FOLLOWIR_MTEB = PUBLISHED / "followir_mteb"
GENERIC = PUBLISHED / "mteb_generic"

_spec = importlib.util.spec_from_file_location("make_mteb_fixtures", PUBLISHED / "make_mteb_fixtures.py")
made = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(made)
CONTENT = made.FOLLOWIR


def content(b: Bundle) -> tuple:
    """Everything but ``source_files`` and ``notes``."""
    return (b.documents, b.queries, b.instances, b.qrels, b.narratives, b.top_ranked, b.runs)


@pytest.fixture
def cli(run_cli):
    """``ifjudge`` in-process."""
    return run_cli


def expected_followir_bundle() -> Bundle:
    """The Bundle the FollowIR hub-v1 import gives for :data:`CONTENT`, built by hand."""
    b = Bundle(documents=[Document(i, text, title) for i, title, text in CONTENT["corpus"]])
    for qid, (text, og, changed) in CONTENT["queries"].items():
        b.queries.append(Query(qid, text))
        b.instances += [Instance(f"{qid}-og", qid, qid, og, "og"), Instance(f"{qid}-changed", qid, qid, changed, "changed")]
        b.narratives += [Narrative(qid, og, "og"), Narrative(qid, changed, "changed")]
    b.qrels = [Qrel(q, d, og, "original") for q, d, og, _ in CONTENT["qrels"]]
    b.qrels += [Qrel(q, d, ch, "changed") for q, d, _, ch in CONTENT["qrels"]]
    b.top_ranked = dict(CONTENT["top_ranked"])
    return b


def write_hub_v1(root: Path) -> None:
    """The same content as FollowIR hub v1 publishes it (corpus.jsonl, queries.jsonl, qrels_og/, qrels_changed/)."""
    root.mkdir(parents=True)
    with (root / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for i, title, text in CONTENT["corpus"]:
            f.write(json.dumps({"_id": i, "title": title, "text": text}) + "\n")
    with (root / "queries.jsonl").open("w", encoding="utf-8") as f:
        for qid, (text, og, changed) in CONTENT["queries"].items():
            f.write(json.dumps({"_id": qid, "text": text, "instruction_og": og, "instruction_changed": changed,
                                "keywords": "", "short_query": ""}) + "\n")
    for folder, col in (("qrels_og", 2), ("qrels_changed", 3)):
        (root / folder).mkdir()
        rows = "".join(f"{r[0]}\t{r[1]}\t{r[col]}\n" for r in CONTENT["qrels"])
        (root / folder / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows, encoding="utf-8")


def copy_of(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


def rewrite(path: Path, change) -> None:
    """Rewrite one parquet file: ``change`` gets and returns a dict of columns (python lists)."""
    table = pq.read_table(path)
    columns = change({name: table.column(name).to_pylist() for name in table.column_names})
    pq.write_table(pa.table(columns), path)


# --- import as published --------------------------------------------------------------------------

def test_followir_mteb_imports_with_exact_counts(cli, db_path):
    code, out, err = cli("import", "--db", db_path, "--project", "r04", "--format", "mteb",
                         "--json", FOLLOWIR_MTEB)
    assert code == 0, err
    assert json.loads(out) == {"documents": 6, "queries": 3, "instances": 6, "groups": 3, "narratives": 6,
                               "top_ranked": 3, "run_rows": 0, "qrels_changed": 7, "qrels_original": 7}


def test_followir_mteb_gives_the_bundle_of_the_hub_v1_import(tmp_path):
    got = mteb.parse([FOLLOWIR_MTEB])
    assert content(got) == content(expected_followir_bundle())
    assert got.notes == []
    write_hub_v1(tmp_path / "v1")
    v1 = readers.parse("followir", [tmp_path / "v1"])
    # hub v1 of this content without top_ranked.jsonl: everything else is the same Bundle
    assert (got.documents, got.queries, got.instances, got.qrels, got.narratives) == \
        (v1.documents, v1.queries, v1.instances, v1.qrels, v1.narratives)


def test_generic_mteb_with_subsets_and_id_columns(cli, db_path):
    code, out, err = cli("import", "--db", db_path, "--project", "g", "--format", "mteb", "--json", GENERIC)
    assert code == 0, err
    assert json.loads(out) == {"documents": 7, "queries": 5, "instances": 4, "groups": 4, "narratives": 0,
                               "top_ranked": 3, "run_rows": 0, "qrels_original": 8, "subsets": 2}
    b = mteb.parse([GENERIC])
    assert [(q.query_id, q.subset) for q in b.queries] == [
        ("q1", "fas"), ("q2", "fas"), ("q3", "fas"), ("rq1", "rus"), ("rq2", "rus")]
    # rus carries instructions as a column of its queries; rq2's is null: no instance
    assert [(i.instance_id, i.group_id, i.variant) for i in b.instances] == [
        ("q1", "q1", "og"), ("q2", "q2", "og"), ("q3", "q3", "og"), ("rq1", "rq1", "og")]
    assert b.top_ranked["q3"] == ["4", "d3", "d1"]
    assert {q.version for q in b.qrels} == {"original"} and Qrel("rq2", "r2", 2) in b.qrels


def test_detect_tells_mteb_folders_from_others(tmp_path):
    write_hub_v1(tmp_path / "v1")
    assert mteb.detect(FOLLOWIR_MTEB) and mteb.detect(GENERIC)
    assert not mteb.detect(tmp_path / "v1")
    assert not mteb.detect(FOLLOWIR_MTEB / "corpus" / "corpus-00000-of-00001.parquet")


def test_string_scores_are_cast_like_mteb_and_mfollowir_suffixes_are_subsets(tmp_path):
    root = copy_of(FOLLOWIR_MTEB, tmp_path)
    for folder in [p for p in root.iterdir() if p.is_dir()]:
        name = "default" if folder.name == "data" else folder.name
        folder.rename(root / f"{name}-fas")
    rewrite(next((root / "default-fas").glob("*.parquet")),
            lambda c: {**c, "score": [str(int(s)) if i % 2 else f"{s:.1f}" for i, s in enumerate(c["score"])]})
    b = mteb.parse([root])
    assert {q.subset for q in b.queries} == {"fas"}
    assert content(b)[2:] == content(expected_followir_bundle())[2:]


def test_the_mteb_repush_of_followir_gives_the_same_bundle(tmp_path):
    """``mteb/Core17InstructionRetrieval``: ``id`` columns, the instruction also as a column of the
    queries, qrels in config ``qrels`` with int64 scores, every config in split ``test``."""
    root = copy_of(FOLLOWIR_MTEB, tmp_path)
    instructions = pq.read_table(root / "instruction" / "instruction-00000-of-00001.parquet").column("instruction")
    for folder, new_name in (("corpus", "corpus"), ("queries", "queries"), ("instruction", "instruction"),
                             ("data", "qrels"), ("qrel_diff", "qrel_diff"), ("top_ranked", "top_ranked")):
        old = next((root / folder).glob("*.parquet"))
        table = pq.read_table(old)
        if "_id" in table.column_names:
            table = table.rename_columns(["id" if c == "_id" else c for c in table.column_names])
        if folder == "queries":
            table = table.append_column("instruction", instructions)
        if folder == "data":
            table = table.set_column(2, "score", table.column("score").cast(pa.int64()))
        shutil.rmtree(root / folder)
        split = "qrel_diff" if folder == "qrel_diff" else "test"
        (root / new_name).mkdir()
        pq.write_table(table, root / new_name / f"{split}-00000-of-00001.parquet")
    b = mteb.parse([root])
    assert content(b) == content(expected_followir_bundle()) and b.notes == []


def test_a_config_with_several_splits_reads_test_like_mteb(tmp_path):
    root = copy_of(GENERIC, tmp_path)
    qrels = root / "rus-qrels" / "test-00000-of-00001.parquet"
    train = root / "rus-qrels" / "train" / "0000.parquet"  # the hub's parquet-branch naming
    train.parent.mkdir()
    rewrite_to = pq.read_table(qrels).slice(0, 1)
    pq.write_table(rewrite_to, train)
    assert mteb.parse([root]).counts()["qrels_original"] == 8
    qrels.rename(root / "rus-qrels" / "dev-00000-of-00001.parquet")
    with pytest.raises(ImportFailure, match="holds the splits dev, train; expected one split or a 'test' split"):
        mteb.parse([root])


def test_top_ranked_lists_that_differ_keep_the_og_one_and_say_so(tmp_path):
    root = copy_of(FOLLOWIR_MTEB, tmp_path)
    rewrite(next((root / "top_ranked").glob("*.parquet")),
            lambda c: {**c, "corpus-ids": [ids if q != "305-changed" else ids[::-1]
                                           for q, ids in zip(c["query-id"], c["corpus-ids"])]})
    b = mteb.parse([root])
    assert b.top_ranked["305"] == CONTENT["top_ranked"]["305"]
    assert any("'305-og' and '305-changed' differ" in n for n in b.notes)


# --- refusals ----------------------------------------------------------------------------------------

def _drop(folder: str):
    def change(root: Path) -> None:
        shutil.rmtree(root / folder)
    return change


def _rewrite(folder: str, fn):
    def change(root: Path) -> None:
        rewrite(next((root / folder).glob("*.parquet")), fn)
    return change


def _set(column: str, row: int, value):
    def fn(c):
        c[column][row - 1] = value
        return c
    return fn


REFUSALS = [
    ("missing queries config", FOLLOWIR_MTEB, _drop("queries"),
     None, None, None, "no queries config (configs found: corpus, default, instruction, qrel_diff, top_ranked)"),
    ("missing qrels config", FOLLOWIR_MTEB, _drop("data"),
     None, None, None, "has no qrels config"),
    ("missing corpus column", FOLLOWIR_MTEB, _rewrite("corpus", lambda c: {"_id": c["_id"], "title": c["title"]}),
     "corpus/corpus-00000-of-00001.parquet", None, "text", "column missing (columns found: _id, title)"),
    ("missing id column", GENERIC, _rewrite("rus-queries", lambda c: {"qid": c["id"], "text": c["text"]}),
     "rus-queries/test-00000-of-00001.parquet", None, "_id", "expected '_id' or 'id'"),
    ("non-integral score", FOLLOWIR_MTEB, _rewrite("data", _set("score", 3, 1.5)),
     "data/default-00000-of-00001.parquet", 3, "score", "received float 1.5; expected an integral score"),
    ("unknown query id in qrels", FOLLOWIR_MTEB, _rewrite("data", _set("query-id", 2, "999-og")),
     "data/default-00000-of-00001.parquet", 2, "query-id", "unknown query id '999-og'"),
    ("unknown document in qrels", GENERIC, _rewrite("fas-qrels", _set("corpus-id", 4, "nope")),
     "fas-qrels/test-00000-of-00001.parquet", 4, "corpus-id", "unknown document id 'nope'"),
    ("missing instruction", FOLLOWIR_MTEB, _rewrite("instruction", lambda c: {k: v[:-1] for k, v in c.items()}),
     "instruction/instruction-00000-of-00001.parquet", None, "instruction", "query '321-changed' has no instruction"),
    ("duplicate query id", GENERIC, _rewrite("fas-queries", _set("id", 2, "q1")),
     "fas-queries/test-00000-of-00001.parquet", 2, "id", "duplicate query id 'q1'"),
    ("null top_ranked list", GENERIC, _rewrite("fas-top_ranked", _set("corpus-ids", 1, None)),
     "fas-top_ranked/test-00000-of-00001.parquet", 1, "corpus-ids", "received null"),
]


@pytest.mark.parametrize("case, source, change, file, line, column, message", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_defects_are_refused_with_file_row_and_column(cli, db_path, tmp_path, case, source, change, file, line,
                                                      column, message):
    root = copy_of(source, tmp_path)
    change(root)
    with pytest.raises(ImportFailure) as info:
        mteb.parse([root])
    e = info.value
    assert message in e.message
    if file is not None:
        assert (e.file, e.line, e.field) == (str(root / file), line, column)
    code, _, err = cli("import", "--db", db_path, "--project", "p", "--format", "mteb", root)
    assert code != 0 and message in err
    from storage.db import connect

    assert connect(db_path).execute("SELECT count(*) FROM projects").fetchone()[0] == 0  # all-or-nothing


def test_a_qrel_diff_that_disagrees_with_the_qrels_is_reported(tmp_path):
    root = copy_of(FOLLOWIR_MTEB, tmp_path)
    rewrite(next((root / "qrel_diff").glob("*.parquet")),
            lambda c: {**c, "corpus-ids": [[] for _ in c["corpus-ids"]]})
    b = mteb.parse([root])
    assert content(b) == content(expected_followir_bundle())
    assert any("qrel_diff disagrees" in n and "305, 310, 321" in n for n in b.notes)


# --- out and back -----------------------------------------------------------------------------------

@pytest.mark.parametrize("source", [FOLLOWIR_MTEB, GENERIC], ids=["followir", "generic"])
def test_export_reads_back_unchanged(tmp_path, source):
    original = mteb.parse([source])
    layouts.write_mteb(original, tmp_path / "out")
    again = mteb.parse([tmp_path / "out"])
    assert content(again) == content(original) and again.notes == []


def test_the_written_qrel_diff_is_the_published_one(tmp_path):
    layouts.write_mteb(mteb.parse([FOLLOWIR_MTEB]), tmp_path / "out")
    mine = pq.read_table(tmp_path / "out" / "qrel_diff" / "qrel_diff-00000-of-00001.parquet").to_pylist()
    published = pq.read_table(FOLLOWIR_MTEB / "qrel_diff" / "qrel_diff-00000-of-00001.parquet").to_pylist()
    assert mine == published == [{"query-id": "305", "corpus-ids": ["FBIS3-10082"]},
                                 {"query-id": "310", "corpus-ids": ["LA010189-0001"]},
                                 {"query-id": "321", "corpus-ids": ["LA051590-0079"]}]


@pytest.mark.parametrize("source", [FOLLOWIR_MTEB, GENERIC], ids=["followir", "generic"])
def test_cli_import_export_import_gives_the_same_project(cli, db_path, tmp_path, source):
    assert cli("import", "--db", db_path, "--project", "a", "--format", "mteb", source)[0] == 0
    code, _, err = cli("export", "--db", db_path, "--project", "a", "--format", "mteb", "--out", tmp_path / "x")
    assert code == 0, err
    assert content(mteb.parse([tmp_path / "x"])) == content(mteb.parse([source]))
    code, out, _ = cli("import", "--db", db_path, "--project", "b", "--format", "mteb", "--json", tmp_path / "x")
    assert code == 0 and json.loads(out) == mteb.parse([source]).counts()


def _load(root: Path, config: str, split: str, cache: Path):
    return datasets.load_dataset(str(root), config, split=split, cache_dir=str(cache))


def test_followir_export_loads_the_way_mteb_loads_it(tmp_path):
    """What MTEB's RetrievalDatasetLoader and its FollowIR tasks do: configs by name from README.md,
    ``_id`` cast to string, qrels cast to int32, top_ranked and instruction by query id, qrel_diff
    from its own split."""
    out = tmp_path / "out"
    layouts.write_mteb(mteb.parse([FOLLOWIR_MTEB]), out)
    cache = tmp_path / "hf"
    assert set(datasets.get_dataset_config_names(str(out))) == {
        "corpus", "queries", "instruction", "default", "qrel_diff", "top_ranked"}
    corpus = _load(out, "corpus", "corpus", cache)
    assert corpus.features == datasets.Features({"_id": datasets.Value("string"), "title": datasets.Value("string"),
                                                 "text": datasets.Value("string")})
    assert corpus.num_rows == 6
    queries = _load(out, "queries", "queries", cache)
    assert queries["_id"] == ["305-og", "305-changed", "310-og", "310-changed", "321-og", "321-changed"]
    qrels = _load(out, "default", "test", cache)
    assert qrels.features["score"] == datasets.Value("float64")
    qrels = qrels.cast(datasets.Features({"query-id": datasets.Value("string"), "corpus-id": datasets.Value("string"),
                                          "score": datasets.Value("int32")}))
    by_query: dict[str, dict[str, int]] = {}
    for row in qrels:
        by_query.setdefault(row["query-id"], {})[row["corpus-id"]] = row["score"]
    assert by_query["305-og"] == {"FBIS3-10082": 1, "FBIS3-10169": 2, "FT921-7107": 0}
    assert by_query["305-changed"] == {"FBIS3-10082": 0, "FBIS3-10169": 2, "FT921-7107": 0}
    instructions = {r["query-id"]: r["instruction"] for r in _load(out, "instruction", "instruction", cache)}
    assert all(instructions[q] for q in queries["_id"])  # MTEB looks each query up: none may be missing
    top = _load(out, "top_ranked", "top_ranked", cache)
    assert top.features["corpus-ids"] in (datasets.Sequence(datasets.Value("string")),
                                          datasets.List(datasets.Value("string")))
    assert {r["query-id"]: r["corpus-ids"] for r in top}["310-changed"] == CONTENT["top_ranked"]["310"]
    diff = {r["query-id"]: r["corpus-ids"] for r in _load(out, "qrel_diff", "qrel_diff", cache)}
    assert diff == {"305": ["FBIS3-10082"], "310": ["LA010189-0001"], "321": ["LA051590-0079"]}


def test_generic_export_loads_the_way_mteb_loads_it(tmp_path):
    out = tmp_path / "out"
    layouts.write_mteb(mteb.parse([GENERIC]), out)
    cache = tmp_path / "hf"
    assert set(datasets.get_dataset_config_names(str(out))) == {
        "fas-corpus", "fas-queries", "fas-qrels", "fas-instruction", "fas-top_ranked",
        "rus-corpus", "rus-queries", "rus-qrels", "rus-instruction"}
    corpus = _load(out, "fas-corpus", "test", cache)
    assert corpus.column_names == ["id", "title", "text"] and corpus["id"] == ["d1", "d2", "d3", "4"]
    assert _load(out, "rus-corpus", "test", cache)["id"] == ["r1", "r2", "r3"]
    qrels = _load(out, "fas-qrels", "test", cache)
    assert qrels.features["score"] == datasets.Value("int64") and qrels.num_rows == 5
    queries = _load(out, "rus-queries", "test", cache)
    # a query without instruction has "" (MTEB's collator stops on a null: "Found None in batch")
    assert queries["instruction"] == ["Only passages naming the city are relevant.", ""]
    for subset in ("fas", "rus"):  # MTEB looks every query up in the instruction config
        instructions = {r["query-id"]: r["instruction"] for r in _load(out, f"{subset}-instruction", "test", cache)}
        assert set(instructions) == set(_load(out, f"{subset}-queries", "test", cache)["id"])
        assert None not in instructions.values()


def test_a_subset_of_a_followir_bundle_becomes_an_mfollowir_suffix(tmp_path):
    b = mteb.parse([FOLLOWIR_MTEB])
    b.queries = [Query(q.query_id, q.text, "fas") for q in b.queries]
    layouts.write_mteb(b, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == [
        "corpus-fas", "default-fas", "instruction-fas", "qrel_diff-fas", "queries-fas", "top_ranked-fas"]
    diff = _load(tmp_path / "out", "qrel_diff-fas", "qrel_diff", tmp_path / "hf")
    assert diff.num_rows == 3
    assert content(mteb.parse([tmp_path / "out"])) == content(b)


def test_bundles_the_layout_cannot_express_are_refused_before_writing(tmp_path):
    b = mteb.parse([GENERIC])
    b.instances.append(Instance("q1_2", "q1", "q1", "another instruction", "og"))
    with pytest.raises(ValueError, match="'q1_2'.*cannot be written to the MTEB layout"):
        layouts.write_mteb(b, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    b = mteb.parse([FOLLOWIR_MTEB])
    b.qrels.append(Qrel("305", "not-in-corpus", 1, "original"))
    with pytest.raises(ValueError, match="'not-in-corpus', which the corpus lacks"):
        layouts.write_mteb(b, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_qrel_diff_follows_mteb(tmp_path):
    og = {"1": {"a": 2, "b": 0, "c": 1}, "2": {"d": 1}}
    changed = {"1": {"a": 0, "b": 0, "c": 1}}
    assert mteb.qrel_diff(og, changed) == {"1": ["a"], "2": ["d"]}  # unjudged in changed reads as 0


def test_an_instructir_project_exports_one_mteb_query_per_instance(cli, db_path, tmp_path):
    source = Path(__file__).parent / "fixtures" / "importers" / "instructir"
    assert cli("import", "--db", db_path, "--project", "i", "--format", "instructir", source)[0] == 0
    code, _, err = cli("export", "--db", db_path, "--project", "i", "--format", "mteb", "--out", tmp_path / "x")
    assert code == 0, err
    original = readers.parse("instructir", [source])
    back = mteb.parse([tmp_path / "x"])
    assert [(i.instance_id, i.instruction) for i in back.instances] == \
        [(i.instance_id, i.instruction) for i in original.instances]
    assert [(q.qid, q.doc_id, q.relevance) for q in back.qrels] == \
        [(q.qid, q.doc_id, q.relevance) for q in original.qrels]
