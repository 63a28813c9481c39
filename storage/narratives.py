"""Narrative versions and re-judging rounds: the SQL behind annotation.narratives.

A query's narratives form a chain of versions (``narrative_versions``: text, author, time,
parent). The *root* is the original narrative (the first version of variant ``og``); an expert's
save appends a version of variant ``changed`` whose parent is the version the expert started
from. A *re-judging round* is the set of ``relevance`` items tied to one version
(``items.narrative_version_id``) in the project's re-judging study (a study whose settings carry
``"purpose": "rejudge"``). A project has up to two re-judging studies: the one of expert edits
(purpose ``rejudge``) and the one of the PUBLISHED changed instruction (purpose
``rejudge-published``), whose rounds are tied to the imported ``changed`` version and add no version.

Saving a version, creating the re-judging study on first use, and inserting the round's items
and assignments happen in ONE ``BEGIN IMMEDIATE`` transaction (:func:`insert_version`), so a
version never exists without its round and two experts saving at once cannot both build on the
same newest version.
"""
from __future__ import annotations

import json

from storage.db import Database, now_iso, write
from storage.errors import IFJudgeError
from storage.studies import insert_items

REJUDGE_PURPOSE = "rejudge"  # re-judging of expert edits (each save is a new version and a round)
PUBLISHED_PURPOSE = "rejudge-published"  # re-judging of the published changed instruction, no edit
REJUDGE_PURPOSES = (REJUDGE_PURPOSE, PUBLISHED_PURPOSE)
VERSION_KEYS = ("id", "project_id", "query_id", "variant", "text", "author", "created_at", "parent_id")


class StaleEdit(IFJudgeError):
    """Another version of the narrative was saved after the editor was opened: nothing was written."""


def _row(r) -> dict:
    return dict(zip(VERSION_KEYS, r))


def versions(db: Database, project_id: int, query_id: str) -> list[dict]:
    """Every narrative version of a query, oldest first, each with its ``number`` among the
    query's versions (1: the original) and its parent's (``parent_number``, None for the root)."""
    out = [
        _row(r)
        for r in db.execute(
            f"SELECT {', '.join(VERSION_KEYS)} FROM narrative_versions WHERE project_id = ? AND query_id = ? ORDER BY id",
            [project_id, query_id],
        )
    ]
    number = {v["id"]: n for n, v in enumerate(out, start=1)}
    for v in out:
        v["number"], v["parent_number"] = number[v["id"]], number.get(v["parent_id"])
    return out


def version_numbers(db: Database, project_id: int) -> dict[int, int]:
    """version id -> its number among its query's versions (1: the original), for every narrative
    version of the project: what a lead reads ("v2 of query 301"), not the database-wide id."""
    return {r[0]: r[1] for r in db.execute(
        "SELECT id, ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY id) FROM narrative_versions WHERE project_id = ?",
        [project_id])}


def get_version(db: Database, version_id: int) -> dict | None:
    r = db.execute(f"SELECT {', '.join(VERSION_KEYS)} FROM narrative_versions WHERE id = ?", [version_id]).fetchone()
    return _row(r) if r else None


def narrative_queries(db: Database, project_id: int) -> list[str]:
    """Query ids that have at least one narrative version, sorted."""
    return [
        r[0]
        for r in db.execute(
            "SELECT DISTINCT query_id FROM narrative_versions WHERE project_id = ? ORDER BY query_id", [project_id]
        )
    ]


def projects_with_narratives(db: Database) -> list[dict]:
    return [
        dict(zip(("id", "name", "kind"), r))
        for r in db.execute(
            "SELECT p.id, p.name, p.kind FROM projects p WHERE EXISTS"
            " (SELECT 1 FROM narrative_versions n WHERE n.project_id = p.id) ORDER BY p.name"
        )
    ]


