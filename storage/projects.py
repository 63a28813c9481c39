"""Projects and their corpus: creating a project from a Bundle in one transaction, and reading
documents, queries, instances and qrels back."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Mapping

from formats.bundle import DERIVED_QRELS_VERSIONS, PUBLISHED_QRELS_VERSIONS, QRELS_VERSIONS, Bundle
from storage import study_reads
from storage.db import Database, now_iso, write
from storage.errors import IFJudgeError, NotFound

PROJECT_KINDS = ("instructir", "followir", "infosearch", "ifir", "generic")
FORMAT_KIND = {
    "instructir": "instructir",
    "followir": "followir",
    "infosearch": "infosearch",
    "ifir": "ifir",
    "beir": "generic",
    "trec": "generic",
}


def kind_of(fmt: str, bundle: Bundle) -> str:
    """The project kind an import of ``fmt`` gives. MTEB v2 holds both FollowIR-shaped releases
    (``-og`` / ``-changed`` queries) and generic retrieval, so there the Bundle decides."""
    if fmt == "mteb":
        if any(i.variant in ("level1", "level2", "level3") or i.instance_id == f"{i.query_id}_inst"
               for i in bundle.instances):  # an IFIR domain, as IFJudge writes it for MTEB's IFIR tasks
            return "ifir"
        return "followir" if any(i.variant == "changed" for i in bundle.instances) else "generic"
    return FORMAT_KIND.get(fmt, "generic")


class ProjectExists(IFJudgeError):
    pass


def get_project(db: Database, name: str) -> dict:
    """The project's row (id, name, kind, created_at), read once while ``db`` shares its reads
    (:func:`storage.studies.shared_reads`); the library takes it in this shape."""
    return study_reads.shared_row(db, ("project", name), lambda: _project_named(db, name),
                                  also=lambda row: ("project id", row["id"]))


def share_project(db: Database, project: dict) -> None:
    """While ``db`` shares its reads within this run, :func:`get_project` and
    :func:`get_project_by_id` of this project answer with ``project`` (its row, read by the
    caller) instead of reading it again."""
    cache = study_reads.run_cache(db)
    if cache is not None:
        cache.setdefault(("project", project["name"]), dict(project))
        cache.setdefault(("project id", project["id"]), dict(project))


def _project_named(db: Database, name: str) -> dict:
    row = db.execute("SELECT id, name, kind, created_at FROM projects WHERE name = ?", [name]).fetchone()
    if row is None:
        known = [r[0] for r in db.execute("SELECT name FROM projects ORDER BY name")]
        raise NotFound(f"no project named {name!r}; known projects: {', '.join(known) or 'none'}")
    return dict(zip(("id", "name", "kind", "created_at"), row))


def get_project_by_id(db: Database, project_id: int) -> dict:
    """:func:`get_project` by the project's id."""
    return study_reads.shared_row(db, ("project id", project_id), lambda: _project_with_id(db, project_id))


def _project_with_id(db: Database, project_id: int) -> dict:
    row = db.execute("SELECT id, name, kind, created_at FROM projects WHERE id = ?", [project_id]).fetchone()
    if row is None:
        raise NotFound(f"no project with id {project_id}")
    return dict(zip(("id", "name", "kind", "created_at"), row))


def list_projects(db: Database) -> list[dict]:
    """Every project with its counts (instances, groups, documents, queries, qrels by version)."""
    projects = [
        dict(zip(("id", "name", "kind", "created_at"), r))
        for r in db.execute("SELECT id, name, kind, created_at FROM projects ORDER BY name")
    ]
    for p in projects:
        p["counts"] = project_counts(db, p["id"])
    return projects


def project_counts(db: Database, project_id: int) -> dict[str, int]:
    one = lambda sql: db.execute(sql, [project_id]).fetchone()[0]  # noqa: E731
    counts = {
        "instances": one("SELECT COUNT(*) FROM instances WHERE project_id = ?"),
        "groups": one("SELECT COUNT(DISTINCT group_id) FROM instances WHERE project_id = ?"),
        "queries": one("SELECT COUNT(*) FROM queries WHERE project_id = ?"),
        "documents": one("SELECT COUNT(*) FROM documents WHERE project_id = ?"),
    }
    rows = _shared_qrels_rows(db, project_id)
    for version, n in (db.execute(
        "SELECT version, COUNT(*) FROM qrels WHERE project_id = ? GROUP BY version ORDER BY version", [project_id]
    ) if rows is None else Counter(r[0] for r in rows).items()):
        counts[f"qrels_{version}"] = n
    return counts


