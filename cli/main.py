"""Entry point of ``ifjudge``.

Every module ``cli/*_cmd.py`` defines ``register(subparsers)``, which adds its sub-command(s)
with ``set_defaults(func=...)``; ``func(args)`` returns the exit status. Errors that IFJudge
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
            importlib.import_module(f"cli.{mod.name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except IFJudgeError as exc:
        print(f"ifjudge: error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        print(f"ifjudge: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
