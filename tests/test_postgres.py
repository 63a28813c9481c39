"""PostgreSQL as the database: ``ifjudge migrate`` of a lived-in SQLite database (a finished study,
adjudications, eval runs), after which monitor, export and evaluate give the same bytes on the
copy; backups with pg_dump and their restore check; expired screens taken by concurrent
annotators. Needs a PostgreSQL server (IFJUDGE_TEST_PG; ``scripts/test.sh`` starts one)."""
from __future__ import annotations

import json
import threading

import pytest

from annotation.outcomes import adjudication
from storage import studies
from storage.db import connect
from storage.transfer import table_checksums
from tests.builders import label_all, user_row


@pytest.fixture
def lived_in(tmp_path, run_cli):
    """A SQLite database with the demo study finished by three annotators, two adjudications and
    a BM25 evaluation on original and validated qrels."""
    from annotation.demo import load_demo

    path = tmp_path / "lived.db"
    db = connect(path)
    sid = load_demo(db)["study_id"]
    label_all(db, sid, {"ann1": "Yes", "ann2": "Yes", "ann3": "No"}, {"ann1": "Yes", "ann2": "No", "ann3": "No"})
    for item in adjudication.queue(db, sid, show="all")[:2]:
        adjudication.record(db, sid, item["item"], "Yes" if item["question"] != "best_passage" else item["values"][0],
                            lead="lead", note="checked by hand")
    for version in ("original",):
        code, out, err = run_cli("eval", "run", "--db", path, "--project", "demo", "--model", "bm25",
                                 "--qrels-version", version, "--json")
        assert code == 0, err
    return path, sid


def _outputs(run_cli, db, sid, out_dir) -> dict[str, bytes]:
    """What a lead reads: the monitor, every export of the study, and the stored eval comparison."""
    files = {}
    code, out, err = run_cli("monitor", "--db", db, "--study", sid, "--json", "--seed", "1")
    assert code == 0, err
    files["monitor.json"] = out.encode()
    for fmt in ("trec", "jsonl", "report"):
        code, _, err = run_cli("export", "--db", db, "--project", "demo", "--format", fmt, "--out", out_dir / fmt,
                               "--study", sid, "--unresolved", "keep-published")
        assert code == 0, err
        for f in sorted((out_dir / fmt).rglob("*")):
            if f.is_file():
                files[f"{fmt}/{f.relative_to(out_dir / fmt)}"] = f.read_bytes()
    code, out, err = run_cli("eval", "compare", "--db", db, "--project", "demo", "--json")
    assert code == 0, err
    files["compare.json"] = out.encode()
    return files


