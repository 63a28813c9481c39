"""The foundation commands: demo, users, import, study create, labels."""
import io
import json
from pathlib import Path

import pytest

RELEASE = Path(__file__).resolve().parents[1] / "datasets" / "instructir"


def test_demo_then_study_and_labels(run_cli, db_path):
    code, out, _ = run_cli("demo", "--db", db_path)
    assert code == 0 and "username ann1" in out and "password ann1-demo" in out
    code, out, _ = run_cli("demo", "--db", db_path)
    assert "already present" in out
    code, out, _ = run_cli("study", "create", "--db", db_path, "--project", "demo", "--questions",
                           "validity,naturalness", "--annotators", "ann1,ann2", "--overlap", "2",
                           "--group-fraction", "0.5", "--per-group", "1", "--seed", "4", "--json")
    assert code == 0
    result = json.loads(out)
    assert result["study_id"] == 2 and result["instances"] == 2 and result["items"] == 4  # round(0.5 * 5 groups)
    assert result["per_annotator_screens"] == {"ann1": 2, "ann2": 2}
    code, out, _ = run_cli("labels", "--db", db_path, "--study", "2")
    assert out.splitlines() == ["item,instance,question,annotator,value,reason,shown_order,shown_position,submitted_at"]


def test_users_add_reads_password_from_stdin(run_cli, db_path, monkeypatch):
    from storage.db import connect as open_db

    open_db(db_path)  # users add reads an existing database (only demo, import and serve create one)
    monkeypatch.setattr("sys.stdin", io.StringIO("pa55word\n"))
    code, out, _ = run_cli("users", "add", "--db", db_path, "carol", "--role", "annotator", "--password-stdin")
    assert code == 0
    from accounts import auth
    from storage.db import connect

    assert auth.sign_in(connect(db_path), "carol", "pa55word")["role"] == "annotator"
    monkeypatch.setattr("sys.stdin", io.StringIO("another-pa55word\n"))
    code, _, err = run_cli("users", "add", "--db", db_path, "carol", "--role", "annotator", "--password-stdin")
    assert code == 2 and "already exists" in err
    monkeypatch.setattr("sys.stdin", io.StringIO("x\n"))
    code, _, err = run_cli("users", "add", "--db", db_path, "dave", "--role", "annotator", "--password-stdin")
    assert code == 2 and "at least 8 characters" in err


def test_import_real_instructir_counts(run_cli, db_path):
    code, out, _ = run_cli("import", "--db", db_path, "--project", "ir", "--format", "instructir", RELEASE, "--json")
    assert code == 0
    counts = json.loads(out)
    assert counts["instances"] == 9906 and counts["groups"] == 1267 and counts["queries"] == 1267
    assert counts["qrels_original"] == 9906


def test_import_into_existing_ids_is_refused_and_changes_nothing(run_cli, db_path):
    run_cli("demo", "--db", db_path)
    from annotation.demo import demo_data
    from storage.db import connect

    before = connect(db_path).execute("SELECT COUNT(*) FROM instances").fetchone()[0]
    code, _, err = run_cli("import", "--db", db_path, "--project", "ir", "--format", "instructir", RELEASE)
    assert code == 0
    code, _, err = run_cli("import", "--db", db_path, "--project", "ir", "--format", "instructir", RELEASE)
    assert code == 2 and "already holds some of these ids" in err and "nothing was imported" in err
    after = connect(db_path).execute("SELECT COUNT(*) FROM instances").fetchone()[0]
    assert after == before + 9906
    assert demo_data()["instances"]


def test_every_command_module_is_reached(run_cli):
    """Each ``cli/*_cmd.py`` adds a command: through ``register`` at the top level, or through
    ``register_<group>`` called by its group (``eval_run_cmd`` adds ``eval run`` and ``eval compare``)."""
    import importlib
    import pkgutil

    import cli

    names = [m.name for m in pkgutil.iter_modules(cli.__path__) if m.name.endswith("_cmd")]
    assert "eval_run_cmd" in names and "eval_runs" not in [m.name for m in pkgutil.iter_modules(cli.__path__)]
    for name in names:
        module = importlib.import_module(f"cli.{name}")
        assert hasattr(module, "register") or any(a.startswith("register_") for a in dir(module)), name
    for argv in (["eval", "run", "--help"], ["eval", "compare", "--help"]):
        with pytest.raises(SystemExit) as done:
            run_cli(*argv)
        assert done.value.code == 0
