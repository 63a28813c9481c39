"""Studies, items, assignments and labels: the SQL behind annotation.studies and
annotation.workspace. Every write that reads first is one write transaction (``storage.db.write``).

A *screen* is what an annotator sees at once: all the questions of one instance, or one
(instance, document) pair. All items of a screen are assigned to the same annotators, so the
per-item cap is enforced screen by screen.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from storage import dialect, study_reads
from storage.db import SHARED_READS, Database, now_iso, user_lock, write
from storage.errors import IFJudgeError, NotFound, PermissionDenied

# check items (known answers mixed into a study, annotation.check_items) are served like any item but
# left out of every read of outcomes, agreement, estimates and exports: those reads filter on this
NOT_CHECK = "is_check = 0"
ITEM_KEYS = ("id", "study_id", "screen", "position", "instance_id", "question", "doc_id", "narrative_version_id", "payload", "cap")


class StaleSubmission(IFJudgeError):
    """The screen was already submitted (another tab, a double click): nothing was written."""


class AlreadyAnswered(StaleSubmission):
    """A submission based on an older state of the screen than what is stored: the user answered it
    since (in another tab or window). Nothing was written; the stored answer stays the current one.
    ``submitted_at`` is when the stored answer was given (epoch seconds)."""

    def __init__(self, message: str, submitted_at: float | None = None):
        super().__init__(message)
        self.submitted_at = submitted_at


def insert_study(
    db: Database,
    *,
    project_id: int,
    name: str,
    questions: list[str],
    settings: dict,
    created_by: str,
    annotator_ids: list[int],
    items: list[dict],
    plan: dict[str, list[int]],
) -> int:
    """Create a study with its items and its assignment plan (screen -> user ids) in one transaction."""
    with write(db):
        study_id = db.execute(
            "INSERT INTO studies (project_id, name, questions, settings, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [project_id, name, json.dumps(questions), json.dumps(settings), created_by, now_iso()],
        ).lastrowid
        db.executemany(
            "INSERT INTO study_annotators (study_id, user_id) VALUES (?, ?)", [(study_id, u) for u in annotator_ids]
        )
        insert_items(db, study_id, items, plan)
    return study_id




def insert_items(db, study_id: int, items: list[dict], plan: dict[str, list[int]]) -> None:
    """Insert items and their assignment plan inside the caller's write transaction."""
    for it in items:
        item_id = db.execute(
            "INSERT INTO items (study_id, screen, position, instance_id, question, doc_id, narrative_version_id, payload, cap,"
            " is_check) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                study_id, it["screen"], it["position"], it["instance_id"], it["question"], it.get("doc_id"),
                it.get("narrative_version_id"), json.dumps(it.get("payload", {})), it["cap"], int(bool(it.get("is_check"))),
            ],
        ).lastrowid
        users = plan.get(it["screen"], [])
        if len(users) > it["cap"]:
            raise IFJudgeError(f"plan gives screen {it['screen']!r} {len(users)} annotators, above its cap {it['cap']}")
        db.executemany(
            "INSERT INTO assignments (item_id, user_id, state, claimed_at, position) VALUES (?, ?, 'pending', NULL, ?)",
            [(item_id, u, it["position"]) for u in users],
        )


def get_study(db: Database, study_id: int) -> dict:
    """The study's row: id, project_id, name, questions, settings, created_by, created_at,
    closed_at and ``annotators`` (their names). While ``db`` shares its reads within one run
    (:func:`shared_reads`, not across runs) the row is read once and each call gets a copy."""
    return study_reads.shared_row(db, ("study", study_id), lambda: _read_study(db, study_id))


def _read_study(db: Database, study_id: int) -> dict:
    row = db.execute(
        "SELECT id, project_id, name, questions, settings, created_by, created_at, closed_at FROM studies WHERE id = ?",
        [study_id]).fetchone()
    if row is None:
        raise NotFound(f"no study with id {study_id}")
    s = dict(zip(("id", "project_id", "name", "questions", "settings", "created_by", "created_at", "closed_at"), row))
    s["questions"] = json.loads(s["questions"])
    s["settings"] = json.loads(s["settings"])
    s["annotators"] = [
        r[0]
        for r in db.execute(
            "SELECT u.name FROM study_annotators sa JOIN users u ON u.id = sa.user_id WHERE sa.study_id = ? ORDER BY u.name",
            [study_id],
        )
    ]
    return s


def list_studies(db: Database, project_id: int | None = None) -> list[dict]:
    sql, args = "SELECT id FROM studies", []
    if project_id is not None:
        sql, args = sql + " WHERE project_id = ?", [project_id]
    return [get_study(db, r[0]) for r in db.execute(sql + " ORDER BY id", args)]


def studies_for_user(db: Database, user_id: int) -> list[dict]:
    ids = [r[0] for r in db.execute("SELECT study_id FROM study_annotators WHERE user_id = ? ORDER BY study_id", [user_id])]
    return [get_study(db, i) for i in ids]


def item_counts(db: Database, study_id: int) -> dict[str, int]:
    out = {"screens": db.execute("SELECT COUNT(DISTINCT screen) FROM items WHERE study_id = ?", [study_id]).fetchone()[0]}
    for q, n in db.execute("SELECT question, COUNT(*) FROM items WHERE study_id = ? GROUP BY question", [study_id]):
        out[f"items_{q}"] = n
    out["assignments"] = db.execute(
        "SELECT COUNT(*) FROM assignments a JOIN items i ON i.id = a.item_id WHERE i.study_id = ?", [study_id]
    ).fetchone()[0]
    return out


def _row_item(r) -> dict:
    d = dict(zip(ITEM_KEYS, r))
    d["payload"] = json.loads(d["payload"])
    return d


def screen_items(db: Database, study_id: int, screen: str) -> list[dict]:
    rows = db.execute(
        f"SELECT {', '.join(ITEM_KEYS)} FROM items WHERE study_id = ? AND screen = ? ORDER BY id", [study_id, screen]
    ).fetchall()
    if not rows:
        raise NotFound(f"study {study_id} has no screen {screen!r}")
    return [_row_item(r) for r in rows]


