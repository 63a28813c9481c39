"""Standard retrieval measures with trec_eval semantics, computed by ``pytrec_eval``.

Measures are named like ir_measures (``nDCG@10``, ``AP@1000``, ``RR@10``, ``R@100``, ``P@5``,
and ``nDCG``, ``AP``, ``RR`` without a cut-off); :func:`parse_measure` turns a name into a
:class:`Measure` whose ``str()`` is the canonical name that keys every result.

trec_eval semantics (all from the library, nothing re-implemented):

- documents are ranked by score descending, ties by document id descending (trec_eval ignores
  the rank column of a run);
- nDCG uses the relevance label as a linear gain, ``log2(rank + 1)`` discount, and the ideal
  DCG from every judged relevant document of the query (``ndcg`` / ``ndcg_cut``);
- ``AP@k`` is trec_eval's ``map_cut_k``: precision summed over the relevant documents
  retrieved in the top k, divided by the number of relevant documents of the query;
- ``R@k`` is ``recall_k``, ``P@k`` is ``P_k``;
- ``RR@k``: pytrec_eval has no cut-off for ``recip_rank``, so the run is truncated to its top k
  documents in trec_eval's order and ``recip_rank`` is computed on the truncated run.

A document is relevant when its label is >= 1 (trec_eval's default relevance level).
"""
from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from typing import Iterable, Mapping

import pytrec_eval

_NAMES = {
    "ndcg": "nDCG",
    "ap": "AP",
    "map": "AP",
    "rr": "RR",
    "mrr": "RR",
    "r": "R",
    "recall": "R",
    "p": "P",
    "precision": "P",
}
_NEEDS_CUTOFF = {"R", "P"}
_PATTERN = re.compile(r"^\s*([A-Za-z]+)\s*(?:@\s*(\d+))?\s*$")


@dataclass(frozen=True)
class Measure:
    """A retrieval measure: a canonical family name and an optional cut-off.

    Examples
    --------
    >>> str(Measure("nDCG", 10))
    'nDCG@10'
    >>> Measure("AP", None).trec_key
    'map'
    """

    name: str
    cutoff: int | None = None

    def __str__(self) -> str:
        return self.name if self.cutoff is None else f"{self.name}@{self.cutoff}"

    @property
    def trec_family(self) -> str:
        """The trec_eval measure family computing it (``RR@k`` uses ``recip_rank``)."""
        if self.name == "nDCG":
            return "ndcg" if self.cutoff is None else "ndcg_cut"
        if self.name == "AP":
            return "map" if self.cutoff is None else "map_cut"
        if self.name == "RR":
            return "recip_rank"
        if self.name == "R":
            return "recall"
        return "P"

    @property
    def trec_key(self) -> str:
        """The per-query key pytrec_eval returns for it (``RR@k``: ``recip_rank`` of the cut run)."""
        if self.cutoff is None or self.name == "RR":
            return self.trec_family
        return f"{self.trec_family}_{self.cutoff}"


def parse_measure(text: "str | Measure") -> Measure:
    """Parse an ir_measures-style name (case-insensitive) into a :class:`Measure`.

    Accepted families: ``nDCG``, ``AP`` (alias ``MAP``), ``RR`` (alias ``MRR``), ``R`` (alias
    ``Recall``), ``P`` (alias ``Precision``); ``R`` and ``P`` need a cut-off ``@k`` with k >= 1.

    Raises
    ------
    ValueError
        Unknown family, missing or non-positive cut-off.

    Examples
    --------
    >>> str(parse_measure("ndcg@10")), str(parse_measure("MAP@1000")), str(parse_measure("AP"))
    ('nDCG@10', 'AP@1000', 'AP')
    """
    if isinstance(text, Measure):
        return text
    match = _PATTERN.match(str(text))
    accepted = "nDCG[@k], AP[@k], RR[@k], R@k, P@k"
    if not match or match.group(1).lower() not in _NAMES:
        raise ValueError(f"unknown measure {text!r}; accepted: {accepted}")
    name = _NAMES[match.group(1).lower()]
    cutoff = None if match.group(2) is None else int(match.group(2))
    if cutoff is not None and cutoff < 1:
        raise ValueError(f"measure {text!r}: the cut-off must be >= 1")
    if cutoff is None and name in _NEEDS_CUTOFF:
        raise ValueError(f"measure {text!r} needs a cut-off, e.g. {name}@10; accepted: {accepted}")
    return Measure(name, cutoff)


def parse_measures(measures: "str | Iterable[str | Measure]") -> list[Measure]:
    """Parse a comma-separated string or a list of names; duplicates are dropped, order kept."""
    items = measures.split(",") if isinstance(measures, str) else list(measures)
    out: list[Measure] = []
    for item in items:
        if isinstance(item, str) and not item.strip():
            continue
        m = parse_measure(item)
        if m not in out:
            out.append(m)
    if not out:
        raise ValueError("no measure given")
    return out


def top_k(docs: Mapping[str, float], k: int) -> dict[str, float]:
    """The first k documents of a query, in trec_eval's order (score desc, doc id desc).

    Examples
    --------
    >>> top_k({"a": 1.0, "b": 1.0, "c": 0.5}, 1)
    {'b': 1.0}
    """
    if len(docs) <= k:
        candidates = [(score, docid) for docid, score in docs.items()]
    else:
        threshold = heapq.nlargest(k, docs.values())[-1]
        candidates = [(score, docid) for docid, score in docs.items() if score >= threshold]
    candidates.sort(reverse=True)
    return {docid: score for score, docid in candidates[:k]}