def import_bundle(
    db: Database, project: str, bundle: Bundle, *, fmt: str, kind: str | None = None
) -> dict[str, int]:
    """Store ``bundle`` into ``project`` (created if missing) in ONE transaction.

    Adding to an existing project is allowed when no id collides with what is stored: a collision
    aborts the whole import and the database is left exactly as before.
    Returns the counts stored.
    """
    kind = kind or kind_of(fmt, bundle)
    _check_importable(bundle, kind)
    _check_storable(db, bundle)
    with write(db):
        project_id = _project_id(db, project, kind)
        _insert_rows(db, project, project_id, bundle)
        now = now_iso()
        _insert_narratives(db, project_id, bundle, now)
        _insert_runs(db, project_id, bundle, now)
        counts = bundle.counts()
        db.execute(
            "INSERT INTO imports (project_id, format, counts, source_files, created_at) VALUES (?, ?, ?, ?, ?)",
            [project_id, fmt, json.dumps(counts), json.dumps(bundle.source_files), now],
        )
    return counts


def add_to_project(db: Database, project: str, part: Bundle, *, role: str, subset: str | None = None) -> dict[str, int]:
    """Add one further file of a layout (``part``: the rows of :func:`formats.readers.parts.parse_part`)
    to the stored ``project``, in ONE transaction that is rolled back unless, afterwards, every
    document the project's qrels and candidate lists name is in its corpus (when it has one).
    With ``subset``, added documents are that subset's own corpus (``subset_documents``).
    Returns the counts added.

    Raises
    ------
    IFJudgeError
        Naming how many judged documents are still missing and the first of them; nothing is added.
    """
    proj = get_project(db, project)
    pid = proj["id"]
    if subset is not None and not part.documents:
        raise IFJudgeError("--subset names the subset whose corpus is added; it applies to a corpus only")
    if subset is not None:
        part = Bundle(documents=part.documents, source_files=part.source_files,
                      subset_documents={subset: [d.doc_id for d in part.documents]})
    _check_storable(db, part)
    with write(db):
        _insert_rows(db, project, pid, part)
        _check_judged_documents(db, pid, proj["name"])
        counts = {k: v for k, v in part.counts().items() if v}
        db.execute(
            "INSERT INTO imports (project_id, format, counts, source_files, created_at) VALUES (?, ?, ?, ?, ?)",
            [pid, f"add:{role}", json.dumps(counts), json.dumps(part.source_files), now_iso()],
        )
    return counts


def _check_judged_documents(db: Database, project_id: int, name: str) -> None:
    """Inside a write: refuse (the caller's transaction rolls back) a project with a corpus whose
    qrels or candidate lists name a document it lacks."""
    if not db.execute("SELECT 1 FROM documents WHERE project_id = ? LIMIT 1", [project_id]).fetchone():
        return
    missing = [r[0] for r in db.execute(
        "SELECT DISTINCT q.doc_id FROM qrels q WHERE q.project_id = ? AND NOT EXISTS"
        " (SELECT 1 FROM documents d WHERE d.project_id = q.project_id AND d.doc_id = q.doc_id) ORDER BY q.doc_id",
        [project_id])]
    what = "judged by its qrels"
    if not missing:
        listed = {d for ids in top_ranked(db, project_id).values() for d in ids}
        missing = sorted(listed - existing_doc_ids(db, project_id, listed))
        what = "named by its candidate lists"
    if missing:
        raise IFJudgeError(
            f"project {name!r} would still lack {len(missing)} document(s) {what} (e.g. "
            f"{', '.join(repr(d) for d in missing[:5])}): nothing was added. Add the benchmark's whole corpus "
            "(every judged document) in one go")


def _check_importable(bundle: Bundle, kind: str) -> None:
    """Refuse an unknown project kind and qrels versions an import cannot hold (before any write)."""
    if kind not in PROJECT_KINDS:
        raise IFJudgeError(f"unknown project kind {kind!r}; expected one of {', '.join(PROJECT_KINDS)}")
    for q in bundle.qrels:
        if q.version not in PUBLISHED_QRELS_VERSIONS:
            raise IFJudgeError(
                f"qrels version {q.version!r} cannot be imported; an import holds the published versions "
                f"{', '.join(PUBLISHED_QRELS_VERSIONS)} (the validated versions are built from studies)")


# the text a PostgreSQL column cannot hold, and where a bundle carries text
_NUL = "\x00"
_TEXT_PARTS = (("document", "documents", ("doc_id", "title", "text")), ("query", "queries", ("query_id", "text", "subset")),
               ("instance", "instances", ("instance_id", "query_id", "group_id", "instruction", "variant")),
               ("narrative", "narratives", ("query_id", "text", "variant")), ("qrel", "qrels", ("qid", "doc_id")))


