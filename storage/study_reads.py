"""A study's shared reads kept from one run to the next in this process, while its data are unchanged.

:func:`storage.studies.share_reads` shares a study's rows, and what the library computes from them
(the outcome table, the agreement reports, the estimates), within one connection: one page run,
one report. A screen a lead runs again and again on the same data (the Monitor page: each widget
change and each Refresh is a new run) passes ``across_runs=True``; its values are then kept here,
keyed by the database and the study, and the next run reuses them while the data are unchanged.

*Unchanged* is the same :func:`data_version`: the number of rows and the highest id of the tables
of :data:`VERSIONED` (labels, items, adjudications, users, assignments, instances, queries, qrels,
and the backups of deleted studies), read once per run (a fraction of a millisecond). IFJudge adds
rows to these tables and never edits one in place that a study's values read (a new label
supersedes the annotator's older one, a lead's newest adjudication wins, a re-judging round adds
items, a qrels version is replaced by new rows), so any change adds a row and changes the version.
Deleting a study removes rows, but first adds its backup: whatever was kept of any study is dropped
then (SQLite may give the deleted study's ids to the next one, with equal row counts). A database
edited by hand (``UPDATE``, ``DELETE``) is not followed: restart the app after such an edit, or
call :func:`forget`.

What changes between two versions is usually a few new labels, so:

- what is read from the study's items and its project's instances and queries alone
  (:data:`ITEM_READS`) stays while none of these is added;
- the study's current labels are kept incrementally (:class:`LabelState`): only the labels added
  since the last read (a higher id) are read, checked against the study's label count, id sum and
  highest id; a label committed out of id order (PostgreSQL's concurrent submits), or any other
  difference, makes it read all of them again;
- what is computed from the labels is computed again.

At most :data:`KEEP` studies are kept (the least recently used is dropped); an in-memory database
is never kept (each ``:memory:`` connection is a database of its own).
"""
from __future__ import annotations

import copy
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from storage import dialect
from storage.db import SHARED_READS, Database

KEEP = 4  # studies whose values stay in the process
ACROSS_RUNS = "across_runs"  # in a connection's shared reads: keep them across runs (storage.studies.share_reads)


def run_cache(db: Database) -> dict | None:
    """Where reads shared within one run are kept while ``db`` shares its reads
    (:func:`storage.studies.shared_reads`, not across runs); None otherwise."""
    cache = vars(db).get(SHARED_READS)
    return None if cache is None or cache.get(ACROSS_RUNS) else cache


def shared_row(db: Database, key: tuple, read, *, also=None):
    """``read()`` (a small row: a project's, a study's) once per ``key`` while ``db`` shares its
    reads within one run (:func:`storage.studies.shared_reads`, not across runs: a row can change
    between runs); a fresh copy for each call, since a caller may change it. ``also(row)``: a
    second key the same row answers (a project read by name answers by id too)."""
    cache = run_cache(db)
    if cache is None:
        return read()
    if key not in cache:
        cache[key] = read()
        if also is not None:
            cache.setdefault(also(cache[key]), cache[key])
    return copy.deepcopy(cache[key])
_VERSION = "data_version"  # in a connection's shared reads: the version read by this run
_PLACE = "place"  # in a connection's shared reads: the database as a key (_place)
_lock = threading.Lock()

_COLUMNS = "l.item_id, l.user_id, l.value, l.reason, l.duration_ms"
#: the columns of :class:`LabelState`, in the order of its SQL reads
LABEL_STATE_KEYS = ("item", "user", "value", "reason", "duration_ms")
# the study's item ids: their range, and the items in it that are not the study's own (check items, other studies)
_ITEM_RANGE = "SELECT MIN(id), MAX(id), COUNT(*) FROM items WHERE study_id = ? AND is_check = 0"
_OTHER_ITEMS = "SELECT id FROM items WHERE id BETWEEN ? AND ? AND NOT (study_id = ? AND is_check = 0)"
# every label of the items of an id range, by item, annotator and id (the index labels_item_user): the last of each
# item and annotator is their current label
_RANGE_LABELS = f"SELECT {_COLUMNS} FROM labels l WHERE l.item_id BETWEEN ? AND ? ORDER BY l.item_id, l.user_id, l.id"
# the study's current labels through its items (a study whose items are spread among many others')
_STUDY_LABELS = (f"SELECT {_COLUMNS} FROM labels l JOIN items i ON i.id = l.item_id"
                 " WHERE i.study_id = ? AND i.is_check = 0 AND ")
