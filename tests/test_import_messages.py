"""Importing from the browser: the upload is named by its own name (never the server's temporary
folder) in notes, errors and the stored manifest inputs; a re-import under an existing name says
the project exists and what to do, and changes nothing."""
import io
import shutil
import zipfile
from pathlib import Path

import pytest

from annotation.imports import Upload, import_files
from formats.readers.upload import materialize
from storage import projects
from storage.db import connect
from storage.errors import IFJudgeError

HUB = Path(__file__).resolve().parent / "fixtures" / "published" / "followir_hub"


def _zip(folder: Path) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in sorted(folder.rglob("*")):
            if p.is_file() and p.suffix != ".md":
                z.write(p, f"hub/{p.relative_to(folder)}")
    return buf.getvalue()


def test_an_upload_is_named_by_its_own_name_and_a_reimport_says_what_to_do(db_path, tmp_path):
    db = connect(db_path)
    tmp = tmp_path / "server-tmp-abc123"
    tmp.mkdir()
    upload = Upload(tmp, "hub.zip")
    root = materialize([("hub.zip", _zip(HUB))], tmp)
    result = import_files(db, "fir", [root], upload=upload)
    stored = projects.project_bundle(db, projects.get_project(db, "fir")["id"]).source_files
    assert stored and all(p.startswith("hub.zip/hub/") for p, _ in stored)
    assert "queries.jsonl" in {Path(p).name for p, _ in stored}
    said = " ".join([result.detected or "", *result.notes])
    assert str(tmp_path) not in said and "server-tmp" not in said
    before = projects.project_counts(db, projects.get_project(db, "fir")["id"])
    with pytest.raises(projects.ProjectExists) as err:
        import_files(db, "fir", [root], upload=upload)
    msg = str(err.value)
    assert msg.startswith("A project named “fir” already exists (followir; ") and "nothing was imported" in msg
    assert "Import under a new project name (e.g. “fir-2”)" in msg and "UNIQUE" not in msg
    assert projects.project_counts(db, projects.get_project(db, "fir")["id"]) == before


def test_an_import_error_names_the_uploaded_file_not_the_temporary_path(db_path, tmp_path):
    db = connect(db_path)
    tmp = tmp_path / "server-tmp-xyz"
    tmp.mkdir()
    shutil.copytree(HUB, tmp / "hub")
    (tmp / "hub" / "queries.jsonl").write_text('{"_id": "q1", "text": \n', encoding="utf-8")  # broken line 1
    with pytest.raises(IFJudgeError) as err:
        import_files(db, "broken", [tmp / "hub"], upload=Upload(tmp, "hub.zip"))
    assert "hub.zip/hub/queries.jsonl" in str(err.value) and "server-tmp" not in str(err.value)
    assert not [p for p in projects.list_projects(db) if p["name"] == "broken"]
