"""``ifjudge`` start-up: a command imports only the module that registers it, and the table that
says which module that is stays true."""
from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli.main import COMMANDS, command_modules, main

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("sklearn", "torch", "pandas", "scipy", "statsmodels", "pyarrow")


def test_the_command_table_names_what_each_module_registers():
    registered = {}
    for name in command_modules():
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"cli.{name}").register(sub)
        registered.update(dict.fromkeys(sub.choices, name))
    assert registered == COMMANDS


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    listed = capsys.readouterr().out
    for command in COMMANDS:
        assert f"\n    {command} " in listed or f"\n    {command}\n" in listed, command


def test_an_unknown_command_is_refused_with_the_full_list(capsys):
    with pytest.raises(SystemExit) as done:
        main(["imprt"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'imprt'" in err and "'import'" in err and "'users'" in err


def _loaded_after(argv: list[str]) -> dict:
    probe = ("import contextlib, io, json, sys\nfrom cli.main import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    try:\n        main(sys.argv[1:])\n    except SystemExit:\n        pass\n"
             f"print(json.dumps({{m: m in sys.modules for m in {list(HEAVY)!r}}}))")
    done = subprocess.run([sys.executable, "-c", probe, *argv], cwd=ROOT, capture_output=True, text=True,
                          check=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    return json.loads(done.stdout)


@pytest.mark.parametrize("argv", [["users", "--help"], ["jobs", "--help"], ["import", "--help"]])
def test_a_light_command_starts_without_the_heavy_libraries(argv):
    assert _loaded_after(argv) == dict.fromkeys(HEAVY, False)


def test_a_command_that_needs_pandas_still_gets_it(tmp_path):
    """storage.db imports sqlite-utils with pandas hidden; pandas still imports afterwards."""
    done = subprocess.run(
        [sys.executable, "-c", "import storage.db, pandas, numpy; print(pandas.DataFrame({'a': [1]}).shape)"],
        cwd=ROOT, capture_output=True, text=True, check=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.stdout.strip() == "(1, 1)"