# the labels of every study added since (ids above the highest read), with their item's study
_NEW_LABELS = (f"SELECT l.id, {_COLUMNS}, i.study_id, i.is_check FROM labels l CROSS JOIN items i ON i.id = l.item_id"
               " WHERE l.id > ? ORDER BY l.id")
# every label of the database (any study): rows, id sum, highest id
_TOTALS = "SELECT COUNT(*), COALESCE(SUM(id), 0), COALESCE(MAX(id), 0) FROM labels"


# the open studies, newest first, each with the labels of its items' id range (index labels_item_user): what
# reading it costs, an upper bound of its current labels (other studies' items may lie in the range)
_NEWEST_OPEN = ("SELECT s.id, (SELECT COUNT(*) FROM labels l WHERE l.item_id BETWEEN"
                " (SELECT MIN(id) FROM items WHERE study_id = s.id AND is_check = 0) AND"
                " (SELECT MAX(id) FROM items WHERE study_id = s.id AND is_check = 0))"
                " FROM studies s WHERE s.closed_at IS NULL ORDER BY s.id DESC LIMIT ?")

#: the tables a study's shared values are read from, with the column that grows with each new row
VERSIONED = (("items", "id"), ("instances", "rowid"), ("queries", "rowid"), ("study_backups", "id"), ("labels", "id"),
             ("adjudications", "id"), ("users", "id"), ("assignments", "rowid"), ("qrels", "rowid"))
_VERSION_SQL = "SELECT " + ", ".join(f"(SELECT COUNT(*) FROM {t}), (SELECT MAX({c}) FROM {t})" for t, c in VERSIONED)


def data_version(db: Database) -> tuple:
    """Rows and highest id (or rowid) of each table of :data:`VERSIONED`: equal versions mean equal
    data, since IFJudge adds rows to these tables and does not change them (an assignment's state
    changes, but to ``done`` only with its new label; a qrels version is replaced by new rows).

    >>> from storage.db import connect
    >>> data_version(connect(":memory:"))[:4]
    (0, None, 0, None)
    """
    return tuple(db.execute(_VERSION_SQL).fetchone())