def share_reads(db: Database, *, across_runs: bool = False) -> Database:
    """From now on :func:`items_of_study` and :func:`current_labels` read each study's rows from
    the database once and answer later calls (any question) from them, as fresh dicts, and
    :func:`shared` keeps what is computed from them; the first write through ``db``
    (:func:`storage.db.write`) ends it. For read-only screens and reports that call several
    library functions over the same study (the monitor read the labels of a study a dozen times
    per run): a page's connection lives for one run. With ``across_runs`` the rows and values stay
    in the process for the next run while the study's data are unchanged, and its labels are then
    read incrementally (:mod:`storage.study_reads`). Returns ``db``."""
    setattr(db, SHARED_READS, {study_reads.ACROSS_RUNS: True} if across_runs else {})
    return db


@contextmanager
def shared_reads(db: Database, *, across_runs: bool = False) -> Iterator[Database]:
    """:func:`share_reads` within the block only."""
    share_reads(db, across_runs=across_runs)
    try:
        yield db
    finally:
        vars(db).pop(SHARED_READS, None)


def shared(db: Database, key: tuple, compute):
    """``compute()``, kept under ``key`` = (name, study id, ...) while ``db`` shares its reads
    (:func:`share_reads`); simply ``compute()`` otherwise. For values derived from the shared rows
    only; kept across runs too when the sharing is (then never change them)."""
    cache = _shared_values(db, key)
    if cache is None:
        return compute()
    if key not in cache:
        cache[key] = compute()
    return cache[key]


def _shared_values(db: Database, key: tuple) -> dict | None:
    """Where the shared values of the study ``key[1]`` live, None when ``db`` does not share."""
    cache = vars(db).get(SHARED_READS)
    return None if cache is None else study_reads.values(db, key, cache)


def _shared_rows(db: Database, key: tuple, read) -> list | None:
    cache = _shared_values(db, key)
    if cache is None:
        return None
    if key not in cache:
        cache[key] = read()
    return cache[key]


def _row_items(rows) -> list[dict]:
    """:func:`_row_item` of each row, a payload text shared by many items (``{}``) parsed once and
    copied (shallow) for each of them."""
    parsed: dict[str, dict] = {}
    out = []
    j = ITEM_KEYS.index("payload")
    for r in rows:
        d = dict(zip(ITEM_KEYS, r))
        raw = r[j]
        if raw not in parsed:
            parsed[raw] = json.loads(raw)
        d["payload"] = dict(parsed[raw])
        out.append(d)
    return out


def items_of_study(db: Database, study_id: int, question: str | None = None) -> list[dict]:
    sql, args = f"SELECT {', '.join(ITEM_KEYS)} FROM items WHERE study_id = ? AND {NOT_CHECK}", [study_id]
    shared = _shared_rows(db, ("items", study_id), lambda: _row_items(db.execute(sql + " ORDER BY position, id", args)))
    if shared is not None:  # copies: a caller may change its dicts
        return [{**d, "payload": dict(d["payload"])} for d in shared if not question or d["question"] == question]
    if question:
        sql, args = sql + " AND question = ?", [*args, question]
    return _row_items(db.execute(sql + " ORDER BY position, id", args))


ITEM_COLUMN_KEYS = ("id", "instance_id", "question", "doc_id", "cap", "gold")


def item_columns(db: Database, study_id: int, question: str | None = None) -> dict[str, list]:
    """The items of the study (one question, or all) as columns, in :func:`items_of_study`'s
    order: :data:`ITEM_COLUMN_KEYS` (id, instance_id, question, doc_id, cap and ``gold``, the
    payload's, None when it has none) and ``screen``, without decoding each item's payload (a study
    of 33,000 items)."""
    sql = ("SELECT id, instance_id, question, doc_id, cap, json_extract(payload, '$.gold'), screen FROM items"
           f" WHERE study_id = ? AND {NOT_CHECK} ORDER BY position, id")

    def read() -> dict[str, list]:
        rows = db.execute(sql, [study_id]).fetchall()
        return {k: [r[j] for r in rows] for j, k in enumerate((*ITEM_COLUMN_KEYS, "screen"))}

    cols = _shared_rows(db, ("item_columns", study_id), read)
    cols = read() if cols is None else cols
    if not question:  # copies: a caller may change its lists
        return {k: list(v) for k, v in cols.items()}
    keep = [j for j, q in enumerate(cols["question"]) if q == question]
    return {k: [v[j] for j in keep] for k, v in cols.items()}


def item_rows_of_questions(db: Database, study_id: int, questions) -> list[tuple]:
    """(id, instance_id, question, doc_id, cap, payload) of the study's items asking one of
    ``questions``, in :func:`items_of_study` order; a payload text shared by many items (``{}``) is
    parsed once and its dict shared by them: read the dicts, do not change them."""
    marks = ",".join("?" * len(questions))
    parsed: dict[str, dict] = {}
    out = []
    for item_id, inst, q, doc, cap, raw in db.execute(
            f"SELECT id, instance_id, question, doc_id, cap, payload FROM items WHERE study_id = ? AND {NOT_CHECK}"
            f" AND question IN ({marks})"
            " ORDER BY position, id", [study_id, *questions]):
        payload = parsed.get(raw)
        if payload is None:
            payload = parsed[raw] = json.loads(raw)
        out.append((item_id, inst, q, doc, cap, payload))
    return out


def item_payloads(db: Database, study_id: int) -> dict[int, dict]:
    """item id -> payload (parsed) of every item of the study; a payload text shared by many items
    (``{}``, ``{"control": true}``) is parsed once and its dict shared by them: read the dicts, do
    not change them. While ``db`` shares its reads (:func:`share_reads`) the mapping is shared too."""

    def read() -> dict[int, dict]:
        parsed: dict[str, dict] = {}
        out = {}
        for item_id, raw in db.execute(f"SELECT id, payload FROM items WHERE study_id = ? AND {NOT_CHECK}", [study_id]):
            if raw not in parsed:
                parsed[raw] = json.loads(raw)
            out[item_id] = parsed[raw]
        return out

    shared = _shared_rows(db, ("item_payloads", study_id), read)
    return read() if shared is None else shared