def _check_storable(db: Database, bundle: Bundle) -> None:
    """On PostgreSQL, refuse (before any write) text with a NUL character, which its text columns
    cannot hold (SQLite stores it): one message naming the record and the field."""
    from storage import dialect

    if db.engine != dialect.POSTGRESQL:
        return
    for what, attr, names in _TEXT_PARTS:
        for record in getattr(bundle, attr):
            for name in names:
                if _NUL in getattr(record, name):
                    key = getattr(record, names[0])
                    raise IFJudgeError(
                        f"{what} {key!r}: its {name} contains a NUL character (\\x00), which PostgreSQL cannot store; "
                        "remove it from the file and import again (nothing was imported)")


def _project_id(db: Database, project: str, kind: str) -> int:
    """Inside the import's transaction: the id of ``project``, created with ``kind`` if missing."""
    row = db.execute("SELECT id FROM projects WHERE name = ?", [project]).fetchone()
    if row is not None:
        return row[0]
    return db.execute(
        "INSERT INTO projects (name, kind, created_at) VALUES (?, ?, ?)", [project, kind, now_iso()]
    ).lastrowid


def _insert_rows(db: Database, project: str, project_id: int, bundle: Bundle) -> None:
    """Documents, queries, instances, qrels and candidate lists, each table in one ``executemany``;
    an id the project already holds raises :class:`ProjectExists` (the caller's transaction rolls back)."""
    ex = db.executemany
    try:
        ex("INSERT INTO documents (project_id, doc_id, title, text) VALUES (?, ?, ?, ?)",
           ((project_id, d.doc_id, d.title, d.text) for d in bundle.documents))
        ex("INSERT INTO queries (project_id, query_id, text, subset) VALUES (?, ?, ?, ?)",
           ((project_id, q.query_id, q.text, q.subset) for q in bundle.queries))
        ex("INSERT INTO instances (project_id, instance_id, query_id, group_id, instruction, variant)"
           " VALUES (?, ?, ?, ?, ?, ?)",
           ((project_id, i.instance_id, i.query_id, i.group_id, i.instruction, i.variant) for i in bundle.instances))
        ex("INSERT INTO qrels (project_id, version, qid, doc_id, relevance) VALUES (?, ?, ?, ?, ?)",
           ((project_id, q.version, q.qid, q.doc_id, q.relevance) for q in bundle.qrels))
        ex("INSERT INTO top_ranked (project_id, qid, doc_ids) VALUES (?, ?, ?)",
           ((project_id, qid, json.dumps(ids)) for qid, ids in bundle.top_ranked.items()))
        ex("INSERT INTO subset_documents (project_id, subset, doc_id) VALUES (?, ?, ?)",
           ((project_id, subset, d) for subset, ids in bundle.subset_documents.items() for d in dict.fromkeys(ids)))
    except Exception as exc:  # sqlite3.IntegrityError: an id already stored in this project
        if "UNIQUE" in str(exc):
            raise ProjectExists(
                f"project {project!r} already holds some of these ids ({exc}); "
                "nothing was imported. Import into a new project name instead."
            ) from None
        raise


def _insert_narratives(db: Database, project_id: int, bundle: Bundle, now: str) -> None:
    """The imported narratives: the first of each query is the parent of its others."""
    parents: dict[str, int] = {}
    for n in bundle.narratives:
        cur = db.execute(
            "INSERT INTO narrative_versions (project_id, query_id, variant, text, author, created_at, parent_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [project_id, n.query_id, n.variant, n.text, "import", now, parents.get(n.query_id)],
        )
        parents.setdefault(n.query_id, cur.lastrowid)


def _insert_runs(db: Database, project_id: int, bundle: Bundle, now: str) -> None:
    """Each external run as a stored evaluation named ``external:<name>`` (no measures yet)."""
    for name, rows in bundle.runs.items():
        run = defaultdict(dict)
        for r in rows:
            run[r.qid][r.doc_id] = r.score
        db.execute(
            "INSERT INTO eval_runs (project_id, model, template, settings, qrels_version, metrics, per_query,"
            " run, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [project_id, f"external:{name}", "external", "{}", "", "{}", "{}", json.dumps(run), now],
        )


def documents(db: Database, project_id: int) -> dict[str, dict]:
    """doc_id -> {"title", "text"}, in doc_id byte order on both engines (SQLite's primary key;
    PostgreSQL's text columns collate "C")."""
    return {
        r[0]: {"title": r[1], "text": r[2]}
        for r in db.execute("SELECT doc_id, title, text FROM documents WHERE project_id = ? ORDER BY doc_id", [project_id])
    }


READ_CHUNK = 500  # doc ids per ``IN (...)`` read (under SQLite's oldest limit of 999 parameters)


