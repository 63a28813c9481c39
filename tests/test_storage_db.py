import sqlite3

import pytest

from storage import db as dbmod
from storage.db import SCHEMA_VERSION, connect, schema_version, write


def test_connect_creates_schema_with_wal_and_busy_timeout(db_path):
    db = connect(db_path)
    assert schema_version(db) == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] == dbmod.BUSY_TIMEOUT_MS
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
    assert "note" in db["projects"].columns_dict


def test_write_rolls_back_everything_on_error(db_path):
    db = connect(db_path)
    with pytest.raises(ZeroDivisionError):
        with write(db):
            db.execute("INSERT INTO settings (key, value) VALUES ('a', '1')")
            1 / 0
    assert db.execute("SELECT COUNT(*) FROM settings").fetchone()[0] == 0


def test_write_starts_immediate_transaction(db_path):
    db = connect(db_path)
    other = sqlite3.connect(str(db_path), timeout=0.1, isolation_level=None)
    with write(db):
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            other.execute("BEGIN IMMEDIATE")