def _trec_measure_strings(measures: list[Measure]) -> set[str]:
    """pytrec_eval measure strings, cut-offs of one family merged (``ndcg_cut.5,10``)."""
    cutoffs: dict[str, set[int]] = {}
    plain: set[str] = set()
    for m in measures:
        if m.name == "RR" and m.cutoff is not None:
            continue
        if m.cutoff is None:
            plain.add(m.trec_family)
        else:
            cutoffs.setdefault(m.trec_family, set()).add(m.cutoff)
    out = set(plain)
    for family, ks in cutoffs.items():
        out.add(family + "." + ",".join(str(k) for k in sorted(ks)))
    return out


def relevant_queries(qrels: Mapping[str, Mapping[str, int]]) -> set[str]:
    """Queries of the qrels with at least one relevant (label >= 1) document."""
    return {qid for qid, docs in qrels.items() if any(rel >= 1 for rel in docs.values())}


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    measures: "str | Iterable[str | Measure]",
    *,
    missing: str = "omit",
) -> dict:
    """Evaluate a run against qrels with trec_eval semantics (through pytrec_eval).

    Per query, each measure comes from trec_eval (see the module docstring); the reported value
    is the mean over queries:

        M = (1 / |Q|) * sum_{q in Q} M(q)

    where Q are the queries of the run that have qrels (``missing="omit"``), plus, with
    ``missing="zero"``, the *missing queries* -- queries of the qrels with >= 1 relevant
    document that are absent from the run -- each counted as 0.

    Parameters
    ----------
    qrels : dict
        ``qrels[qid][docid] -> int`` relevance labels.
    run : dict
        ``run[qid][docid] -> float`` scores.
    measures : str or list
        Measure names such as ``"nDCG@10,AP@1000,RR@10,R@100,P@5"`` or :class:`Measure` objects.
    missing : {"omit", "zero"}
        How missing queries enter the mean.

    Returns
    -------
    dict
        ``measures`` ({canonical name: float, or None when no query was evaluated}),
        ``n_queries`` (queries in the mean), ``n_evaluated`` (queries of the run with qrels),
        ``missing_queries`` (sorted), ``unjudged_queries`` (queries of the run without qrels,
        ignored; sorted), ``per_query`` ({qid: {name: float}}, missing queries included as 0
        when ``missing="zero"``), ``missing`` (the option).

    References
    ----------
    trec_eval (NIST); Van Gysel & de Rijke (2018), "pytrec_eval: An Extremely Fast Python
    Interface to trec_eval", SIGIR.

    Examples
    --------
    >>> qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 1}}
    >>> run = {"q1": {"d1": 0.2, "d2": 0.9}}
    >>> evaluate(qrels, run, "RR@10")["measures"]
    {'RR@10': 0.5}
    >>> evaluate(qrels, run, "RR@10", missing="zero")["measures"]
    {'RR@10': 0.25}
    """
    if missing not in ("omit", "zero"):
        raise ValueError(f"missing must be 'omit' or 'zero', got {missing!r}")
    parsed = parse_measures(measures)

    per_query: dict[str, dict[str, float]] = {}
    main = _trec_measure_strings(parsed)
    if main:
        results = pytrec_eval.RelevanceEvaluator(qrels, main).evaluate(run)
        for qid, values in results.items():
            per_query[qid] = {str(m): values[m.trec_key] for m in parsed
                              if not (m.name == "RR" and m.cutoff is not None)}

    rr_cuts = sorted({m.cutoff for m in parsed if m.name == "RR" and m.cutoff is not None})
    if rr_cuts:
        judged = [qid for qid in run if qid in qrels]
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
        deepest = max(rr_cuts)
        cut_deep = {qid: top_k(run[qid], deepest) for qid in judged}
        for k in rr_cuts:
            if k == deepest:
                cut = cut_deep
            else:  # the first k of the deepest cut are the first k of the run
                cut = {qid: dict(list(docs.items())[:k]) for qid, docs in cut_deep.items()}
            for qid, values in evaluator.evaluate(cut).items():
                per_query.setdefault(qid, {})[f"RR@{k}"] = values["recip_rank"]
    # the columns in the order asked for
    names = [str(m) for m in parsed]
    if rr_cuts and main:
        per_query = {qid: {n: row[n] for n in names} for qid, row in per_query.items()}

    missing_queries = sorted(q for q in relevant_queries(qrels) if q not in run)
    unjudged = sorted(q for q in run if q not in qrels)
    n_evaluated = len(per_query)
    if missing == "zero":
        for qid in missing_queries:
            per_query[qid] = {n: 0.0 for n in names}
    n = len(per_query)
    means: dict[str, float | None] = {}
    for name in names:
        means[name] = (sum(row[name] for row in per_query.values()) / n) if n else None
    return {
        "measures": means,
        "n_queries": n,
        "n_evaluated": n_evaluated,
        "missing_queries": missing_queries,
        "unjudged_queries": unjudged,
        "missing": missing,
        "per_query": per_query,
    }
