"""The PostgreSQL engine: a connection pool per URL and a database object with the same surface
the storage modules use on SQLite (``execute``, ``executemany``, ``table_names``, ``close``).

Outside a write transaction every statement borrows a pooled connection for its own duration and
returns its rows already fetched, so an object from :func:`storage.db.connect` holds no connection
between statements: one per Streamlit run or CLI call is cheap, and nothing leaks when a page
forgets to close it. Inside :func:`storage.db.write` one connection is held for the transaction.
Statements are rewritten from the SQLite dialect by :mod:`storage.dialect`.

psycopg (3) and psycopg_pool are imported only when a ``postgresql://`` URL is opened.
"""
from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator, Sequence

from storage import dialect
from storage.errors import IFJudgeError

POOL_MIN = 1
POOL_MAX = 16
POOL_TIMEOUT = 30.0  # seconds a statement waits for a pooled connection before it is refused
_pools: dict[str, object] = {}
_pools_lock = threading.Lock()


def is_url(target: object) -> bool:
    """True for a PostgreSQL connection URL (``postgresql://`` or ``postgres://``).

    >>> is_url("postgresql://ifjudge@db.example/ifjudge"), is_url("data/ifjudge.db")
    (True, False)
    """
    return isinstance(target, str) and bool(re.match(r"^postgres(ql)?://", target))


def redact(url: str) -> str:
    """The URL with its password hidden, for messages and logs.

    >>> redact("postgresql://lead:s3cret@db:5432/ifjudge")
    'postgresql://lead:***@db:5432/ifjudge'
    """
    return re.sub(r"(//[^:/@]+):[^@/]*@", r"\1:***@", url)


def password_env(url: str, env: dict | None = None) -> tuple[str, dict]:
    """The URL without its password, and an environment holding it as ``PGPASSWORD``: what a
    PostgreSQL program (``pg_dump``, ``pg_restore``) is started with, so that no password shows in
    its command line (``ps``).

    >>> bare, env = password_env("postgresql://lead:s%40cret@db:5432/ifjudge", {})
    >>> bare, env["PGPASSWORD"]
    ('postgresql://lead@db:5432/ifjudge', 's@cret')
    """
    import os
    from urllib.parse import unquote, urlsplit, urlunsplit

    env = dict(os.environ if env is None else env)
    parts = urlsplit(url)
    if parts.password is None:
        return url, env
    env["PGPASSWORD"] = unquote(parts.password)
    host = parts.netloc.rsplit("@", 1)[1]
    user = parts.netloc.rsplit("@", 1)[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}@{host}")), env


class DatabaseUnavailable(IFJudgeError):
    """The PostgreSQL server cannot be reached, or refuses the user, the database or one more connection."""


# what PostgreSQL says when every slot of max_connections is taken (SQLSTATE 53300; the second is
# the refusal of a non-superuser when only the reserved slots are left)
_FULL = ("too many clients already", "connection slots are reserved")


def refusal(url: str, reason: str) -> str:
    """The message for a refused connection; when the server is full (``max_connections``), what
    to do about it.

    >>> refusal("postgresql://u:pw@db/ifjudge", "FATAL: sorry, too many clients already")[:105]
    'postgresql://u:***@db/ifjudge: cannot connect (FATAL: sorry, too many clients already): the server has no'
    >>> refusal("postgresql://u@db/x", "password authentication failed for user u")
    'postgresql://u@db/x: cannot connect (password authentication failed for user u)'
    """
    reason = " ".join(reason.split())
    message = f"{redact(url)}: cannot connect ({reason})"
    if any(marker in reason for marker in _FULL):
        message += (
            ": the server has no connection left (its max_connections is reached). Each IFJudge process"
            f" (an app server, a worker, a command) keeps a pool of up to {POOL_MAX} connections. Raise"
            " max_connections in postgresql.conf and restart PostgreSQL, or run fewer processes:"
            f" connections needed = app server processes x {POOL_MAX} + workers x 2 + a margin"
            " (docs/deployment.md, \"Connections\"). Nothing was stored by the refused request."
        )
    return message


def _server_reason(url: str) -> str | None:
    """Why a new connection to ``url`` fails now (the server's message), or None if it succeeds."""
    import psycopg

    try:
        psycopg.connect(url, connect_timeout=10).close()
    except psycopg.Error as exc:
        return str(exc) or type(exc).__name__
    return None


class Result:
    """A statement's outcome with its rows already fetched (cursor-like: iterate, fetchone, fetchall)."""

    def __init__(self, rows: list[tuple], rowcount: int, lastrowid: int | None, description):
        self._rows = rows
        self._next = 0
        self.rowcount = rowcount
        self.lastrowid = lastrowid
        self.description = description

    def fetchone(self):
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[tuple]:
        rows, self._next = self._rows[self._next:], len(self._rows)
        return rows

    def __iter__(self):
        return iter(self.fetchall())


def configure(conn) -> None:
    """Values as SQLite gives them back: bool as 0/1 both ways, numeric (SUM, AVG) as int or float."""
    from psycopg.adapt import Loader
    from psycopg.types.numeric import IntDumper

    class BoolDumper(IntDumper):
        def dump(self, obj):
            return b"1" if obj else b"0"

    class BoolLoader(Loader):
        def load(self, data):
            return 1 if bytes(data) == b"t" else 0

    class NumericLoader(Loader):
        def load(self, data):
            text = bytes(data).decode()
            return int(text) if re.fullmatch(r"-?\d+", text) else float(text)

    conn.adapters.register_dumper(bool, BoolDumper)
    conn.adapters.register_loader("bool", BoolLoader)
    conn.adapters.register_loader("numeric", NumericLoader)