def study_item(db: Database, study_id: int, item_id: int) -> dict | None:
    """Item ``item_id`` of study ``study_id`` (as :func:`items_of_study` gives it), None when the
    study has no such item."""
    r = db.execute(f"SELECT {', '.join(ITEM_KEYS)} FROM items WHERE study_id = ? AND id = ?", [study_id, item_id]).fetchone()
    return None if r is None else _row_item(r)


def claim_next(
    db: Database, study_id: int, user_id: int, *, timeout_s: float = 1800.0, now: float | None = None
) -> str | None:
    """Hand the user their next screen, or None when nothing is left for them.

    In one write transaction: (1) a screen the user already holds; (2) else their first pending
    screen; (3) else a screen whose claim by someone else expired (older than ``timeout_s``),
    transferred to the user when they have never had it and the per-item cap holds. A closed study
    (:func:`close_study`) hands out only (1).
    SQLite: the transaction holds the one write lock. PostgreSQL: only this user's lock, and the
    rows handed out are locked with ``FOR UPDATE SKIP LOCKED``: annotators never wait on each other
    and two of them never take the same expired screen.
    """
    now = time.time() if now is None else now
    with write(db, lock=user_lock(user_id)):
        # a closed study hands out no new screen: only one the user already holds can be finished
        closed = db.execute("SELECT closed_at FROM studies WHERE id = ?", [study_id]).fetchone()
        closed = bool(closed and closed[0])
        for _ in range(3):  # a screen taken from under us between the pick and the update: pick again
            screen = _own_next(db, study_id, user_id, states=("claimed",) if closed else ("claimed", "pending"))
            if screen is None and not closed:
                screen = _take_expired(db, study_id, user_id, now - timeout_s)
            if screen is None:
                return None
            claimed = db.execute(
                "UPDATE assignments SET state = 'claimed', claimed_at = ?"
                " WHERE user_id = ? AND state != 'done' AND item_id IN (SELECT id FROM items WHERE study_id = ? AND screen = ?)",
                [now, user_id, study_id, screen],
            ).rowcount
            if claimed:
                return screen
    return None


def order_own_queue(db: Database, study_id: int, user_id: int, arrange) -> int:
    """Give the user's items of the study that have no order of theirs yet (a new study, a new
    round) their own order, after everything they already hold: ``arrange`` takes the
    ``(screen, query id)`` pairs (in the study's order) and returns the screens in the user's order
    (``annotation.item_order.spaced_order``). One write transaction; returns how many screens
    were ordered (0, with no write, when there is nothing to order)."""
    # CROSS JOIN keeps SQLite on the user's unordered assignments (partial index
    # assignments_unordered: none, once ordered) instead of walking every item of the study
    unordered = ("SELECT 1 FROM assignments a CROSS JOIN items i ON i.id = a.item_id"
                 " WHERE a.user_id = ? AND a.ordered = 0 AND i.study_id = ? LIMIT 1")
    if db.execute(unordered, [user_id, study_id]).fetchone() is None:
        return 0
    with write(db, lock=user_lock(user_id)):
        rows = db.execute(
            "SELECT a.item_id, i.screen, COALESCE(inst.query_id, i.instance_id) FROM assignments a"
            " CROSS JOIN items i ON i.id = a.item_id JOIN studies s ON s.id = i.study_id"
            " LEFT JOIN instances inst ON inst.project_id = s.project_id AND inst.instance_id = i.instance_id"
            " WHERE a.user_id = ? AND a.ordered = 0 AND i.study_id = ? ORDER BY a.position, a.item_id",
            [user_id, study_id],
        ).fetchall()
        if not rows:
            return 0
        items_of: dict[str, list[int]] = {}
        query_of: dict[str, str] = {}
        for item_id, screen, query in rows:
            items_of.setdefault(screen, []).append(item_id)
            query_of.setdefault(screen, query)
        base = db.execute(
            "SELECT COALESCE(MAX(a.position), -1) + 1 FROM assignments a JOIN items i ON i.id = a.item_id"
            " WHERE a.user_id = ? AND i.study_id = ? AND a.ordered = 1",
            [user_id, study_id],
        ).fetchone()[0]
        order = arrange(list(query_of.items()))
        db.executemany(
            "UPDATE assignments SET position = ?, ordered = 1 WHERE user_id = ? AND item_id = ?",
            [(base + rank, user_id, item_id) for rank, screen in enumerate(order) for item_id in items_of[screen]],
        )
    return len(order)


def _own_next(db: Database, study_id: int, user_id: int, states=("claimed", "pending")) -> str | None:
    """The screen the user holds, else their first pending one (of ``states``)."""
    # held first, then the first pending: two queries that each walk the index
    # (user_id, state, position) in order, instead of sorting all of the user's open rows
    for state in states:
        row = db.execute(
            "SELECT i.screen FROM assignments a JOIN items i ON i.id = a.item_id"
            " WHERE a.user_id = ? AND a.state = ? AND i.study_id = ?"
            " ORDER BY a.position, a.item_id LIMIT 1" + dialect.skip_locked(db, "a"),
            [user_id, state, study_id],
        ).fetchone()
        if row is not None:
            return row[0]
    return None


