"""Entry point of ``ifjudge``.

Every module ``cli/*_cmd.py`` defines ``register(subparsers)``, which adds its sub-command(s)
with ``set_defaults(func=...)``; ``func(args)`` returns the exit status. A module that adds
sub-commands to another module's group defines ``register_<group>`` instead and is called by that
group (``cli/eval_run_cmd.py`` adds ``eval run`` and ``eval compare`` through ``register_eval``). Errors that IFJudge
reports to users (:class:`storage.errors.IFJudgeError`) are printed as one line on stderr with
exit status 2, never as a traceback.

A command imports only the module that registers it (:data:`COMMANDS`), not the whole library,
and a command module imports the heavy parts of the library (numpy, pandas, scipy, statsmodels,
scikit-learn, torch) in its handlers, never to build its parser: ``ifjudge --help`` (or a name
that is no command), which builds the whole parser to list every command, and every
``ifjudge <command> [<sub-command>] --help`` start as fast as ``sqlite-utils --help``
(tests/test_cli_startup.py, bench/bench_cli_startup.py).
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import cli
from storage.errors import IFJudgeError


#: sub-command -> the module of cli/ whose ``register`` adds it (tests/test_cli_startup.py checks
#: this table against what every module registers)
COMMANDS = {
    "adjudicate": "adjudicate_cmd",
    "agreement": "agreement_cmd",
    "backup": "backup_cmd",
    "demo": "demo_cmd",
    "eval": "eval_cmd",
    "export": "export_cmd",
    "validate": "export_cmd",
    "import": "import_cmd",
    "jobs": "jobs_cmd",
    "judge": "judge_cmd",
    "migrate": "migrate_cmd",
    "monitor": "monitor_cmd",
    "narrative": "narratives_cmd",
    "export-followir": "narratives_cmd",
    "report": "report_cmd",
    "serve": "serve_cmd",
    "study": "study_cmd",
    "labels": "study_cmd",
    "summary": "summary_cmd",
    "users": "users_cmd",
    "worker": "worker_cmd",
}


def command_modules() -> list[str]:
    """Every module of cli/ that registers commands (``register``), by name; the others extend a
    group (``register_<group>``)."""
    names = sorted(m.name for m in pkgutil.iter_modules(cli.__path__) if m.name.endswith("_cmd"))
    return [n for n in names if hasattr(importlib.import_module(f"cli.{n}"), "register")]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``ifjudge`` parser: with ``command`` (a key of :data:`COMMANDS`) only the module that
    registers it is imported and registered; otherwise every command module (``--help``)."""
    parser = argparse.ArgumentParser(
        prog="ifjudge",
        description="Human validation of instruction-following retrieval benchmarks.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = [COMMANDS[command]] if command in COMMANDS else command_modules()
    for name in names:
        importlib.import_module(f"cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (IFJudgeError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        print(f"ifjudge: error: {one_line(str(exc))}", file=sys.stderr)
        return 2


def one_line(message: str) -> str:
    """An error message as one line: line breaks and other control characters that came from the
    user's data (a header cell holding a carriage return) are shown escaped, as ``\\r``."""
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii") for c in message)


if __name__ == "__main__":
    raise SystemExit(main())
