"""The options every ``ifjudge`` command shares, declared once (as sqlite-utils' option bundles).

``--db``, ``--project`` and ``--json`` mean the same thing in every command, so each has one
declaration and one help text here; a command module calls :func:`add_db`, :func:`add_project`
and :func:`add_json` on its parser (or on an argument group) instead of spelling them out.
A command whose ``--db`` means something narrower (a PostgreSQL server to restore into, the
database of ``--study``) passes its own ``help``; everything else is shared.

A ``--db`` file that does not exist is refused (a typo would otherwise create an empty database
and the command would report on nothing), except for the commands that create databases
(``demo``, ``import``, ``serve``: ``creates=True``).
"""
from __future__ import annotations

import argparse
from pathlib import Path

DB_HELP = "IFJudge database: a SQLite file path or a postgresql:// URL"
CREATORS = ("demo", "import", "serve")  # the commands that create a database that does not exist yet


def existing_db(value: str) -> str:
    """``--db`` of a command that reads a database: a ``postgresql://`` URL, or the path of a file
    that exists (argparse reports the error with the option's name and exits 2).

    >>> existing_db("postgresql://u@h/db")
    'postgresql://u@h/db'
    >>> existing_db("data/no-such.db")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: no IFJudge database at data/no-such.db (no such file): check the path; only demo, import and serve create a database
    """
    if "://" in value or Path(value).is_file():
        return value
    why = "a folder, not a database file" if Path(value).is_dir() else "no such file"
    raise argparse.ArgumentTypeError(f"no IFJudge database at {value} ({why}): check the path; only "
                                     f"{', '.join(CREATORS[:-1])} and {CREATORS[-1]} create a database")
PROJECT_HELP = "project name"
JSON_HELP = "print the result as JSON"


def add_db(parser, *, required: bool = True, help: str = DB_HELP, creates: bool = False, **extra) -> None:
    """Add ``--db`` (the IFJudge database) to ``parser``; ``extra`` goes to ``add_argument``. Unless
    the command ``creates`` databases, a file path that does not exist is refused
    (:func:`existing_db`)."""
    if not creates:
        extra.setdefault("type", existing_db)
    parser.add_argument("--db", required=required, help=help, **extra)


def add_project(parser, *, required: bool = True, help: str = PROJECT_HELP, **extra) -> None:
    """Add ``--project`` (a project's name) to ``parser``."""
    parser.add_argument("--project", required=required, help=help, **extra)


def add_json(parser, **extra) -> None:
    """Add ``--json`` (print the command's result as one JSON document) to ``parser``."""
    parser.add_argument("--json", action="store_true", help=JSON_HELP, **extra)