class StoredDocuments(Mapping):
    """A project's documents as a read-only ``Mapping`` ``doc_id -> {"title", "text"}`` that
    reads text from storage only when asked: the corpus is never held in memory.

    ``iter`` yields the doc ids in the order of :func:`documents` (the same query without the
    text: doc_id byte order on both engines), read once and kept (ids only); ``len`` and ``in``
    use them. With ``subset``, only that subset's corpus (:func:`subset_documents`). ``docs[d]`` reads one document; :meth:`many` reads a batch in one query per
    :data:`READ_CHUNK` ids. The retrievers read a bounded chunk at a time through :meth:`many`
    (``evaluation.retrievers.read_documents``).

    Examples
    --------
    >>> from storage.db import connect
    >>> db = connect(":memory:")
    >>> _ = db.execute("INSERT INTO projects (id, name, kind, created_at) VALUES (1, 'p', 'generic', '')")
    >>> for d in ("d2", "d10", "d1"):
    ...     _ = db.execute("INSERT INTO documents (project_id, doc_id, title, text) VALUES (1, ?, '', ?)", [d, d + " text"])
    >>> docs = StoredDocuments(db, 1)
    >>> list(docs), list(docs) == list(documents(db, 1)), len(docs), "d2" in docs
    (['d1', 'd10', 'd2'], True, 3, True)
    >>> docs.many(["d2", "d1"])
    [{'title': '', 'text': 'd2 text'}, {'title': '', 'text': 'd1 text'}]
    """

    def __init__(self, db: Database, project_id: int, *, subset: str | None = None):
        self.db, self.project_id, self.subset = db, project_id, subset
        self._ids: list[str] | None = None
        self._id_set: frozenset[str] | None = None

    def _doc_ids(self) -> list[str]:
        if self._ids is None:
            if self.subset is None:
                rows = self.db.execute("SELECT doc_id FROM documents WHERE project_id = ? ORDER BY doc_id",
                                       [self.project_id])
            else:  # one subset's corpus (subset_documents): the documents of the project it names
                rows = self.db.execute(
                    "SELECT d.doc_id FROM documents d JOIN subset_documents s ON s.project_id = d.project_id"
                    " AND s.doc_id = d.doc_id WHERE d.project_id = ? AND s.subset = ? ORDER BY d.doc_id",
                    [self.project_id, self.subset])
            self._ids = [r[0] for r in rows]
            self._id_set = frozenset(self._ids)
        return self._ids

    def __iter__(self):
        return iter(self._doc_ids())

    def __len__(self) -> int:
        return len(self._doc_ids())

    def __contains__(self, doc_id) -> bool:
        self._doc_ids()
        return doc_id in self._id_set

    def __getitem__(self, doc_id: str) -> dict:
        row = self.db.execute("SELECT title, text FROM documents WHERE project_id = ? AND doc_id = ?",
                              [self.project_id, doc_id]).fetchone()
        if row is None:
            raise KeyError(doc_id)
        return {"title": row[0], "text": row[1]}

    def many(self, doc_ids) -> list[dict]:
        """The documents of ``doc_ids``, in that order, one query per :data:`READ_CHUNK` ids;
        KeyError names the first id that is not a document of the project."""
        ids = list(doc_ids)
        found = documents_by_id(self.db, self.project_id, ids)
        try:
            return [found[d] for d in ids]
        except KeyError as exc:
            raise KeyError(f"{exc.args[0]!r} is not a document of project {self.project_id}") from None


def documents_by_id(db: Database, project_id: int, doc_ids) -> dict[str, dict]:
    """doc_id -> {"title", "text"} for the given ids only (missing ids are absent)."""
    ids = list(doc_ids)
    out = {}
    for start in range(0, len(ids), READ_CHUNK):
        chunk = ids[start:start + READ_CHUNK]
        marks = ",".join("?" * len(chunk))
        for r in db.execute(
            f"SELECT doc_id, title, text FROM documents WHERE project_id = ? AND doc_id IN ({marks})", [project_id, *chunk]
        ):
            out[r[0]] = {"title": r[1], "text": r[2]}
    return out


def get_instance(db: Database, project_id: int, instance_id: str) -> dict | None:
    """One instance with its query text, or None."""
    row = db.execute(
        "SELECT i.instance_id, i.query_id, i.group_id, i.instruction, i.variant, COALESCE(q.text, '')"
        " FROM instances i LEFT JOIN queries q ON q.project_id = i.project_id AND q.query_id = i.query_id"
        " WHERE i.project_id = ? AND i.instance_id = ?",
        [project_id, instance_id],
    ).fetchone()
    keys = ("instance_id", "query_id", "group_id", "instruction", "variant", "query")
    return dict(zip(keys, row)) if row else None


