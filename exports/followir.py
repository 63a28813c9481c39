"""The FollowIR export of a project's narratives (Weller et al., 2024, §3): one query per narrative
chain that has a changed version, ``instruction_og`` = the original narrative,
``instruction_changed`` = the newest, qrels ``original`` and ``changed`` (the re-judged
``changed-validated`` build where there is one), written in the FollowIR hub layout.

:func:`followir_bundle` builds the Bundle (also used by :mod:`exports.validated` for the hub v1 and
MTEB v2 layouts); :func:`export_followir` writes it. No Streamlit, no SQL.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from annotation.narratives.versions import original_judgments, root_version
from annotation.outcomes.qrels_builds import build_rejudged
from formats.bundle import Bundle, Instance, Narrative, Qrel, Query
from formats.corpus import StreamedCorpus
from formats.writers import write_followir
from storage import narratives as store
from storage import projects
from storage.errors import IFJudgeError
from storage.db import Database


def followir_bundle(db: Database, project: dict, *, all_documents: bool = False,
                    changed_qrels: dict[str, dict[str, int]] | None = None,
                    qrels: Callable[[str], dict] | None = None) -> tuple[Bundle, list[str]]:
    """The FollowIR/MTEB view of a project: one query per narrative chain that has a changed version.

    ``instruction_og`` = the original narrative, ``instruction_changed`` = the newest version;
    qrels ``original`` as stored; qrels ``changed`` = ``changed_qrels`` (the ``changed-validated``
    build of the re-judging, :func:`annotation.outcomes.qrels_builds.build_rejudged`) for the queries it
    holds, else the stored (published) ``changed`` qrels;
    top_ranked as stored, else the query's judged documents (FollowIR reranks all judged
    documents); documents = those the qrels and top_ranked name (``all_documents``: the corpus),
    by id, as a :class:`formats.corpus.StreamedCorpus` (the writer reads their text in chunks).
    All qrels are keyed by the query id. ``project``: its row (:func:`storage.projects.get_project`);
    ``qrels``: version -> qid -> doc -> relevance when the caller has read them (else read here).
    Returns (bundle, notes about skipped queries).
    """
    pid = project["id"]
    query_text = projects.queries(db, pid)
    qrels = qrels or (lambda version: projects.qrels(db, pid, version))
    original, stored_changed = qrels("original"), qrels("changed")
    derived = changed_qrels or {}
    top = projects.top_ranked(db, pid)
    corpus = set(projects.StoredDocuments(db, pid))  # the ids; the text is read by the writer, a chunk at a time
    b, notes = Bundle(), []
    for q in store.narrative_queries(db, pid):
        vs = store.versions(db, pid, q)
        root, newest = root_version(vs), vs[-1]
        if newest["id"] == root["id"]:
            notes.append(f"{q}: no changed narrative, skipped")
            continue
        okey, og = original_judgments(original, q)
        changed = derived.get(okey)
        if changed is None:
            changed = next((stored_changed[k] for k in (q, f"{q}-changed", f"{q}-og") if k in stored_changed), None)
        if not og or changed is None:
            notes.append(f"{q}: no {'original' if not og else 'changed'} qrels, skipped")
            continue
        b.queries.append(Query(q, query_text.get(q, "")))
        b.instances += [Instance(f"{q}-og", q, q, root["text"], "og"), Instance(f"{q}-changed", q, q, newest["text"], "changed")]
        b.narratives += [Narrative(q, root["text"], "og"), Narrative(q, newest["text"], "changed")]
        b.qrels += [Qrel(q, d, r, "original") for d, r in sorted(og.items())]
        b.qrels += [Qrel(q, d, r, "changed") for d, r in sorted(changed.items())]
        cands = next((top[k] for k in (q, f"{q}-og", f"{q}-changed") if k in top), None)
        b.top_ranked[q] = list(cands) if cands else sorted(set(og) | set(changed))
    needed = corpus if all_documents else (
        {q.doc_id for q in b.qrels} | {d for ds in b.top_ranked.values() for d in ds})
    missing = sorted(needed - corpus)
    if missing:
        raise IFJudgeError(f"documents named by the qrels or top_ranked are not in the corpus: {', '.join(missing[:5])}")
    ids = sorted(needed)  # all stored (checked above): read by the writer, a chunk at a time
    b.documents = StreamedCorpus(ids, lambda: projects.document_chunks(db, pid, ids))
    return b, notes


def export_followir(db: Database, project: dict, out_dir: Path, *, all_documents: bool = False,
                    unresolved: str | None = None, allow_incomplete: bool = False) -> dict:
    """Write :func:`followir_bundle` of ``project`` (its row) in the FollowIR hub layout (``formats.writers.write_followir``):
    ``queries.jsonl``, ``corpus.jsonl``, ``qrels_og/test.{tsv,jsonl}``, ``qrels_changed/test.{tsv,jsonl}``,
    ``top_ranked.jsonl`` (one ``{"qid", "pid"}`` row per pair), ``README.md``. Returns ``{"files", "counts", "notes"}``; the files import back with
    ``formats.readers.parse("followir", [out_dir])`` into the same Bundle."""
    proj = project
    pid = proj["id"]
    # instruction_changed is the newest narrative: an expert edit's when there is one (qrels from its
    # re-judging, edited-validated), else the published one (qrels from its re-judging, changed-validated)
    sid = store.rejudge_study_id(db, pid) or store.rejudge_study_id(db, pid, store.PUBLISHED_PURPOSE)
    derived = None if sid is None else build_rejudged(db, proj, [sid], unresolved=unresolved,
                                                      allow_incomplete=allow_incomplete).qrels
    bundle, notes = followir_bundle(db, proj, all_documents=all_documents, changed_qrels=derived)
    if not bundle.queries:
        raise IFJudgeError(f"project {proj['name']!r} has no query with an original and a changed narrative and qrels "
                           f"to export ({'; '.join(notes[:3]) or 'no narratives'})")
    files = write_followir(bundle, Path(out_dir))
    return {"files": [str(f) for f in files], "counts": bundle.counts(), "notes": notes}
