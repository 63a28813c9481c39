"""Copy a whole IFJudge database from one engine to the other, and the checksums that prove it.

:func:`copy_database` is ``ifjudge migrate``: every table, in the order the schema creates them
(parents before children), row for row with its id (and, for tables without one, its insertion
order, ``rowid``), in one write transaction on the target, which must be empty. Afterwards
:func:`table_checksums` of both sides must agree table by table (row count and a SHA-256 of the
rows in key order) or the copy is reported as failed.

>>> import tempfile
>>> from pathlib import Path
>>> from storage.db import connect
>>> folder = Path(tempfile.mkdtemp())
>>> report = copy_database(connect(folder / "a.db"), connect(folder / "b.db"))
>>> report["verified"], report["tables"]["users"]["rows"]
(True, 0)
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable

from storage.db import ID_TABLES, MIGRATIONS, Database, write
from storage.errors import IFJudgeError

BATCH = 5_000


class TransferError(IFJudgeError):
    """The target is not empty, the schemas differ, or the copy does not match its source."""


def data_tables() -> list[str]:
    """Every table of the schema, in the order the migrations create them (parents first)."""
    names = []
    for _, _, sql in MIGRATIONS:
        names += re.findall(r"CREATE\s+TABLE\s+(\w+)", sql, re.IGNORECASE)
    return names


def columns(db: Database, table: str) -> list[str]:
    """The table's columns as declared by the migrations, key first (``id`` or ``rowid``)."""
    found = db.column_names(table)
    return found if table in ID_TABLES else ["rowid", *found]


def _key(table: str) -> str:
    return "id" if table in ID_TABLES else "rowid"


def _canonical(value) -> object:
    return repr(value) if isinstance(value, float) else value


def table_checksums(db: Database, query: Callable[[str], list[tuple]] | None = None) -> dict[str, dict]:
    """table -> {"rows", "sha256"}: the rows in key order, every value as the engine returns it
    (text, integer, float by its repr, null). Equal on both engines for the same data.

    ``query`` reads through another connection (a backup's snapshot); default ``db.execute``.
    """
    query = query or (lambda sql: db.execute(sql).fetchall())
    out = {}
    for table in data_tables():
        cols = columns(db, table)
        h = hashlib.sha256()
        rows = query(f'SELECT {", ".join(cols)} FROM "{table}" ORDER BY {_key(table)}')
        for row in rows:
            h.update(json.dumps([_canonical(v) for v in row], ensure_ascii=False).encode())
            h.update(b"\n")
        out[table] = {"rows": len(rows), "sha256": h.hexdigest()}
    return out


def _refuse_non_empty(db: Database) -> None:
    full = [t for t in data_tables() if db.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchone() is not None]
    if full:
        raise TransferError(
            f"{db.location}: the target is not empty ({', '.join(full[:5])} hold rows); "
            "migrate into a new, empty database"
        )


def copy_database(source: Database, target: Database) -> dict:
    """Copy every row of ``source`` into the empty ``target`` and verify the copy.

    Both are opened by :func:`storage.db.connect`, so both carry the same schema version.
    Returns ``{"tables": {table: {"rows", "sha256"}}, "verified": True, "seconds"}``.

    Raises
    ------
    TransferError
        ``target`` holds rows, or a table's checksum differs after the copy (nothing is kept:
        the copy is one transaction, rolled back).
    """
    start = time.perf_counter()
    _refuse_non_empty(target)
    expected = table_checksums(source)
    with write(target):
        for table in data_tables():
            cols = columns(source, table)
            sql = f'INSERT INTO "{table}" ({", ".join(cols)}) VALUES ({", ".join("?" * len(cols))})'
            rows = source.execute(f'SELECT {", ".join(cols)} FROM "{table}" ORDER BY {_key(table)}').fetchall()
            for i in range(0, len(rows), BATCH):
                target.executemany(sql, rows[i:i + BATCH])
            target.after_bulk_insert(table, _key(table))
        got = table_checksums(target)
        wrong = [t for t in expected if expected[t] != got.get(t)]
        if wrong:
            raise TransferError(
                "the copy does not match its source in " + ", ".join(
                    f"{t} ({expected[t]['rows']} rows, {got[t]['rows']} copied)" for t in wrong)
                + "; nothing was kept"
            )
    return {"tables": expected, "verified": True, "seconds": time.perf_counter() - start}
