"""Judge labels: an automatic judge's answers, kept apart from the human labels.

Four tables (migration 7), none of which the annotation screens, the human agreement figures or
the human label exports read:

- ``judge_prompts``: a lead's edited prompt versions (the built-in ones live in code,
  :mod:`evaluation.judges.questions`); a version is never changed, an edit is a new version;
- ``judge_runs``: one judge configuration over one question of a project (judge kind, model, base
  URL, prompt version, hash and text, parameters). ``config_key`` hashes what defines the
  judgments, so that starting the same configuration again resumes the same run;
- ``judge_items``: the items a run judges (instance, question, document, payload such as the
  candidate passages), planned when the run is created or resumed, in order;
- ``judge_labels``: one answer per (run, item): value (None when no answer could be read), score
  (a probability or an expected value, when the judge gives one), the raw answer, the prompt hash,
  tokens (the server's usage and IFJudge's own count), retries, latency and time. One row per item
  and run (a unique key): an item is judged once per run, and a resumed run skips what is stored.

Times of labels are seconds since the epoch, like ``jobs``; runs and prompts carry ISO times like
``eval_runs``.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence

from storage.db import Database, now_iso, write
from storage.errors import IFJudgeError, NotFound

_RUN_COLUMNS = ("id", "project_id", "question", "judge", "model", "base_url", "prompt_version", "prompt_hash",
                "prompt", "parameters", "config_key", "created_by", "created_at")
LABEL_COLUMNS = ("instance_id", "question", "doc_id", "value", "score", "raw", "payload", "error", "prompt_hash",
                 "prompt_tokens", "completion_tokens", "counted_tokens", "retries", "latency_ms", "created_at")
_PROMPT_COLUMNS = ("id", "question", "version", "system", "user_template", "source", "hash", "author", "note",
                   "created_at")


def _run(row) -> dict:
    run = dict(zip(_RUN_COLUMNS, row))
    run["prompt"] = json.loads(run["prompt"])
    run["parameters"] = json.loads(run["parameters"])
    return run


def find_or_create_run(db: Database, *, project_id: int, question: str, judge: str, model: str, base_url: str,
                       prompt_version: str, prompt_hash: str, prompt: dict, parameters: dict, config_key: str,
                       created_by: str) -> tuple[dict, bool]:
    """The run of this configuration (same ``config_key``), or a new one. Returns ``(run, created)``."""
    with write(db):
        row = db.execute(f"SELECT {', '.join(_RUN_COLUMNS)} FROM judge_runs WHERE config_key = ? ORDER BY id LIMIT 1",
                         [config_key]).fetchone()
        if row is not None:
            return _run(row), False
        cur = db.execute(
            "INSERT INTO judge_runs (project_id, question, judge, model, base_url, prompt_version, prompt_hash, prompt,"
            " parameters, config_key, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [project_id, question, judge, model, base_url, prompt_version, prompt_hash,
             json.dumps(prompt, ensure_ascii=False), json.dumps(parameters, sort_keys=True, ensure_ascii=False),
             config_key, created_by, now_iso()])
        run_id = cur.lastrowid
    return get_run(db, run_id), True


def get_run(db: Database, run_id: int) -> dict:
    row = db.execute(f"SELECT {', '.join(_RUN_COLUMNS)} FROM judge_runs WHERE id = ?", [run_id]).fetchone()
    if row is None:
        raise NotFound(f"no judge run with id {run_id}")
    return _run(row)


def list_runs(db: Database, project_id: int | None = None, *, question: str | None = None) -> list[dict]:
    """Judge runs, newest first, each with ``labels`` (items judged), ``answers`` (with a value)
    and ``errors`` (items without a readable answer; a local judge's items before its threshold
    have a score, no value and no error)."""
    where, args = [], []
    if project_id is not None:
        where.append("r.project_id = ?")
        args.append(project_id)
    if question is not None:
        where.append("r.question = ?")
        args.append(question)
    cols = ", ".join(f"r.{c}" for c in _RUN_COLUMNS)
    sql = (f"SELECT {cols}, COUNT(l.id), COUNT(l.value), COALESCE(SUM(CASE WHEN l.error <> '' THEN 1 ELSE 0 END), 0)"
           " FROM judge_runs r LEFT JOIN judge_labels l ON l.run_id = r.id"
           + (f" WHERE {' AND '.join(where)}" if where else "")
           + f" GROUP BY {cols} ORDER BY r.id DESC")
    out = []
    for row in db.execute(sql, args).fetchall():
        run = _run(row[:len(_RUN_COLUMNS)])
        run["labels"], run["answers"], run["errors"] = int(row[-3]), int(row[-2]), int(row[-1])
        out.append(run)
    return out


def update_parameters(db: Database, run_id: int, changes: dict) -> dict:
    """Merge ``changes`` into a run's stored parameters (a threshold chosen after the scores)."""
    with write(db):
        row = db.execute("SELECT parameters FROM judge_runs WHERE id = ?", [run_id]).fetchone()
        if row is None:
            raise NotFound(f"no judge run with id {run_id}")
        params = {**json.loads(row[0]), **changes}
        db.execute("UPDATE judge_runs SET parameters = ? WHERE id = ?",
                   [json.dumps(params, sort_keys=True, ensure_ascii=False), run_id])
    return get_run(db, run_id)