def rejudge_study_id(db: Database, project_id: int, purpose: str = REJUDGE_PURPOSE) -> int | None:
    """The id of the project's re-judging study of ``purpose`` (expert edits by default), or None
    before its first round."""
    row = db.execute(
        "SELECT id FROM studies WHERE project_id = ? AND json_extract(settings, '$.purpose') = ? ORDER BY id LIMIT 1",
        [project_id, purpose],
    ).fetchone()
    return row[0] if row else None


def _study_for(db: Database, project_id: int, study: dict, purpose: str) -> tuple[int, bool]:
    """Inside a write transaction: the project's re-judging study of ``purpose`` (created from
    ``study`` if missing) with ``study["annotator_ids"]`` added; (study id, created)."""
    row = db.execute(
        "SELECT id FROM studies WHERE project_id = ? AND json_extract(settings, '$.purpose') = ? ORDER BY id LIMIT 1",
        [project_id, purpose],
    ).fetchone()
    created = row is None
    if created:
        settings = {**study["settings"], "purpose": purpose}
        study_id = db.execute(
            "INSERT INTO studies (project_id, name, questions, settings, created_by, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [project_id, study["name"], json.dumps(study["questions"]), json.dumps(settings),
             study["created_by"], now_iso()],
        ).lastrowid
    else:
        study_id = row[0]
    db.executemany(
        "INSERT INTO study_annotators (study_id, user_id) VALUES (?, ?) ON CONFLICT (study_id, user_id) DO NOTHING",
        [(study_id, u) for u in study["annotator_ids"]],
    )
    return study_id, created


def _insert_round(db: Database, study_id: int, version_id: int, items: list[dict], plan: dict[str, list[int]]) -> None:
    """Inside a write transaction: one round's items (screen keys with ``{version}``) and assignments."""
    start = db.execute("SELECT COALESCE(MAX(position), -1) + 1 FROM items WHERE study_id = ?", [study_id]).fetchone()[0]
    fmt = lambda s: s.replace("{version}", str(version_id))  # noqa: E731
    screens = dict.fromkeys(it["screen"] for it in items)
    insert_items(
        db, study_id,
        [{**it, "screen": fmt(it["screen"]), "position": it["position"] + start,
          "narrative_version_id": version_id} for it in items],
        {fmt(s): plan[s] for s in screens if s in plan},
    )


def insert_published_rounds(db: Database, *, project_id: int, study: dict, rounds: list[dict],
                            plan: dict[str, list[int]]) -> dict:
    """Re-judging rounds of the PUBLISHED changed instruction, in one transaction: the project's
    study of purpose ``rejudge-published`` (created from ``study`` on first use), and per round
    (``{"version_id", "items"}``; the version is the imported ``changed`` narrative, no version is
    added) its items and assignments (``plan``: screen key with ``{version}`` -> user ids). A
    version that already has a round in the study is refused (nothing is written).
    Returns ``{"study_id", "study_created"}``."""
    with write(db):
        study_id, created = _study_for(db, project_id, study, PUBLISHED_PURPOSE)
        for r in rounds:
            if db.execute("SELECT 1 FROM items WHERE study_id = ? AND narrative_version_id = ? LIMIT 1",
                          [study_id, r["version_id"]]).fetchone():
                raise IFJudgeError(f"version {r['version_id']} already has a re-judging round in study {study_id}; "
                                   "nothing was created")
            _insert_round(db, study_id, r["version_id"], r["items"], plan)
    return {"study_id": study_id, "study_created": created}


def round_version_ids(db: Database, study_id: int) -> list[int]:
    """Narrative versions that have a re-judging round in the study, oldest first."""
    return [
        r[0]
        for r in db.execute(
            "SELECT DISTINCT narrative_version_id FROM items WHERE study_id = ? AND narrative_version_id IS NOT NULL"
            " ORDER BY narrative_version_id",
            [study_id],
        )
    ]


