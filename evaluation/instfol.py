"""INSTFOL (IFIR): how much the instruction raises the judged match of the retrieved passages.

"IFIR-EVAL: Evaluating Information Retrieval Models for Instruction Following in Specialized
Domains" (anonymous ACL submission), §4 (Task 1) and
Appendix A.2. A judge (an LLM in the paper, on a 0-3 scale -- "Please give a score between 0
and 3"; human ``passage_match`` labels are a valid judge too, on their 1-5 scale) scores how
well each of the top-k passages retrieved for the bare query and for the query + instruction
matches the instruction. IFIR's judge score of a passage is the mean of the scale values
weighted by the LLM's probabilities of the score tokens; with several human annotators the
analogue is the mean of their labels (:mod:`annotation.instfol_study`).

Input file: CSV with the header ``query,mode,rank,score``; ``mode`` is ``query`` (retrieved with
the bare query) or ``instructed`` (query + instruction); ``rank`` is the 1-based rank of the
judged passage in that retrieval.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Iterable

from storage.errors import ImportFailure
from formats.csv_table import read_csv_table
from formats.text import received
from formats.trec_rows import parse_rank, parse_score
from evaluation.undefined import mean_or_undefined

MODES = ("query", "instructed")
NO_QUERY = "no query has scored passages in both modes"  # why INSTFOL is undefined (0/0)
COLUMNS = ("query", "mode", "rank", "score")


def read_judge_scores(path: str | Path) -> list[tuple[str, str, int, float]]:
    """Read a judge-scores CSV ``query,mode,rank,score`` into (query, mode, rank, score) rows.

    Raises
    ------
    ImportFailure
        Empty file, not UTF-8, missing column, a row with another number of fields than the
        header, no row, unknown mode, non-integer rank, non-numeric score, or the same (query,
        mode, rank) twice -- naming the file, line and field (:mod:`formats.csv_table`).
    """
    table = read_csv_table(path, COLUMNS, fold_case=True)
    rows: list[tuple[str, str, int, float]] = []
    seen: set[tuple[str, str, int]] = set()
    for number, fields in table.rows():
        query, mode = fields["query"], fields["mode"].lower()
        if not query:
            raise ImportFailure(str(path), number, "query", "empty query id")
        if mode not in MODES:
            raise ImportFailure(str(path), number, "mode", f"expected 'query' or 'instructed', got {fields['mode']!r}")
        raw_rank = fields["rank"]
        rank = parse_rank(raw_rank, path, number)  # the one number parser of run files: formats.trec_rows
        if rank < 1:
            raise ImportFailure(str(path), number, "rank", f"received {received(raw_rank)}; expected an integer rank >= 1")
        score = parse_score(fields["score"], path, number)
        key = (query, mode, rank)
        if key in seen:
            raise ImportFailure(str(path), number, "rank",
                                f"query {query!r}, mode {mode!r}, rank {rank} scored twice")
        seen.add(key)
        rows.append((query, mode, rank, score))
    return rows


def instfol_score(q: float, i: float, *, max_score: float = 3.0) -> float:
    """INSTFOL of one query from the mean judge scores q (bare query) and i (instructed).

        0                    if i = q
        i - q                if q = max
        (i - q) / (max - q)  otherwise

    Examples
    --------
    >>> instfol_score(1.0, 2.0), instfol_score(2.0, 1.0), instfol_score(3.0, 2.5), instfol_score(2.0, 2.0)
    (0.5, -1.0, -0.5, 0.0)
    """
    if i == q:
        return 0.0
    if q == max_score:
        return i - q
    return (i - q) / (max_score - q)


def instfol(
    rows: Iterable[tuple[str, str, int, float]],
    *,
    max_score: float = 3.0,
    k: int | None = None,
) -> dict:
    """INSTFOL: mean over queries of the normalised gain of the instructed retrieval.

    Per query, q = mean judge score of the top-k passages retrieved for the bare query and
    i = the same for query + instruction; INSTFOL(query) = :func:`instfol_score` (q, i)::

        INSTFOL = mean_query (i - q) / (max - q)     (0 when i = q; i - q when q = max)

    Parameters
    ----------
    rows : iterable of (query, mode, rank, score)
        ``mode`` is ``"query"`` or ``"instructed"``; e.g. from :func:`read_judge_scores`.
    max_score : float
        The top of the judge's scale ("the corpus that satisfies all requirements"): 3 for
        IFIR's LLM judge (0-3), 5 for 1-5 human ``passage_match`` labels.
    k : int, optional
        Use only passages with rank <= k. Default: every row given (the paper leaves K to the
        number of passages judged).

    Returns
    -------
    dict
        ``INSTFOL`` (:class:`~evaluation.undefined.Undefined` when there is no query), ``n_queries``, ``per_query``
        ({query: {"q", "i", "INSTFOL"}}), ``max``, ``k``.

    Raises
    ------
    ValueError
        A query lacks one of the two modes (after the cut-off k), an unknown mode, or a score
        above ``max_score``.

    References
    ----------
    IFIR-EVAL: Evaluating Information Retrieval Models for Instruction Following in
    Specialized Domains (anonymous ACL submission), Appendix A.2, INSTFOL equation.

    Examples
    --------
    >>> rows = [("q1", "query", 1, 1.0), ("q1", "query", 2, 2.0),
    ...         ("q1", "instructed", 1, 3.0), ("q1", "instructed", 2, 2.0)]
    >>> instfol(rows)["INSTFOL"]  # q = 1.5, i = 2.5: (2.5 - 1.5) / (3 - 1.5)
    0.6666666666666666
    """
    if k is not None and int(k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    by_query: dict[str, dict[str, list[float]]] = {}
    for query, mode, rank, score in rows:
        if mode not in MODES:
            raise ValueError(f"query {query!r}: unknown mode {mode!r}; expected 'query' or 'instructed'")
        if score > max_score:
            raise ValueError(f"query {query!r}, mode {mode!r}, rank {rank}: score {score} is above the "
                             f"scale maximum {max_score} (set max)")
        modes = by_query.setdefault(query, {"query": [], "instructed": []})
        if k is None or rank <= k:
            modes[mode].append(score)
    lacking = [(query, mode) for query, modes in by_query.items() for mode in MODES if not modes[mode]]
    if lacking:
        shown = ", ".join(f"{q!r} has no {m!r} scores" for q, m in lacking[:5])
        more = f" (and {len(lacking) - 5} more)" if len(lacking) > 5 else ""
        cut = f" with rank <= {k}" if k is not None else ""
        raise ValueError(f"INSTFOL needs both modes for every query{cut}: {shown}{more}")
    per_query: dict[str, dict[str, float]] = {}
    for query, modes in by_query.items():
        q = sum(modes["query"]) / len(modes["query"])
        i = sum(modes["instructed"]) / len(modes["instructed"])
        per_query[query] = {"q": q, "i": i, "INSTFOL": instfol_score(q, i, max_score=max_score)}
    n = len(per_query)
    return {
        "INSTFOL": mean_or_undefined((r["INSTFOL"] for r in per_query.values()), NO_QUERY),
        "n_queries": n,
        "per_query": per_query,
        "max": max_score,
        "k": k,
    }


def same_passages(
    first: Iterable[tuple[str, str, int, float]],
    second: Iterable[tuple[str, str, int, float]],
    *,
    k: int | None = None,
) -> tuple[list, list, dict]:
    """Two judges' score rows restricted to the same passages, so that their INSTFOL compare.

    A passage is a ``(query, mode, rank)``; only those both judges scored (with rank <= k) are
    kept; then a query left without a scored passage in one of the two modes is dropped from
    both. Returns ``(first_rows, second_rows, counts)`` with ``counts`` = ``passages`` (kept),
    ``only_first``, ``only_second`` (passages one judge scored and the other did not, within the
    cut-off) and ``dropped_queries`` (sorted).

    Examples
    --------
    >>> a = [("q", "query", 1, 1.0), ("q", "instructed", 1, 2.0), ("q", "instructed", 2, 3.0)]
    >>> b = [("q", "query", 1, 0.5), ("q", "instructed", 1, 2.5), ("r", "query", 1, 1.0)]
    >>> x, y, c = same_passages(a, b)
    >>> x, y, c["only_first"], c["only_second"]  # sorted by (query, mode, rank)
    ([('q', 'instructed', 1, 2.0), ('q', 'query', 1, 1.0)], [('q', 'instructed', 1, 2.5), ('q', 'query', 1, 0.5)], 1, 1)
    """
    def keep(rows):
        return {(q, m, int(r)): float(s) for q, m, r, s in rows if k is None or int(r) <= k}

    a, b = keep(first), keep(second)
    common = set(a) & set(b)
    modes: dict[str, set[str]] = {}
    for q, m, _ in common:
        modes.setdefault(q, set()).add(m)
    dropped = sorted(q for q, ms in modes.items() if ms != set(MODES))
    common = sorted(key for key in common if key[0] not in set(dropped))
    counts = {"passages": len(common), "only_first": len(set(a) - set(b)), "only_second": len(set(b) - set(a)),
              "dropped_queries": dropped}
    return [(*key, a[key]) for key in common], [(*key, b[key]) for key in common], counts


def judge_agreement(human: list[float], llm: list[float], *, max_score: int = 3) -> dict:
    """Agreement of two INSTFOL judges on the passages both scored (human majority vs an LLM).

    LLM scores may be probability-weighted (IFIR A.2: a weighted mean over the score tokens), so
    both series are rounded half up to the nearest integer of the scale 0..``max_score`` before
    the categorical statistics:

    - Cohen kappa with linear and with quadratic weights (``sklearn.metrics.cohen_kappa_score``,
      ``labels=0..max``, ``weights="linear" | "quadratic"``);
    - Krippendorff alpha, ordinal (``krippendorff.alpha``, ``level_of_measurement="ordinal"``,
      ``value_domain=0..max``);
    - ``exact`` share of equal rounded scores, and ``mean_abs_diff`` on the unrounded scores.

    A statistic that is 0/0 (e.g. both judges give one same score throughout) is None, with the
    reason in ``undefined_reasons``.

    References
    ----------
    Cohen (1968), Weighted kappa, Psychological Bulletin 70(4). Krippendorff (2011), Computing
    Krippendorff's alpha-reliability.

    Examples
    --------
    >>> r = judge_agreement([0, 1, 2, 3], [0, 1, 2, 2.4])
    >>> r["n"], r["exact"], round(r["cohen_kappa_linear"], 4)  # 1 - (1/12) / (3/8)
    (4, 0.75, 0.7778)
    """
    import warnings

    import krippendorff
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    if len(human) != len(llm):
        raise ValueError(f"{len(human)} human scores but {len(llm)} LLM scores")
    labels = list(range(int(max_score) + 1))
    to_cat = lambda x: min(max(int(math.floor(float(x) + 0.5)), 0), int(max_score))  # noqa: E731
    h, l = [to_cat(x) for x in human], [to_cat(x) for x in llm]
    out: dict = {"n": len(h), "categories": labels, "undefined_reasons": {}}
    names = ("cohen_kappa_linear", "cohen_kappa_quadratic", "krippendorff_alpha_ordinal")
    if not h:
        for name in names:
            out[name] = None
            out["undefined_reasons"][name] = "no passage scored by both judges"
        out["exact"] = out["mean_abs_diff"] = None
        return out
    out["exact"] = sum(a == b for a, b in zip(h, l)) / len(h)
    out["mean_abs_diff"] = sum(abs(float(a) - float(b)) for a, b in zip(human, llm)) / len(h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 0/0 is reported as None with its reason
        for weights in ("linear", "quadratic"):
            v = float(cohen_kappa_score(h, l, labels=labels, weights=weights))
            out[f"cohen_kappa_{weights}"] = v if math.isfinite(v) else None
            if not math.isfinite(v):
                out["undefined_reasons"][f"cohen_kappa_{weights}"] = "0/0: expected disagreement is 0 (one score throughout)"
        try:
            a = float(krippendorff.alpha(reliability_data=np.array([h, l], dtype=float),
                                         level_of_measurement="ordinal", value_domain=labels))
        except ValueError as exc:
            a, why = float("nan"), str(exc)
        else:
            why = "0/0: expected disagreement is 0 (one score throughout)"
        out["krippendorff_alpha_ordinal"] = a if math.isfinite(a) else None
        if not math.isfinite(a):
            out["undefined_reasons"]["krippendorff_alpha_ordinal"] = why
    return out