def test_migrate_copies_everything_and_the_copy_answers_byte_for_byte(lived_in, pg_database, run_cli, tmp_path):
    path, sid = lived_in
    code, out, err = run_cli("migrate", "--from", path, "--to", pg_database, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["verified"] is True
    assert report["tables"]["labels"]["rows"] == 72 and report["tables"]["adjudications"]["rows"] == 2
    assert report["tables"]["eval_runs"]["rows"] >= 1
    assert table_checksums(connect(pg_database)) == table_checksums(connect(path))
    on_sqlite = _outputs(run_cli, path, sid, tmp_path / "sqlite")
    on_postgres = _outputs(run_cli, pg_database, sid, tmp_path / "postgres")
    assert sorted(on_sqlite) == sorted(on_postgres)
    for name in on_sqlite:
        if name.endswith("manifest.json"):  # names the database it came from and when
            a, b = json.loads(on_sqlite[name]), json.loads(on_postgres[name])
            for m in (a, b):
                m.pop("created_at", None), m.pop("database", None)
            assert a == b, name
        else:
            assert on_sqlite[name] == on_postgres[name], name
    # evaluating again on the copy (no reuse of the stored run) gives the same figures
    runs = {}
    for db in (path, pg_database):
        code, out, err = run_cli("eval", "run", "--db", db, "--project", "demo", "--model", "bm25",
                                 "--qrels-version", "original", "--no-reuse", "--json")
        assert code == 0, err
        runs[str(db)] = json.loads(out)
    a, b = runs.values()
    assert a["metrics"] == b["metrics"] and a["eval_run_id"] == b["eval_run_id"] and a.get("p_mrr") == b.get("p_mrr")
    # the copy keeps working: new rows get fresh ids after the copied ones
    from accounts.auth import add_user

    add_user(connect(pg_database), "newcomer", "annotator", "a long enough password")
    assert connect(pg_database).execute("SELECT id FROM users WHERE name = 'newcomer'").fetchone()[0] == 6


def test_migrate_refuses_a_target_that_holds_data_and_changes_nothing(lived_in, pg_database, run_cli):
    path, _ = lived_in
    assert run_cli("migrate", "--from", path, "--to", pg_database)[0] == 0
    before = table_checksums(connect(pg_database))
    code, out, err = run_cli("migrate", "--from", path, "--to", pg_database)
    assert code != 0 and "not empty" in err and len(err.strip().splitlines()) == 1
    assert table_checksums(connect(pg_database)) == before


def test_migrate_back_to_sqlite_gives_the_same_tables(lived_in, pg_database, run_cli, tmp_path):
    path, _ = lived_in
    assert run_cli("migrate", "--from", path, "--to", pg_database)[0] == 0
    back = tmp_path / "back.db"
    code, out, err = run_cli("migrate", "--from", pg_database, "--to", back)
    assert code == 0, err
    assert table_checksums(connect(back)) == table_checksums(connect(path))


def test_backup_with_pg_dump_and_its_restore_check(lived_in, pg_database, run_cli, tmp_path):
    path, _ = lived_in
    assert run_cli("migrate", "--from", path, "--to", pg_database)[0] == 0
    dump = tmp_path / "backups" / "ifjudge.dump"
    code, out, err = run_cli("backup", "--db", pg_database, "--out", dump)
    assert code == 0, err
    assert dump.read_bytes()[:5] == b"PGDMP" and "72 labels" in out
    code, out, err = run_cli("backup", "--check", dump, "--db", pg_database, "--json")
    assert code == 0, err
    assert json.loads(out)["counts"]["labels"] == 72
    # a dump that no longer matches its manifest is refused, naming the table
    manifest = dump.with_name(dump.name + ".manifest.json")
    m = json.loads(manifest.read_text())
    m["tables"]["labels"]["sha256"] = "0" * 64
    manifest.write_text(json.dumps(m))
    code, out, err = run_cli("backup", "--check", dump, "--db", pg_database)
    assert code != 0 and "labels" in err and "differs" in err
    # checking a dump needs a server to restore into
    code, out, err = run_cli("backup", "--check", dump)
    assert code != 0 and "postgresql://" in err


def test_concurrent_annotators_never_take_the_same_expired_screen(pg_database):
    """Every screen of the demo study is claimed by its three annotators, who then walk away. Eight
    newcomers, each in their own thread with their own connection, take over expired screens at the
    same moment: each (screen, abandoned claim) goes to exactly one newcomer, nobody holds two
    claims on one screen, and no item ends above its cap."""
    from accounts.auth import add_user
    from annotation.demo import load_demo

    db = connect(pg_database)
    sid = load_demo(db)["study_id"]
    screens = {r["screen"] for r in studies.assignment_rows(db, sid)}
    for name in ("ann1", "ann2", "ann3"):  # each claims every screen of theirs (skip moves on), at t=1000
        uid = user_row(db, name)["id"]
        for _ in screens:
            studies.skip(db, sid, uid, studies.claim_next(db, sid, uid, now=1000.0))
        db.execute("UPDATE assignments SET state = 'claimed', claimed_at = 1000.0 WHERE user_id = ?", [uid])
    newcomers = [add_user(db, f"late{i}", "annotator", "a long enough password") for i in range(8)]
    taken: dict[int, list[str]] = {}
    start = threading.Barrier(len(newcomers))

    def take(uid: int) -> None:
        mine = connect(pg_database)
        start.wait()
        got = []
        while (screen := studies.claim_next(mine, sid, uid, timeout_s=60, now=10_000.0)) is not None:
            got.append(screen)
            # submit-like: the newcomer finishes the screen, so the next claim looks further
            mine.execute("UPDATE assignments SET state = 'done' WHERE user_id = ? AND item_id IN"
                         " (SELECT id FROM items WHERE study_id = ? AND screen = ?)", [uid, sid, screen])
        taken[uid] = got

    threads = [threading.Thread(target=take, args=(u,)) for u in newcomers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(taken) == len(newcomers)
    transfers = [s for got in taken.values() for s in got]
    # 8 screens x 3 abandoned claims; a newcomer may take a screen once
    assert len(transfers) == 3 * len(screens)
    assert all(len(got) == len(set(got)) for got in taken.values())
    rows = studies.assignment_rows(db, sid)
    caps = {i["id"]: i["cap"] for i in studies.items_of_study(db, sid)}
    per_item: dict[int, list[str]] = {}
    for r in rows:
        per_item.setdefault(r["item"], []).append(r["annotator"])
    assert all(len(who) == len(set(who)) <= caps[i] for i, who in per_item.items())
    assert not any(r["annotator"].startswith("ann") for r in rows)  # every abandoned claim moved


def test_migrate_from_a_missing_file_is_refused_and_creates_nothing(tmp_path, run_cli):
    missing = tmp_path / "typo.db"
    code, out, err = run_cli("migrate", "--from", missing, "--to", tmp_path / "copy.db")
    assert code == 2 and "no such database file" in err and len(err.strip().splitlines()) == 1
    assert not missing.exists() and not (tmp_path / "copy.db").exists()


def test_a_database_that_does_not_exist_is_one_clear_line_at_once(pg_database, run_cli, tmp_path):
    import time

    from storage.postgres import with_database

    wrong = with_database(pg_database, "no_such_database")
    start = time.perf_counter()
    code, out, err = run_cli("jobs", "--db", wrong)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "cannot connect" in err and 'database "no_such_database" does not exist' in err
    assert time.perf_counter() - start < 10  # the server's answer, not a pool's 30 s timeout


# ---- a server with no connection left (max_connections reached) -------------------------------
# Simulated without a server: every new connection is refused with PostgreSQL's own words, as
# when 100 processes with their own pools hold every slot of the default max_connections = 100.
TOO_MANY = ('connection failed: connection to server at "127.0.0.1", port 5432 failed: '
            "FATAL:  sorry, too many clients already")


@pytest.fixture
def full_server(monkeypatch):
    """Every new psycopg connection is refused as by a full server; returns the attempts."""
    import psycopg

    attempts = []

    def refuse(url, **kwargs):
        attempts.append(url)
        raise psycopg.OperationalError(TOO_MANY)

    monkeypatch.setattr(psycopg, "connect", refuse)
    return attempts


class ExhaustedPool:
    """A process's pool that gets no connection within its time-out (psycopg_pool's PoolTimeout)."""

    def getconn(self, timeout=None):
        from psycopg_pool import PoolTimeout

        raise PoolTimeout(f"couldn't get a connection after {timeout:.2f} sec")

    def putconn(self, conn):
        raise AssertionError("nothing was borrowed, nothing to give back")


def test_a_full_server_is_one_line_naming_max_connections_and_what_to_do(full_server, run_cli):
    from storage import postgres

    url = "postgresql://lead:s3cret@127.0.0.1:5432/ifjudge"
    code, out, err = run_cli("jobs", "--db", url)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "too many clients already" in err and "max_connections is reached" in err
    assert "connections needed = app server processes x 16 + workers x 2 + a margin" in err
    assert "postgresql://lead:***@127.0.0.1" in err and "s3cret" not in err
    assert full_server == [url] and url not in postgres._pools  # asked once; no half-open pool kept


def test_a_refusal_when_the_pool_must_grow_is_the_same_clear_error_and_runs_nothing(full_server, monkeypatch):
    from storage import postgres

    url = "postgresql://ifjudge@127.0.0.1:5432/full"
    monkeypatch.setitem(postgres._pools, url, ExhaustedPool())  # the process's pool, opened earlier
    db = postgres.PgDatabase(url, set())
    with pytest.raises(postgres.DatabaseUnavailable, match="max_connections is reached") as refused:
        db.execute("SELECT 1")
    assert "couldn't get a connection" not in str(refused.value)  # the server's reason, not the pool's
    ran = []
    with pytest.raises(postgres.DatabaseUnavailable, match="too many clients already"):
        with db.transaction((1, 2)):
            ran.append("body")
    assert ran == [] and not db.in_transaction
    assert full_server == [url, url]  # each refusal asked the server why


def test_a_busy_pool_on_a_server_with_room_says_so_not_max_connections(monkeypatch):
    import psycopg

    from storage import postgres

    class Accepted:
        def close(self):
            pass

    monkeypatch.setattr(psycopg, "connect", lambda url, **kw: Accepted())
    url = "postgresql://ifjudge@127.0.0.1:5432/busy"
    monkeypatch.setitem(postgres._pools, url, ExhaustedPool())
    with pytest.raises(postgres.DatabaseUnavailable) as refused:
        postgres.PgDatabase(url, set()).execute("SELECT 1")
    assert str(refused.value) == (
        "postgresql://ifjudge@127.0.0.1:5432/busy: no connection of this process's pool (16 at most)"
        " came free within 30 s; nothing was stored by this request: try again")


def test_the_app_shows_a_full_server_as_a_message_not_a_traceback(full_server, monkeypatch):
    from tests.builders import app

    monkeypatch.setenv("IFJUDGE_DB", "postgresql://ifjudge@127.0.0.1:5432/ifjudge")
    at = app("app.py")
    at.run()
    assert not at.exception
    assert len(at.error) == 1 and "max\\_connections is reached" in at.error[0].value  # escaped Markdown
    assert "Try again in a moment" in at.error[0].value