class LabelState:
    """A study's current labels (the newest of each item and annotator) as columns (numpy arrays,
    :data:`LABEL_STATE_KEYS`), kept up to date by reading only the labels added since
    (:meth:`columns`). The arrays handed out are never changed: an update makes new ones.

    Whether the labels read so far are still all there is told by the totals of the whole labels
    table (rows, id sum, highest id: one pass over its smallest index): each later read takes the
    labels of an id above the highest read, and the new totals must be the old ones plus those. A
    label committed out of id order (PostgreSQL's concurrent submits), a deleted one, a changed
    study of an item: the totals differ and every label of the study is read again."""

    def __init__(self):
        self._lock = threading.Lock()
        self._columns: dict | None = None  # key -> array, one row per current label
        self._keys = self._rows = None  # (item, user) keys sorted, and the row of each in the columns
        self._totals = None  # the labels table when last read: rows, id sum, highest id

    def columns(self, db: Database, study_id: int, *, current: str) -> dict:
        """The current labels: :data:`LABEL_STATE_KEYS` -> a read-only array each (``user`` the
        annotator's user id, ``duration_ms`` objects, None where absent), in
        no particular order; ``current`` is the SQL condition that keeps the newest label of each
        item and annotator (``l``: labels), for a study whose items are spread among others'."""
        with self._lock:
            if self._columns is None or not self._add_since(db, study_id):
                self._read_all(db, study_id, current)
            return dict(self._columns)

    def _add_since(self, db: Database, study_id: int) -> bool:
        """Add the labels of an id above the highest read (each supersedes the annotator's older
        label of the item); False (nothing changed) when the totals say that some other label is
        missing or gone."""
        rows, id_sum, highest = self._totals
        now = tuple(db.execute(_TOTALS).fetchone())
        if now == self._totals:
            return True
        new = db.execute(_NEW_LABELS, [highest]).fetchall()
        if now != (rows + len(new), id_sum + sum(r[0] for r in new), max([highest, *(r[0] for r in new)])):
            return False
        width = 1 + len(LABEL_STATE_KEYS)  # the id, the columns; then the item's study and is_check
        mine = [r[:width] for r in new if r[width] == study_id and not r[width + 1]]
        if mine:
            self._apply(mine)
        self._totals = now
        return True

    def _apply(self, new: list[tuple]) -> None:
        """Put the labels ``new`` (rows by id) in new columns: each replaces the row of its item and
        annotator, or adds one."""
        import numpy as np

        newest = {(r[1], r[2]): r[1:] for r in new}  # by id: the newest of an item and annotator last
        keys = np.fromiter((_key(i, u) for i, u in newest), np.int64, len(newest))
        order = np.argsort(keys)
        rows = list(newest.values())
        keys, rows = keys[order], [rows[j] for j in order.tolist()]
        at = np.searchsorted(self._keys, keys)
        found = np.zeros(len(keys), bool)
        inside = at < len(self._keys)
        found[inside] = self._keys[at[inside]] == keys[inside]
        n = len(self._columns["item"])
        added = np.flatnonzero(~found)
        target = np.empty(len(keys), np.int64)
        target[found] = self._rows[at[found]]
        target[added] = n + np.arange(len(added))
        cols = {}
        for j, k in enumerate(LABEL_STATE_KEYS):
            old = self._columns[k]
            col = np.empty(n + len(added), old.dtype)
            col[:n] = old
            col[target] = _objects([r[j] for r in rows]) if old.dtype == object else [r[j] for r in rows]
            col.flags.writeable = False
            cols[k] = col
        self._columns = cols
        self._keys = np.insert(self._keys, at[added], keys[added])
        self._rows = np.insert(self._rows, at[added], target[added])

    def _read_all(self, db: Database, study_id: int, current: str) -> None:
        """Read the study's current labels: every label of its items' id range in index order (the
        last of each item and annotator is the current one), or, when other items fill most of
        that range, its current labels through a join."""
        import numpy as np

        # the totals first: a label stored between the two reads is read again next time, never missed
        totals = tuple(db.execute(_TOTALS).fetchone())
        low, high, n_items = db.execute(_ITEM_RANGE, [study_id]).fetchone()
        other = [r[0] for r in db.execute(_OTHER_ITEMS, [low, high, study_id])] if n_items else []
        if not n_items:
            rows = []
        elif len(other) <= n_items:
            rows = db.execute(_RANGE_LABELS, [low, high]).fetchall()
        else:
            rows = db.execute(_STUDY_LABELS + current, [study_id]).fetchall()
            other = []
        n = len(rows)
        table = np.empty((n, len(LABEL_STATE_KEYS)), dtype=object)  # one cell per value, the columns strided views
        if n:
            table[:] = rows
        item, user = table[:, 0].astype(np.int64), table[:, 1].astype(np.int64)
        keys = item * (1 << 32) + user
        keep = np.ones(n, bool)
        keep[:-1] = keys[1:] != keys[:-1]  # the last label of each item and annotator (rows by item, user, id)
        if other:
            keep &= ~np.isin(item, np.asarray(other, np.int64))
        if not keep.all():
            item, user, keys = item[keep], user[keep], keys[keep]
        out = {"item": item, "user": user}
        for j, k in enumerate(LABEL_STATE_KEYS[2:], 2):
            out[k] = table[:, j].copy() if keep.all() else table[keep, j]
        for c in out.values():
            c.flags.writeable = False
        self._rows = np.argsort(keys, kind="stable")
        self._keys = keys[self._rows]
        self._columns, self._totals = out, totals


