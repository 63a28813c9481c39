"""What ``ifjudge serve`` and its helpers leave on the machine (issue 31): the demo only in an empty
database, no password in a process's arguments or a log line, owner-only database files and backups."""
from __future__ import annotations

import os
import stat
import subprocess

import pytest

from accounts import auth
from storage import users
from storage.db import connect

PG_SERVER = os.environ.get("IFJUDGE_TEST_PG", "")


def _serve(monkeypatch, *argv):
    """``ifjudge serve`` with the app and the worker stood in for: returns the app's command."""
    import cli.serve_cmd as serve
    from cli.main import main

    seen = {}

    class App:
        def __init__(self, cmd, env):
            seen["cmd"], seen["env"] = cmd, env

        def wait(self):
            return 0

        def poll(self):
            return 0

    monkeypatch.setattr(serve, "start_app", App)
    assert main(["serve", "--no-worker", *map(str, argv)]) == 0
    return seen


def test_the_run_command_adds_no_demo_account_to_a_database_with_users(monkeypatch, tmp_path, capsys):
    db_path = tmp_path / "real.db"
    auth.add_user(connect(db_path), "boss", "lead", "a real password")
    _serve(monkeypatch, "--db", db_path, "--demo")
    assert [u["name"] for u in users.list_users(connect(db_path))] == ["boss"]
    err = capsys.readouterr().err
    assert "not loading the demo" in err and "already has 1 user(s)" in err


def test_the_run_command_still_gives_the_demo_on_a_fresh_database(monkeypatch, tmp_path, capsys):
    seen = _serve(monkeypatch, "--db", tmp_path / "data" / "ifjudge.db", "--demo")
    assert "username lead   password lead-demo" in capsys.readouterr().out
    assert {"ann1", "lead"} <= {u["name"] for u in users.list_users(connect(tmp_path / "data" / "ifjudge.db"))}
    _serve(monkeypatch, "--db", tmp_path / "data" / "ifjudge.db", "--demo")  # the demo's own database: served again
    assert "not loading" not in capsys.readouterr().err
    cmd = seen["cmd"]
    assert cmd[cmd.index("--client.showErrorDetails") + 1] == "none"
    assert cmd[cmd.index("--server.enableXsrfProtection") + 1] == "true"
    assert str(tmp_path) not in " ".join(cmd)  # the database reaches the app through its environment


def test_ifjudge_demo_refuses_a_database_with_users(run_cli, tmp_path):
    auth.add_user(connect(tmp_path / "real.db"), "boss", "lead", "a real password")
    code, _, err = run_cli("demo", "--db", tmp_path / "real.db")
    assert code == 2 and "loads only into a new, empty database" in err
    assert [u["name"] for u in users.list_users(connect(tmp_path / "real.db"))] == ["boss"]


def test_database_files_and_backups_are_created_owner_only(run_cli, tmp_path, capsys, monkeypatch):
    db_path = tmp_path / "new" / "ifjudge.db"
    db = connect(db_path)
    auth.add_user(db, "boss", "lead", "a real password")  # a write: -wal and -shm exist now
    for path in (db_path, tmp_path / "new" / "ifjudge.db-wal", tmp_path / "new" / "ifjudge.db-shm"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert run_cli("backup", "--db", db_path, "--out", tmp_path / "backups" / "b.db")[0] == 0
    assert stat.S_IMODE((tmp_path / "backups" / "b.db").stat().st_mode) == 0o600
    copy = tmp_path / "copy.db"  # a copy made by hand keeps the copier's umask: serve says so
    copy.write_bytes(db_path.read_bytes())
    os.chmod(copy, 0o644)
    _serve(monkeypatch, "--db", copy)
    assert f"chmod 600 {copy}" in capsys.readouterr().err


def test_the_worker_gets_the_database_from_its_environment_and_logs_no_password():
    from cli.serve_cmd import start_worker

    url = "postgresql://ifj:s3cret-pw@127.0.0.1:9/nothing"
    proc = start_worker(url, dict(os.environ), "--once", "--poll", "0.2", stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=60)
    assert "s3cret-pw" not in " ".join(proc.args) and "--db" not in proc.args
    assert "started on postgresql://ifj:***@127.0.0.1:9/nothing" in err and "s3cret-pw" not in err


@pytest.mark.skipif(not PG_SERVER, reason="PostgreSQL half not run: no server (IFJUDGE_TEST_PG unset)")
def test_pg_dump_gets_the_password_in_its_environment_not_its_arguments(pg_database, tmp_path, monkeypatch):
    import storage.backup as backup

    with_password = pg_database.replace("://ifjudge@", "://ifjudge:pw-in-url@", 1)
    assert with_password != pg_database  # the test server's user (trust authentication ignores the password)
    calls, real = [], subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda args, **kw: calls.append((args, kw.get("env") or {})) or real(args, **kw))
    backup.backup_postgresql(with_password, tmp_path / "dump")
    (args, env), = calls
    assert not any("pw-in-url" in a for a in args) and env["PGPASSWORD"] == "pw-in-url"
    for path in (tmp_path / "dump", tmp_path / "dump.manifest.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
