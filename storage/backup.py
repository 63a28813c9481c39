"""Online backup of the database and the check of a backup copy.

:func:`backup` copies a live database with SQLite's online backup API
(:meth:`sqlite3.Connection.backup`) in a single step: the copy is one read transaction, so it is
a consistent snapshot of every transaction committed before the copy began, while other
processes keep writing (WAL: readers and the writer do not block each other). The copy is
written to a temporary file beside ``out``, switched to ``journal_mode = DELETE`` (one
self-contained file, no ``-wal`` / ``-shm`` companions), checked, and only then renamed to
``out``: a crash never leaves a half-written file under the backup's name.

:func:`check` is the restore check: ``PRAGMA integrity_check``, the schema version against the
one this code knows, and the row count of every table.
"""
from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from storage.db import SCHEMA_VERSION, create_private
from storage.errors import IFJudgeError


class BackupError(IFJudgeError):
    """A backup could not be made, or a backup file failed its check."""


def _table_counts(conn: sqlite3.Connection) -> dict[str, int]:
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    return {n: conn.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0] for n in names}


def _inspect(conn: sqlite3.Connection, path: str) -> dict:
    try:
        problems = [r[0] for r in conn.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{path}: not a readable SQLite database ({exc})") from None
    if problems != ["ok"]:
        raise BackupError(f"{path}: integrity_check failed: {'; '.join(problems[:5])}")
    has_migrations = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if not has_migrations:
        raise BackupError(f"{path}: no schema_migrations table; expected an IFJudge database")
    version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] or 0
    if version > SCHEMA_VERSION:
        raise BackupError(
            f"{path}: schema version {version} is newer than this IFJudge's {SCHEMA_VERSION}; "
            "restore it with a newer IFJudge"
        )
    return {"path": path, "integrity": "ok", "schema_version": version, "counts": _table_counts(conn)}


def check(path: str | os.PathLike) -> dict:
    """Check a backup (or any IFJudge database file) without changing it.

    Opens the file read-only and runs ``PRAGMA integrity_check`` (must answer ``ok``), reads the
    schema version (must be at most :data:`storage.db.SCHEMA_VERSION`; an older one is upgraded
    by :func:`storage.db.connect` when the file is restored) and counts the rows of every table.

    Parameters
    ----------
    path : str or PathLike
        The backup file.

    Returns
    -------
    dict
        ``{"path", "integrity": "ok", "schema_version", "counts": {table: rows}}``.

    Raises
    ------
    BackupError
        Missing file, not an SQLite database, a failed integrity check, no IFJudge schema, or a
        schema newer than this code.

    Examples
    --------
    >>> import tempfile
    >>> from storage.db import connect
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = connect(folder / "ifjudge.db")  # a new database: the schema, no rows
    >>> result = check(folder / "ifjudge.db")
    >>> result["integrity"], result["schema_version"] == SCHEMA_VERSION, result["counts"]["labels"]
    ('ok', True, 0)
    """
    p = Path(path)
    if not p.is_file():
        raise BackupError(f"{p}: no such file")
    try:
        conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise BackupError(f"{p}: cannot open ({exc})") from None
    try:
        return _inspect(conn, str(p))
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"{p}: not a readable SQLite database ({exc})") from None
    finally:
        conn.close()


def backup(src: str | os.PathLike, out: str | os.PathLike, *, overwrite: bool = False) -> dict:
    """Copy the live database ``src`` to ``out`` with SQLite's online backup API, then check it.

    Safe while other processes write: the copy is one consistent snapshot taken in a single
    backup step (``Connection.backup(pages=-1)``), holding only a read transaction on ``src``, so
    writers are not blocked under WAL and every transaction committed before the backup began is
    in the copy.

    Parameters
    ----------
    src : str or PathLike
        The database in use (``IFJUDGE_DB``).
    out : str or PathLike
        The backup file to create; its directory is created if needed.
    overwrite : bool, keyword-only
        Replace an existing ``out`` (default: refuse).

    Returns
    -------
    dict
        :func:`check`'s result plus ``"seconds"`` (time the copy took) and ``"bytes"``.

    Raises
    ------
    BackupError
        ``src`` missing or not a database, ``out`` equal to ``src`` or existing without
        ``overwrite``, or the copy failing its check.

    Examples
    --------
    >>> import tempfile
    >>> from storage.db import connect
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = connect(folder / "ifjudge.db")
    >>> backup(folder / "ifjudge.db", folder / "backups" / "ifjudge-2025-01-31.db")["integrity"]
    'ok'
    """
    src_p, out_p = Path(src), Path(out)
    if not src_p.is_file():
        raise BackupError(f"{src_p}: no such database file")
    if out_p.exists() and out_p.resolve() == src_p.resolve():
        raise BackupError(f"{out_p}: the backup must not be the database itself")
    if out_p.exists() and not overwrite:
        raise BackupError(f"{out_p} already exists; choose a new name (e.g. with the date) or pass --force")
    out_p.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_p.with_name(f".{out_p.name}.{os.getpid()}.partial")
    tmp.unlink(missing_ok=True)
    start = time.perf_counter()
    # read-write open (never written through): a read-only open of a WAL database fails when no
    # other process holds its -shm file
    source = sqlite3.connect(str(src_p), timeout=30)
    try:
        create_private(tmp)  # owner-only, as the database: a backup holds every password hash and answer
        dest = sqlite3.connect(str(tmp))
        try:
            source.execute("PRAGMA busy_timeout = 30000")
            source.backup(dest, pages=-1)
            dest.execute("PRAGMA journal_mode = DELETE")
            dest.commit()
        except sqlite3.DatabaseError as exc:
            raise BackupError(f"{src_p}: backup failed ({exc})") from None
        finally:
            dest.close()
    finally:
        source.close()
    seconds = time.perf_counter() - start
    try:
        result = check(tmp)
    except BackupError:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, out_p)
    return {**result, "path": str(out_p), "seconds": seconds, "bytes": out_p.stat().st_size}