def add_items(db: Database, run_id: int, items: Sequence[dict]) -> int:
    """Plan the run's items (``instance_id``, ``question``, ``doc_id``, ``payload``); an item the
    run already has is kept as it is. Returns the number of items added."""
    start = db.execute("SELECT COALESCE(MAX(position), -1) + 1, COUNT(*) FROM judge_items WHERE run_id = ?",
                       [run_id]).fetchone()
    rows = [[run_id, it["instance_id"], it["question"], it.get("doc_id") or "",
             json.dumps(it.get("payload") or {}, sort_keys=True, ensure_ascii=False), start[0] + i]
            for i, it in enumerate(items)]
    with write(db):
        db.executemany("INSERT INTO judge_items (run_id, instance_id, question, doc_id, payload, position)"
                       " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, instance_id, question, doc_id) DO NOTHING", rows)
        return db.execute("SELECT COUNT(*) FROM judge_items WHERE run_id = ?", [run_id]).fetchone()[0] - start[1]


def items(db: Database, run_id: int, *, pending: bool = False) -> list[dict]:
    """The run's items in their planned order; with ``pending`` only those without a stored label."""
    sql = ("SELECT i.instance_id, i.question, i.doc_id, i.payload FROM judge_items i"
           + (" LEFT JOIN judge_labels l ON l.run_id = i.run_id AND l.instance_id = i.instance_id"
              " AND l.question = i.question AND l.doc_id = i.doc_id" if pending else "")
           + " WHERE i.run_id = ?" + (" AND l.id IS NULL" if pending else "") + " ORDER BY i.position")
    return [{"instance_id": r[0], "question": r[1], "doc_id": r[2], "payload": json.loads(r[3])}
            for r in db.execute(sql, [run_id]).fetchall()]


def item_count(db: Database, run_id: int) -> int:
    return db.execute("SELECT COUNT(*) FROM judge_items WHERE run_id = ?", [run_id]).fetchone()[0]


def judged_keys(db: Database, run_id: int) -> set[tuple[str, str, str]]:
    """The (instance id, question, doc id) of every item the run has an answer (or an error) for."""
    return {tuple(r) for r in db.execute(
        "SELECT instance_id, question, doc_id FROM judge_labels WHERE run_id = ?", [run_id]).fetchall()}


def store_labels(db: Database, run_id: int, labels: Sequence[dict]) -> int:
    """Store answers of the run in one transaction; an item that already has one keeps it (a
    resumed run never overwrites). Returns the number of rows written."""
    if not labels:
        return 0
    now = time.time()
    rows = []
    for lab in labels:
        rows.append([run_id, lab["instance_id"], lab["question"], lab.get("doc_id") or "", lab.get("value"),
                     lab.get("score"), lab.get("raw", ""), json.dumps(lab.get("payload") or {}, ensure_ascii=False),
                     lab.get("error", ""), lab.get("prompt_hash", ""), lab.get("prompt_tokens"),
                     lab.get("completion_tokens"), lab.get("counted_tokens"), int(lab.get("retries", 0)),
                     lab.get("latency_ms"), lab.get("created_at", now)])
    cols = ", ".join(("run_id",) + LABEL_COLUMNS)
    sql = (f"INSERT INTO judge_labels ({cols}) VALUES ({', '.join('?' * (len(LABEL_COLUMNS) + 1))})"
           " ON CONFLICT (run_id, instance_id, question, doc_id) DO NOTHING")
    with write(db):
        before = _count(db, run_id)
        db.executemany(sql, rows)
        return _count(db, run_id) - before


