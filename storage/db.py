"""Opening the database, the schema and its migrations, and the write gateway.

Two engines behind one surface: a file path opens SQLite (the embedded default, through
sqlite-utils), a ``postgresql://`` URL opens PostgreSQL (:mod:`storage.postgres`). Code above
``storage/`` does not know which one it talks to. Every SQLite connection is opened here: WAL
journal, a busy timeout, foreign keys on. The schema evolves
through numbered migrations recorded in ``schema_migrations``; :func:`connect` applies the missing
ones. Writes that read and then write go through :func:`write`, which opens the transaction with
``BEGIN IMMEDIATE`` so that concurrent writers queue on the busy timeout instead of failing with
"database is locked" halfway through.
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from storage import dialect
from storage.postgres import PgDatabase, is_url

# sqlite-utils imports pandas and numpy when present (0.3-0.5 s, paid by every command) only to map
# their types to column types in the tables *it* creates; IFJudge creates its tables with SQL and
# passes plain Python values. So a command imports it as if they were absent (they import as usual
# afterwards); not in a process with other threads (a server), where another import could see them hidden.
_HIDDEN = [name for name in ("pandas", "numpy") if name not in sys.modules] if threading.active_count() == 1 else []
sys.modules.update(dict.fromkeys(_HIDDEN))
try:
    import sqlite_utils
finally:
    for _name in _HIDDEN:
        del sys.modules[_name]

BUSY_TIMEOUT_MS = 30_000
DEFAULT_DB_ENV = "IFJUDGE_DB"
DEFAULT_DB_PATH = Path("data") / "ifjudge.db"

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "initial schema",
        """
        CREATE TABLE users (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            role TEXT NOT NULL CHECK (role IN ('annotator', 'lead', 'expert')),
            password_hash TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE sign_in_attempts (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            at REAL NOT NULL,
            success INTEGER NOT NULL
        );
        CREATE INDEX sign_in_attempts_name ON sign_in_attempts (name, at);
        CREATE TABLE projects (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL CHECK (kind IN ('instructir', 'followir', 'infosearch', 'ifir', 'generic')),
            created_at TEXT NOT NULL
        );
        CREATE TABLE imports (
            id INTEGER PRIMARY KEY,
            project_id INTEGER NOT NULL REFERENCES projects (id),
            format TEXT NOT NULL,
            counts TEXT NOT NULL,
            source_files TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE documents (
            project_id INTEGER NOT NULL REFERENCES projects (id),
            doc_id TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL,
            PRIMARY KEY (project_id, doc_id)
        );
        CREATE TABLE queries (
            project_id INTEGER NOT NULL REFERENCES projects (id),
            query_id TEXT NOT NULL,
            text TEXT NOT NULL,
            PRIMARY KEY (project_id, query_id)
        );
        CREATE TABLE instances (
            project_id INTEGER NOT NULL REFERENCES projects (id),
            instance_id TEXT NOT NULL,
            query_id TEXT NOT NULL,
            group_id TEXT NOT NULL,
            instruction TEXT NOT NULL,
            variant TEXT NOT NULL,
            PRIMARY KEY (project_id, instance_id)
        );
        CREATE INDEX instances_group ON instances (project_id, group_id);
        CREATE TABLE qrels (
            project_id INTEGER NOT NULL REFERENCES projects (id),
            version TEXT NOT NULL,
            qid TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            relevance INTEGER NOT NULL,
            PRIMARY KEY (project_id, version, qid, doc_id)
        );
        CREATE TABLE top_ranked (
            project_id INTEGER NOT NULL REFERENCES projects (id),
            qid TEXT NOT NULL,
            doc_ids TEXT NOT NULL,
            PRIMARY KEY (project_id, qid)
        );
        CREATE TABLE narrative_versions (
            id INTEGER PRIMARY KEY,
            project_id INTEGER NOT NULL REFERENCES projects (id),
            query_id TEXT NOT NULL,
            variant TEXT NOT NULL,
            text TEXT NOT NULL,
            author TEXT NOT NULL,
            created_at TEXT NOT NULL,
            parent_id INTEGER REFERENCES narrative_versions (id)
        );
        CREATE INDEX narrative_versions_query ON narrative_versions (project_id, query_id);
        CREATE TABLE studies (
            id INTEGER PRIMARY KEY,
            project_id INTEGER NOT NULL REFERENCES projects (id),
            name TEXT NOT NULL,
            questions TEXT NOT NULL,
            settings TEXT NOT NULL,
            created_by TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE study_annotators (
            study_id INTEGER NOT NULL REFERENCES studies (id),
            user_id INTEGER NOT NULL REFERENCES users (id),
            PRIMARY KEY (study_id, user_id)
        );
        CREATE TABLE items (
            id INTEGER PRIMARY KEY,
            study_id INTEGER NOT NULL REFERENCES studies (id),
            screen TEXT NOT NULL,
            position INTEGER NOT NULL,
            instance_id TEXT NOT NULL,
            question TEXT NOT NULL,
            doc_id TEXT,
            narrative_version_id INTEGER REFERENCES narrative_versions (id),
            payload TEXT NOT NULL DEFAULT '{}',
            cap INTEGER NOT NULL
        );
        CREATE INDEX items_screen ON items (study_id, screen);
        CREATE TABLE assignments (
            item_id INTEGER NOT NULL REFERENCES items (id),
            user_id INTEGER NOT NULL REFERENCES users (id),
            state TEXT NOT NULL CHECK (state IN ('pending', 'claimed', 'done')),
            claimed_at REAL,
            position INTEGER NOT NULL,
            PRIMARY KEY (item_id, user_id)
        );
        CREATE INDEX assignments_user ON assignments (user_id, state, position);
        CREATE TABLE labels (
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES items (id),
            user_id INTEGER NOT NULL REFERENCES users (id),
            value TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            shown_order TEXT,
            started_at REAL,
            submitted_at REAL NOT NULL,
            duration_ms INTEGER,
            supersedes INTEGER REFERENCES labels (id)
        );
        CREATE INDEX labels_item_user ON labels (item_id, user_id, id);
        CREATE INDEX labels_user ON labels (user_id, id);
        CREATE TABLE adjudications (
            id INTEGER PRIMARY KEY,
            item_id INTEGER NOT NULL REFERENCES items (id),
            value TEXT NOT NULL,
            lead TEXT NOT NULL,
            note TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL
        );
        CREATE INDEX adjudications_item ON adjudications (item_id, id);
        CREATE TABLE eval_runs (
            id INTEGER PRIMARY KEY,
            project_id INTEGER NOT NULL REFERENCES projects (id),
            model TEXT NOT NULL,
            template TEXT NOT NULL,
            settings TEXT NOT NULL,
            qrels_version TEXT NOT NULL,
            metrics TEXT NOT NULL,
            per_query TEXT NOT NULL,
            run TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE settings (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        """,
    ),
    (
        2,
        "query subsets (IFIR domain, InfoSearch dimension, MTEB subset)",
        """
        ALTER TABLE queries ADD COLUMN subset TEXT NOT NULL DEFAULT '';
        """,
    ),
    (
        3,
        "qrels builds and per-judgment provenance of the validated qrels versions",
        """
        CREATE TABLE qrels_builds (
            id INTEGER PRIMARY KEY,
            project_id INTEGER NOT NULL REFERENCES projects (id),
            version TEXT NOT NULL,
            base_version TEXT NOT NULL,
            studies TEXT NOT NULL,
            settings TEXT NOT NULL,
            counts TEXT NOT NULL,
            created_by TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX qrels_builds_version ON qrels_builds (project_id, version, id);
        CREATE TABLE qrels_provenance (
            build_id INTEGER NOT NULL REFERENCES qrels_builds (id),
            qid TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            published INTEGER,
            relevance INTEGER,
            provenance TEXT NOT NULL CHECK (provenance IN ('unanimous', 'majority', 'adjudicated', 'unresolved', 'not checked')),
            reason TEXT NOT NULL DEFAULT '',
            label_counts TEXT NOT NULL DEFAULT '{}',
            studies TEXT NOT NULL DEFAULT '[]',
            PRIMARY KEY (build_id, qid, doc_id)
        );
        """,
    ),
    (
        4,
        "guideline acknowledgements (an annotator has read a study's goal and guidelines)",
        """
        CREATE TABLE guideline_acks (
            study_id INTEGER NOT NULL REFERENCES studies (id),
            user_id INTEGER NOT NULL REFERENCES users (id),
            acked_at TEXT NOT NULL,
            PRIMARY KEY (study_id, user_id)
        );
        """,
    ),
    (
        5,
        "jobs: evaluations run by a worker process, outliving the page that started them",
        """
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            project_id INTEGER REFERENCES projects (id),
            parameters TEXT NOT NULL,
            dedupe_key TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'finished', 'failed', 'cancelled')),
            done INTEGER NOT NULL DEFAULT 0,
            total INTEGER NOT NULL DEFAULT 0,
            message TEXT NOT NULL DEFAULT '',
            stage_started_at REAL,
            attempts INTEGER NOT NULL DEFAULT 0,
            max_attempts INTEGER NOT NULL DEFAULT 2,
            worker_id TEXT,
            heartbeat_at REAL,
            cancel_requested INTEGER NOT NULL DEFAULT 0,
            error TEXT NOT NULL DEFAULT '',
            result_ids TEXT NOT NULL DEFAULT '[]',
            created_by TEXT NOT NULL,
            created_at REAL NOT NULL,
            started_at REAL,
            updated_at REAL NOT NULL,
            finished_at REAL
        );
        CREATE UNIQUE INDEX jobs_active_dedupe ON jobs (dedupe_key) WHERE state IN ('queued', 'running');
        CREATE INDEX jobs_state ON jobs (state, id);
        CREATE INDEX jobs_project ON jobs (project_id, id);
        """,
    ),
    (
        6,
        "drafts: answers chosen on a screen but not submitted yet (they survive a reload)",
        """
        CREATE TABLE drafts (
            study_id INTEGER NOT NULL REFERENCES studies (id),
            user_id INTEGER NOT NULL REFERENCES users (id),
            screen TEXT NOT NULL,
            question TEXT NOT NULL,
            value TEXT,
            reason TEXT NOT NULL DEFAULT '',
            updated_at REAL NOT NULL,
            PRIMARY KEY (study_id, user_id, screen, question)
        );
        """,
    ),
    (
        7,
        "judge labels: a model's answers, apart from the human labels, with their provenance",
        """
        CREATE TABLE judge_prompts (
            id INTEGER PRIMARY KEY,
            question TEXT NOT NULL,
            version TEXT NOT NULL,
            system TEXT NOT NULL,
            user_template TEXT NOT NULL,
            source TEXT NOT NULL DEFAULT '',
            hash TEXT NOT NULL,
            author TEXT NOT NULL,
            note TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            UNIQUE (question, version)
        );
        CREATE TABLE judge_runs (
            id INTEGER PRIMARY KEY,
            project_id INTEGER NOT NULL REFERENCES projects (id),
            question TEXT NOT NULL,
            judge TEXT NOT NULL,
            model TEXT NOT NULL,
            base_url TEXT NOT NULL DEFAULT '',
            prompt_version TEXT NOT NULL DEFAULT '',
            prompt_hash TEXT NOT NULL DEFAULT '',
            prompt TEXT NOT NULL DEFAULT '{}',
            parameters TEXT NOT NULL,
            config_key TEXT NOT NULL,
            created_by TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX judge_runs_project ON judge_runs (project_id, question, id);
        CREATE INDEX judge_runs_config ON judge_runs (config_key);
        CREATE TABLE judge_items (
            run_id INTEGER NOT NULL REFERENCES judge_runs (id),
            instance_id TEXT NOT NULL,
            question TEXT NOT NULL,
            doc_id TEXT NOT NULL DEFAULT '',
            payload TEXT NOT NULL DEFAULT '{}',
            position INTEGER NOT NULL,
            PRIMARY KEY (run_id, instance_id, question, doc_id)
        );
        CREATE TABLE judge_labels (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES judge_runs (id),
            instance_id TEXT NOT NULL,
            question TEXT NOT NULL,
            doc_id TEXT NOT NULL DEFAULT '',
            value TEXT,
            score REAL,
            raw TEXT NOT NULL DEFAULT '',
            payload TEXT NOT NULL DEFAULT '{}',
            error TEXT NOT NULL DEFAULT '',
            prompt_hash TEXT NOT NULL DEFAULT '',
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            counted_tokens INTEGER,
            retries INTEGER NOT NULL DEFAULT 0,
            latency_ms INTEGER,
            created_at REAL NOT NULL,
            UNIQUE (run_id, instance_id, question, doc_id)
        );
        """,
    ),
    (
        8,
        "subset corpora (each IFIR domain, InfoSearch dimension, MTEB subset ranked against its own documents)"
        " and the variant of bare queries (IFIR <qid>_0)",
        """
        CREATE TABLE subset_documents (
            project_id INTEGER NOT NULL REFERENCES projects (id),
            subset TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            PRIMARY KEY (project_id, subset, doc_id)
        );
        UPDATE instances SET variant = 'bare'
            WHERE instruction = '' AND variant = 'og' AND group_id = query_id AND instance_id = query_id || '_0'
            AND project_id IN (SELECT id FROM projects WHERE kind = 'ifir');
        INSERT INTO subset_documents (project_id, subset, doc_id)
            SELECT d.project_id, s.subset, d.doc_id FROM documents d
            JOIN (SELECT DISTINCT project_id, subset FROM queries WHERE subset <> '') s ON s.project_id = d.project_id
            WHERE d.project_id IN (SELECT id FROM projects WHERE kind = 'ifir')
            AND substr(d.doc_id, 1, length(s.subset) + 1) = s.subset || '/';
        """,
    ),
    (
        9,
        "sign-in sessions kept on the server, disabled and deleted users, sign-in attempts by address",
        """
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            token_digest TEXT NOT NULL UNIQUE,
            user_id INTEGER NOT NULL REFERENCES users (id),
            created_at REAL NOT NULL,
            expires_at REAL NOT NULL,
            ended_at REAL,
            ended_why TEXT NOT NULL DEFAULT ''
        );
        CREATE INDEX sessions_user ON sessions (user_id, ended_at);
        ALTER TABLE users ADD COLUMN disabled_at TEXT;
        ALTER TABLE users ADD COLUMN deleted_at TEXT;
        ALTER TABLE sign_in_attempts ADD COLUMN address TEXT NOT NULL DEFAULT '';
        CREATE INDEX sign_in_attempts_at ON sign_in_attempts (at);
        DELETE FROM settings WHERE key = 'session_key';
        """,
    ),
    (
        10,
        "check items (known answers mixed into a study), closing a study, and the backups of deleted studies",
        """
        ALTER TABLE items ADD COLUMN is_check INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE studies ADD COLUMN closed_at TEXT;
        CREATE TABLE study_backups (
            id INTEGER PRIMARY KEY,
            study_id INTEGER NOT NULL,
            project_id INTEGER NOT NULL REFERENCES projects (id),
            name TEXT NOT NULL,
            deleted_by TEXT NOT NULL,
            deleted_at TEXT NOT NULL,
            content TEXT NOT NULL
        );
        """,
    ),
    (
        11,
        "each annotator's own item order (assignments.ordered) and the place an item was answered at (labels.shown_position)",
        """
        ALTER TABLE assignments ADD COLUMN ordered INTEGER NOT NULL DEFAULT 0;
        UPDATE assignments SET ordered = 1;
        CREATE INDEX assignments_unordered ON assignments (user_id) WHERE ordered = 0;
        ALTER TABLE labels ADD COLUMN shown_position INTEGER;
        """,
    ),
]

SCHEMA_VERSION = MIGRATIONS[-1][0]


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def default_db_path() -> str | Path:
    """The database in use: ``IFJUDGE_DB`` (a file path or a ``postgresql://`` URL), else data/ifjudge.db."""
    target = os.environ.get(DEFAULT_DB_ENV) or DEFAULT_DB_PATH
    return target if is_url(target) else Path(target)


class SqliteDatabase(sqlite_utils.Database):
    """sqlite-utils' database with the few methods storage also finds on :class:`PgDatabase`."""

    engine = dialect.SQLITE

    @property
    def location(self) -> str:
        """The file's path ('' for an in-memory database)."""
        row = next((r for r in self.execute("PRAGMA database_list").fetchall() if r[1] == "main"), None)
        return row[2] if row else ""

    @property
    def target(self) -> str:
        """What :func:`connect` takes to open this database again (another thread or process)."""
        return self.location

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def executemany(self, sql: str, rows) -> None:
        self.conn.executemany(sql, rows)

    def after_bulk_insert(self, table: str, key: str) -> None:
        """Rows were inserted with explicit keys: nothing to do (SQLite continues after the largest)."""

    def column_names(self, table: str) -> list[str]:
        """The table's declared columns, in order."""
        return [r[1] for r in self.execute(f'PRAGMA table_info("{table}")')]

    def close(self) -> None:
        self.conn.close()


Database = SqliteDatabase | PgDatabase
ID_TABLES = dialect.id_tables("\n".join(sql for _, _, sql in MIGRATIONS))
#: write() without a lock: every writer in line, as SQLite's one write lock does
WRITE_LOCK = (0, 0)


def user_lock(user_id: int) -> tuple[int, int]:
    """The lock of one annotator's screens: annotators do not wait on each other (PostgreSQL)."""
    return (1, int(user_id))


def connect(target: str | os.PathLike | None = None) -> Database:
    """Open the database at ``target`` and bring its schema up to date.

    ``target``: a file path (SQLite, created if needed) or a ``postgresql://`` URL (the database
    must exist; its schema is created). Default: :func:`default_db_path`. Cheap: open one per
    Streamlit run or CLI call; never share one across threads.
    """
    target = default_db_path() if target is None else target
    if is_url(target):
        db = PgDatabase(str(target), ID_TABLES)
        migrate(db)
        return db
    path = Path(target)
    if str(target) not in ("", ":memory:"):
        create_private(path)
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    db = SqliteDatabase(conn)
    migrate(db)
    return db


def create_private(path: Path) -> None:
    """Create the file ``path`` (and its folder) readable by its owner only, unless it exists.

    SQLite gives the ``-wal`` and ``-shm`` files the mode of the database file, so a database
    made here stays owner-only (0600) with its companions.
    """
    if path.parent and not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def location(db: Database) -> str:
    """Where the database lives, to show: its file path, or its URL with the password hidden."""
    return db.location


def target_of(db: Database) -> str:
    """What :func:`connect` takes to open ``db`` again from another thread or process."""
    return db.target


def resolve_target(target: str | os.PathLike) -> str:
    """A target that means the same from any working directory: an absolute path, or the URL."""
    return str(target) if is_url(target) else str(Path(target).resolve())


def check_integrity(db: Database) -> str:
    """'ok', or what is wrong: SQLite's ``PRAGMA integrity_check`` and ``foreign_key_check``;
    PostgreSQL checks its constraints on every write, so a reachable server answers 'ok'."""
    if db.engine == dialect.POSTGRESQL:
        return "ok" if db.execute("SELECT 1").fetchone() == (1,) else "no answer"
    answer = db.execute("PRAGMA integrity_check").fetchone()[0]
    if answer != "ok":
        return answer
    broken = db.execute("PRAGMA foreign_key_check").fetchall()
    return f"{len(broken)} rows break a foreign key, e.g. {broken[:3]}" if broken else "ok"


def schema_version(db: Database) -> int:
    if "schema_migrations" not in db.table_names():
        return 0
    row = db.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return row[0] or 0


def schema_statements(engine: str, sql: str) -> list[str]:
    """A migration's statements in the engine's dialect."""
    statements = _statements(sql)
    return [dialect.pg_ddl(s) for s in statements] if engine == dialect.POSTGRESQL else statements


def migrate(db: Database) -> int:
    """Apply every migration newer than the database's version, in one transaction.

    Both engines record the same versions in ``schema_migrations``; PostgreSQL receives each
    statement through :func:`storage.dialect.pg_ddl`.
    """
    current = schema_version(db)
    if current >= SCHEMA_VERSION:
        return current
    with write(db):
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        if db.engine == dialect.POSTGRESQL:
            for statement in dialect.PG_FUNCTIONS:
                db.execute(statement)
        # Another process may have migrated while we waited for the write lock.
        current = schema_version(db)
        for version, name, sql in MIGRATIONS:
            if version <= current:
                continue
            for statement in schema_statements(db.engine, sql):
                db.execute(statement)
            db.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                [version, name, now_iso()],
            )
    return SCHEMA_VERSION


def _statements(sql: str) -> list[str]:
    return [s.strip() for s in sql.split(";") if s.strip()]


SHARED_READS = "_ifjudge_shared_reads"  # attribute of a connection: see storage.studies.shared_reads


@contextlib.contextmanager
def write(db: Database, *, lock: tuple[int, int] = WRITE_LOCK) -> Iterator[Database]:
    """One write transaction; committed on success, rolled back on any exception. Nesting is
    not allowed: a multi-step write is one call of this.

    SQLite: ``BEGIN IMMEDIATE`` (one writer at a time; the others queue on the busy timeout).
    PostgreSQL: ``BEGIN`` and an advisory lock: ``WRITE_LOCK`` (the default) puts every writer in
    line exactly as SQLite does, so a read-then-write stays correct; :func:`user_lock` lets
    writers that touch only one annotator's rows (claim, submit, skip) run side by side, their
    shared rows guarded by row locks (``FOR UPDATE [SKIP LOCKED]``).
    """
    vars(db).pop(SHARED_READS, None)  # a write ends the rows shared by storage.studies.shared_reads
    if db.engine == dialect.POSTGRESQL:
        with db.transaction(lock):
            yield db
        return
    conn = db.conn
    if conn.in_transaction:
        raise RuntimeError("storage.db.write() does not nest: one transaction per operation")
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")