# ---- PostgreSQL: pg_dump, and a restore check into a scratch database ------------------------
PG_MAGIC = b"PGDMP"


def _pg_tool(name: str) -> str:
    """The newest ``pg_dump`` / ``pg_restore`` on this machine (Debian keeps them per version)."""
    import glob
    import shutil

    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    tool = found[-1] if found else shutil.which(name)
    if not tool:
        raise BackupError(f"{name} not found: install PostgreSQL's client programs (Debian: postgresql-client)")
    return tool


def _manifest_path(out: Path) -> Path:
    return out.with_name(out.name + ".manifest.json")


def backup_postgresql(url: str, out: str | os.PathLike, *, overwrite: bool = False) -> dict:
    """``pg_dump`` of the database at ``url`` (custom format) plus a manifest of its checksums.

    The checksums are computed inside the very snapshot that pg_dump copies (a repeatable-read
    transaction exports it; ``pg_dump --snapshot`` uses it), so :func:`check_postgresql` can
    prove that a restore holds exactly what was backed up, while annotators keep writing.
    """
    import json
    import subprocess

    import psycopg

    from storage import transfer
    from storage.db import connect
    from storage.dialect import pg_sql
    from storage.postgres import configure, password_env, redact

    out_p = Path(out)
    if out_p.exists() and not overwrite:
        raise BackupError(f"{out_p} already exists; choose a new name (e.g. with the date) or pass --force")
    out_p.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_p.with_name(f".{out_p.name}.{os.getpid()}.partial")
    tmp.unlink(missing_ok=True)
    bare, env = password_env(url)
    start = time.perf_counter()
    db = connect(url)  # the schema is current before it is copied
    with psycopg.connect(url) as conn:
        configure(conn)
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        snapshot = conn.execute("SELECT pg_export_snapshot()").fetchone()[0]
        checksums = transfer.table_checksums(db, lambda sql: conn.execute(pg_sql(sql)).fetchall())
        version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
        create_private(tmp)  # owner-only: pg_dump writes into it without changing its mode
        done = subprocess.run(
            [_pg_tool("pg_dump"), "--format=custom", "--no-owner", "--no-privileges", f"--snapshot={snapshot}",
             f"--file={tmp}", f"--dbname={bare}"],
            capture_output=True, text=True, env=env,
        )
        conn.rollback()
    if done.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise BackupError(f"pg_dump of {redact(url)} failed: {done.stderr.strip()[:500]}")
    manifest = {"engine": "postgresql", "source": redact(url), "schema_version": version, "tables": checksums,
                "dump": out_p.name}
    manifest_p = _manifest_path(out_p)
    manifest_p.unlink(missing_ok=True)
    create_private(manifest_p)
    manifest_p.write_text(json.dumps(manifest, indent=1))
    os.replace(tmp, out_p)
    counts = {t: v["rows"] for t, v in checksums.items()}
    return {"path": str(out_p), "integrity": "ok", "schema_version": version, "counts": counts,
            "seconds": time.perf_counter() - start, "bytes": out_p.stat().st_size,
            "manifest": str(_manifest_path(out_p))}


def check_postgresql(path: str | os.PathLike, server: str) -> dict:
    """Restore the dump ``path`` into a scratch database on ``server`` (any database URL of the
    server; the scratch one is created and dropped) and compare every table's row count and
    checksum with the manifest written beside the dump."""
    import json
    import subprocess
    import uuid

    import psycopg

    from storage import transfer
    from storage.db import connect
    from storage.postgres import close_pool, password_env, redact, with_database

    p = Path(path)
    manifest_p = _manifest_path(p)
    if not manifest_p.is_file():
        raise BackupError(f"{manifest_p}: missing; a PostgreSQL backup is checked against the manifest "
                          "`ifjudge backup` writes beside the dump")
    manifest = json.loads(manifest_p.read_text())
    scratch = f"ifjudge_check_{uuid.uuid4().hex[:10]}"
    scratch_url = with_database(server, scratch)
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{scratch}"')
    try:
        bare, env = password_env(scratch_url)
        done = subprocess.run(
            [_pg_tool("pg_restore"), "--no-owner", "--no-privileges", "--exit-on-error", f"--dbname={bare}", str(p)],
            capture_output=True, text=True, env=env,
        )
        if done.returncode != 0:
            raise BackupError(f"{p}: pg_restore failed: {done.stderr.strip()[:500]}")
        restored = connect(scratch_url)
        got = transfer.table_checksums(restored)
        close_pool(scratch_url)
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')
    wrong = [t for t, want in manifest["tables"].items() if got.get(t) != want]
    if wrong:
        raise BackupError(f"{p}: the restore differs from the backup in {', '.join(wrong)}")
    return {"path": str(p), "integrity": "ok", "schema_version": manifest["schema_version"],
            "counts": {t: v["rows"] for t, v in got.items()}, "restored_into": redact(server),
            "tables_verified": len(got)}


def is_pg_dump(path: str | os.PathLike) -> bool:
    """True when ``path`` is a pg_dump archive (custom format) rather than a SQLite file."""
    try:
        with open(path, "rb") as f:
            return f.read(5) == PG_MAGIC
    except OSError:
        return False
