"""The options every ``ifjudge`` command shares, declared once (as sqlite-utils' option bundles).

``--db``, ``--project`` and ``--json`` mean the same thing in every command, so each has one
declaration and one help text here; a command module calls :func:`add_db`, :func:`add_project`
and :func:`add_json` on its parser (or on an argument group) instead of spelling them out.
A command whose ``--db`` means something narrower (a PostgreSQL server to restore into, the
database of ``--study``) passes its own ``help``; everything else is shared.
"""
from __future__ import annotations

DB_HELP = "IFJudge database: a SQLite file path or a postgresql:// URL"
PROJECT_HELP = "project name"
JSON_HELP = "print the result as JSON"


def add_db(parser, *, required: bool = True, help: str = DB_HELP, **extra) -> None:
    """Add ``--db`` (the IFJudge database) to ``parser``; ``extra`` goes to ``add_argument``."""
    parser.add_argument("--db", required=required, help=help, **extra)


def add_project(parser, *, required: bool = True, help: str = PROJECT_HELP, **extra) -> None:
    """Add ``--project`` (a project's name) to ``parser``."""
    parser.add_argument("--project", required=required, help=help, **extra)


def add_json(parser, **extra) -> None:
    """Add ``--json`` (print the command's result as one JSON document) to ``parser``."""
    parser.add_argument("--json", action="store_true", help=JSON_HELP, **extra)
