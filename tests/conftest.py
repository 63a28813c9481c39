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


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "ifjudge.db"


@pytest.fixture
def demo(db_path):
    """A fresh database with the demo project, users and study; returns (db, load result)."""
    from annotation.demo import load_demo
    from storage.db import connect

    db = connect(db_path)
    return db, load_demo(db)
