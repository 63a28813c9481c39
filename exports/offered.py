"""Which export formats a project can be written in, and what each holds: what the Export page
offers (a format that would fail on this project is not offered; why is said apart).

A format is offered when its writer accepts the project: :func:`export_formats` runs each writer
of :data:`exports.validated.EXPORTERS` on the project's queries, instances and qrels with the
documents' ids (no text read) into a temporary folder, the same checks in the same words as a
real export, in a fraction of its time. The report needs a study, named by the caller.
"""
from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from exports.validated import EXPORTERS, ExportJob
from formats.bundle import Document
from storage import projects, studies
from storage.db import Database

# name, and what the files hold (the Export page's list and its help)
FORMAT_INFO = {
    "trec": ("TREC qrels", "one qrels file per qrels version (qid 0 docid relevance), published and validated"),
    "beir": ("BEIR", "corpus.jsonl, queries.jsonl (one query per instance) and qrels/test.tsv of the validated "
                     "version, read by BEIR and MTEB's generic loader"),
    "followir": ("FollowIR (hub v1)", "the FollowIR release layout: corpus, queries with the original and changed "
                                      "instructions, top_ranked, qrels_og and qrels_changed (validated where built)"),
    "infosearch": ("InfoSearch (hub)", "the InfoSearch release layout: FollowIR's plus the reversed instruction and "
                                       "its qrels (validated where built)"),
    "mteb": ("MTEB v2 (parquet)", "parquet configs as MTEB v2 loads them (corpus, queries, qrels, top_ranked)"),
    "ifir": ("IFIR release", "one folder per domain: <domain>-corpus.jsonl, -query.jsonl, -qrel.tsv, test_data.json"),
    "instructir": ("InstructIR release", "only_instruction_queries.jsonl, only_queries.jsonl, qrels/test.tsv and "
                                         "corpus.jsonl: the instances the validation keeps, with their qrels"),
    "jsonl": ("JSONL with provenance", "instances.jsonl (each instance's decisions, provenance and votes), "
                                       "provenance per validated version and the validated instance set"),
    "report": ("Report", "Markdown, CSV and LaTeX: the verdict, InstructIR's Table 7, the benchmark-wide estimates "
                         "and whether the leaderboard changes"),
}


def _dry_run(db: Database, project: dict, fmt: str) -> str | None:
    """None when ``fmt``'s writer accepts the project, else its refusal."""
    bundle = projects.project_bundle(db, project["id"], documents=False)
    bundle = replace(bundle, documents=[Document(d, "") for d in projects.StoredDocuments(db, project["id"])])
    with tempfile.TemporaryDirectory() as tmp:
        try:
            EXPORTERS[fmt](ExportJob(db, project, bundle, {}, [], Path(tmp)))
        except ValueError as exc:
            return str(exc)
    return None


def export_formats(db: Database, project: dict) -> list[dict]:
    """Every export format with ``{"format", "label", "holds", "offered", "why"}``: ``offered``
    when the project can be written in it (the report: when the project has a study), ``why``
    the reason when not. ``project``: its row (:func:`storage.projects.get_project`).

    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> [f["format"] for f in export_formats(db, projects.get_project(db, "demo")) if f["offered"]]
    ['trec', 'beir', 'followir', 'mteb', 'jsonl', 'report']
    """
    proj = project
    out = []
    for fmt in EXPORTERS:
        label, holds = FORMAT_INFO.get(fmt, (fmt, ""))
        if fmt == "report":
            why = None if studies.list_studies(db, proj["id"]) else "the report describes a study: set one up first"
        else:
            why = _dry_run(db, proj, fmt)
        out.append({"format": fmt, "label": label, "holds": holds, "offered": why is None, "why": why})
    return out
