"""Writers and importers agree: a written layout parses back into an equal Bundle."""
from __future__ import annotations

from pathlib import Path

import pytest

from formats import writers as layouts
from formats.bundle import Bundle, Instance, Qrel, RunRow
from formats.readers import parse

FIX = Path(__file__).parent / "fixtures" / "importers"
EXCERPT = Path(__file__).parent / "fixtures" / "instructir_excerpt"


def content(b: Bundle) -> tuple:
    """Everything but ``source_files`` (paths and hashes of the files read differ by design)."""
    return (b.documents, b.queries, b.instances, b.qrels, b.narratives, b.top_ranked, b.runs)


@pytest.mark.parametrize("fmt, source, write", [
    ("beir", FIX / "beir", lambda b, d: layouts.write_beir(b, d)),
    ("instructir", FIX / "instructir", lambda b, d: layouts.write_instructir(b, d)),
    ("instructir", EXCERPT, lambda b, d: layouts.write_instructir(b, d)),
    ("followir", FIX / "followir", lambda b, d: layouts.write_followir(b, d)),
    ("infosearch", FIX / "infosearch", lambda b, d: layouts.write_infosearch(b, d)),
    ("ifir", FIX / "ifir", lambda b, d: layouts.write_ifir(b, d)),
])
def test_directory_layout_round_trip(tmp_path, fmt, source, write):
    original = parse(fmt, [source])
    write(original, tmp_path / "out")
    again = parse(fmt, [tmp_path / "out"])
    assert content(again) == content(original)


def test_trec_topics_qrels_and_run_round_trip(tmp_path):
    original = parse("trec", [FIX / "trec"])
    layouts.write_trec_topics(original, tmp_path / "topics.txt")
    layouts.write_trec_qrels(original, tmp_path / "qrels.txt")
    layouts.write_trec_run(original.runs["bm25"], tmp_path / "run.txt", tag="bm25")
    again = parse("trec", [tmp_path])
    assert content(again) == content(original)


def test_followir_changed_narratives_as_trec_topics(tmp_path):
    b = parse("followir", [FIX / "followir"])
    layouts.write_trec_topics(b, tmp_path / "topics.txt", variant="changed")
    layouts.write_trec_qrels(b, tmp_path / "qrels.txt", version="changed")
    t = parse("trec", [tmp_path])
    assert [i.instruction for i in t.instances] == [i.instruction for i in b.instances if i.variant == "changed"]
    assert t.qrels == [Qrel(q.qid, q.doc_id, q.relevance, "original") for q in b.qrels if q.version == "changed"]


def test_followir_writes_a_chosen_version_as_qrels_changed(tmp_path):
    b = parse("followir", [FIX / "followir"])
    b.qrels.append(Qrel("303", "FT911-1", 1, "validated"))
    layouts.write_followir(b, tmp_path, changed_version="validated")
    text = (tmp_path / "qrels_changed" / "test.tsv").read_text(encoding="utf-8")
    assert text == "query-id\tcorpus-id\tscore\n303\tFT911-1\t1\n"
    # the hub layout: one {"qid", "pid"} row per candidate pair
    assert (tmp_path / "top_ranked.jsonl").read_text(encoding="utf-8").splitlines()[:3] == [
        '{"qid": "303", "pid": "FT911-2"}', '{"qid": "303", "pid": "FT911-1"}', '{"qid": "303", "pid": "FT911-4"}']


def test_unicode_text_round_trips_unescaped(tmp_path):
    b = parse("infosearch", [FIX / "infosearch"])
    layouts.write_infosearch(b, tmp_path)
    assert "太阳能电池板" in (tmp_path / "corpus.jsonl").read_text(encoding="utf-8")


def test_beir_refuses_instances_it_cannot_express(tmp_path):
    b = parse("instructir", [FIX / "instructir"])
    with pytest.raises(ValueError, match="write_instructir"):
        layouts.write_beir(b, tmp_path)


def test_trec_writers_refuse_ids_with_whitespace(tmp_path):
    b = Bundle(qrels=[Qrel("q 1", "d1", 1)])
    with pytest.raises(ValueError, match="whitespace"):
        layouts.write_trec_qrels(b, tmp_path / "q.txt")
    with pytest.raises(ValueError, match="whitespace"):
        layouts.write_trec_run([RunRow("q1", "d 1", 1, 1.0)], tmp_path / "r.txt", tag="x")


def test_followir_writer_needs_both_instructions(tmp_path):
    b = parse("followir", [FIX / "followir"])
    b.instances = [i for i in b.instances if i.instance_id != "404-changed"]
    with pytest.raises(ValueError, match="no 'changed' instance"):
        layouts.write_followir(b, tmp_path)


def test_instructir_writer_refuses_foreign_instance_ids(tmp_path):
    b = parse("instructir", [FIX / "instructir"])
    b.instances.append(Instance("x-og", "1078446", "1078446", "i"))
    with pytest.raises(ValueError, match="<qid>_<j>"):
        layouts.write_instructir(b, tmp_path)


def _without_bare_queries(b: Bundle) -> Bundle:
    bare = {i.instance_id for i in b.instances if i.instance_id == f"{i.query_id}_0"}
    return Bundle(documents=b.documents, queries=b.queries, instances=[i for i in b.instances if i.instance_id not in bare],
                  qrels=[q for q in b.qrels if q.qid not in bare])


@pytest.mark.parametrize("domain", ["fiqa", "nfcorpus"])
def test_an_ifir_domain_round_trips_through_the_mteb_layout(tmp_path, domain):
    """One IFIR domain in MTEB's layout: unprefixed configs (MTEB's IFIR tasks load those), query ids
    ``<q>_v<k>`` (``<q>_v0`` for a level-0 instruction), the domain in the card; read back as IFIR."""
    original = _without_bare_queries(parse("ifir", [Path(__file__).parent / "fixtures" / "published" / "ifir" / domain]))
    layouts.write_mteb(original, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == ["corpus", "instruction", "qrels", "queries"]
    again = parse("mteb", [tmp_path / "out"])
    assert content(again) == content(original)
    assert {q.subset for q in again.queries} == {domain}


def test_the_mteb_writer_refuses_an_ifir_bare_query(tmp_path):
    b = parse("ifir", [Path(__file__).parent / "fixtures" / "published" / "ifir" / "fiqa"])
    with pytest.raises(ValueError, match="'12_0' is the bare query of '12'; MTEB's IFIR tasks hold the instructed"):
        layouts.write_mteb(b, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_several_ifir_domains_in_the_mteb_layout_are_one_folder_each(tmp_path):
    """Several IFIR domains: one MTEB dataset folder per domain (MTEB's IFIR task of a domain loads
    its folder), each holding only its own corpus; each folder reads back as that domain."""
    original = _without_bare_queries(parse("ifir", [Path(__file__).parent / "fixtures" / "published" / "ifir"]))
    layouts.write_mteb(original, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == ["fiqa", "nfcorpus"]
    for domain in ("fiqa", "nfcorpus"):
        assert sorted(p.name for p in (tmp_path / "out" / domain).iterdir() if p.is_dir()) == \
            ["corpus", "instruction", "qrels", "queries"]
        again = parse("mteb", [tmp_path / "out" / domain])
        assert again.documents == [d for d in original.documents if d.doc_id.startswith(domain + "/")]
        assert again.queries == [q for q in original.queries if q.subset == domain]
        ids = {q.query_id for q in again.queries}
        assert again.instances == [i for i in original.instances if i.query_id in ids]
        assert again.qrels == [q for q in original.qrels if q.qid in {i.instance_id for i in again.instances}]