def _take_expired(db: Database, study_id: int, user_id: int, expired_before: float) -> str | None:
    """Transfer to the user a screen whose claim by someone else expired; None if there is none."""
    candidates = db.execute(
        "SELECT i.screen, a.user_id FROM assignments a JOIN items i ON i.id = a.item_id"
        " WHERE i.study_id = ? AND a.state = 'claimed' AND a.claimed_at < ? AND a.user_id != ?"
        " AND NOT EXISTS (SELECT 1 FROM items i2 JOIN assignments a2 ON a2.item_id = i2.id"
        "   WHERE i2.study_id = i.study_id AND i2.screen = i.screen AND a2.user_id = ?)"
        " ORDER BY a.claimed_at, a.position LIMIT 8",
        [study_id, expired_before, user_id, user_id],
    ).fetchall()
    for screen, stale_user in dict.fromkeys(map(tuple, candidates)):
        item_ids = [r[0] for r in db.execute("SELECT id FROM items WHERE study_id = ? AND screen = ?", [study_id, screen])]
        marks = ",".join("?" * len(item_ids))
        held = [r[0] for r in db.execute(
            f"SELECT item_id FROM assignments WHERE user_id = ? AND state = 'claimed' AND item_id IN ({marks})",
            [stale_user, *item_ids]).fetchall()]
        locked = [r[0] for r in db.execute(
            f"SELECT a.item_id FROM assignments a WHERE a.user_id = ? AND a.state = 'claimed' AND a.item_id IN ({marks})"
            " ORDER BY a.item_id" + dialect.skip_locked(db, "a"),
            [stale_user, *item_ids]).fetchall()]
        if not held or sorted(held) != locked:
            continue  # another annotator is taking this screen right now
        db.execute(
            f"UPDATE assignments SET user_id = ?, state = 'pending', claimed_at = NULL"
            f" WHERE user_id = ? AND state = 'claimed' AND item_id IN ({marks})",
            [user_id, stale_user, *item_ids],
        )
        over = db.execute(
            f"SELECT i.id FROM items i WHERE i.id IN ({marks})"
            " AND (SELECT COUNT(*) FROM assignments a WHERE a.item_id = i.id) > i.cap",
            item_ids,
        ).fetchone()
        if over is not None:  # cannot happen through a transfer; refuse rather than exceed a cap
            raise IFJudgeError(f"item {over[0]} would exceed its cap")
        return screen
    return None


def skip(db: Database, study_id: int, user_id: int, screen: str) -> None:
    """Move a held screen to the end of the user's queue."""
    with write(db, lock=user_lock(user_id)):
        last = db.execute(
            "SELECT COALESCE(MAX(a.position), 0) FROM assignments a JOIN items i ON i.id = a.item_id"
            " WHERE a.user_id = ? AND i.study_id = ?",
            [user_id, study_id],
        ).fetchone()[0]
        db.execute(
            "UPDATE assignments SET state = 'pending', claimed_at = NULL, position = ?"
            " WHERE user_id = ? AND state != 'done' AND item_id IN (SELECT id FROM items WHERE study_id = ? AND screen = ?)",
            [last + 1, user_id, study_id, screen],
        )


def newest_labels(db: Database, item_ids: list[int], user_id: int) -> dict[int, dict]:
    """item id -> the user's current (newest) label on it."""
    if not item_ids:
        return {}
    marks = ",".join("?" * len(item_ids))
    keys = ("id", "item_id", "value", "reason", "shown_order", "submitted_at", "duration_ms")
    out = {}
    for r in db.execute(
        f"SELECT {', '.join(keys)} FROM labels WHERE user_id = ? AND item_id IN ({marks}) ORDER BY id",
        [user_id, *item_ids],
    ):
        d = dict(zip(keys, r))
        d["shown_order"] = json.loads(d["shown_order"]) if d["shown_order"] else None
        out[d["item_id"]] = d
    return out


def submit(
    db: Database,
    *,
    study_id: int,
    user_id: int,
    screen: str,
    answers: dict[int, dict],
    based_on: dict[int, int | None],
    started_at: float | None,
    now: float | None = None,
    replace: bool = False,
) -> list[int]:
    """Append one label per answered item and mark the screen done, in one transaction.

    ``answers``: item id -> {"value", "reason", "shown_order"}. ``based_on``: item id -> the id of
    the user's newest label when the screen was shown (None if none). If any differs from what is
    stored now, the screen was already submitted elsewhere and :class:`AlreadyAnswered` (a
    :class:`StaleSubmission`) is raised with nothing written: a double click or a second tab cannot
    add a second label, nor silently replace the current one. ``replace=True`` is the user's
    explicit "replace my answer": the new labels then supersede whatever is current.
    """
    now = time.time() if now is None else now
    duration = None if started_at is None else max(0, int(round((now - started_at) * 1000)))
    with write(db, lock=user_lock(user_id)):
        item_ids = [r[0] for r in db.execute("SELECT id FROM items WHERE study_id = ? AND screen = ?", [study_id, screen])]
        if not item_ids:
            raise NotFound(f"study {study_id} has no screen {screen!r}")
        if set(answers) != set(item_ids):
            raise IFJudgeError("every question of the screen must be answered")
        marks = ",".join("?" * len(item_ids))
        held = {
            r[0]
            for r in db.execute(
                f"SELECT item_id FROM assignments WHERE user_id = ? AND item_id IN ({marks}) ORDER BY item_id"
                + dialect.for_update(db),
                [user_id, *item_ids],
            )
        }
        if held != set(item_ids):
            raise PermissionDenied("this screen is not assigned to you (it may have been handed to someone else)")
        current = {
            r[0]: r[1]
            for r in db.execute(
                f"SELECT item_id, MAX(id) FROM labels WHERE user_id = ? AND item_id IN ({marks}) GROUP BY item_id",
                [user_id, *item_ids],
            )
        }
        for item_id in item_ids:
            if not replace and current.get(item_id) != based_on.get(item_id):
                row = db.execute("SELECT submitted_at FROM labels WHERE id = ?", [current.get(item_id)]).fetchone()
                raise AlreadyAnswered(
                    "you already answered this item (in another tab or window) after this page opened it; "
                    "that answer is kept as your current one and these answers were not stored",
                    row[0] if row else None,
                )
        position = _shown_position(db, study_id, user_id, [current[i] for i in item_ids if current.get(i)])
        label_ids = []
        for item_id in item_ids:
            a = answers[item_id]
            label_ids.append(
                db.execute(
                    "INSERT INTO labels (item_id, user_id, value, reason, shown_order, started_at, submitted_at, duration_ms,"
                    " supersedes, shown_position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        item_id, user_id, a["value"], a.get("reason") or "",
                        json.dumps(a["shown_order"]) if a.get("shown_order") is not None else None,
                        started_at, now, duration, current.get(item_id), position,
                    ],
                ).lastrowid
            )
        db.execute(
            f"UPDATE assignments SET state = 'done' WHERE user_id = ? AND item_id IN ({marks})", [user_id, *item_ids]
        )
    return label_ids