def queries(db: Database, project_id: int) -> dict[str, str]:
    return dict(db.execute("SELECT query_id, text FROM queries WHERE project_id = ?", [project_id]).fetchall())


def query_subsets(db: Database, project_id: int) -> dict[str, str]:
    """query_id -> subset (IFIR domain, InfoSearch dimension...), for the queries that have one."""
    return dict(db.execute(
        "SELECT query_id, subset FROM queries WHERE project_id = ? AND subset != ''", [project_id]
    ).fetchall())


def instances(db: Database, project_id: int, *, variant: str | None = None) -> list[dict]:
    """Instances with their query text, ordered by group then id."""
    sql = (
        "SELECT i.instance_id, i.query_id, i.group_id, i.instruction, i.variant, COALESCE(q.text, '')"
        " FROM instances i LEFT JOIN queries q ON q.project_id = i.project_id AND q.query_id = i.query_id"
        " WHERE i.project_id = ?"
    )
    args: list = [project_id]
    if variant is not None:
        sql += " AND i.variant = ?"
        args.append(variant)
    sql += " ORDER BY i.group_id, i.instance_id"
    keys = ("instance_id", "query_id", "group_id", "instruction", "variant", "query")
    return [dict(zip(keys, r)) for r in db.execute(sql, args)]


def _shared_qrels_rows(db: Database, project_id: int) -> list[tuple] | None:
    """The project's qrels rows (version, qid, doc_id, relevance; by version, then as stored) when
    :func:`project_bundle` read them while ``db`` shares its reads within this run, else None: the
    qrels reads of the same run answer from them (an export reads the qrels once)."""
    cache = study_reads.run_cache(db)
    return None if cache is None else cache.get(("qrels rows", project_id))


def qrels(db: Database, project_id: int, version: str = "original") -> dict[str, dict[str, int]]:
    """qid -> doc_id -> relevance, the shape pytrec_eval takes (qids and documents in the order of
    the table's key)."""
    rows = _shared_qrels_rows(db, project_id)
    if rows is not None:
        grouped: dict[str, dict[str, int]] = {}
        for _v, qid, doc_id, rel in sorted(r for r in rows if r[0] == version):
            grouped.setdefault(qid, {})[doc_id] = rel
        return grouped
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for qid, doc_id, rel in db.execute(
        "SELECT qid, doc_id, relevance FROM qrels WHERE project_id = ? AND version = ?", [project_id, version]
    ):
        out[qid][doc_id] = rel
    return dict(out)


def qrels_versions(db: Database, project_id: int) -> list[str]:
    rows = _shared_qrels_rows(db, project_id)
    if rows is not None:
        return list(dict.fromkeys(r[0] for r in rows))
    return [r[0] for r in db.execute("SELECT DISTINCT version FROM qrels WHERE project_id = ? ORDER BY version", [project_id])]


# FollowIR expert edits: the qrels of a new instruction version, not a correction of ``changed``
EDITED_QRELS_VERSION = "edited-validated"
STORABLE_VERSIONS = (*DERIVED_QRELS_VERSIONS, EDITED_QRELS_VERSION)


def _check_derived(version: str) -> None:
    if version in PUBLISHED_QRELS_VERSIONS:
        raise IFJudgeError(f"qrels version {version!r} is published and is never overwritten; human outcomes go to "
                           f"{', '.join(STORABLE_VERSIONS)}")
    if version not in QRELS_VERSIONS and version != EDITED_QRELS_VERSION:
        raise IFJudgeError(f"unknown qrels version {version!r}; expected one of {', '.join(STORABLE_VERSIONS)}")


def replace_qrels(db: Database, project_id: int, version: str, qrels_map: dict[str, dict[str, int]]) -> int:
    """Replace one derived qrels version (``validated``, ``changed-validated``, ``reversed-validated``)
    in one transaction, without provenance (:func:`store_qrels_build` records it). Published
    versions are refused. Returns rows written."""
    _check_derived(version)
    with write(db):
        return _replace_rows(db, project_id, version, qrels_map)


def _replace_rows(db: Database, project_id: int, version: str, qrels_map: dict[str, dict[str, int]]) -> int:
    """Inside a write transaction: the rows of one derived version replaced by ``qrels_map``."""
    rows = [(project_id, version, qid, d, int(r)) for qid, docs in qrels_map.items() for d, r in docs.items()]
    db.execute("DELETE FROM qrels WHERE project_id = ? AND version = ?", [project_id, version])
    db.executemany("INSERT INTO qrels (project_id, version, qid, doc_id, relevance) VALUES (?, ?, ?, ?, ?)", rows)
    return len(rows)


