"""Browser uploads laid out for the importers: a .zip keeps the folders, loose files are placed."""
from __future__ import annotations

import io
import zipfile

import pytest

from storage.errors import ImportFailure
from formats.readers import parse
from formats.readers.upload import materialize
from tests.builders import IMPORTER_FIXTURES, zipped

FIX = IMPORTER_FIXTURES


@pytest.mark.parametrize("prefix", ["", "followir/"])
def test_a_zip_keeps_qrels_og_and_qrels_changed_apart(tmp_path, prefix):
    root = materialize([("followir.zip", zipped(FIX / "followir", prefix))], tmp_path)
    assert parse("followir", [root]).counts() == parse("followir", [FIX / "followir"]).counts()


def test_loose_beir_files_put_the_tsv_into_the_qrels_folder(tmp_path):
    files = [(p.name, p.read_bytes()) for p in sorted((FIX / "beir").rglob("*")) if p.is_file()]
    root = materialize(files, tmp_path, qrels_dir="qrels")
    assert parse("beir", [root]).counts() == parse("beir", [FIX / "beir"]).counts()


def test_two_loose_files_with_one_name_are_refused(tmp_path):
    with pytest.raises(ImportFailure, match="zip the benchmark folder"):
        materialize([("test.tsv", b"a"), ("test.tsv", b"b")], tmp_path)


@pytest.mark.parametrize("member", ["../evil.txt", "/etc/evil.txt", "a/../../evil.txt"])
def test_a_zip_member_outside_the_archive_is_refused_and_nothing_written(tmp_path, member):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("ok.txt", "fine")
        z.writestr(member, "evil")
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ImportFailure, match="outside the archive"):
        materialize([("x.zip", buf.getvalue())], dest)
    assert list(dest.iterdir()) == [] and not (tmp_path / "evil.txt").exists()


def test_a_broken_zip_is_refused(tmp_path):
    with pytest.raises(ImportFailure, match="not a readable .zip"):
        materialize([("x.zip", b"PK not really")], tmp_path)
