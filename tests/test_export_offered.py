"""The Export page offers only the formats a project can be written in (exports/offered.py): on a
project of each kind (generic, FollowIR hub and MTEB, IFIR, InfoSearch, InstructIR, MTEB generic)
every offered format exports, with a labelled study too; what is not offered is said in page words."""
from __future__ import annotations

from pathlib import Path

import pytest

from annotation.glossary import page_message
from annotation.imports import import_files
from exports.offered import export_formats
from exports.validated import FORMATS, export_project
from storage import projects
from storage.projects import get_project

ROOT = Path(__file__).resolve().parents[1]
KINDS = {"followir_hub": ("tests/fixtures/published/followir_hub", "followir"),
         "followir_mteb": ("tests/fixtures/published/followir_mteb", "followir"),
         "ifir": ("tests/fixtures/published/ifir", "ifir"),
         "infosearch": ("tests/fixtures/published/infosearch", "infosearch"),
         "instructir": ("tests/fixtures/instructir_excerpt", "instructir"),
         "mteb_generic": ("tests/fixtures/published/mteb_generic", "generic")}


def test_every_offered_format_exports_on_every_project_kind(demo, tmp_path):
    db, _ = demo
    for name, (path, kind) in KINDS.items():
        import_files(db, name, [ROOT / path])
        assert projects.get_project(db, name)["kind"] == kind
    seen = set()
    for p in projects.list_projects(db):
        formats = export_formats(db, projects.get_project(db, p["name"]))
        assert [f["format"] for f in formats] == list(FORMATS)
        for f in formats:
            if not f["offered"]:
                assert f["why"] and "--" not in page_message(f["why"]), (p["name"], f)
                continue
            seen.add(f["format"])
            if f["format"] == "report":
                continue  # a study's: below
            export_project(db, projects.get_project(db, p["name"]), f["format"], tmp_path / f"{p['name']}-{f['format']}")  # no error
    assert seen == set(FORMATS)  # each format is offered somewhere
    offered = {p["name"]: {f["format"] for f in export_formats(db, projects.get_project(db, p["name"])) if f["offered"]}
               for p in projects.list_projects(db)}
    assert offered["instructir"] == {"trec", "beir", "instructir", "jsonl"}  # no corpus in the excerpt: no MTEB
    assert "followir" not in offered["instructir"] and "ifir" not in offered["followir_hub"]


def test_every_offered_format_exports_with_a_labelled_study(labelled, tmp_path):
    db, sid, order = labelled
    for f in export_formats(db, projects.get_project(db, "demo")):
        if f["offered"]:
            manifest = export_project(db, projects.get_project(db, "demo"), f["format"], tmp_path / f["format"], study_ids=[sid])
            assert manifest["counts"]["instances_dropped"] == 1, f["format"]


def test_the_instructir_layout_holds_the_kept_instances(labelled, tmp_path):
    db, sid, order = labelled
    from formats.readers import parse
    from storage import studies

    projects.import_bundle(db, "ir", parse("instructir", [ROOT / "tests/fixtures/instructir_excerpt"]), fmt="instructir")
    export_project(db, projects.get_project(db, "ir"), "instructir", tmp_path / "ir")
    back = parse("instructir", [tmp_path / "ir"])
    assert len(back.instances) == len(projects.instances(db, projects.get_project(db, "ir")["id"]))
    assert studies.get_study(db, sid)  # the demo study stays; its project is not InstructIR-shaped
    with pytest.raises(Exception, match="cannot export 'demo' as instructir"):
        export_project(db, projects.get_project(db, "demo"), "instructir", tmp_path / "demo")


def test_every_offered_format_exports_with_an_infosearch_and_an_ifir_study(demo, tmp_path):
    from dataclasses import replace as changed

    from annotation.studies import StudySettings, create_study
    from formats.readers import parse
    from tests.builders import DIMENSIONS, INFOSEARCH_FIXTURE, answer_all, labelled_ifir_study

    db, _ = demo
    b = parse("infosearch", [INFOSEARCH_FIXTURE])
    projects.import_bundle(db, "is", changed(b, queries=[changed(q, subset=DIMENSIONS[q.query_id]) for q in b.queries]),
                           fmt="infosearch")
    is_study = create_study(db, project=get_project(db, "is"), questions=["condition"], annotators=["ann1", "ann2", "ann3"],
                            settings=StudySettings(group_fraction=1.0))["study_id"]
    answer_all(db, is_study, ["ann1", "ann2", "ann3"])
    ifir_study = labelled_ifir_study(db)
    for project, sid in (("is", is_study), ("ifir", ifir_study)):
        offered = [f["format"] for f in export_formats(db, projects.get_project(db, project)) if f["offered"]]
        assert "report" in offered and len(offered) >= 5, offered
        for fmt in offered:
            export_project(db, projects.get_project(db, project), fmt, tmp_path / f"{project}-{fmt}", study_ids=[sid], unresolved="keep-published")