def _shown_position(db: Database, study_id: int, user_id: int, earlier_labels: list[int]) -> int | None:
    """The place of a screen in the user's own sequence of the study: 1 + the screens they had
    answered before it; a screen answered again keeps the place of its first answer. Read from the
    user's newest first answer in the study (index labels_user, backwards: a row or two)."""
    if earlier_labels:
        marks = ",".join("?" * len(earlier_labels))
        row = db.execute(f"SELECT MIN(shown_position) FROM labels WHERE id IN ({marks})", earlier_labels).fetchone()
        return row[0]
    row = db.execute(
        "SELECT l.shown_position FROM labels l JOIN items i ON i.id = l.item_id"
        " WHERE l.user_id = ? AND i.study_id = ? AND l.supersedes IS NULL ORDER BY l.id DESC LIMIT 1",
        [user_id, study_id],
    ).fetchone()
    if row is None:
        return 1
    if row[0] is not None:
        return row[0] + 1
    return 1 + progress(db, study_id, user_id)[0]  # answers from before places were stored: counted once


def shown_positions(db: Database, study_id: int) -> dict[tuple[int, str], int | None]:
    """(item id, annotator name) -> the place in that annotator's own sequence at which their
    current label was given (None for labels given before places were stored)."""
    rows = db.execute(
        "SELECT l.item_id, u.name, l.shown_position FROM labels l JOIN items i ON i.id = l.item_id"
        f" JOIN users u ON u.id = l.user_id WHERE i.study_id = ? AND {_CURRENT}",
        [study_id],
    ).fetchall()
    return {(item, name): position for item, name, position in rows}


def progress(db: Database, study_id: int, user_id: int) -> tuple[int, int]:
    """(done screens, total screens) for the user in the study (kept while ``db`` shares its reads)."""

    def read() -> tuple[int, int]:
        # CROSS JOIN keeps SQLite on the user's own assignments (index assignments_user) instead of
        # walking every item of the study: 3-4x faster with 20 annotators (bench/load_test.py)
        total, done = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(d), 0) FROM ("
            " SELECT MIN(CASE WHEN a.state = 'done' THEN 1 ELSE 0 END) AS d FROM assignments a CROSS JOIN items i"
            " ON i.id = a.item_id WHERE a.user_id = ? AND i.study_id = ? GROUP BY i.screen) AS per_screen",
            [user_id, study_id],
        ).fetchone()
        return int(done), int(total)

    shared = _shared_rows(db, ("progress", study_id, user_id), read)
    return read() if shared is None else shared


def done_screens(db: Database, study_id: int, user_id: int) -> list[str]:
    """Screens the user has submitted, oldest submission first."""
    return [
        r[0]
        for r in db.execute(
            "SELECT i.screen, MAX(l.id) AS last FROM labels l JOIN items i ON i.id = l.item_id"
            " WHERE l.user_id = ? AND i.study_id = ? GROUP BY i.screen ORDER BY last",
            [user_id, study_id],
        )
    ]


LABEL_KEYS = ("item", "instance", "question", "doc_id", "annotator", "value", "reason", "shown_order", "submitted_at",
              "duration_ms", "screen")


# label l is the current one of its (item, annotator): no newer label of theirs (index labels_item_user).
# 100,008 labels (bench/bench_current_labels.py): as fast as the correlated MAX(id) subquery on
# SQLite, 0.5 s instead of 0.8 s on PostgreSQL (an anti-join there); a GROUP BY or ROW_NUMBER()
# form is slower on one engine or the other
_CURRENT = ("NOT EXISTS (SELECT 1 FROM labels l2 WHERE l2.item_id = l.item_id AND l2.user_id = l.user_id"
            " AND l2.id > l.id)")


def _current_label_rows(db: Database, study_id: int, question: str | None) -> list[tuple]:
    """The rows of :func:`current_labels` as tuples in :data:`LABEL_KEYS` order."""
    sql = (
        "SELECT l.item_id, i.instance_id, i.question, i.doc_id, u.name, l.value, l.reason, l.shown_order,"
        " l.submitted_at, l.duration_ms, i.screen"
        " FROM labels l JOIN items i ON i.id = l.item_id JOIN users u ON u.id = l.user_id"
        " WHERE i.study_id = ? AND i.is_check = 0 AND " + _CURRENT
    )
    args: list = [study_id]
    shared = _shared_rows(db, ("labels", study_id), lambda: db.execute(sql + " ORDER BY l.item_id, u.name", args).fetchall())
    if shared is not None:
        return [r for r in shared if r[2] == question] if question else shared
    if question:
        sql += " AND i.question = ?"
        args.append(question)
    return db.execute(sql + " ORDER BY l.item_id, u.name", args).fetchall()


def current_labels(db: Database, study_id: int, question: str | None = None) -> list[dict]:
    """The current (newest) label of every (item, annotator) in the study, ordered by item and
    annotator, as dicts with the keys :data:`LABEL_KEYS`."""
    return [dict(zip(LABEL_KEYS, r)) for r in _current_label_rows(db, study_id, question)]


class LabelColumns(Mapping):
    """Label rows (tuples in :data:`LABEL_KEYS` order) read as columns: key -> list, each list
    built the first time it is asked for (a caller reads three or four of the eleven)."""

    def __init__(self, rows: list[tuple]):
        self._rows, self._columns = rows, {}

    def __getitem__(self, key: str) -> list:
        if key not in self._columns:
            if key not in LABEL_KEYS:
                raise KeyError(f"{key!r} is not a label column; the columns are {', '.join(LABEL_KEYS)}")
            j = LABEL_KEYS.index(key)
            self._columns[key] = [r[j] for r in self._rows]
        return self._columns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(LABEL_KEYS)

    def __len__(self) -> int:
        return len(LABEL_KEYS)


def current_label_columns(db: Database, study_id: int, question: str | None = None) -> LabelColumns:
    """:func:`current_labels` as columns (:class:`LabelColumns`: key -> one list, the rows in the
    same order). For code that reads every label of a large study (a dict per label costs more
    than the work done with it: 100,000 labels). While ``db`` shares its reads
    (:func:`share_reads`) the columns are shared too: read them, do not change them."""
    read = lambda: LabelColumns(_current_label_rows(db, study_id, question))  # noqa: E731
    shared = _shared_rows(db, ("label_columns", study_id, question), read)
    return read() if shared is None else shared


