"""``--format auto``: a folder is recognised by its published layout, the user is told which and
why, and a folder holding nothing recognisable is refused with its path."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from formats.errors import ImportFailure
from formats.readers import parse, resolve_format
from formats.readers.auto import detect

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures" / "importers"
RELEASE = ROOT / "datasets" / "instructir"


@pytest.mark.parametrize("folder, fmt", [
    ("beir", "beir"),
    ("followir", "followir"),
    ("infosearch", "infosearch"),
    ("instructir", "instructir"),
    ("instructir_sep", "instructir"),
    ("trec", "trec"),
    ("ifir", "ifir"),
    ("../published/ifir", "ifir"),
    ("../published/ifir/fiqa", "ifir"),
    ("../published/followir_hub", "followir"),
    ("../published/infosearch", "infosearch"),
    ("../published/infosearch/Language-v1", "infosearch"),
    ("../published/followir_mteb", "mteb"),
    ("../published/mteb_generic", "mteb"),
])
def test_each_fixture_folder_is_recognised(folder, fmt):
    found, why = detect([FIX / folder])
    assert found == fmt
    assert why  # the reason names what was seen


def test_auto_parse_equals_the_named_format():
    assert parse("auto", [FIX / "followir"]) == parse("followir", [FIX / "followir"])


def test_files_given_one_by_one_are_recognised_by_name_and_first_record():
    assert detect([FIX / "trec" / "topics.txt", FIX / "trec" / "qrels.txt"])[0] == "trec"
    assert detect([FIX / "infosearch" / "queries.jsonl"])[0] == "infosearch"
    assert detect([FIX / "beir" / "queries.jsonl", FIX / "beir" / "corpus.jsonl"])[0] == "beir"


def test_the_shipped_instructir_release_is_recognised_and_imports(run_cli, db_path):
    code, out, err = run_cli("import", "--db", db_path, "--project", "ir", RELEASE, "--json")
    assert code == 0, err
    assert "detected format: instructir" in err
    counts = json.loads(out)
    assert (counts["instances"], counts["groups"], counts["qrels_original"]) == (9906, 1267, 9906)
    # the release has no passage corpus: said out loud, not hidden behind a success
    assert "no corpus: these files hold no passages" in err and "INSTRUCTIR/corpus.jsonl" in err


def test_a_folder_with_nothing_recognisable_is_refused_with_its_path(tmp_path, run_cli, db_path):
    (tmp_path / "notes.txt").write_text("hello\n", encoding="utf-8")
    (tmp_path / "data.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(ImportFailure) as exc:
        resolve_format("auto", [tmp_path])
    assert str(tmp_path) in str(exc.value) and "--format" in str(exc.value)
    code, _, err = run_cli("import", "--db", db_path, "--project", "x", tmp_path)
    assert code == 2 and str(tmp_path) in err and len(err.strip().splitlines()) == 1


def test_a_missing_path_is_refused(tmp_path):
    with pytest.raises(ImportFailure, match="no such file or directory"):
        detect([tmp_path / "nope"])


def test_followir_recognised_from_qrels_folder_even_with_plain_queries(tmp_path):
    shutil.copytree(FIX / "beir", tmp_path / "b")
    (tmp_path / "b" / "qrels").rename(tmp_path / "b" / "qrels_og")
    assert detect([tmp_path / "b"]) == ("followir", "qrels_og/ or qrels_changed/")


def test_a_named_format_is_taken_as_given():
    assert resolve_format("beir", [FIX / "followir"]) == ("beir", None)


def test_an_mteb_followir_release_becomes_a_followir_project(run_cli, db_path):
    from storage import projects
    from storage.db import connect

    code, _, err = run_cli("import", "--db", db_path, "--project", "r", FIX.parent / "published" / "followir_mteb")
    assert code == 0, err
    assert "detected format: mteb" in err
    assert projects.get_project(connect(db_path), "r")["kind"] == "followir"
    code, _, err = run_cli("import", "--db", db_path, "--project", "g", FIX.parent / "published" / "mteb_generic")
    assert code == 0, err
    assert projects.get_project(connect(db_path), "g")["kind"] == "generic"
