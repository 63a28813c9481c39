import sqlite3

import pytest

from storage import db as dbmod
from storage.db import SCHEMA_VERSION, connect, schema_version, write

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL


@pytest.mark.sqlite_only
def test_sqlite_is_opened_with_wal_and_busy_timeout(db_path):
    db = connect(db_path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] == dbmod.BUSY_TIMEOUT_MS


def test_connect_creates_schema(db_path):
    db = connect(db_path)
    assert schema_version(db) == SCHEMA_VERSION
    for table in ("projects", "documents", "queries", "instances", "qrels", "studies", "items", "assignments",
                  "labels", "users", "narrative_versions", "adjudications", "eval_runs"):
        assert table in db.table_names()


def test_reconnect_does_not_reapply_migrations(db_path):
    connect(db_path)
    db = connect(db_path)
    assert db.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == len(dbmod.MIGRATIONS)


def test_new_migration_is_applied_on_connect(db_path, monkeypatch):
    connect(db_path)
    monkeypatch.setattr(dbmod, "MIGRATIONS", [*dbmod.MIGRATIONS, (99, "add a column", "ALTER TABLE projects ADD COLUMN note TEXT")])
    monkeypatch.setattr(dbmod, "SCHEMA_VERSION", 99)
    db = dbmod.connect(db_path)
    assert schema_version(db) == 99
    assert db.execute("SELECT note FROM projects").fetchall() == []


def test_write_rolls_back_everything_on_error(db_path):
    db = connect(db_path)
    with pytest.raises(ZeroDivisionError):
        with write(db):
            db.execute("INSERT INTO settings (key, value) VALUES ('a', '1')")
            1 / 0
    assert db.execute("SELECT COUNT(*) FROM settings").fetchone()[0] == 0


@pytest.mark.sqlite_only
def test_write_starts_immediate_transaction(db_path):
    db = connect(db_path)
    other = sqlite3.connect(str(db_path), timeout=0.1, isolation_level=None)
    with write(db):
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")


def test_engines_agree_on_what_storage_relies_on(db_path):
    """Insertion order (ORDER BY rowid), byte order of text, new ids, integers from SUM, 0/1 from
    comparisons and booleans: the same on both engines."""
    db = connect(db_path)
    with write(db):
        pid = db.execute("INSERT INTO projects (name, kind, created_at) VALUES (?, ?, ?)", ["p", "generic", "t"]).lastrowid
        db.executemany("INSERT INTO queries (project_id, query_id, text) VALUES (?, ?, ?)",
                       [(pid, q, "x") for q in ["b", "B", "a", "10", "9", "\u00e9"]])
    assert pid == 1
    assert [r[0] for r in db.execute("SELECT query_id FROM queries ORDER BY rowid")] == ["b", "B", "a", "10", "9", "\u00e9"]
    assert [r[0] for r in db.execute("SELECT query_id FROM queries ORDER BY query_id")] == ["10", "9", "B", "a", "b", "\u00e9"]
    total, flag = db.execute("SELECT SUM(LENGTH(query_id)), MAX(CASE WHEN query_id = ? THEN 1 ELSE 0 END) FROM queries",
                             ["a"]).fetchone()
    assert (total, type(total), flag) == (7, int, 1)
    with write(db):
        db.execute("INSERT INTO sign_in_attempts (name, at, success) VALUES (?, ?, ?)", ["u", 1.5, True])
    assert db.execute("SELECT at, success FROM sign_in_attempts").fetchone() == (1.5, 1)
    with write(db):
        db.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ["k", "1"])
        db.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", ["k", "2"])
    assert db.execute("SELECT value FROM settings WHERE key = ?", ["k"]).fetchone() == ("1",)
    assert db.execute("SELECT json_extract(?, '$.a.b')", ['{"a": {"b": "deep"}}']).fetchone() == ("deep",)


def test_write_does_not_nest(db_path):
    db = connect(db_path)
    with write(db), pytest.raises(RuntimeError, match="does not nest"):
        with write(db):
            pass


def test_postgresql_writers_wait_in_line_but_annotators_do_not(pg_database):
    """On PostgreSQL a write holds the writers' advisory lock (as SQLite's one write lock) while an
    annotator's claim or submit holds only that annotator's lock."""
    import psycopg

    db_path = pg_database
    db = connect(db_path)
    with psycopg.connect(db_path, autocommit=True) as other, write(db):
        assert other.execute("SELECT pg_try_advisory_lock(%s, %s)", list(dbmod.WRITE_LOCK)).fetchone()[0] is False
        assert other.execute("SELECT pg_try_advisory_lock(%s, %s)", list(dbmod.user_lock(7))).fetchone()[0] is True
    with psycopg.connect(db_path, autocommit=True) as other, write(db, lock=dbmod.user_lock(7)):
        assert other.execute("SELECT pg_try_advisory_lock(%s, %s)", list(dbmod.user_lock(7))).fetchone()[0] is False
        assert other.execute("SELECT pg_try_advisory_lock(%s, %s)", list(dbmod.user_lock(8))).fetchone()[0] is True
