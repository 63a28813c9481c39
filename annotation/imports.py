"""Importing benchmark files into a project: the one sequence the Home page and ``ifjudge import``
both run (recognise the layout, parse and validate everything, then one all-or-nothing write)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from formats import readers
from storage import projects
from storage.db import Database
from storage.errors import IFJudgeError


@dataclass
class ImportResult:
    """What was imported: the format (and why it was recognised, for ``auto``), the rows stored
    per kind, and the notes a lead should read (skipped documents, no corpus, no qrels...)."""

    format: str
    detected: str | None
    counts: dict[str, int]
    notes: list[str] = field(default_factory=list)


@dataclass
class Upload:
    """Files uploaded through the browser, written under the server's temporary ``root``: what the
    lead reads (notes, errors, the manifest's inputs) names them by the uploaded ``name`` (the
    .zip's own name, or nothing for loose files), never by the temporary path."""

    root: Path
    name: str = ""

    def shown(self, text: str) -> str:
        """``text`` with the temporary root replaced by the upload's own name.

        >>> Upload(Path("/tmp/x1"), "bench.zip").shown("/tmp/x1/qrels/test.tsv, line 3")
        'bench.zip/qrels/test.tsv, line 3'
        >>> Upload(Path("/tmp/x1")).shown("/tmp/x1/corpus.jsonl")
        'corpus.jsonl'
        """
        prefix = f"{self.name}/" if self.name else ""
        root = str(self.root).rstrip("/")
        return str(text).replace(root + "/", prefix).replace(root, self.name or ".")


def import_files(db: Database, project: str, paths: list[Path], *, fmt: str = "auto", subset: str | None = None,
                 kind: str | None = None, upload: Upload | None = None) -> ImportResult:
    """Parse ``paths`` as ``fmt`` and store them as ``project``; nothing is written unless every
    file is valid (:class:`formats.errors.ImportFailure` names the file, line and field). With
    ``upload``, files are named by the uploaded name in what is stored and said (and in an error)."""
    try:
        fmt, why = readers.resolve_format(fmt, list(paths))
        bundle = readers.parse(fmt, list(paths), subset=subset)
    except IFJudgeError as exc:
        if upload is None:
            raise
        raise IFJudgeError(upload.shown(str(exc))) from None
    if upload is not None:
        bundle.source_files = [(upload.shown(p), h) for p, h in bundle.source_files]
        bundle.notes = [upload.shown(n) for n in bundle.notes]
        why = upload.shown(why) if why else why
    try:
        counts = projects.import_bundle(db, project, bundle, fmt=fmt, kind=kind)
    except projects.ProjectExists:
        raise projects.ProjectExists(exists_message(db, project)) from None
    notes = list(readers.import_warnings(bundle, fmt=fmt, project=project))
    return ImportResult(fmt, why, counts, [upload.shown(n) for n in notes] if upload else notes)


def add_files(db: Database, project: str, role: str, paths: list[Path], *, subset: str | None = None,
              version: str = "original", upload: Upload | None = None) -> ImportResult:
    """Add one further file of a layout to the stored ``project``: its corpus, more qrels
    (``version``) or candidate lists (``role``: :data:`formats.readers.parts.ROLES`), checked
    against what the project holds and stored all-or-nothing
    (:func:`storage.projects.add_to_project`: afterwards every judged document must be in the
    corpus). ``ifjudge import --add`` and the Projects page's import section both run this."""
    proj = projects.get_project(db, project)
    pid = proj["id"]
    qids = {i["instance_id"] for i in projects.instances(db, pid)} | set(projects.queries(db, pid))
    try:
        part = readers.parse_part(role, list(paths), qids=qids, doc_ids=set(projects.StoredDocuments(db, pid)),
                                  version=version)
        counts = projects.add_to_project(db, project, part, role=role, subset=subset)
    except IFJudgeError as exc:
        if upload is None:
            raise
        raise IFJudgeError(upload.shown(str(exc))) from None
    return ImportResult(f"add:{role}", None, counts, [])


def exists_message(db: Database, project: str) -> str:
    """What a lead reads when an import collides with a project already stored under that name:
    what the project holds, that nothing was imported, and what to do instead.

    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> exists_message(db, "demo")  # doctest: +NORMALIZE_WHITESPACE
    'A project named “demo” already exists (generic; 14 instances, 18 documents) and already holds some of these
    ids: nothing was imported. Import under a new project name (e.g. “demo-2”), or import only files whose ids
    are new to it.'
    """
    found = next((p for p in projects.list_projects(db) if p["name"] == project), None)
    held = "" if found is None else (f" ({found['kind']}; {found['counts']['instances']} instances, "
                                     f"{found['counts']['documents']} documents)")
    taken = {p["name"] for p in projects.list_projects(db)}
    n = 2
    while f"{project}-{n}" in taken:
        n += 1
    return (f"A project named “{project}” already exists{held} and already holds some of these ids: nothing was "
            f"imported. Import under a new project name (e.g. “{project}-{n}”), or import only files whose ids "
            "are new to it.")