def pool(url: str):
    """The process's connection pool for ``url`` (opened on first use)."""
    with _pools_lock:
        p = _pools.get(url)
        if p is None:
            try:
                import psycopg
                from psycopg_pool import ConnectionPool
            except ImportError:  # pragma: no cover - a requirement of IFJudge
                raise RuntimeError("PostgreSQL needs psycopg and psycopg_pool: pip install -r requirements.txt") from None
            # one direct connection first: a wrong URL (or a full server) fails at once, with the reason
            reason = _server_reason(url)
            if reason is not None:
                raise DatabaseUnavailable(refusal(url, reason))
            p = ConnectionPool(
                url, min_size=POOL_MIN, max_size=POOL_MAX, open=False, configure=configure,
                kwargs={"autocommit": True}, name="ifjudge",
            )
            try:
                p.open(wait=True, timeout=POOL_TIMEOUT)
            except psycopg.OperationalError:  # PoolTimeout: refused between the check and the pool
                p.close()
                raise _unavailable(url) from None
            _pools[url] = p
        return p


def _unavailable(url: str) -> DatabaseUnavailable:
    """No pooled connection came within the pool's time-out: the server's reason if a new
    connection is refused now (e.g. max_connections reached), else the pool was busy."""
    reason = _server_reason(url)
    if reason is not None:
        return DatabaseUnavailable(refusal(url, reason))
    return DatabaseUnavailable(
        f"{redact(url)}: no connection of this process's pool ({POOL_MAX} at most) came free within"
        f" {POOL_TIMEOUT:.0f} s; nothing was stored by this request: try again")


@contextlib.contextmanager
def borrow(url: str) -> Iterator:
    """A pooled connection for the block; a refusal by the server becomes a
    :class:`DatabaseUnavailable` that says why (only the borrowing is guarded, never the block)."""
    from psycopg_pool import PoolTimeout

    p = pool(url)
    try:
        conn = p.getconn(timeout=POOL_TIMEOUT)
    except PoolTimeout:
        raise _unavailable(url) from None
    try:
        with conn:  # as ConnectionPool.connection(): commit or roll back, then back to the pool
            yield conn
    finally:
        p.putconn(conn)


def close_pool(url: str) -> None:
    """Close the pool of ``url`` (tests drop their databases after this)."""
    with _pools_lock:
        p = _pools.pop(url, None)
    if p is not None:
        p.close()


class PgDatabase:
    """A PostgreSQL database with the methods storage uses on a ``Database``."""

    engine = dialect.POSTGRESQL

    def __init__(self, url: str, id_tables: set[str]):
        self.url = url
        self._id_tables = id_tables
        self._tx = None  # the connection of the open write transaction
        pool(url)

    def __repr__(self) -> str:
        return f"<PgDatabase {redact(self.url)}>"

    @property
    def location(self) -> str:
        return redact(self.url)

    @property
    def target(self) -> str:
        return self.url

    @property
    def in_transaction(self) -> bool:
        return self._tx is not None

    @contextlib.contextmanager
    def _conn(self) -> Iterator:
        if self._tx is not None:
            yield self._tx
        else:
            with borrow(self.url) as conn:
                yield conn

    def execute(self, sql: str, params: Sequence = ()) -> Result:
        table = dialect.inserted_table(sql)
        returning = table in self._id_tables and "RETURNING" not in sql.upper()
        with self._conn() as conn:
            cur = conn.execute(dialect.pg_sql(sql, returning_id=returning), list(params))
            rows = cur.fetchall() if cur.description is not None else []
            lastrowid = rows[0][0] if returning and rows else None
            return Result([] if returning else rows, cur.rowcount, lastrowid, None if returning else cur.description)

    def executemany(self, sql: str, rows) -> None:
        rows = [list(r) for r in rows]
        if not rows:
            return
        with self._conn() as conn, conn.cursor() as cur:
            cur.executemany(dialect.pg_sql(sql), rows)

    def after_bulk_insert(self, table: str, key: str) -> None:
        """Rows were inserted with explicit keys: move the identity past the largest one."""
        with self._conn() as conn:
            conn.execute(
                f"SELECT setval(pg_get_serial_sequence(%s, %s), COALESCE((SELECT MAX({key}) FROM \"{table}\"), 0) + 1, false)",
                [f'"{table}"', key],
            )

    def column_names(self, table: str) -> list[str]:
        """The table's columns as the migrations declare them (without the explicit ``rowid``)."""
        return [r[0] for r in self.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND table_name = ? AND column_name != 'rowid' ORDER BY ordinal_position", [table])]

    def table_names(self) -> list[str]:
        with self._conn() as conn:
            return [
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables"
                    " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name"
                )
            ]

    @contextlib.contextmanager
    def transaction(self, lock: tuple[int, int]) -> Iterator[None]:
        """One transaction on one pooled connection, serialised with the others holding ``lock``
        (an advisory transaction lock: released at commit or rollback)."""
        if self._tx is not None:
            raise RuntimeError("storage.db.write() does not nest: one transaction per operation")
        with borrow(self.url) as conn:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", list(lock))
                self._tx = conn
                try:
                    yield
                finally:
                    self._tx = None

    def close(self) -> None:
        """Nothing is held between statements; the pool stays for the process."""


def with_database(url: str, name: str) -> str:
    """The same server, user and options, another database.

    >>> with_database("postgresql://u@h:5/main?options=-csearch_path%3Ds", "scratch")
    'postgresql://u@h:5/scratch?options=-csearch_path%3Ds'
    """
    base, _, query = url.partition("?")
    head, _, _ = base.rpartition("/")
    return f"{head}/{name}" + (f"?{query}" if query else "")
