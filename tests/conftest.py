import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest

from cli.main import main as cli_main


_PYTEST_MAIN = sys.modules["__main__"]


@pytest.fixture(autouse=True)
def _restore_main_module():
    """Streamlit's AppTest leaves a page script installed as ``__main__``; a later test that
    starts spawn workers would then run that page in every child, which dies and is respawned
    forever. Put pytest's own ``__main__`` back after every test."""
    yield
    sys.modules["__main__"] = _PYTEST_MAIN


@pytest.fixture
def run_cli(capsys):
    """Run ``ifjudge`` in-process: returns (exit status, stdout, stderr)."""

    def run(*argv: str):
        code = cli_main([str(a) for a in argv])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


# ---- the two engines -------------------------------------------------------------------------
# Test modules that set ``pytestmark = pytest.mark.both_engines`` run every test that takes
# ``db_path`` (or ``demo``) twice: on a SQLite file and on a fresh PostgreSQL database. The
# PostgreSQL server is the one named by IFJUDGE_TEST_PG (a URL of its maintenance database;
# ``scripts/test.sh`` starts a throwaway cluster and sets it). Without it the PostgreSQL half is
# skipped, and the summary says so.
PG_SERVER = os.environ.get("IFJUDGE_TEST_PG", "")
_PG_SKIP_REASON = "PostgreSQL half not run"
_PG_SKIPPED: list[str] = []
# Tests that measure time or kill processes, and the browser tests: one pytest-xdist worker runs
# them one after another (``--dist loadgroup``), while the other worker runs the rest.
_SERIAL_MODULES = {"test_load", "test_crash", "test_hostile_files", "test_jobs_worker", "test_judge_worker"}


def pytest_configure(config):
    config.addinivalue_line("markers", "both_engines: run the module's database tests on SQLite and on PostgreSQL")
    config.addinivalue_line("markers", "sqlite_only: the test reads the SQLite file itself (not for PostgreSQL)")


def pytest_collection_modifyitems(items):
    for item in items:
        if "e2e" in item.path.parts or item.path.stem in _SERIAL_MODULES:
            item.add_marker(pytest.mark.xdist_group("serial"))


def pytest_runtest_logreport(report):
    """Count the PostgreSQL tests skipped for want of a server (called in the controller for the
    reports of every pytest-xdist worker, and in a plain run)."""
    if report.skipped and _PG_SKIP_REASON in str(report.longrepr):
        _PG_SKIPPED.append(report.nodeid)


def pytest_generate_tests(metafunc):
    uses_db = {"db_path", "demo"} & set(metafunc.fixturenames)
    if uses_db and metafunc.definition.get_closest_marker("both_engines") and not metafunc.definition.get_closest_marker("sqlite_only"):
        metafunc.parametrize("engine", ["sqlite", "postgresql"], indirect=True)


@pytest.fixture
def engine(request):
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="session")
def pg_tests_database():
    """One database of the test server holding a schema per test (a new database costs ~1 s)."""
    import psycopg

    from storage.postgres import with_database

    name = f"ifjudge_tests_{os.getpid()}"
    with psycopg.connect(PG_SERVER, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield with_database(PG_SERVER, name)
    with psycopg.connect(PG_SERVER, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_database(request):
    """A fresh, empty PostgreSQL schema of its own; dropped after the test. Yields the URL that
    opens it (``search_path`` set in the URL, as a deployment behind a schema would)."""
    if not PG_SERVER:
        pytest.skip(f"{_PG_SKIP_REASON}: no server (IFJUDGE_TEST_PG unset; scripts/test.sh starts one)")
    import uuid

    import psycopg

    from storage.postgres import close_pool

    database = request.getfixturevalue("pg_tests_database")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = f"{database}?options=-csearch_path%3D{schema}"
    yield url
    close_pool(url)
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def db_path(tmp_path, engine, request):
    """Where the test's database lives: a SQLite file, or (engine postgresql) a database URL."""
    if engine == "postgresql":
        return request.getfixturevalue("pg_database")
    return tmp_path / "ifjudge.db"


def pytest_terminal_summary(terminalreporter):
    if _PG_SKIPPED:
        terminalreporter.write_sep(
            "!", f"PostgreSQL half NOT run: {len(_PG_SKIPPED)} tests skipped (no server; set IFJUDGE_TEST_PG "
            "or run scripts/test.sh, which starts one)", yellow=True, bold=True,
        )
    elif PG_SERVER:
        terminalreporter.write_line(f"PostgreSQL half run against {PG_SERVER.rsplit('@', 1)[-1]}")


@pytest.fixture
def demo(db_path):
    """A fresh database with the demo project, users and study; returns (db, load result)."""
    from annotation.demo import load_demo
    from storage.db import connect

    db = connect(db_path)
    return db, load_demo(db)


# ---- shared builds (the builders themselves are in tests/builders.py) --------------------------
@pytest.fixture
def env_db(demo, monkeypatch, db_path):
    """The demo database, named by IFJUDGE_DB so that the pages open it; returns (db, load result)."""
    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    return demo


@pytest.fixture
def labelled(demo):
    """The demo study with every screen answered by the three annotators as builders.PLAN says;
    returns (db, study id, screen order)."""
    from tests.builders import label_by_plan

    db, r = demo
    sid = r["study_id"]
    return db, sid, label_by_plan(db, sid)


@pytest.fixture
def ifir_db(db_path):
    """The IFIR bundle of tests.builders.ifir_bundle (20 fiqa, 10 aila and 3 pm queries, each a group
    of 2 instructed instances and its bare query) as project "ifir", with annotators a0, a1, a2."""
    from accounts import auth
    from storage import projects
    from storage.db import connect
    from tests.builders import ifir_bundle

    db = connect(db_path)
    projects.import_bundle(db, "ifir", ifir_bundle(), fmt="ifir")
    for n in range(3):
        auth.add_user(db, f"a{n}", "annotator", "pw")
    return db


@pytest.fixture
def instructir_db(tmp_path):
    """An InstructIR-like project "demo" (builders.instructir_bundle) with qrels "validated" stored."""
    from storage.db import connect
    from storage.projects import import_bundle, replace_qrels
    from tests.builders import VALIDATED, instructir_bundle

    db = connect(tmp_path / "t.db")
    import_bundle(db, "demo", instructir_bundle(), fmt="instructir")
    replace_qrels(db, 1, "validated", VALIDATED)
    return db


@pytest.fixture
def export_page(labelled, monkeypatch, db_path):
    """The Export page over ``labelled``: returns (db, study id, screen order, run), where
    ``run(studies=None, build=True, **widgets)`` runs the page as the lead, picks the studies, sets
    the widgets by key and builds the export."""
    from tests.builders import app, user_row

    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    db, sid, order = labelled

    def run(studies=None, build=True, **widgets):
        at = app("pages/export.py")
        at.session_state["user"] = user_row(db, "lead")
        at.run()
        if studies is not None:
            at.multiselect(key="exp_studies").set_value(studies).run()
        for key, value in widgets.items():
            (at.checkbox(key=key) if key.startswith("exp_allow") else at.selectbox(key=key)).set_value(value).run()
        if build and any(b.key == "exp_build" for b in at.button):
            at.button(key="exp_build").click().run()
        return at

    return db, sid, order, run
