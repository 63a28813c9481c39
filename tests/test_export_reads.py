"""What an export reads: a layout that cannot hold the project refuses before any build (with
the writer's own words), and formats without document text never read the corpus."""
from __future__ import annotations

import pytest

from exports.validated import export_project
from storage import projects
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
        export_project(db, "demo", fmt, out, study_ids=[r["study_id"]])
    assert not out.exists()  # nothing written


@pytest.mark.parametrize("fmt", ["trec", "report"])
def test_trec_qrels_and_the_report_never_read_the_corpus(labelled, tmp_path, monkeypatch, fmt):
    db, sid, _ = labelled

    def no_text(*_a, **_k):
        raise AssertionError("the corpus was read")

    monkeypatch.setattr(projects, "bundle_documents", no_text)
    monkeypatch.setattr(projects, "documents", no_text)
    monkeypatch.setattr(projects, "document_chunks", no_text)  # what a layout with text reads, in chunks
    manifest = export_project(db, "demo", fmt, tmp_path, study_ids=[sid])
    assert manifest["files"]
    if fmt == "trec":  # one file per version, every stored judgment of it
        pid = projects.get_project(db, "demo")["id"]
        lines = (tmp_path / "qrels.original.txt").read_text().splitlines()
        assert len(lines) == sum(len(d) for d in projects.qrels(db, pid, "original").values())
    with pytest.raises(AssertionError, match="the corpus was read"):  # a layout with documents reads them
        export_project(db, "demo", "beir", tmp_path / "beir", study_ids=[sid])


def test_existing_doc_ids_answers_which_ids_are_documents(demo):
    db, _ = demo
    pid = projects.get_project(db, "demo")["id"]
    assert projects.existing_doc_ids(db, pid, ["f-doc-1", "no-such-doc", "f-doc-1", "f-doc-6"]) == {"f-doc-1", "f-doc-6"}
    assert projects.existing_doc_ids(db, pid, []) == set()
    assert projects.document_titles(db, pid, ["f-doc-1", "no-such-doc"]).keys() == {"f-doc-1"}
