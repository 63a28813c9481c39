"""Importing benchmark files into a project: the one sequence the Home page and ``ifjudge import``
both run (recognise the layout, parse and validate everything, then one all-or-nothing write)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from formats import readers
from storage import projects
from storage.db import Database


@dataclass
class ImportResult:
    """What was imported: the format (and why it was recognised, for ``auto``), the rows stored
    per kind, and the notes a lead should read (skipped documents, no corpus, no qrels...)."""

    format: str
    detected: str | None
    counts: dict[str, int]
    notes: list[str] = field(default_factory=list)


def import_files(db: Database, project: str, paths: list[Path], *, fmt: str = "auto", subset: str | None = None,
                 kind: str | None = None) -> ImportResult:
    """Parse ``paths`` as ``fmt`` and store them as ``project``; nothing is written unless every
    file is valid (:class:`formats.errors.ImportFailure` names the file, line and field)."""
    fmt, why = readers.resolve_format(fmt, list(paths))
    bundle = readers.parse(fmt, list(paths), subset=subset)
    counts = projects.import_bundle(db, project, bundle, fmt=fmt, kind=kind)
    return ImportResult(fmt, why, counts, list(readers.import_warnings(bundle)))
