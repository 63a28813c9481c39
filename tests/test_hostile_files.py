"""Files as hostile (issue 31): a form's folder name stays inside the import's folder, a zip bomb
and a parquet bomb are refused quickly and small, deep JSON gets the import message and exit 2."""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest

from formats.errors import ImportFailure
from formats.readers.upload import materialize

ROOT = Path(__file__).resolve().parents[1]
FOLLOWIR_MTEB = ROOT / "tests" / "fixtures" / "published" / "followir_mteb"
# the process's own peak (VmHWM of its memory map: ru_maxrss would carry the forking test runner's)
PEAK = 'int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) // 1024'
MEASURE = ("import sys, time; from cli.main import main; t = time.perf_counter(); "
           "code = main(sys.argv[1:]); print(f'{time.perf_counter() - t:.2f} {" + PEAK + "}', file=sys.stderr); "
           "sys.exit(code)")


def zip_bomb(unpacked_mb: int) -> bytes:
    """One member of ``unpacked_mb`` MB of zeros, deflated (about 1 KB per MB)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z, z.open("bench/corpus.jsonl", "w", force_zip64=True) as f:
        block = b"\0" * (1 << 20)
        for _ in range(unpacked_mb):
            f.write(block)
    return buf.getvalue()


@pytest.fixture(scope="module")
def bomb_2gb() -> bytes:
    """2 GB of zeros in about 2 MB (made once: it takes a few seconds)."""
    return zip_bomb(2048)


def measured_import(*argv) -> tuple[int, str, float, int]:
    """``ifjudge import`` in its own process: exit status, stderr, seconds and peak memory (MB)."""
    run = subprocess.run([sys.executable, "-c", MEASURE, "import", *map(str, argv)], cwd=ROOT, capture_output=True,
                         text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    seconds, peak = run.stderr.strip().splitlines()[-1].split()
    return run.returncode, run.stderr, float(seconds), int(peak)


@pytest.mark.parametrize("folder", ["/tmp/elsewhere", "../../outside", "..", "a/b", "..\\x"])
def test_the_qrels_folder_of_a_form_is_a_plain_name_inside_the_import(tmp_path, folder):
    dest = tmp_path / "upload"
    dest.mkdir()
    with pytest.raises(ImportFailure, match="expected a plain folder name"):
        materialize([("test.tsv", b"q1\t0\td1\t1\n")], dest, qrels_dir=folder)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written == [] and not Path("/tmp/elsewhere").exists()


def test_a_zip_bomb_is_refused_before_it_unpacks(tmp_path, bomb_2gb):
    bomb = bomb_2gb
    assert len(bomb) < 3 << 20
    start = time.perf_counter()
    with pytest.raises(ImportFailure, match="decompression bomb"):
        materialize([("bench.zip", bomb)], tmp_path)
    assert time.perf_counter() - start < 5 and list(tmp_path.iterdir()) == []


def test_a_zip_whose_headers_lie_about_its_size_is_refused_as_damaged(tmp_path):
    data = bytearray(zip_bomb(200))
    lie = (1000).to_bytes(4, "little")
    central = data.rfind(b"PK\x01\x02")
    data[central + 24:central + 28] = lie  # the central directory says 1000 bytes
    with pytest.raises(ImportFailure):
        materialize([("lying.zip", bytes(data))], tmp_path)
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) <= 1000


def test_a_zip_streams_out_a_megabyte_at_a_time(tmp_path):
    packed = zip_bomb(48)  # under the 64 MB floor: a large but allowed member
    tracemalloc.start()
    materialize([("ok.zip", packed)], tmp_path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert (tmp_path / "bench" / "corpus.jsonl").stat().st_size == 48 << 20
    assert peak < 8 << 20  # never the whole member in memory


def test_the_zip_bomb_in_its_own_process_is_refused_within_5_s_under_500_mb(tmp_path, bomb_2gb):
    # the browser's upload path (materialize) in a process of its own, to measure its peak memory
    bomb = tmp_path / "bomb.zip"
    bomb.write_bytes(bomb_2gb)
    script = ("import sys, time; from pathlib import Path; from formats.readers.upload import materialize;"
              "t = time.perf_counter()\ntry:\n    materialize([('bomb.zip', Path(sys.argv[1]).read_bytes())], Path(sys.argv[2]))\n"
              "except Exception as e:\n    print(type(e).__name__, e)\n"
              "print(f'{time.perf_counter() - t:.2f} {" + PEAK + "}')")
    (tmp_path / "out").mkdir()
    run = subprocess.run([sys.executable, "-c", script, str(bomb), str(tmp_path / "out")], cwd=ROOT,
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    refusal, figures = run.stdout.strip().splitlines()
    seconds, peak_mb = figures.split()
    assert refusal.startswith("ImportFailure") and "decompression bomb" in refusal
    assert float(seconds) < 5 and int(peak_mb) < 500


def test_a_parquet_bomb_is_refused_from_its_metadata_within_5_s_under_500_mb(tmp_path, db_path):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "bench"
    shutil.copytree(FOLLOWIR_MTEB, folder)
    rows = 2_500_000
    ids = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array(["d1"]))
    text = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows, dtype=np.int32)), pa.array(["spam " * 200]))
    corpus = folder / "corpus" / "corpus-00000-of-00001.parquet"
    pq.write_table(pa.table({"_id": ids, "title": ids, "text": text}), corpus, row_group_size=rows, compression="zstd")
    assert corpus.stat().st_size < 2 << 20
    code, err, seconds, peak_mb = measured_import("--db", db_path, "--project", "p", "--format", "mteb", folder)
    assert code == 2 and "decompression bomb" in err and "2,500,000 rows" in err
    assert seconds < 5 and peak_mb < 500


def test_repeated_long_values_are_counted_before_they_are_expanded(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from formats.readers.mteb import _read_rows

    path = tmp_path / "corpus.parquet"
    n = 20_000  # few rows (the metadata looks harmless), each value 100 KB once expanded
    values = pa.DictionaryArray.from_arrays(pa.array([0] * n, type=pa.int32()), pa.array(["x" * 100_000]))
    pq.write_table(pa.table({"_id": values, "text": values}), path, compression="zstd")
    with pytest.raises(ImportFailure, match="decompression bomb"):
        _read_rows(path, [], [("_id",), ("text",)])


def test_ordinary_parquet_reads_as_before():
    from formats.readers.mteb import _read_rows

    cols, rows = _read_rows(FOLLOWIR_MTEB / "corpus" / "corpus-00000-of-00001.parquet", [], [("_id",), ("text",)],
                            ("title",))
    assert cols == ["_id", "text", "title"] and rows and isinstance(rows[0][1]["text"], str)


@pytest.mark.parametrize("layout", ["beir", "auto"])
def test_deep_json_gets_the_import_message_and_exit_2(run_cli, tmp_path, layout):
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    code, _, err = run_cli("import", "--db", tmp_path / "x.db", "--project", "p", "--format", layout, folder)
    assert code == 2 and "queries.jsonl, line 1: JSON nested too deeply to read" in err
    assert "Traceback" not in err and "RecursionError" not in err
