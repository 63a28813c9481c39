"""A study's shared reads kept from one run to the next in this process, while its data are unchanged.

:func:`storage.studies.share_reads` shares a study's rows, and what the library computes from them
(the outcome table, the agreement reports, the estimates), within one connection: one page run,
one report. A screen a lead runs again and again on the same data (the Monitor page: each widget
change and each Refresh is a new run) passes ``across_runs=True``; its values are then kept here,
keyed by the database and the study, and the next run reuses them while the data are unchanged.

*Unchanged* is the same :func:`data_version`: the number of rows and the highest id of the tables
of :data:`VERSIONED` (labels, items, adjudications, users, assignments, instances, queries, qrels),
read once per run (a fraction of a millisecond). IFJudge adds rows to these tables and never edits
one in place that a study's values read (a new label supersedes the annotator's older one, a
lead's newest adjudication wins, a re-judging round adds items, a qrels version is replaced by new
rows), so any change adds a row and changes the version. A database edited by hand (``UPDATE``)
is not followed: restart the app after such an edit, or call :func:`forget`.

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

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from storage import dialect
from storage.db import Database

KEEP = 4  # studies whose values stay in the process
ACROSS_RUNS = "across_runs"  # in a connection's shared reads: keep them across runs (storage.studies.share_reads)
_VERSION = "data_version"  # in a connection's shared reads: the version read by this run
_PLACE = "place"  # in a connection's shared reads: the database as a key (_place)
_lock = threading.Lock()

# a study's labels, each row (id, item_id, user_id, value, reason, duration_ms); their totals (rows, id sum, highest id)
_LABEL_ROWS = ("SELECT l.id, l.item_id, l.user_id, l.value, l.reason, l.duration_ms FROM labels l"
               " JOIN items i ON i.id = l.item_id WHERE i.study_id = ? AND i.is_check = 0")
_LABEL_TOTALS = ("SELECT COUNT(*), COALESCE(SUM(l.id), 0), COALESCE(MAX(l.id), 0) FROM labels l"
                 " JOIN items i ON i.id = l.item_id WHERE i.study_id = ? AND i.is_check = 0")


#: the tables a study's shared values are read from, with the column that grows with each new row
VERSIONED = (("items", "id"), ("instances", "rowid"), ("queries", "rowid"), ("labels", "id"), ("adjudications", "id"),
             ("users", "id"), ("assignments", "rowid"), ("qrels", "rowid"))
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
    """A study's current labels (the newest of each item and annotator), kept up to date by reading
    only the labels added since (:meth:`vote_columns`)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._columns: list = [(), (), (), (), ()]  # the current labels: item, user, value, reason, duration_ms
        self._at: dict[tuple[int, int], int] | None = None  # (item, user) -> row in the columns, made when first needed
        self._totals = (0, 0, 0)  # every label of the study read so far, superseded ones too: rows, id sum, highest id

    def vote_columns(self, db: Database, study_id: int, keys: tuple[str, ...], *, current: str) -> dict[str, tuple]:
        """The current labels as :func:`storage.studies.label_vote_columns` gives them (``keys`` =
        item, user, value, reason, duration_ms; one tuple each); ``current`` is the SQL condition
        that keeps the newest label of each item and annotator (``l``: labels)."""
        with self._lock:
            if not self._totals[0] or not self._add_since(db, study_id):
                self._read_all(db, study_id, current)
            return dict(zip(keys, (c if isinstance(c, tuple) else tuple(c) for c in self._columns)))

    def _add_since(self, db: Database, study_id: int) -> bool:
        """Add the labels of an id above the highest read (each supersedes the annotator's older
        label of the item); False (nothing changed) when the study's label totals say that some
        other label is missing or gone."""
        rows, id_sum, highest = self._totals
        new = sorted(db.execute(_LABEL_ROWS + " AND l.id > ?", [study_id, highest]).fetchall())
        now = tuple(db.execute(_LABEL_TOTALS, [study_id]).fetchone())
        if now != (rows + len(new), id_sum + sum(r[0] for r in new), max([highest, *(r[0] for r in new)])):
            return False
        if new:
            cols = self._columns = [list(c) for c in self._columns]
            if self._at is None:
                self._at = {k: j for j, k in enumerate(zip(cols[0], cols[1]))}
            for _, item, user, *rest in new:  # by id: the newest of an item and annotator last
                j = self._at.setdefault((item, user), len(cols[0]))
                for c, v in zip(cols, (item, user, *rest)):
                    if j == len(c):
                        c.append(v)
                    else:
                        c[j] = v
        self._totals = now
        return True

    def _read_all(self, db: Database, study_id: int, current: str) -> None:
        # the totals first: a label stored between the two reads is read again next time, never missed
        totals = tuple(db.execute(_LABEL_TOTALS, [study_id]).fetchone())
        rows = db.execute(_LABEL_ROWS.replace("l.id, ", "", 1) + " AND " + current, [study_id]).fetchall()
        self._columns, self._at, self._totals = list(zip(*rows)) or [(), (), (), (), ()], None, totals


@dataclass
class _Kept:
    version: tuple
    values: dict
    items_version: tuple  # the items' part of the version: what the item reads depend on
    item_values: dict  # the reads of the study's items alone (ITEM_READS), kept while no item is added
    labels: LabelState = field(default_factory=LabelState)


#: the shared values read from a study's items and its project's instances and queries alone (the
#: sample's design too): kept while these are unchanged, whatever the labels
ITEM_READS = ("items", "item_columns", "item_payloads", "item_candidates", "item_screens", "item_parts", "study_design")


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


def _items_part(version: tuple) -> tuple:
    """The part of a version the item reads depend on: items, instances and queries (the first three
    tables of VERSIONED)."""
    return version[:6]


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
        if kept is None:
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