def current_label_values(db: Database, study_id: int, question: str | None = None) -> tuple[list[int], list[str]]:
    """(item ids, values) of the current labels of the study (one question, or all), in
    :func:`current_labels` order (by item, then annotator name): the two columns a majority vote
    needs, read without the other nine (100,008 labels: 0.12 s instead of 0.39 s). While ``db``
    shares its reads (:func:`share_reads`) the lists are shared too: read them, do not change them."""

    def read() -> tuple[list[int], list[str]]:
        rows = _current_by_annotator_name(db, study_id, question, "l.item_id, l.value")
        return [r[0] for r in rows], [r[1] for r in rows]

    shared = _shared_rows(db, ("label_values", study_id, question), read)
    return read() if shared is None else shared


def current_label_votes(db: Database, study_id: int, question: str | None = None) -> list[tuple[int, str, str]]:
    """(item id, annotator, value) of the current labels of the study (one question, or all), in
    :func:`current_labels` order: three of its eleven columns, as tuples."""
    return _current_by_annotator_name(db, study_id, question, "l.item_id, u.name, l.value")


def _current_by_annotator_name(db: Database, study_id: int, question: str | None, columns: str) -> list[tuple]:
    """``columns`` (of ``l`` labels, ``u`` users) of the current labels of the study (one question,
    or all), by item, then annotator name (the order of :func:`current_labels`)."""
    return db.execute(
        f"SELECT {columns} FROM labels l JOIN items i ON i.id = l.item_id JOIN users u ON u.id = l.user_id"
        " WHERE i.study_id = ? AND i.is_check = 0" + (" AND i.question = ?" if question else "") + " AND " + _CURRENT
        + " ORDER BY l.item_id, u.name", [study_id, question] if question else [study_id]).fetchall()


def item_current_labels(db: Database, item_id: int) -> list[tuple[str, str, str]]:
    """(annotator, value, reason) of the current label of each annotator of one item, by name."""
    return [tuple(r) for r in db.execute(
        "SELECT u.name, l.value, l.reason FROM labels l JOIN users u ON u.id = l.user_id"
        " WHERE l.item_id = ? AND " + _CURRENT + " ORDER BY u.name", [item_id])]


def labelled_assignments(db: Database, study_id: int) -> tuple[int, int]:
    """(assignments with a label, assignments) of the study: planned labels (item x annotator)
    and those answered, counted in SQL (kept while ``db`` shares its reads)."""

    def read() -> tuple[int, int]:
        n, done = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN EXISTS (SELECT 1 FROM labels l WHERE l.item_id = a.item_id"
            " AND l.user_id = a.user_id) THEN 1 ELSE 0 END), 0) FROM assignments a JOIN items i ON i.id = a.item_id"
            " WHERE i.study_id = ? AND i.is_check = 0",
            [study_id],
        ).fetchone()
        return int(done), int(n)

    shared = _shared_rows(db, ("labelled_assignments", study_id), read)
    return read() if shared is None else shared


def label_history(db: Database, study_id: int) -> list[dict]:
    keys = ("id", "item", "annotator", "value", "reason", "submitted_at", "supersedes")
    return [
        dict(zip(keys, r))
        for r in db.execute(
            "SELECT l.id, l.item_id, u.name, l.value, l.reason, l.submitted_at, l.supersedes FROM labels l"
            " JOIN items i ON i.id = l.item_id JOIN users u ON u.id = l.user_id WHERE i.study_id = ? ORDER BY l.id",
            [study_id],
        )
    ]


def assignment_rows(db: Database, study_id: int) -> list[dict]:
    keys = ("item", "screen", "annotator", "state", "claimed_at")
    return [
        dict(zip(keys, r))
        for r in db.execute(
            "SELECT a.item_id, i.screen, u.name, a.state, a.claimed_at FROM assignments a"
            " JOIN items i ON i.id = a.item_id JOIN users u ON u.id = a.user_id WHERE i.study_id = ? ORDER BY a.item_id, u.name",
            [study_id],
        )
    ]


def add_adjudication(db: Database, item_id: int, value: str, lead: str, note: str = "") -> int:
    with write(db):
        if db.execute("SELECT 1 FROM items WHERE id = ?", [item_id]).fetchone() is None:
            raise NotFound(f"no item with id {item_id}")
        return db.execute(
            "INSERT INTO adjudications (item_id, value, lead, note, created_at) VALUES (?, ?, ?, ?, ?)",
            [item_id, value, lead, note, now_iso()],
        ).lastrowid


def adjudications(db: Database, study_id: int) -> dict[int, dict]:
    """item id -> newest adjudication."""
    keys = ("id", "item_id", "value", "lead", "note", "created_at")
    out = {}
    for r in db.execute(
        "SELECT a.id, a.item_id, a.value, a.lead, a.note, a.created_at FROM adjudications a"
        " JOIN items i ON i.id = a.item_id WHERE i.study_id = ? ORDER BY a.id",
        [study_id],
    ):
        out[r[1]] = dict(zip(keys, r))
    return out


def acknowledge_guidelines(db: Database, study_id: int, user_id: int) -> None:
    """Record that the user has read the study's goal and guidelines (the first time only)."""
    with write(db):
        db.execute("INSERT INTO guideline_acks (study_id, user_id, acked_at) VALUES (?, ?, ?)"
                   " ON CONFLICT (study_id, user_id) DO NOTHING", [study_id, user_id, now_iso()])


def guidelines_acknowledged(db: Database, study_id: int, user_id: int) -> str | None:
    """When the user acknowledged the study's guidelines (ISO time), or None."""
    row = db.execute("SELECT acked_at FROM guideline_acks WHERE study_id = ? AND user_id = ?", [study_id, user_id]).fetchone()
    return row[0] if row else None