def _count(db, run_id: int) -> int:
    return db.execute("SELECT COUNT(*) FROM judge_labels WHERE run_id = ?", [run_id]).fetchone()[0]


def set_values(db: Database, run_id: int, values: Iterable[tuple[str, str, str, str | None]]) -> int:
    """Set the value of stored labels: ``(instance id, question, doc id, value)`` rows (a local
    judge's threshold applied to its scores). Returns the number of rows given."""
    rows = [[v, run_id, i, q, d] for i, q, d, v in values]
    with write(db):
        db.executemany("UPDATE judge_labels SET value = ? WHERE run_id = ? AND instance_id = ? AND question = ?"
                       " AND doc_id = ?", rows)
    return len(rows)


def delete_errors(db: Database, run_id: int) -> int:
    """Remove the run's items without a readable answer, so that a new job judges them again."""
    with write(db):
        cur = db.execute("DELETE FROM judge_labels WHERE run_id = ? AND value IS NULL AND error <> ''", [run_id])
    return cur.rowcount


def labels(db: Database, run_id: int, *, with_raw: bool = True) -> list[dict]:
    """The run's stored labels (each a dict of :data:`LABEL_COLUMNS`, ``payload`` decoded), by id."""
    cols = LABEL_COLUMNS if with_raw else tuple(c for c in LABEL_COLUMNS if c != "raw")
    out = []
    for row in db.execute(f"SELECT {', '.join(cols)} FROM judge_labels WHERE run_id = ? ORDER BY id", [run_id]):
        lab = dict(zip(cols, row))
        lab["payload"] = json.loads(lab["payload"])
        out.append(lab)
    return out


def token_totals(db: Database, run_id: int) -> dict:
    """Sums over the run's labels: ``requests`` (labels), ``prompt_tokens`` and
    ``completion_tokens`` (the server's usage; None when it returned none), ``counted_tokens``
    (IFJudge's own count of what was sent) and ``retries``."""
    row = db.execute(
        "SELECT COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(counted_tokens), COALESCE(SUM(retries), 0),"
        " COUNT(prompt_tokens) FROM judge_labels WHERE run_id = ?", [run_id]).fetchone()
    return {"requests": row[0], "prompt_tokens": row[1], "completion_tokens": row[2], "counted_tokens": row[3],
            "retries": row[4], "with_usage": row[5]}


# --------------------------------------------------------------------------- prompts


def _prompt(row) -> dict:
    return dict(zip(_PROMPT_COLUMNS, row))


def add_prompt(db: Database, *, question: str, version: str, system: str, user_template: str, source: str,
               hash: str, author: str, note: str = "") -> dict:
    """Store a lead's prompt version; a version name is used once per question."""
    with write(db):
        if db.execute("SELECT 1 FROM judge_prompts WHERE question = ? AND version = ?", [question, version]).fetchone():
            raise IFJudgeError(f"prompt version {version!r} of {question} exists already: a version is never changed; "
                               "choose a new version name")
        cur = db.execute(
            "INSERT INTO judge_prompts (question, version, system, user_template, source, hash, author, note, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [question, version, system, user_template, source, hash, author, note, now_iso()])
        pid = cur.lastrowid
    return _prompt(db.execute(f"SELECT {', '.join(_PROMPT_COLUMNS)} FROM judge_prompts WHERE id = ?", [pid]).fetchone())


def stored_prompts(db: Database, question: str | None = None) -> list[dict]:
    """The leads' prompt versions (of one question), oldest first."""
    sql = f"SELECT {', '.join(_PROMPT_COLUMNS)} FROM judge_prompts"
    args: list = []
    if question is not None:
        sql += " WHERE question = ?"
        args.append(question)
    return [_prompt(r) for r in db.execute(sql + " ORDER BY id", args).fetchall()]


# --------------------------------------------------------------------------- the judge's defaults


def settings(db: Database, keys: Sequence[str]) -> dict[str, str]:
    """Values of table ``settings`` (the chat judge's endpoint and model), for the keys set."""
    marks = ", ".join("?" * len(keys))
    return dict(db.execute(f"SELECT key, value FROM settings WHERE key IN ({marks})", list(keys)).fetchall())


def save_settings(db: Database, values: dict[str, str | None]) -> None:
    """Set values of table ``settings`` (a None value is left as it is)."""
    with write(db):
        for key, value in values.items():
            if value is not None:
                db.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = ?",
                           [key, value, value])
