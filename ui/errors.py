"""What a visitor sees when a page fails: a short message saying what to do, never a traceback.
The details go to the server's log under a reference the message names, so a lead can find them.

:func:`show_failure` is the page boundary (``app.py`` wraps every page run in it) and the
handler of failures that happen outside a page run (``ui.server``'s ``on_script_error``:
widget callbacks). Streamlit's own error details are off (``client.showErrorDetails = "none"``,
set by ``ifjudge serve``).
"""
from __future__ import annotations

import logging
import secrets
import sqlite3

import streamlit as st

from storage.errors import IFJudgeError
from storage.postgres import DatabaseUnavailable
from ui.markdown import md_escape

LOG = logging.getLogger("ifjudge")
STORED = "Answers submitted before this are stored."


def _database_error(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.Error):
        return True
    module = type(exc).__module__ or ""
    return module.startswith(("psycopg", "psycopg_pool"))


def failure_message(exc: BaseException, reference: str) -> str:
    """The message shown for ``exc`` (Markdown, every untrusted part escaped).

    >>> failure_message(sqlite3.OperationalError("database or disk is full"), "r1")[:60]
    'The database cannot store or read anything right now \\\\(refer'
    >>> "Traceback" in failure_message(KeyError("x"), "r2")
    False
    """
    if isinstance(exc, DatabaseUnavailable):
        return md_escape(str(exc)) + f"\n\nTry again in a moment: {STORED.lower()}"
    if _database_error(exc):
        return (f"The database cannot store or read anything right now (reference {reference}). {STORED} "
                "Wait a minute and reload the page; if it happens again, tell your project lead and give "
                "them the reference.")
    if isinstance(exc, IFJudgeError):  # IFJudge's own messages are written for users
        return md_escape(str(exc))
    return (f"Something went wrong on the server (reference {reference}). {STORED} Reload the page; if it "
            "happens again, tell your project lead and give them the reference.")


def show_failure(exc: BaseException) -> None:
    """Log ``exc`` with its traceback under a new reference and show :func:`failure_message`."""
    reference = secrets.token_hex(4)
    LOG.error("page failure (reference %s)", reference, exc_info=exc)
    st.error(failure_message(exc, reference))
