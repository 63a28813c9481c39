"""``ifjudge backup``: an online copy taken while annotators submit is a valid database holding
every label committed before the backup began; ``ifjudge backup --check`` is the restore check."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import time

import pytest

from bench.load_test import build_study_db, parse_output, start_worker
from storage import backup as backups
from storage.db import SCHEMA_VERSION, connect


def test_backup_during_concurrent_submissions(tmp_path, run_cli):
    db_path = tmp_path / "live.db"
    names = ["bk0", "bk1", "bk2", "bk3"]
    study_id = build_study_db(db_path, n_instances=800, annotators=names)["study_id"]
    outs = [tmp_path / f"{n}.out" for n in names]
    handles = [open(p, "wb") for p in outs]
    procs = [start_worker(db_path, study_id, n, seconds=60, max_screens=10_000, seed=i, stdout=h)
             for i, (n, h) in enumerate(zip(names, handles))]
    try:
        copies = []
        for k in range(3):
            deadline = time.monotonic() + 60
            while sum(p.read_bytes().count(b"\nL ") for p in outs) < 60 * (k + 1) and time.monotonic() < deadline:
                time.sleep(0.02)
            # labels reported before the backup starts were committed before it
            committed = [i for p in outs for i in parse_output(p.read_text(errors="replace"))["labels"]]
            out = tmp_path / "backups" / f"copy{k}.db"
            code, stdout, err = run_cli("backup", "--db", db_path, "--out", out, "--json")
            assert code == 0, err
            assert all(p.poll() is None for p in procs), "the workers kept running during the backup"
            copies.append((out, set(committed), json.loads(stdout)))
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait(30)
        for h in handles:
            h.close()
    for out, committed, result in copies:
        assert result["integrity"] == "ok" and result["schema_version"] == SCHEMA_VERSION
        assert not (out.parent / (out.name + "-wal")).exists()  # one self-contained file
        conn = sqlite3.connect(out)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        stored = {r[0] for r in conn.execute("SELECT id FROM labels")}
        assert committed <= stored and len(committed) >= 60
        assert result["counts"]["labels"] == len(stored)
        # consistent snapshot: every stored label's assignment is done in the copy too
        assert conn.execute("SELECT COUNT(*) FROM labels l JOIN assignments a ON a.item_id = l.item_id"
                            " AND a.user_id = l.user_id WHERE a.state != 'done'").fetchone()[0] == 0
        conn.close()
        # a restored copy opens with the normal gateway
        restored = tmp_path / f"restored-{out.name}"
        restored.write_bytes(out.read_bytes())
        assert connect(restored).execute("SELECT COUNT(*) FROM labels").fetchone()[0] == len(stored)
    code, out, err = run_cli("backup", "--check", copies[-1][0])
    assert code == 0 and "integrity ok" in out and f"schema version {SCHEMA_VERSION}" in out, err


def test_backup_refuses_to_overwrite_and_to_copy_onto_itself(tmp_path, run_cli, demo, db_path):
    out = tmp_path / "copy.db"
    assert run_cli("backup", "--db", db_path, "--out", out)[0] == 0
    code, _, err = run_cli("backup", "--db", db_path, "--out", out)
    assert code == 2 and err.startswith("ifjudge: error:") and "already exists" in err
    assert run_cli("backup", "--db", db_path, "--out", out, "--force")[0] == 0
    code, _, err = run_cli("backup", "--db", db_path, "--out", db_path, "--force")
    assert code == 2 and "must not be the database itself" in err
    with pytest.raises(SystemExit) as stop:  # refused by the shared --db option, as every reading command
        run_cli("backup", "--db", tmp_path / "missing.db", "--out", tmp_path / "x.db")
    assert stop.value.code == 2
    assert not (tmp_path / "missing.db").exists() and not (tmp_path / "x.db").exists()


def test_check_refuses_damaged_and_foreign_files(tmp_path, run_cli, demo, db_path):
    good = tmp_path / "good.db"
    backups.backup(db_path, good)
    assert backups.check(good)["counts"]["users"] == 5
    junk = tmp_path / "junk.db"
    junk.write_bytes(os.urandom(8192))
    code, _, err = run_cli("backup", "--check", junk)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a readable SQLite database" in err
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(backups.BackupError):
        backups.check(truncated)
    damaged = tmp_path / "damaged.db"
    data = bytearray(good.read_bytes())
    for off in range(4096 * 3, len(data) - 4096, 4096):  # scribble over b-tree pages
        data[off + 8: off + 40] = os.urandom(32)
    damaged.write_bytes(bytes(data))
    with pytest.raises(backups.BackupError):
        backups.check(damaged)
    foreign = tmp_path / "foreign.db"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.commit()
    code, _, err = run_cli("backup", "--check", foreign)
    assert code == 2 and "no schema_migrations" in err
    code, _, err = run_cli("backup", "--db", db_path)
    assert code == 2 and "--out" in err