def store_qrels_build(
    db: Database,
    project_id: int,
    version: str,
    qrels_map: dict[str, dict[str, int]],
    *,
    base_version: str,
    studies: list[dict],
    settings: dict,
    counts: dict,
    provenance: list[dict],
    created_by: str = "",
) -> int:
    """Store a derived qrels version and how it was built, in ONE transaction: the qrels rows
    (replacing the version), a ``qrels_builds`` row (the studies it was built from with their
    completeness, the settings, the counts) and one ``qrels_provenance`` row per judgment
    (``qid``, ``doc_id``, ``published``, ``relevance`` (None = left out), ``provenance``,
    ``reason``, ``label_counts``, ``studies``). Returns the build id."""
    _check_derived(version)
    with write(db):
        _replace_rows(db, project_id, version, qrels_map)
        cur = db.execute(
            "INSERT INTO qrels_builds (project_id, version, base_version, studies, settings, counts, created_by, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [project_id, version, base_version, json.dumps(studies), json.dumps(settings), json.dumps(counts),
             created_by, now_iso()],
        )
        build_id = cur.lastrowid
        studies_json: dict[tuple, str] = {}  # the few distinct study lists, each encoded once
        db.executemany(
            "INSERT INTO qrels_provenance (build_id, qid, doc_id, published, relevance, provenance, reason, label_counts, studies)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(build_id, p["qid"], p["doc_id"], p.get("published"), p.get("relevance"), p["provenance"], p.get("reason") or "",
              json.dumps(p.get("label_counts") or {}), _encoded(studies_json, p.get("studies") or []))
             for p in provenance],
        )
    return build_id


def _encoded(memo: dict[tuple, str], values: list) -> str:
    """``json.dumps(values)`` of a list of ids, encoded once per distinct list."""
    key = tuple(values)
    text = memo.get(key)
    if text is None:
        text = memo[key] = json.dumps(values)
    return text


def qrels_builds(db: Database, project_id: int, version: str | None = None, *,
                 with_provenance: bool = False) -> list[dict]:
    """The builds of a project's derived qrels versions, newest first (the first per version is
    the one its stored qrels come from)."""
    sql = ("SELECT id, version, base_version, studies, settings, counts, created_by, created_at FROM qrels_builds"
           " WHERE project_id = ?")
    args: list = [project_id]
    if version is not None:
        sql += " AND version = ?"
        args.append(version)
    out = []
    for r in db.execute(sql + " ORDER BY id DESC", args):
        b = {"id": r[0], "version": r[1], "base_version": r[2], "studies": json.loads(r[3]), "settings": json.loads(r[4]),
             "counts": json.loads(r[5]), "created_by": r[6], "created_at": r[7]}
        if with_provenance:
            b["provenance"] = [
                {"qid": p[0], "doc_id": p[1], "published": p[2], "relevance": p[3], "provenance": p[4], "reason": p[5],
                 "label_counts": json.loads(p[6]), "studies": json.loads(p[7])}
                for p in db.execute("SELECT qid, doc_id, published, relevance, provenance, reason, label_counts, studies"
                                    " FROM qrels_provenance WHERE build_id = ? ORDER BY qid, doc_id", [r[0]])
            ]
        out.append(b)
    return out


def subset_documents(db: Database, project_id: int) -> dict[str, list[str]]:
    """subset -> the ids of its own corpus, for a project whose release publishes one corpus per
    subset (IFIR domains, InfoSearch dimensions, MTEB subset configs); empty when every query
    ranks the whole corpus."""
    out: dict[str, list[str]] = defaultdict(list)
    for subset, doc_id in db.execute("SELECT subset, doc_id FROM subset_documents WHERE project_id = ? ORDER BY rowid",
                                     [project_id]):
        out[subset].append(doc_id)
    return dict(out)


def checked_queries(db: Database, build_id: int) -> tuple[int, int]:
    """``(queries with a judgment the build's studies checked, queries of the build)``: how much of
    a derived qrels version a validation study covered (the others keep their published judgments)."""
    row = db.execute("SELECT COUNT(*), COALESCE(SUM(checked), 0) FROM (SELECT qid, MAX(CASE WHEN provenance <> "
                     "'not checked' THEN 1 ELSE 0 END) AS checked FROM qrels_provenance WHERE build_id = ? GROUP BY qid)"
                     " AS q", [build_id]).fetchone()
    return int(row[1]), int(row[0])


def top_ranked(db: Database, project_id: int) -> dict[str, list[str]]:
    return {
        qid: json.loads(ids)
        for qid, ids in db.execute("SELECT qid, doc_ids FROM top_ranked WHERE project_id = ?", [project_id])
    }


