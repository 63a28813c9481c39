"""Each importer on its small hand-made fixture: what a user gets from valid files."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from formats.bundle import Document, Instance, Narrative, Qrel, Query, RunRow
from storage.errors import ImportFailure
from formats.readers import FORMATS, parse

FIX = Path(__file__).parent / "fixtures" / "importers"


def test_formats_lists_every_format():
    assert FORMATS == ("beir", "instructir", "followir", "infosearch", "ifir", "mteb", "trec")


def test_unknown_format_names_what_is_accepted():
    with pytest.raises(ImportFailure) as err:
        parse("msmarco", [FIX / "beir"])
    assert err.value.field == "format"
    assert "'msmarco'" in str(err.value) and "beir, instructir, followir, infosearch, ifir, mteb, trec" in str(err.value)


def test_missing_path_is_refused():
    with pytest.raises(ImportFailure) as err:
        parse("beir", [FIX / "nope"])
    assert "no such file" in str(err.value)


def test_beir_directory():
    b = parse("beir", [FIX / "beir"])
    assert b.counts() == {"documents": 4, "queries": 3, "instances": 1, "groups": 1, "narratives": 0,
                          "top_ranked": 0, "run_rows": 0, "qrels_original": 4}
    assert b.documents[1] == Document("d2", "Pakistan has a population of about 240 million people.", "")
    assert b.instances == [Instance("q2", "q2", "q2", "I am a student writing a report; I need a recent census figure.", "og")]
    # every qrels/*.tsv (dev and test splits) goes to version original
    assert Qrel("q3", "d4", 0, "original") in b.qrels and Qrel("q2", "d2", 2, "original") in b.qrels
    assert {Path(p).name for p, _ in b.source_files} == {"corpus.jsonl", "queries.jsonl", "dev.tsv", "test.tsv"}
    assert all(len(h) == 64 for _, h in b.source_files)


def test_beir_explicit_files_without_corpus_keep_unchecked_doc_ids():
    b = parse("beir", [FIX / "beir" / "queries.jsonl", FIX / "beir" / "qrels" / "test.tsv"])
    assert b.documents == [] and len(b.qrels) == 2


def test_instructir_directory_with_corpus():
    b = parse("instructir", [FIX / "instructir"])
    assert b.counts()["instances"] == 5 and b.counts()["groups"] == 2 and b.counts()["documents"] == 5
    assert b.queries == [Query("1078446", "wine cabinets definition"), Query("839488", "what is the plural of kohlrabies")]
    assert b.instances[2].instance_id == "839488_1"
    assert b.instances[2].query_id == b.instances[2].group_id == "839488"
    assert b.qrels[0] == Qrel("1078446_1", "7865137_1", 1, "original")
    # for_only_query_test.tsv lies in the directory but is not imported
    assert len(b.qrels) == 5
    assert not any("for_only_query" in p for p, _ in b.source_files)


def test_instructir_query_only_qrels_given_explicitly_is_refused_with_the_reason():
    with pytest.raises(ImportFailure) as err:
        parse("instructir", [FIX / "instructir" / "only_instruction_queries.jsonl",
                             FIX / "instructir" / "qrels" / "for_only_query_test.tsv"])
    assert "query-only baseline" in str(err.value)


def test_instructir_instruction_file_alone_takes_queries_from_origin_query():
    b = parse("instructir", [FIX / "instructir" / "only_instruction_queries.jsonl"])
    assert [q.text for q in b.queries] == ["wine cabinets definition", "what is the plural of kohlrabies"]
    assert b.qrels == []


def test_instructir_sep_form():
    b = parse("instructir", [FIX / "instructir_sep"])
    assert b.instances[0] == Instance(
        "1078446_2", "1078446", "1078446",
        "I am a homeowner with a small dining area looking for compact wine cabinets with temperature control.", "og")
    assert b.queries[1] == Query("839488", "what is the plural of kohlrabies")
    assert len(b.qrels) == 2


def test_followir_directory():
    b = parse("followir", [FIX / "followir"])
    assert b.counts() == {"documents": 4, "queries": 2, "instances": 4, "groups": 2, "narratives": 4,
                          "top_ranked": 2, "run_rows": 0, "qrels_changed": 4, "qrels_original": 4}
    og, changed = b.instances[0], b.instances[1]
    assert (og.instance_id, og.variant, og.group_id) == ("303-og", "og", "303")
    assert (changed.instance_id, changed.variant) == ("303-changed", "changed")
    assert changed.instruction.endswith("Documents about its cost or repairs are not relevant.")
    assert Narrative("303", og.instruction, "og") in b.narratives
    assert Narrative("303", changed.instruction, "changed") in b.narratives
    assert Qrel("303", "FT911-2", 0, "changed") in b.qrels and Qrel("303", "FT911-2", 1, "original") in b.qrels
    # both top_ranked shapes: {"qid", "doc_ids"} and MTEB's {"query-id", "corpus-ids"}
    assert b.top_ranked == {"303": ["FT911-2", "FT911-1", "FT911-4"], "404": ["FT911-3", "FT911-4", "FT911-1"]}


def test_followir_refuses_the_infosearch_layout():
    with pytest.raises(ImportFailure) as err:
        parse("followir", [FIX / "infosearch"])
    assert "infosearch" in str(err.value)


def test_followir_qrels_files_given_one_by_one(tmp_path):
    b = parse("followir", [FIX / "followir" / "queries.jsonl", FIX / "followir" / "qrels_changed" / "test.tsv"])
    assert {q.version for q in b.qrels} == {"changed"}
    shutil.copy(FIX / "followir" / "qrels_og" / "test.tsv", tmp_path / "test.tsv")
    with pytest.raises(ImportFailure) as err:
        parse("followir", [FIX / "followir" / "queries.jsonl", tmp_path / "test.tsv"])
    assert "which qrels version" in str(err.value)


def test_infosearch_directory():
    b = parse("infosearch", [FIX / "infosearch"])
    assert b.counts()["instances"] == 6
    assert {i.variant for i in b.instances} == {"og", "changed", "reversed"}
    assert b.counts()["qrels_original"] == 6 and b.counts()["qrels_changed"] == 4 and b.counts()["qrels_reversed"] == 4
    og = next(i for i in b.instances if i.instance_id == "lang-1-og")
    assert og.instruction == ""  # the original mode is the query alone
    assert Narrative("lang-1", "Please do not answer in Chinese.", "reversed") in b.narratives
    assert not any(n.variant == "og" for n in b.narratives)


def test_ifir_subset_folder():
    b = parse("ifir", [FIX / "ifir"])
    assert b.queries == [Query("3", "melanoma BRAF V600E", "pm")]
    assert [(i.instance_id, i.variant) for i in b.instances] == [("3_0", "bare"), ("3_1", "level1"), ("3_2", "level2")]
    assert b.instances[0].instruction == "" and {i.group_id for i in b.instances} == {"3"}
    assert [q.doc_id for q in b.qrels if q.qid == "3_2"] == ["NCT001"]
    assert [q.doc_id for q in b.qrels if q.qid == "3_0"] == ["NCT001", "NCT002"]
    assert all(q.relevance == 1 and q.version == "original" for q in b.qrels)
    assert b.notes == ["pm-corpus.jsonl: 1 document with empty text skipped"]


def test_trec_directory_tells_files_apart_by_content():
    b = parse("trec", [FIX / "trec"])
    assert b.queries == [Query("301", "International Organized Crime"), Query("303", "Hubble Telescope Achievements")]
    narr = ("A relevant document must as a minimum identify the organization and the type of illegal\n"
            "activity (e.g., Columbian cartel exporting cocaine).")
    assert b.instances[0] == Instance("301", "301", "301", narr, "og")
    assert b.narratives[1] == Narrative("303", "Documents about its cost or repairs are not relevant.", "og")
    assert b.qrels == [Qrel("301", "FBIS3-10082", 1), Qrel("301", "FBIS3-10169", 0), Qrel("303", "FT911-1", 2)]
    assert b.runs == {"bm25": [RunRow("301", "FBIS3-10082", 1, 12.5), RunRow("301", "FBIS3-10169", 2, 11.25),
                               RunRow("303", "FT911-1", 1, 9.0)]}


def test_trec_run_without_tag_is_named_by_file_stem(tmp_path):
    (tmp_path / "my_run.txt").write_text("301 Q0 D1 1 3.5\n", encoding="utf-8")
    b = parse("trec", [tmp_path / "my_run.txt"])
    assert b.runs == {"my_run": [RunRow("301", "D1", 1, 3.5)]}


def test_trec_qrels_without_topics_is_refused():
    with pytest.raises(ImportFailure) as err:
        parse("trec", [FIX / "trec" / "qrels.txt"])
    assert "without topics" in str(err.value)


@pytest.mark.parametrize("fmt, fixture, name", [
    ("beir", "beir", "queries.jsonl"),
    ("instructir", "instructir", "only_instruction_queries.jsonl"),
    ("followir", "followir", "queries.jsonl"),
    ("ifir", "ifir", "pm-query.jsonl"),
    ("trec", "trec", "topics.txt"),
])
def test_bom_crlf_and_trailing_blank_lines_are_accepted(tmp_path, fmt, fixture, name):
    shutil.copytree(FIX / fixture, tmp_path / fixture)
    target = tmp_path / fixture / name
    text = target.read_text(encoding="utf-8")
    target.write_bytes(("\ufeff" + text.replace("\n", "\r\n") + "\r\n\r\n").encode("utf-8"))
    assert parse(fmt, [tmp_path / fixture]).counts() == parse(fmt, [FIX / fixture]).counts()
    strip = lambda b: (b.documents, b.queries, b.instances, b.qrels, b.narratives, b.top_ranked, b.runs)  # noqa: E731
    assert strip(parse(fmt, [tmp_path / fixture])) == strip(parse(fmt, [FIX / fixture]))
