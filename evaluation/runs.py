"""Runs held as arrays: one CSR-like structure for every query of a run.

A run is ``run[qid][doc_id] -> score`` (the shape pytrec_eval takes). Held as dicts of dicts, a
run of 10,000 queries x 1,000 documents is 10 M dict entries spread over memory, and a measure
that needs a query's scores as an array (the ranks of p-MRR, WISE, SICR) converts 1,000 floats
per query and run. :class:`RankedRun` keeps the run as arrays from the start:

- ``qids``: the queries, in the run's order; ``offsets``: query ``i``'s documents are the
  entries ``offsets[i]:offsets[i + 1]``;
- ``codes``: each entry's document as a position in ``doc_ids`` (the vocabulary: the corpus's
  document ids for a retriever's run; None for a run read from dicts, whose ids stay in them);
- ``scores``: each entry's score (float64).

The retrievers (:mod:`evaluation.retrievers.bm25`, :mod:`evaluation.retrievers.dense`) build it
from their top-k arrays (:class:`RunBuilder`) in trec_eval's order (score descending, equal
scores by doc id descending: ``ranked=True``), so a document's rank is its position; the builder
also sorts each query's entries by code, so that :meth:`RankedRun.ranks` finds every judged
document of every query by one binary search (``numpy.searchsorted``). A run read
from a file or from storage is a dict: :meth:`RankedRun.from_dict` converts it once, keeping its
listing order (``ranked=False``).

A :class:`RankedRun` is a read-only mapping ``qid -> {doc_id: score}``: each query's dict is made
when first read and kept, so pytrec_eval, storage and the reranker read it as they read a dict,
and the dicts are built once per query (:meth:`RankedRun.to_dict`).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from itertools import chain

import numpy as np

from evaluation.measure_registry import TIES


def check_ties(ties: str) -> None:
    """Refuse a tie rule other than ``"docid"`` and ``"run-order"``.

    >>> check_ties("first")
    Traceback (most recent call last):
    ...
    ValueError: ties must be one of ('docid', 'run-order'), got 'first'
    """
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}, got {ties!r}")


class RankedRun(Mapping):
    """A run as arrays (module docstring): ``qids``, ``offsets``, ``codes`` into ``doc_ids``,
    ``scores``; ``ranked`` when each query's entries are in trec_eval's order (score descending,
    ties by doc id descending).

    Examples
    --------
    >>> run = RankedRun.from_dict({"q": {"a": 0.5, "b": 0.9, "c": 0.5}})
    >>> run["q"], len(run), "q" in run
    ({'a': 0.5, 'b': 0.9, 'c': 0.5}, 1, True)
    >>> run.ranks([("q", ["a", "c", "z"])])  # b first; a and c tied: doc id descending
    ([3, 2, 4], [0.5, 0.5, 0.0])
    >>> run.ranks([("q", ["a", "c"])], ties="run-order")
    ([2, 3], [0.5, 0.5])
    """

    def __init__(self, qids: Sequence[str], offsets: np.ndarray, codes: np.ndarray | None, scores: np.ndarray,
                 doc_ids: Sequence[str], *, ranked: bool):
        self.qids = list(qids)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.scores = np.asarray(scores, dtype=np.float64)
        if codes is None and ranked:
            raise ValueError("a ranked run needs the codes of its entries in a vocabulary of distinct doc ids")
        # None: entry i is doc_ids[i] (a run read from a dict); else a position in doc_ids, the
        # distinct ids of a vocabulary (a retriever's corpus)
        self.codes = None if codes is None else np.asarray(codes, dtype=np.int64)
        self.doc_ids = doc_ids
        self.ranked = ranked
        n_codes = len(doc_ids) if codes is None else self.codes.shape[0]
        if self.offsets.shape[0] != len(self.qids) + 1 or n_codes != self.scores.shape[0] \
                or self.offsets[-1] != self.scores.shape[0]:
            raise ValueError(f"a run of {len(self.qids)} queries needs {len(self.qids) + 1} offsets, the last the "
                             f"number of scores, and one code per score; got {self.offsets.shape[0]} offsets "
                             f"(last {int(self.offsets[-1]) if self.offsets.shape[0] else None}), {n_codes} codes "
                             f"and {self.scores.shape[0]} scores")
        self._index = {q: i for i, q in enumerate(self.qids)}
        self._bounds = self.offsets.tolist()
        self._dicts: dict[str, dict[str, float]] = {}
        self._code_of: dict[str, int] | None = None
        self._code_order: np.ndarray | None = None  # entries sorted by (query, code): _by_code
        self._code_keys: np.ndarray | None = None

    @classmethod
    def from_dict(cls, run: Mapping[str, Mapping[str, float]]) -> "RankedRun":
        """The run ``run[qid][doc_id] -> score`` as arrays, each query's documents in the order the
        dict lists them (a TREC file's order: :func:`formats.trec_io.read_run`). A
        :class:`RankedRun` is returned as it is.

        >>> RankedRun.from_dict({"q1": {"d2": 2.0, "d1": 3.0}, "q2": {}}).offsets.tolist()
        [0, 2, 2]
        """
        if isinstance(run, RankedRun):
            return run
        qids = list(run)
        dicts = [docs if isinstance(docs, dict) else dict(docs) for docs in run.values()]
        sizes = np.zeros(len(qids) + 1, dtype=np.int64)
        sizes[1:] = [len(docs) for docs in dicts]
        offsets = np.cumsum(sizes)
        total = int(offsets[-1])
        # one pass over every score (no array per query): what converting costs
        scores = np.fromiter(chain.from_iterable(docs.values() for docs in dicts), dtype=np.float64, count=total)
        # the ids stay in the dicts: a flat list of 10 M ids costs as much as the scores
        out = cls(qids, offsets, None, scores, _IdsOfDicts(dicts, offsets), ranked=False)
        # the dicts read are the caller's: kept, so that reading the run back builds nothing
        out._dicts = dict(zip(qids, dicts))
        return out

    # -- the mapping ``qid -> {doc_id: score}``
    def __getitem__(self, qid: str) -> dict[str, float]:
        docs = self._dicts.get(qid)
        if docs is None:
            i = self._index[qid]  # KeyError for a query not in the run, as a dict
            s, e = self._bounds[i], self._bounds[i + 1]
            ids = self.doc_ids
            keys = ids[s:e] if self.codes is None else [ids[c] for c in self.codes[s:e].tolist()]
            docs = dict(zip(keys, self.scores[s:e].tolist()))
            self._dicts[qid] = docs
        return docs

    def __iter__(self) -> Iterator[str]:
        return iter(self.qids)

    def __len__(self) -> int:
        return len(self.qids)

    def __contains__(self, qid) -> bool:
        return qid in self._index

    def __repr__(self) -> str:
        return f"RankedRun({len(self.qids)} queries, {self.scores.shape[0]} entries, ranked={self.ranked})"

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {doc_id: score}}`` (what JSON and pytrec_eval take); each query's dict is built
        once and shared with :meth:`__getitem__`.

        >>> RankedRun.from_dict({"q": {"a": 1.0}}).to_dict()
        {'q': {'a': 1.0}}
        """
        return {q: self[q] for q in self.qids}

    def n_documents(self, qid: str) -> int:
        """How many documents the run ranks for ``qid`` (0 when it does not rank the query)."""
        i = self._index.get(qid)
        return 0 if i is None else self._bounds[i + 1] - self._bounds[i]

    # -- ranks of chosen documents
    def ranks(self, wanted: Sequence[tuple[str, Sequence[str]]], *, ties: str = "docid") -> tuple[list[int], list[float]]:
        """1-based rank and score of each target document, for ``wanted = [(qid, [doc_id, ...]), ...]``;
        two flat lists in the order of ``wanted`` and its documents.

        The rank is the position when the query's documents are ordered by score descending; equal
        scores are ordered by doc id descending (``ties="docid"``: trec_eval's order) or keep the
        run's order (``ties="run-order"``); a document absent from the run gets rank
        ``len(run[qid]) + 1`` and score 0.0 (:func:`evaluation.pmrr.doc_ranks` says why). In a
        ``ranked`` run both orders are the entries' order: the rank is the position.
        """
        check_ties(ties)
        if self.ranked:
            return self._ranks_by_position(wanted)
        ranks: list[int] = []
        scores: list[float] = []
        for qid, targets in wanted:
            r, s = self._query_ranks(qid, targets, ties)
            ranks.extend(r)
            scores.extend(s)
        return ranks, scores

    def _by_code(self) -> tuple[np.ndarray, np.ndarray]:
        """The entries sorted by (query, code) and their keys ``query * (len(doc_ids) + 1) + code``
        (ascending): made once, by :class:`RunBuilder` as it adds each query, else here."""
        if self._code_order is None:
            order = np.empty(self.codes.shape[0], dtype=np.int64)
            bounds = self._bounds
            for i in range(len(self.qids)):
                s, e = bounds[i], bounds[i + 1]
                order[s:e] = s + np.argsort(self.codes[s:e], kind="stable")
            self._code_order = order
        if self._code_keys is None:
            rows = np.repeat(np.arange(len(self.qids), dtype=np.int64), np.diff(self.offsets))
            self._code_keys = (rows * (len(self.doc_ids) + 1) + self.codes)[self._code_order]
        return self._code_order, self._code_keys

    def _ranks_by_position(self, wanted) -> tuple[list[int], list[float]]:
        """A ranked run: each target's entry found by one binary search of its key
        ``(query, code)`` among the sorted keys of every entry (:meth:`_by_code`), rank = position
        in its query + 1."""
        if self._code_of is None:
            self._code_of = {d: i for i, d in enumerate(self.doc_ids)}
        get, missing = self._code_of.get, len(self.doc_ids)  # `missing`: a code no entry has
        qis, counts, target_codes = [], [], []
        for qid, targets in wanted:
            qis.append(self._index.get(qid, -1))
            counts.append(len(targets))
            target_codes.extend([get(d, missing) for d in targets])
        if not target_codes:
            return [], []
        order, keys = self._by_code()
        tq = np.repeat(np.asarray(qis, dtype=np.int64), counts)
        tc = np.asarray(target_codes, dtype=np.int64)
        known = tq >= 0
        tq = np.where(known, tq, 0)
        start, end = np.where(known, self.offsets[tq], 0), np.where(known, self.offsets[tq + 1], 0)
        wanted_keys = tq * (missing + 1) + tc
        at = np.minimum(keys.searchsorted(wanted_keys), max(keys.shape[0] - 1, 0))
        hit = known & (keys[at] == wanted_keys) if keys.shape[0] else np.zeros(tc.shape[0], dtype=bool)
        pos = np.where(hit, order[at] if keys.shape[0] else 0, 0)
        ranks = np.where(hit, pos - start + 1, end - start + 1)
        values = np.where(hit, self.scores[pos] if keys.shape[0] else 0.0, 0.0)
        return ranks.tolist(), values.tolist()

    def _query_ranks(self, qid: str, targets: Sequence[str], ties: str) -> tuple[list[int], list[float]]:
        """One query of a run in its listing order: scores sorted, ranks by search, ties broken
        among the documents sharing a target's score."""
        targets = list(targets)
        i = self._index.get(qid)
        n = 0 if i is None else self._bounds[i + 1] - self._bounds[i]
        if n == 0:
            return [1] * len(targets), [0.0] * len(targets)
        docs = self[qid]
        out_ranks, out_scores = [n + 1] * len(targets), [0.0] * len(targets)
        get = docs.get
        found = [(t, d, v) for t, (d, v) in enumerate(zip(targets, map(get, targets))) if v is not None]
        if not found:
            return out_ranks, out_scores
        s = self._bounds[i]
        scores = self.scores[s:s + n]
        wanted = np.array([v for _, _, v in found], dtype=np.float64)
        ordered = np.sort(scores)
        right = ordered.searchsorted(wanted, side="right")
        left = ordered.searchsorted(wanted, side="left")
        ranks = (n + 1 - right).tolist()  # 1 + number of strictly greater scores
        width = right - left
        if (width > 1).any():  # break ties among the documents with the same score
            keys = list(docs)
            order = np.argsort(scores)  # positions [left, right) of `ordered` hold one tie
            left_l, right_l = left.tolist(), right.tolist()
            for t in np.flatnonzero(width > 1).tolist():
                block = order[left_l[t]:right_l[t]].tolist()
                d = found[t][1]
                if ties == "docid":
                    ranks[t] += sum(1 for c in block if keys[c] > d)
                else:  # earlier in the run = earlier in the tie
                    ranks[t] += next(j for j, c in enumerate(sorted(block)) if keys[c] == d)
        for (t, _, v), rank in zip(found, ranks):
            out_ranks[t], out_scores[t] = rank, v
        return out_ranks, out_scores


class _IdsOfDicts(Sequence):
    """The doc id of each entry of a run read from dicts, read from the dicts when asked."""

    def __init__(self, dicts: list[dict], offsets: np.ndarray):
        self.dicts, self.offsets = dicts, offsets

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        q = int(np.searchsorted(self.offsets, i, side="right")) - 1
        return list(self.dicts[q])[i - int(self.offsets[q])]


def as_ranked_run(run: Mapping[str, Mapping[str, float]]) -> RankedRun:
    """``run`` as a :class:`RankedRun` (converted once when it is a dict of dicts).

    >>> as_ranked_run({"q": {"a": 1.0}}).ranked
    False
    """
    return RankedRun.from_dict(run)


def as_dict(run: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """``run`` as a dict of dicts (JSON, pytrec_eval): a :class:`RankedRun`'s per-query dicts,
    built once; a dict as it is.

    >>> as_dict({"q": {"a": 1.0}})
    {'q': {'a': 1.0}}
    """
    return run.to_dict() if isinstance(run, RankedRun) else run


class RunBuilder:
    """A retriever's run assembled query by query from its top-k arrays, in trec_eval's order.

    ``add(qid, positions, scores)``: the documents ``doc_ids[positions]`` with their scores, best
    first, ties by doc id descending (:func:`evaluation.retrievers.topk.top_k_arrays`).

    >>> b = RunBuilder(["d1", "d2", "d3"])
    >>> b.add("q", [2, 0], [0.9, 0.5]); b.add("r", [], [])
    >>> run = b.build(); run["q"], run["r"], run.ranked
    ({'d3': 0.9, 'd1': 0.5}, {}, True)
    """

    def __init__(self, doc_ids: Sequence[str]):
        self.doc_ids = doc_ids
        self.qids: list[str] = []
        self.positions: list[np.ndarray] = []
        self.scores: list[np.ndarray] = []
        self.by_code: list[np.ndarray] = []  # each query's entries sorted by code (RankedRun._by_code)

    def add(self, qid: str, positions, scores) -> None:
        positions = np.asarray(positions, dtype=np.int64)
        self.qids.append(qid)
        self.positions.append(positions)
        self.scores.append(np.asarray(scores, dtype=np.float64))
        self.by_code.append(np.argsort(positions, kind="stable"))

    def build(self) -> RankedRun:
        sizes = np.zeros(len(self.qids) + 1, dtype=np.int64)
        sizes[1:] = [p.shape[0] for p in self.positions]
        offsets = np.cumsum(sizes)
        codes = np.concatenate(self.positions) if self.positions else np.zeros(0, dtype=np.int64)
        scores = np.concatenate(self.scores) if self.scores else np.zeros(0, dtype=np.float64)
        run = RankedRun(self.qids, offsets, codes, scores, self.doc_ids, ranked=True)
        if self.by_code:  # the retriever's work, not the measures': the entries sorted by (query, code)
            order = np.concatenate([o + s for o, s in zip(self.by_code, offsets[:-1].tolist())])
            rows = np.repeat(np.arange(len(self.qids), dtype=np.int64), sizes[1:])
            run._code_order, run._code_keys = order, (rows * (len(self.doc_ids) + 1) + codes)[order]
        return run