def answer_counts(db: Database, study_id: int) -> tuple[int, int]:
    """(answers given, answers needed) in the study: one per item and annotator assigned."""
    given, needed = db.execute(
        "SELECT COALESCE(SUM(CASE WHEN a.state = 'done' THEN 1 ELSE 0 END), 0), COUNT(*)"
        " FROM assignments a JOIN items i ON i.id = a.item_id WHERE i.study_id = ?",
        [study_id],
    ).fetchone()
    return int(given), int(needed)


def current_values(db: Database, study_id: int) -> dict[int, list[str]]:
    """item id -> the values of its current labels, by annotator name: :func:`current_labels`
    reduced to what a majority vote needs (one short row per label instead of a dict)."""
    out: dict[int, list[str]] = {}
    for item, value in db.execute(
        "SELECT l.item_id, l.value FROM labels l JOIN items i ON i.id = l.item_id JOIN users u ON u.id = l.user_id"
        " WHERE i.study_id = ? AND i.is_check = 0 AND " + _CURRENT + " ORDER BY l.item_id, u.name",
        [study_id],
    ):
        out.setdefault(item, []).append(value)
    return out


def items_of_questions(db: Database, study_id: int, questions) -> list[dict]:
    """The study's items asking one of ``questions``, as :func:`items_of_study` (same keys and
    order); a payload text shared by many items (``{}``) is parsed once and copied (shallow)."""
    marks = ",".join("?" * len(questions))
    return _row_items(db.execute(f"SELECT {', '.join(ITEM_KEYS)} FROM items WHERE study_id = ? AND {NOT_CHECK} AND question IN ({marks})"
                                 " ORDER BY position, id", [study_id, *questions]))


LABEL_VOTE_KEYS = ("item", "user", "value", "reason", "duration_ms")


def label_vote_columns(db: Database, study_id: int) -> dict:
    """The current labels of the study (those of :func:`current_labels`) reduced to
    :data:`LABEL_VOTE_KEYS` (key -> one sequence; ``user`` is the annotator's user id), in no
    particular order: what a majority vote, the agreement statistics and the per-annotator
    figures read. Five columns without a join or a sort: the monitor of a 100,000-label study
    reads them in half the time of :func:`current_label_columns`. While ``db`` shares its reads
    (:func:`share_reads`) the columns are shared: read them, do not change them. Kept across runs
    (:mod:`storage.study_reads`), they are read-only numpy arrays (tuples otherwise)."""

    def read() -> dict:
        rows = db.execute(
            "SELECT l.item_id, l.user_id, l.value, l.reason, l.duration_ms FROM labels l JOIN items i ON i.id = l.item_id"
            " WHERE i.study_id = ? AND i.is_check = 0 AND " + _CURRENT, [study_id]).fetchall()
        return dict(zip(LABEL_VOTE_KEYS, tuple(zip(*rows)) or ((),) * len(LABEL_VOTE_KEYS)))

    kept = study_reads.label_state(db, study_id, vars(db).get(SHARED_READS))
    if kept is not None:  # across runs: only the labels added since the last run are read
        read = lambda: kept.columns(db, study_id, current=_CURRENT)  # noqa: E731
    shared = _shared_rows(db, ("label_vote_columns", study_id), read)
    return read() if shared is None else shared


def item_candidates(db: Database, study_id: int, question: str = "best_passage") -> dict[int, list[str]]:
    """item id -> the passage candidates of its payload (``best_passage`` items: doc ids, in the
    payload's order), for the items of ``question`` that have them; only that member of each
    payload is decoded. Shared while ``db`` shares its reads (:func:`share_reads`): do not change it."""

    def read() -> dict[int, list[str]]:
        rows = db.execute(f"SELECT id, json_extract(payload, '$.candidates') FROM items WHERE study_id = ? AND {NOT_CHECK}"
                          " AND question = ?"
                          " AND json_extract(payload, '$.candidates') IS NOT NULL", [study_id, question]).fetchall()
        # one decode of all the lists (a JSON array of them) instead of one per item
        return dict(zip((r[0] for r in rows), json.loads("[" + ",".join(r[1] for r in rows) + "]")))

    shared = _shared_rows(db, ("item_candidates", study_id, question), read)
    return read() if shared is None else shared


def item_screens(db: Database, study_id: int) -> list[str]:
    """The screen of each item of the study, in :func:`item_columns` order. Shared while ``db``
    shares its reads (:func:`share_reads`)."""

    if vars(db).get(SHARED_READS) is not None:  # one read of the items: their columns (item_columns) hold the screens
        return _shared_rows(db, ("item_screens", study_id), lambda: item_columns(db, study_id)["screen"])
    return [r[0] for r in db.execute(f"SELECT screen FROM items WHERE study_id = ? AND {NOT_CHECK} ORDER BY position, id",
                                     [study_id])]


ITEM_PART_KEYS = ("control", "kind", "mode", "excluded_of")


def item_parts(db: Database, study_id: int) -> dict[str, list]:
    """The members ``control``, ``kind``, ``mode`` and ``excluded_of`` (the excluded passages of
    the instance when a study sampled some of them) of each item's payload (None where absent),
    as columns in :func:`item_columns` order. Only a payload that names one of them is decoded
    (each distinct text once: most payloads are ``{}`` or a candidate list). Shared while ``db``
    shares its reads (:func:`share_reads`): do not change them."""

    def read() -> dict[str, list]:
        named = " OR ".join(f"payload LIKE '%\"{k}\"%'" for k in ITEM_PART_KEYS)
        parsed: dict[str, dict] = {}
        cols: dict[str, list] = {k: [] for k in ITEM_PART_KEYS}
        for (raw,) in db.execute(f"SELECT CASE WHEN {named} THEN payload END FROM items WHERE study_id = ? AND {NOT_CHECK}"
                                 " ORDER BY position, id", [study_id]):
            payload = {} if raw is None else parsed.get(raw)
            if payload is None:
                payload = parsed[raw] = json.loads(raw)
            for k in ITEM_PART_KEYS:
                cols[k].append(payload.get(k) if isinstance(payload, dict) else None)
        return cols

    shared = _shared_rows(db, ("item_parts", study_id), read)
    return read() if shared is None else shared


