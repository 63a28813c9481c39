"""Eval runs: a model's run on a project's topics, evaluated against one qrels version, stored
with its settings, aggregate metrics and per-query results (table ``eval_runs``).

``settings`` is JSON. Two keys matter to storage:

- ``retrieval_key``: identifies the retrieval (model identity, template, k, variant, rerank,
  candidates). Two eval runs with the same key have the same run, whatever their qrels version,
  so :func:`find_run` lets a second evaluation reuse it instead of retrieving again.
  A run is stored as JSON in its ranking order (key order kept), and read back in that order.
- ``paired_run``: ``{"variant", "retrieval_key", "run"}``, the second run a paired metric needed
  (p-MRR: the run on the changed instructions beside the run on the original ones); found by
  :func:`find_run` too.
- ``baseline_run``: the same for the run of the bare queries (IFIR ``<qid>_0``), the baseline kept
  beside the instructed run.
- ``protocol``: whose rules the figures follow (``{"name": "mteb" | "paper", ...}``:
  :mod:`evaluation.protocols`); runs stored before protocols existed followed MTEB's.
"""
from __future__ import annotations

import json

from storage.db import Database, now_iso, write
from storage.errors import NotFound

_SUMMARY = ("id", "project_id", "model", "template", "settings", "qrels_version", "metrics", "created_at")
_LISTED = tuple("json_remove(json_remove(json_remove(settings, '$.paired_run.run'), '$.paired_run.reversed.run'),"
                " '$.baseline_run.run')" if c == "settings" else c for c in _SUMMARY)


def store_eval_run(
    db: Database,
    project_id: int,
    *,
    model: str,
    template: str,
    settings: dict,
    qrels_version: str,
    metrics: dict,
    per_query: dict,
    run: dict,
) -> int:
    """Insert one eval run in one transaction; returns its id."""
    with write(db):
        cur = db.execute(
            "INSERT INTO eval_runs (project_id, model, template, settings, qrels_version, metrics, per_query, run,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                project_id,
                model,
                template,
                json.dumps(settings),  # key order kept: a paired run's ranking order is its order
                qrels_version,
                json.dumps(metrics),
                json.dumps(per_query),
                json.dumps(run),
                now_iso(),
            ],
        )
        return cur.lastrowid


def _summary(row) -> dict:
    out = dict(zip(_SUMMARY, row))
    out["settings"] = json.loads(out["settings"])
    out["metrics"] = json.loads(out["metrics"])
    return out


def list_eval_runs(
    db: Database, project_id: int, *, include_external: bool = False, with_per_query: bool = False
) -> list[dict]:
    """Eval runs of a project, oldest first, without their runs (cheap): ``settings`` without
    ``paired_run.run`` (:func:`load_eval_run` has it).

    Runs stored by an import and never evaluated (template ``external``, no qrels version) are
    left out unless ``include_external``. ``with_per_query`` adds the ``per_query`` dicts.
    """
    # the paired run (``settings.paired_run.run``: a whole ranking, e.g. 52 queries x 1,000 documents)
    # is left out in SQL: parsing it made a listing of 10 runs slow; its other keys stay
    cols = ", ".join(_LISTED) + (", per_query" if with_per_query else "")
    sql = f"SELECT {cols} FROM eval_runs WHERE project_id = ?"
    if not include_external:
        sql += " AND qrels_version != ''"
    sql += " ORDER BY id"
    out = []
    for row in db.execute(sql, [project_id]):
        item = _summary(row[: len(_SUMMARY)])
        if with_per_query:
            item["per_query"] = json.loads(row[len(_SUMMARY)])
        out.append(item)
    return out


def load_eval_run(db: Database, run_id: int, *, run: bool = True, paired_runs: bool = True) -> dict:
    """Everything stored for one eval run (``settings``, ``metrics``, ``per_query``, ``run`` parsed).

    ``run=False`` leaves the run out (no ``run`` key), ``paired_runs=False`` the paired runs of
    ``settings`` (as :func:`list_eval_runs`): a Robust04-sized run is 52,000 ranked documents.
    """
    cols = [*(_LISTED if not paired_runs else _SUMMARY), "per_query", *(("run",) if run else ())]
    row = db.execute(f"SELECT {', '.join(cols)} FROM eval_runs WHERE id = ?", [run_id]).fetchone()
    if row is None:
        raise NotFound(f"no eval run with id {run_id}")
    out = _summary(row[: len(_SUMMARY)])
    out["per_query"] = json.loads(row[len(_SUMMARY)])
    if run:
        out["run"] = json.loads(row[-1])
    return out


def find_run(db: Database, project_id: int, retrieval_key: str) -> dict | None:
    """The newest stored run whose retrieval key is ``retrieval_key`` (as the main run, the paired
    run or the baseline run of an eval run), or None."""
    row = db.execute(
        "SELECT run FROM eval_runs WHERE project_id = ? AND json_extract(settings, '$.retrieval_key') = ?"
        " ORDER BY id DESC LIMIT 1",
        [project_id, retrieval_key],
    ).fetchone()
    if row is not None:
        return json.loads(row[0])
    # the whole settings text is parsed here (json_extract would re-order the run's keys on PostgreSQL)
    for kept in ("paired_run", "baseline_run"):
        row = db.execute(
            "SELECT settings FROM eval_runs WHERE project_id = ?"
            f" AND json_extract(settings, '$.{kept}.retrieval_key') = ? ORDER BY id DESC LIMIT 1",
            [project_id, retrieval_key],
        ).fetchone()
        if row is not None:
            return (json.loads(row[0]).get(kept) or {}).get("run")
    return None


def external_run(db: Database, project_id: int, model: str) -> dict:
    """The run an import stored under ``model`` (``external:<name>``)."""
    row = db.execute(
        "SELECT run FROM eval_runs WHERE project_id = ? AND model = ? AND template = 'external'"
        " ORDER BY id DESC LIMIT 1",
        [project_id, model],
    ).fetchone()
    if row is None:
        known = [r[0] for r in db.execute(
            "SELECT DISTINCT model FROM eval_runs WHERE project_id = ? AND template = 'external' ORDER BY model",
            [project_id],
        )]
        raise NotFound(f"no imported run {model!r} in this project; imported runs: {', '.join(known) or 'none'}")
    return json.loads(row[0])
