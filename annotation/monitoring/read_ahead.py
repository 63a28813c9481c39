"""The open studies' rows read into the app server's memory when it starts, before a lead asks.

The Monitor keeps a study's rows across its runs (:mod:`storage.study_reads`): its current labels
as columns, updated from the labels added since, and the reads of its items, instances and queries,
kept while none is added. A new server process holds nothing, so the Monitor's first run after a
start read all of them (on a 100,008-label study, about 0.25 s of its first run). The server reads
them once before it listens (``ui/server.py``), for the newest open studies up to
:data:`storage.study_reads.KEEP`: the first Monitor run then computes only. What is computed from the
labels (agreement, estimates, tables) is not computed here: a lead asks for it, on the labels of
that moment.
"""
from __future__ import annotations

from storage import studies, study_reads
from storage.db import Database


#: at most this many labels are read ahead in all (about 0.5 GB of the server's memory and 1.5 s of its
#: start on the project's machine): a study that would pass it is left to its first Monitor run
LABEL_BUDGET = 1_000_000

def read_ahead(db: Database, *, limit: int = study_reads.KEEP, budget: int = LABEL_BUDGET) -> list[int]:
    """Read the rows of the ``limit`` newest open (not closed) studies into the process's kept
    reads, newest first, leaving out a study whose labels would pass ``budget`` labels in all;
    returns the ids read, newest first. The newest is read last, so that it is the last dropped
    when more studies than :data:`storage.study_reads.KEEP` are kept later.

    >>> from storage.db import connect
    >>> read_ahead(connect(":memory:"))
    []
    """
    from annotation.monitoring.monitor import item_group_columns

    ids = []
    for sid, n in study_reads.newest_open_studies(db, limit):
        if n <= budget:
            ids.append(sid)
            budget -= n
    for sid in reversed(ids):
        with studies.shared_reads(db, across_runs=True):
            studies.label_vote_columns(db, sid)  # the current labels, kept as columns
            studies.item_columns(db, sid)  # the items' columns and screens
            studies.item_parts(db, sid)
            studies.item_candidates(db, sid)
            item_group_columns(db, sid)  # the sample's design (the project's instances and queries): the groups
    return ids