SHOWN_ORDER_KEYS = ("item", "user", "shown_order")


def shown_order_columns(db: Database, study_id: int, question: str = "best_passage") -> dict[str, tuple]:
    """In what order the passages were shown for each current label of ``question`` (the best
    passage) in the study: :data:`SHOWN_ORDER_KEYS`, key -> one tuple (``shown_order`` the stored
    JSON list, or None), in no particular order. What an annotator's habits read to tell the
    position on screen of the passage they chose. Shared while ``db`` shares its reads
    (:func:`share_reads`)."""

    def read() -> dict[str, tuple]:
        rows = db.execute(
            "SELECT l.item_id, l.user_id, l.shown_order FROM labels l JOIN items i ON i.id = l.item_id"
            " WHERE i.study_id = ? AND i.is_check = 0 AND i.question = ? AND " + _CURRENT, [study_id, question]).fetchall()
        return dict(zip(SHOWN_ORDER_KEYS, tuple(zip(*rows)) or ((),) * len(SHOWN_ORDER_KEYS)))

    shared = _shared_rows(db, ("shown_order_columns", study_id, question), read)
    return read() if shared is None else shared


def close_study(db: Database, study_id: int, *, closed: bool = True) -> None:
    """Close a study (no new screen is handed out; labels and screens already held stay) or open
    it again (``closed=False``)."""
    get_study(db, study_id)
    with write(db):
        db.execute("UPDATE studies SET closed_at = ? WHERE id = ?", [now_iso() if closed else None, study_id])


STUDY_TABLES = ("labels", "adjudications", "drafts", "guideline_acks", "assignments", "items", "study_annotators")


def study_rows(db: Database, study_id: int) -> dict[str, list[dict]]:
    """Every row that belongs to a study, table -> rows (dicts): the study itself, its annotators,
    items, assignments, labels (with their history), adjudications, drafts and guideline
    acknowledgements. What a backup of a deleted study keeps."""
    def rows(sql: str) -> list[dict]:
        cur = db.execute(sql, [study_id])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    by_item = "IN (SELECT id FROM items WHERE study_id = ?)"
    return {
        "studies": rows("SELECT * FROM studies WHERE id = ?"),
        "study_annotators": rows("SELECT sa.*, u.name AS user_name FROM study_annotators sa JOIN users u ON u.id = sa.user_id"
                                 " WHERE sa.study_id = ?"),
        "items": rows("SELECT * FROM items WHERE study_id = ? ORDER BY id"),
        "assignments": rows(f"SELECT * FROM assignments WHERE item_id {by_item} ORDER BY item_id, user_id"),
        "labels": rows(f"SELECT l.*, u.name AS user_name FROM labels l JOIN users u ON u.id = l.user_id"
                       f" WHERE l.item_id {by_item} ORDER BY l.id"),
        "adjudications": rows(f"SELECT * FROM adjudications WHERE item_id {by_item} ORDER BY id"),
        "drafts": rows("SELECT * FROM drafts WHERE study_id = ?"),
        "guideline_acks": rows("SELECT * FROM guideline_acks WHERE study_id = ?"),
    }


def delete_study(db: Database, study_id: int, *, deleted_by: str) -> int:
    """Delete a study and everything that belongs to it, in one transaction, after keeping all its
    rows (:func:`study_rows`, as JSON) in ``study_backups``; returns the backup's id. Nothing is
    deleted unless the backup is written."""
    with write(db):
        study = get_study(db, study_id)
        content = json.dumps(study_rows(db, study_id), ensure_ascii=False, default=str)
        backup_id = db.execute(
            "INSERT INTO study_backups (study_id, project_id, name, deleted_by, deleted_at, content)"
            " VALUES (?, ?, ?, ?, ?, ?)", [study_id, study["project_id"], study["name"], deleted_by, now_iso(), content],
        ).lastrowid
        by_item = "item_id IN (SELECT id FROM items WHERE study_id = ?)"
        for sql in (f"DELETE FROM labels WHERE {by_item}", f"DELETE FROM adjudications WHERE {by_item}",
                    "DELETE FROM drafts WHERE study_id = ?", "DELETE FROM guideline_acks WHERE study_id = ?",
                    f"DELETE FROM assignments WHERE {by_item}", "DELETE FROM items WHERE study_id = ?",
                    "DELETE FROM study_annotators WHERE study_id = ?", "DELETE FROM studies WHERE id = ?"):
            db.execute(sql, [study_id])
    return backup_id


def study_backups(db: Database, project_id: int | None = None) -> list[dict]:
    """The backups of deleted studies (newest first), without their content."""
    sql = "SELECT id, study_id, project_id, name, deleted_by, deleted_at FROM study_backups"
    args: list = []
    if project_id is not None:
        sql, args = sql + " WHERE project_id = ?", [project_id]
    keys = ("id", "study_id", "project_id", "name", "deleted_by", "deleted_at")
    return [dict(zip(keys, r)) for r in db.execute(sql + " ORDER BY id DESC", args)]


def study_backup(db: Database, backup_id: int) -> str:
    """The JSON text of one backup of a deleted study (:func:`study_rows`)."""
    row = db.execute("SELECT content FROM study_backups WHERE id = ?", [backup_id]).fetchone()
    if row is None:
        raise NotFound(f"no study backup with id {backup_id}")
    return row[0]


def has_check_items(db: Database, study_id: int) -> bool:
    """Whether the study has check items (annotation.check_items)."""
    return db.execute("SELECT 1 FROM items WHERE study_id = ? AND is_check = 1 LIMIT 1", [study_id]).fetchone() is not None


def check_labels(db: Database, study_id: int) -> list[tuple[str, str, str | None]]:
    """(annotator, value, known answer or None) of every current label on a check item of the
    study (the known answer is the item payload's ``check_answer``)."""
    return [tuple(r) for r in db.execute(
        "SELECT u.name, l.value, json_extract(i.payload, '$.check_answer') FROM labels l JOIN items i ON i.id = l.item_id"
        " JOIN users u ON u.id = l.user_id WHERE i.study_id = ? AND i.is_check = 1 AND " + _CURRENT, [study_id])]