def _key(item: int, user: int) -> int:
    return item * (1 << 32) + user


def _objects(values):
    """An object array of ``values`` (never a 2-D array: each value one cell)."""
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


@dataclass
class _Kept:
    version: tuple
    values: dict
    items_version: tuple  # the items' part of the version: what the item reads depend on
    item_values: dict  # the reads of the study's items alone (ITEM_READS), kept while no item is added
    labels: LabelState = field(default_factory=LabelState)


#: the shared values read from a study's items and its project's instances and queries alone (the
#: sample's design too): kept while these are unchanged, whatever the labels
ITEM_READS = ("items", "item_columns", "item_payloads", "item_candidates", "item_screens", "item_parts", "study_design",
              "item_groups")


_kept: OrderedDict[tuple, _Kept] = OrderedDict()


def _place(db: Database) -> tuple | None:
    """The database as a key: a file's path and inode (a file replaced at the same path is another
    database), or the URL; None for an in-memory database."""
    target = db.target
    if not target or target == ":memory:":
        return None
    if db.engine == dialect.POSTGRESQL:
        return (target,)
    st = os.stat(target)
    return (target, st.st_dev, st.st_ino)


def newest_open_studies(db: Database, limit: int) -> list[tuple[int, int]]:
    """(study id, labels of its items' id range) of the ``limit`` newest open (not closed) studies,
    newest first: the studies a server reads ahead, and an upper bound of what each costs."""
    return [(sid, n) for sid, n in db.execute(_NEWEST_OPEN, [limit]).fetchall()]


_AT = {table: 2 * k for k, (table, _) in enumerate(VERSIONED)}  # where each table's (rows, highest) is in a version


def _items_part(version: tuple) -> tuple:
    """The part of a version the item reads depend on: items, instances and queries, and the deleted
    studies' backups (the tables of VERSIONED before the labels)."""
    return version[:_AT["labels"]]


def _deletions(version: tuple) -> tuple:
    """The part of a version that grows with each deleted study (its backup): a deletion frees ids
    that SQLite gives out again (a study created after it may get the deleted one's study, item and
    label ids, and equal row counts), so nothing kept of the study survives it."""
    return version[_AT["study_backups"]:_AT["study_backups"] + 2]


def _kept_study(db: Database, study_id: int, shared: dict) -> _Kept | None:
    """The study's kept values for the version this run reads (a new, empty set when the data
    changed; the item reads stay while no item was added), or None when the connection does not
    keep its reads across runs."""
    if not shared.get(ACROSS_RUNS):
        return None
    if _PLACE not in shared:
        shared[_PLACE] = _place(db)
    if shared[_PLACE] is None:
        return None
    if _VERSION not in shared:
        shared[_VERSION] = data_version(db)
    key = (shared[_PLACE], study_id)
    with _lock:
        version = shared[_VERSION]
        kept = _kept.get(key)
        if kept is None or _deletions(kept.version) != _deletions(version):
            kept = _kept[key] = _Kept(version, {}, _items_part(version), {})
        elif kept.version != version:
            kept.version, kept.values = version, {}
            if kept.items_version != _items_part(version):
                kept.items_version, kept.item_values = _items_part(version), {}
        _kept.move_to_end(key)
        while len(_kept) > KEEP:
            _kept.popitem(last=False)
    return kept


def values(db: Database, key: tuple, shared: dict) -> dict:
    """Where the shared value ``key`` = (name, study id, ...) lives for this run: the process's
    kept values of the study (across runs), else the connection's own ``shared`` dict."""
    kept = _kept_study(db, key[1], shared)
    if kept is None:
        return shared
    return kept.item_values if key[0] in ITEM_READS else kept.values


def label_state(db: Database, study_id: int, shared: dict | None) -> LabelState | None:
    """The study's incrementally kept labels when the connection keeps its reads across runs."""
    kept = None if shared is None else _kept_study(db, study_id, shared)
    return None if kept is None else kept.labels


def forget() -> None:
    """Drop every kept study (tests; a database edited by hand)."""
    with _lock:
        _kept.clear()
