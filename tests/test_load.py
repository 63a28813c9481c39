"""Short CI variant of the concurrency load test (bench/load_test.py runs 20 annotators for two
minutes): 6 annotator processes, each with its own connection, submit through
annotation.workspace against one SQLite file (and one PostgreSQL database) for 8 seconds. No label is lost or stored twice, no
item goes above its cap, and no worker meets "database is locked" or any other error."""
from __future__ import annotations

from bench.load_test import run_load


def test_six_annotators_for_eight_seconds(tmp_path):
    _check(run_load(tmp_path / "load.db", annotators=6, seconds=8, n_instances=2000, workdir=tmp_path))


def test_six_annotators_for_eight_seconds_on_postgresql(tmp_path, pg_database):
    """The same on PostgreSQL: six processes, each with its own connection pool (as six app
    servers would), claiming with FOR UPDATE SKIP LOCKED."""
    _check(run_load(pg_database, annotators=6, seconds=8, n_instances=2000, workdir=tmp_path))


def _check(r: dict) -> None:
    assert r["errors"] == [], r["errors"][:3]
    assert r["locked_errors"] == []
    assert r["unfinished"] == []
    assert r["problems"] == []
    # every annotator submitted; the labels stored are exactly the ones reported committed
    assert r["submissions"] >= 6
    assert r["labels_stored"] == r["labels"] == 3 * r["submissions"]
    print(f"\n{r['submissions']} submissions, {r['submissions_per_s']:.1f}/s, "
          f"submit p95 {r['submit_ms_p95']:.1f} ms, open+submit p95 {r['cycle_ms_p95']:.1f} ms")