def eval_topics(db: Database, project_id: int, *, variant: str | None = None) -> list[dict]:
    """What a retriever is run on: one topic per instance, keyed by the id its qrels use.

    ``qid`` is the instance id when the qrels are keyed by instance (InstructIR, IFIR), else the
    query id (FollowIR, InfoSearch, BEIR: one qrels set per variant). Each topic has ``qid``,
    ``instance_id``, ``query`` (text), ``instruction``, ``group_id`` and ``variant``.
    """
    keyed = {r[0] for r in db.execute("SELECT DISTINCT qid FROM qrels WHERE project_id = ?", [project_id])}
    topics = []
    for inst in instances(db, project_id, variant=variant):
        qid = inst["instance_id"] if inst["instance_id"] in keyed or inst["query_id"] not in keyed else inst["query_id"]
        topics.append({**inst, "qid": qid})
    return topics


def project_bundle(db: Database, project_id: int, *, documents: bool = True) -> Bundle:
    """Everything stored for a project, as a Bundle (what the layout writers take); without the
    corpus (``documents=False``: :func:`bundle_documents` reads it) for layouts that hold no text."""
    from formats.bundle import Instance, Narrative, Qrel, Query

    b = Bundle()
    b.documents = bundle_documents(db, project_id) if documents else []
    b.queries = [
        Query(q, t, s)
        for q, t, s in db.execute("SELECT query_id, text, subset FROM queries WHERE project_id = ? ORDER BY rowid", [project_id])
    ]
    b.instances = [
        Instance(*r)
        for r in db.execute(
            "SELECT instance_id, query_id, group_id, instruction, variant FROM instances WHERE project_id = ? ORDER BY rowid",
            [project_id],
        )
    ]
    rows = db.execute(
        "SELECT version, qid, doc_id, relevance FROM qrels WHERE project_id = ? ORDER BY version, rowid", [project_id]
    ).fetchall()
    b.qrels = [Qrel(q, d, r, v) for v, q, d, r in rows]
    cache = study_reads.run_cache(db)
    if cache is not None:  # the later qrels reads of this run answer from these rows
        cache[("qrels rows", project_id)] = [tuple(r) for r in rows]
    # the newest version of each (query, variant) narrative
    b.narratives = [
        Narrative(q, t, v)
        for q, v, t in db.execute(
            "SELECT query_id, variant, text FROM narrative_versions n WHERE project_id = ? AND id = ("
            " SELECT MAX(id) FROM narrative_versions m WHERE m.project_id = n.project_id AND m.query_id = n.query_id"
            " AND m.variant = n.variant) ORDER BY id",
            [project_id],
        )
    ]
    b.top_ranked = top_ranked(db, project_id)
    b.subset_documents = subset_documents(db, project_id)
    for files in db.execute("SELECT source_files FROM imports WHERE project_id = ? ORDER BY id", [project_id]):
        b.source_files.extend(tuple(f) for f in json.loads(files[0]))
    return b


def document_titles(db: Database, project_id: int, doc_ids) -> dict[str, str]:
    """doc_id -> title for the given ids only (missing ids are absent); reads no text."""
    ids = list(doc_ids)
    out = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        out.update(db.execute(f"SELECT doc_id, title FROM documents WHERE project_id = ? AND doc_id IN"
                              f" ({','.join('?' * len(chunk))})", [project_id, *chunk]).fetchall())
    return out


def existing_doc_ids(db: Database, project_id: int, doc_ids) -> set[str]:
    """The ids among ``doc_ids`` that are documents of the project; reads no text."""
    ids = list(dict.fromkeys(doc_ids))
    out: set[str] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        out.update(r[0] for r in db.execute(f"SELECT doc_id FROM documents WHERE project_id = ? AND doc_id IN"
                                             f" ({','.join('?' * len(chunk))})", [project_id, *chunk]))
    return out


def bundle_documents(db: Database, project_id: int) -> list:
    """The project's corpus as Bundle documents, in import order (:func:`project_bundle`)."""
    from formats.bundle import Document

    return [Document(r[0], r[2], r[1])
            for r in db.execute("SELECT doc_id, title, text FROM documents WHERE project_id = ? ORDER BY rowid", [project_id])]


_SELECT_ROWS = "SELECT {doc_id}, {title}, {text} FROM documents WHERE project_id = ?"


