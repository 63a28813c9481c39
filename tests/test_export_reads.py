"""What an export reads: a layout that cannot hold the project refuses before any build (with
the writer's own words), formats without document text never read the corpus, and a validated
export reads the project, its studies and its qrels once."""
from __future__ import annotations

import re
from collections import Counter

import pytest

from annotation.outcomes.qrels_builds import store_versions
from exports.validated import export_project
from storage import projects, studies
from storage.errors import IFJudgeError

pytestmark = pytest.mark.both_engines


@pytest.mark.parametrize("fmt, words", [
    ("infosearch", "cannot export 'demo' as infosearch: instance 'q-endo_1' cannot be written to the InfoSearch layout"),
    ("ifir", "cannot export 'demo' as ifir: query 'q-endo' has no domain (subset)"),
])
def test_a_layout_that_cannot_hold_the_project_refuses_before_the_builds(demo, tmp_path, fmt, words):
    db, r = demo  # the demo study is unlabelled: a build would refuse it as incomplete first
    out = tmp_path / "out"
    with pytest.raises(IFJudgeError, match="^" + words.replace("(", r"\(").replace(")", r"\)")):
        export_project(db, projects.get_project(db, "demo"), fmt, out, study_ids=[r["study_id"]])
    assert not out.exists()  # nothing written


@pytest.mark.parametrize("fmt", ["trec", "report"])
def test_trec_qrels_and_the_report_never_read_the_corpus(labelled, tmp_path, monkeypatch, fmt):
    db, sid, _ = labelled

    def no_text(*_a, **_k):
        raise AssertionError("the corpus was read")

    monkeypatch.setattr(projects, "bundle_documents", no_text)
    monkeypatch.setattr(projects, "documents", no_text)
    monkeypatch.setattr(projects, "document_chunks", no_text)  # what a layout with text reads, in chunks
    manifest = export_project(db, projects.get_project(db, "demo"), fmt, tmp_path, study_ids=[sid])
    assert manifest["files"]
    if fmt == "trec":  # one file per version, every stored judgment of it
        pid = projects.get_project(db, "demo")["id"]
        lines = (tmp_path / "qrels.original.txt").read_text().splitlines()
        assert len(lines) == sum(len(d) for d in projects.qrels(db, pid, "original").values())
    with pytest.raises(AssertionError, match="the corpus was read"):  # a layout with documents reads them
        export_project(db, projects.get_project(db, "demo"), "beir", tmp_path / "beir", study_ids=[sid])


def test_existing_doc_ids_answers_which_ids_are_documents(demo):
    db, _ = demo
    pid = projects.get_project(db, "demo")["id"]
    assert projects.existing_doc_ids(db, pid, ["f-doc-1", "no-such-doc", "f-doc-1", "f-doc-6"]) == {"f-doc-1", "f-doc-6"}
    assert projects.existing_doc_ids(db, pid, []) == set()
    assert projects.document_titles(db, pid, ["f-doc-1", "no-such-doc"]).keys() == {"f-doc-1"}


def _counting_reads(db, monkeypatch) -> Counter:
    """Count the statements that read the projects, studies and qrels tables through ``db``."""
    seen: Counter = Counter()
    execute = db.execute

    def counted(sql, *args, **kw):
        for table in ("projects", "studies", "qrels"):
            if re.search(rf"\bFROM\s+{table}\b", sql, re.I):
                seen[table] += 1
        return execute(sql, *args, **kw)

    monkeypatch.setattr(db, "execute", counted, raising=False)
    return seen


@pytest.mark.parametrize("fmt", ["jsonl", "report", "followir"])
def test_a_validated_export_reads_the_project_its_studies_and_its_qrels_once(labelled, tmp_path, monkeypatch, fmt):
    db, sid, _ = labelled
    for _ in range(3):  # several stored builds of the validated version beside the published ones
        store_versions(db, projects.get_project(db, "demo"), [sid], unresolved="keep-published")
    pid = projects.get_project(db, "demo")["id"]
    assert {"original", "changed", "validated"} <= set(projects.qrels_versions(db, pid))
    reads = _counting_reads(db, monkeypatch)
    project = projects.get_project(db, "demo")  # the name, resolved once at the edge (the CLI, a page)
    manifest = export_project(db, project, fmt, tmp_path / fmt, study_ids=[sid], unresolved="keep-published")
    assert manifest["qrels_versions"]["validated"]["built_from"] == [sid]
    assert reads == Counter({"projects": 1, "studies": 1, "qrels": 1})


def test_reads_shared_within_an_export_are_the_stored_ones(labelled):
    # what the qrels reads answer from the bundle's rows equals what they read from the table
    db, sid, _ = labelled
    store_versions(db, projects.get_project(db, "demo"), [sid], unresolved="keep-published")
    pid = projects.get_project(db, "demo")["id"]
    plain = {v: projects.qrels(db, pid, v) for v in projects.qrels_versions(db, pid)}
    counts = projects.project_counts(db, pid)
    with studies.shared_reads(db):
        projects.project_bundle(db, pid, documents=False)
        assert projects.qrels_versions(db, pid) == list(plain)
        for v, q in plain.items():
            got = projects.qrels(db, pid, v)
            assert got == q and [list(d) for d in got.values()] == [list(d) for d in q.values()]  # same order too
        assert projects.qrels(db, pid, "reversed") == {}
        assert projects.project_counts(db, pid) == counts
        row = projects.get_project(db, "demo")
        row["name"] = "changed by a caller"
        assert projects.get_project_by_id(db, pid)["name"] == "demo"  # each call gets its own copy
