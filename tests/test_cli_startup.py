"""``ifjudge`` start-up: a command imports only the module that registers it, the table that says
which module that is stays true, and no parser loads the heavy libraries (numpy, pandas, scipy,
statsmodels, polars, scikit-learn, torch): a handler imports them when the command runs, so
``ifjudge --help`` and every ``ifjudge <command> [<sub-command>] --help`` start as fast as
``sqlite-utils --help`` (bench/bench_cli_startup.py measures it)."""
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
HEAVY = ("sklearn", "torch", "pandas", "scipy", "statsmodels", "pyarrow", "polars", "numpy")


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


@pytest.mark.parametrize("argv", [["--help"], ["users", "--help"], ["eval", "metrics", "--help"]])
def test_help_starts_without_the_heavy_libraries(argv):
    assert _loaded_after(argv) == dict.fromkeys(HEAVY, False)


# In one process: each command's parser as `ifjudge <command>` builds it, then the whole parser as
# `ifjudge --help` builds it, every (sub-)parser's help formatted; prints, for each heavy library
# loaded, the first parser after which it was there.
_EVERY_HELP = """
import argparse, json, sys
from cli.main import COMMANDS, build_parser

def walk(parser, path):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, path + [name])

heavy, first, seen = sys.argv[1].split(","), {}, 0

def note(path):
    for m in heavy:
        if m in sys.modules and m not in first:
            first[m] = " ".join(path + ["--help"])

for command in [*COMMANDS, None]:
    root = build_parser(command)
    note(["ifjudge"] + ([command] if command else []))
    for path, parser in walk(root, ["ifjudge"]):
        parser.format_help()
        seen += 1
        note(path)
print(json.dumps({"parsers": seen, "loaded": first}))
"""


def test_no_command_or_sub_command_help_loads_a_heavy_library():
    done = subprocess.run([sys.executable, "-c", _EVERY_HELP, ",".join(HEAVY)], cwd=ROOT, capture_output=True,
                          text=True, check=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    out = json.loads(done.stdout)
    assert out["parsers"] > 2 * len(COMMANDS)  # the commands, their sub-commands, and the whole tree again
    assert out["loaded"] == {}, ("move these imports into the command's handler: "
                                 + "; ".join(f"{m} loaded by `{where}`" for m, where in out["loaded"].items()))


def test_a_command_that_needs_pandas_still_gets_it(tmp_path):
    """storage.db imports sqlite-utils with pandas hidden; pandas still imports afterwards."""
    done = subprocess.run(
        [sys.executable, "-c", "import storage.db, pandas, numpy; print(pandas.DataFrame({'a': [1]}).shape)"],
        cwd=ROOT, capture_output=True, text=True, check=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.stdout.strip() == "(1, 1)"