def _utf8_rows(db: Database, where: str, params: list, size: int):
    """The rows (doc_id, title, text) of ``_SELECT_ROWS + where`` as UTF-8 bytes, ``size`` rows at a
    time. SQLite hands its stored UTF-8 over as it is (``CAST(... AS BLOB)``: no decoding and
    encoding again) from one cursor; PostgreSQL's text (fetched whole by a statement) is encoded
    here."""
    from storage import dialect

    if db.engine == dialect.POSTGRESQL:
        rows = db.execute(_SELECT_ROWS.format(doc_id="doc_id", title="title", text="text") + where, params).fetchall()
        for start in range(0, len(rows), size):
            yield [(d.encode(), t.encode(), x.encode()) for d, t, x in rows[start:start + size]]
        return
    cursor = db.execute(_SELECT_ROWS.format(doc_id="CAST(doc_id AS BLOB)", title="CAST(title AS BLOB)",
                                            text="CAST(text AS BLOB)") + where, params)
    while batch := cursor.fetchmany(size):
        yield batch


def document_chunks(db: Database, project_id: int, doc_ids: list[str] | None = None, *, size: int = 1000):
    """The project's documents as chunks of ``(doc_id, title, text)`` UTF-8 bytes, ``size`` rows
    at a time: the whole corpus in import order, or the documents of ``doc_ids`` in that order (an
    id that is not a document is skipped). Holds one chunk of text at a time (on PostgreSQL, whose
    statements return their rows fetched, the corpus is read a page of ``size`` rows per statement).

    Examples
    --------
    >>> from storage.db import connect
    >>> db = connect(":memory:")
    >>> _ = db.execute("INSERT INTO projects (id, name, kind, created_at) VALUES (1, 'p', 'generic', '')")
    >>> for d in ("d2", "d1"):
    ...     _ = db.execute("INSERT INTO documents (project_id, doc_id, title, text) VALUES (1, ?, '', ?)", [d, d + " é"])
    >>> list(document_chunks(db, 1, size=1))
    [[(b'd2', b'', b'd2 \\xc3\\xa9')], [(b'd1', b'', b'd1 \\xc3\\xa9')]]
    >>> list(document_chunks(db, 1, ["d1", "nope", "d2"]))
    [[(b'd1', b'', b'd1 \\xc3\\xa9'), (b'd2', b'', b'd2 \\xc3\\xa9')]]
    """
    from storage import dialect

    if doc_ids is None and db.engine == dialect.POSTGRESQL:  # pages by rowid (keyset), a statement each
        last = -1
        while True:
            page = db.execute("SELECT rowid FROM documents WHERE project_id = ? AND rowid > ? ORDER BY rowid LIMIT ?",
                              [project_id, last, size]).fetchall()
            if not page:
                return
            yield from _utf8_rows(db, " AND rowid >= ? AND rowid <= ? ORDER BY rowid",
                                  [project_id, page[0][0], page[-1][0]], size)
            last = page[-1][0]
    if doc_ids is None:
        yield from _utf8_rows(db, " ORDER BY rowid", [project_id], size)
        return
    for start in range(0, len(doc_ids), READ_CHUNK):
        ids = doc_ids[start:start + READ_CHUNK]
        found = {}
        for rows in _utf8_rows(db, f" AND doc_id IN ({','.join('?' * len(ids))})", [project_id, *ids], size):
            found.update((r[0], r) for r in rows)
        yield [found[k] for d in ids if (k := d.encode()) in found]


def streamed_corpus(db: Database, project_id: int, doc_ids: list[str] | None = None):
    """The project's corpus (or the documents of ``doc_ids``, in that order) as a
    :class:`formats.corpus.StreamedCorpus`: its ids read now, its text a chunk at a time when a
    writer reads it (:func:`document_chunks`). What the exports give the layout writers instead of
    :func:`bundle_documents`: the corpus is never held in memory as objects.

    Examples
    --------
    >>> from storage.db import connect
    >>> db = connect(":memory:")
    >>> _ = db.execute("INSERT INTO projects (id, name, kind, created_at) VALUES (1, 'p', 'generic', '')")
    >>> for d in ("d2", "d1"):
    ...     _ = db.execute("INSERT INTO documents (project_id, doc_id, title, text) VALUES (1, ?, 'T', ?)", [d, d + " text"])
    >>> corpus = streamed_corpus(db, 1)
    >>> corpus.ids, list(corpus) == bundle_documents(db, 1)
    (['d2', 'd1'], True)
    """
    from formats.corpus import StreamedCorpus

    if doc_ids is None:
        ids = [r[0] for r in db.execute("SELECT doc_id FROM documents WHERE project_id = ? ORDER BY rowid", [project_id])]
        return StreamedCorpus(ids, lambda: document_chunks(db, project_id))
    present = existing_doc_ids(db, project_id, doc_ids)
    ids = [d for d in dict.fromkeys(doc_ids) if d in present]
    return StreamedCorpus(ids, lambda: document_chunks(db, project_id, ids))