def insert_version(
    db: Database,
    *,
    project_id: int,
    query_id: str,
    text: str,
    author: str,
    parent_id: int,
    expected_newest_id: int,
    variant: str = "changed",
    study: dict | None = None,
    items: list[dict] | None = None,
    plan: dict[str, list[int]] | None = None,
) -> dict:
    """Append a narrative version and its re-judging round in one transaction.

    ``expected_newest_id``: the newest version id the editor was opened on; if another version was
    saved since, :class:`StaleEdit` is raised and nothing is written. ``study``: ``{"name",
    "questions", "settings", "created_by", "annotator_ids"}``, used to create the project's
    re-judging study if it does not exist yet (otherwise only ``annotator_ids`` missing from it
    are added). ``items`` and ``plan`` use the placeholder ``{version}`` in their screen keys; it is
    replaced by the new version's id. Unjudged assignments of the query's older rounds are withdrawn
    in the same transaction. Returns ``{"version_id", "study_id", "study_created", "withdrawn"}``
    (``withdrawn``: assignments taken out of queues).
    """
    items = items or []
    plan = plan or {}
    with write(db):
        newest = db.execute(
            "SELECT MAX(id) FROM narrative_versions WHERE project_id = ? AND query_id = ?", [project_id, query_id]
        ).fetchone()[0]
        if newest != expected_newest_id:
            who = db.execute("SELECT author, created_at FROM narrative_versions WHERE id = ?", [newest]).fetchone()
            raise StaleEdit(
                f"version {newest} of query {query_id!r} was saved by {who[0]} at {who[1]} after this editor was "
                f"opened on version {expected_newest_id}; nothing was saved. Reload and edit the newest version."
            )
        parent = db.execute(
            "SELECT 1 FROM narrative_versions WHERE id = ? AND project_id = ? AND query_id = ?",
            [parent_id, project_id, query_id],
        ).fetchone()
        if parent is None:
            raise IFJudgeError(f"version {parent_id} is not a narrative version of query {query_id!r}")
        version_id = db.execute(
            "INSERT INTO narrative_versions (project_id, query_id, variant, text, author, created_at, parent_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [project_id, query_id, variant, text, author, now_iso(), parent_id],
        ).lastrowid
        # the older edit rounds of this query are superseded: their unjudged screens leave every queue
        # (labels already given stay, as history of those rounds); the re-judging of the published
        # changed instruction is another study and stays
        withdrawn = db.execute(
            "DELETE FROM assignments WHERE state != 'done' AND item_id IN ("
            " SELECT i.id FROM items i JOIN narrative_versions v ON v.id = i.narrative_version_id"
            " JOIN studies s ON s.id = i.study_id"
            " WHERE v.project_id = ? AND v.query_id = ? AND v.id < ? AND json_extract(s.settings, '$.purpose') != ?)",
            [project_id, query_id, version_id, PUBLISHED_PURPOSE],
        ).rowcount
        study_id, created = None, False
        if items:
            if study is None:
                raise IFJudgeError("re-judging items need the re-judging study's definition")
            study_id, created = _study_for(db, project_id, study, REJUDGE_PURPOSE)
            _insert_round(db, study_id, version_id, items, plan)
    return {"version_id": version_id, "study_id": study_id, "study_created": created, "withdrawn": withdrawn}


def rejudge_screen_loads(db: Database, project_id: int, purpose: str = REJUDGE_PURPOSE) -> dict[int, int]:
    """user id -> screens assigned to them in the project's re-judging study of ``purpose`` (empty if none yet)."""
    return {
        r[0]: r[1]
        for r in db.execute(
            "SELECT a.user_id, COUNT(DISTINCT i.screen) FROM assignments a JOIN items i ON i.id = a.item_id"
            " JOIN studies s ON s.id = i.study_id"
            " WHERE s.project_id = ? AND json_extract(s.settings, '$.purpose') = ? GROUP BY a.user_id",
            [project_id, purpose],
        )
    }

