"""Entry point of ``ifjudge``.

Every module ``cli/*_cmd.py`` defines ``register(subparsers)``, which adds its sub-command(s)
with ``set_defaults(func=...)``; ``func(args)`` returns the exit status. A module that adds
sub-commands to another module's group defines ``register_<group>`` instead and is called by that
group (``cli/eval_run_cmd.py`` adds ``eval run`` and ``eval compare`` through ``register_eval``). Errors that IFJudge
reports to users (:class:`storage.errors.IFJudgeError`) are printed as one line on stderr with
exit status 2, never as a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import cli
from storage.errors import IFJudgeError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ifjudge",
        description="Human validation of instruction-following retrieval benchmarks.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for mod in sorted(pkgutil.iter_modules(cli.__path__), key=lambda m: m.name):
        if mod.name.endswith("_cmd"):
            module = importlib.import_module(f"cli.{mod.name}")
            if hasattr(module, "register"):  # else it extends a group (``register_<group>``)
                module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
