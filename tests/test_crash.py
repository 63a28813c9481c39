"""Crashes: SIGKILL an ``ifjudge import`` of the real InstructIR directory at several moments, and
an annotator process mid-way through submitting screens. The database afterwards opens, passes
integrity_check, holds either nothing of the killed import or all of it, keeps every label
committed before the kill, and hands the annotator back the screen they had claimed."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from annotation import workspace
from annotation.demo import load_demo
from bench.load_test import build_study_db, parse_output, start_worker
from storage import projects, users
from storage.db import connect

ROOT = Path(__file__).resolve().parents[1]
INSTRUCTIR = ROOT / "datasets" / "instructir"
FULL = {"instances": 9906, "queries": 1267, "qrels_original": 9906}


def import_cmd(db_path: Path) -> list[str]:
    return [sys.executable, "-m", "cli", "import", "--db", str(db_path), "--project", "instructir",
            "--format", "instructir", str(INSTRUCTIR)]


def check_after_kill(db_path: Path) -> str:
    """Opens, integrity ok, demo intact; returns 'none' or 'all' for the killed import."""
    db = connect(db_path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    names = {p["name"]: p for p in projects.list_projects(db)}
    assert names["demo"]["counts"]["instances"] == 14
    if "instructir" not in names:
        assert db.execute("SELECT COUNT(*) FROM instances WHERE project_id NOT IN (SELECT id FROM projects)"
                          ).fetchone()[0] == 0
        db.conn.close()
        return "none"
    counts = names["instructir"]["counts"]
    assert {k: counts[k] for k in FULL} == FULL, counts
    assert db.execute("SELECT COUNT(*) FROM imports").fetchone()[0] == 2  # demo + this one
    db.conn.close()
    return "all"


def fresh_db(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    load_demo(connect(path)).get("created")
    return path


def test_sigkill_during_import_leaves_none_or_all(tmp_path):
    # how long a complete import takes here, so the kills land across all of it
    ref = fresh_db(tmp_path, "ref.db")
    start = time.monotonic()
    subprocess.run(import_cmd(ref), check=True, capture_output=True, cwd=ROOT, timeout=120)
    total = time.monotonic() - start
    assert check_after_kill(ref) == "all"
    delays = sorted({0.3, 0.8, 1.2, *(round(f * total, 2) for f in (0.5, 0.8, 0.9, 0.95, 0.98))})
    outcomes = {}
    for i, delay in enumerate(delays):
        path = fresh_db(tmp_path, f"kill{i}.db")
        proc = subprocess.Popen(import_cmd(path), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        outcomes[delay] = check_after_kill(path)
    print(f"\nfull import {total:.2f} s; outcome by kill time: {outcomes}")
    assert set(outcomes.values()) <= {"none", "all"}


MID_TRANSACTION = r"""
import sys, time
from pathlib import Path
from formats import readers as importers
from storage import projects
from storage.db import connect

class SlowList(list):
    # the instances are written half, then the process waits to be killed, inside the transaction
    def __iter__(self):
        for n, x in enumerate(list.__iter__(self)):
            if n == len(self) // 2:
                print("MID", flush=True)
                time.sleep(60)
            yield x

bundle = importers.parse("instructir", [Path(sys.argv[2])])
bundle.instances = SlowList(bundle.instances)
projects.import_bundle(connect(sys.argv[1]), "instructir", bundle, fmt="instructir")
"""


def test_sigkill_inside_the_import_transaction_leaves_nothing(tmp_path):
    """Killed with documents, queries and half of the instances written but not committed."""
    path = fresh_db(tmp_path, "mid.db")
    proc = subprocess.Popen([sys.executable, "-c", MID_TRANSACTION, str(path), str(INSTRUCTIR)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.strip() == "MID", proc.stderr.read()
    assert (tmp_path / "mid.db-wal").exists()
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert check_after_kill(path) == "none"


@pytest.mark.parametrize("labels_before_kill", [9, 30, 60])
def test_sigkill_of_an_annotator_mid_submission(tmp_path, labels_before_kill):
    db_path = tmp_path / "crash.db"
    names = ["crash0", "crash1", "crash2"]
    study_id = build_study_db(db_path, n_instances=300, annotators=names)["study_id"]
    reported: list[int] = []
    stored_before: set[int] = set()
    for round_ in range(3):
        out_path = tmp_path / f"worker{round_}.out"
        with open(out_path, "wb") as out:
            proc = start_worker(db_path, study_id, "crash0", seconds=120, max_screens=10_000, seed=round_, stdout=out)
            deadline = time.monotonic() + 60
            while out_path.read_bytes().count(b"\nL ") < labels_before_kill and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.003 * round_)  # land at different points of the submit loop
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
        ev = parse_output(out_path.read_text())
        assert not ev["errors"], ev["errors"]
        assert len(ev["labels"]) >= labels_before_kill
        reported += ev["labels"]

        db = connect(db_path)
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        user = {k: v for k, v in users.get_user(db, "crash0").items() if k in ("id", "name", "role")}
        stored = {r[0] for r in db.execute("SELECT id FROM labels WHERE user_id = ?", [user["id"]])}
        assert set(reported) <= stored  # every label reported committed survived the kill
        # at most the one screen (3 labels) whose commit outran its report in THIS round (an earlier
        # round's kill may have left one of its own)
        assert len((stored - stored_before) - set(ev["labels"])) <= 3
        stored_before = stored
        dup = db.execute("SELECT COUNT(*) FROM (SELECT 1 FROM labels GROUP BY item_id, user_id HAVING COUNT(*) > 1)"
                         ).fetchone()[0]
        assert dup == 0
        submitted = set(workspace.history(db, study_id, user))
        claimed = {r[0] for r in db.execute(
            "SELECT DISTINCT i.screen FROM assignments a JOIN items i ON i.id = a.item_id"
            " WHERE a.user_id = ? AND a.state = 'claimed'", [user["id"]])}
        assert len(claimed) <= 1
        screen = workspace.open_screen(db, study_id, user)
        assert screen is not None and screen.screen not in submitted
        if claimed:  # resumes exactly at the screen held when the process died
            assert screen.screen == next(iter(claimed))
        last_claim = ev["claims"][-1]
        if last_claim not in submitted:
            assert screen.screen == last_claim
        db.conn.close()
