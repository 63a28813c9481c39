"""Robustness@k (InstructIR): the worst nDCG@k within each group of instances sharing a query.

Oh et al. (2024), "INSTRUCTIR: A Benchmark for Instruction Following of Information Retrieval
Models", §3.3: instances with identical queries are grouped, the minimum nDCG@k within each
group is taken, and these per-group minima are averaged.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from evaluation.measures import Measure, evaluate
from evaluation.undefined import mean_or_undefined
from storage.errors import ImportFailure
from formats.csv_table import read_pairs


def default_group(qid: str) -> str:
    """InstructIR's group of an instance id: the prefix before the first ``_``.

    Examples
    --------
    >>> default_group("q12_3"), default_group("q12")
    ('q12', 'q12')
    """
    return qid.split("_", 1)[0]


def read_groups(path: str | Path) -> dict[str, str]:
    """Read a two-column ``qid group`` file (tab, comma or whitespace separated).

    A first line ``qid,group`` (or with a tab) is taken as a header and skipped.

    Raises
    ------
    ImportFailure
        Empty file, not UTF-8, a line without two columns, or an instance given two groups.
    """
    groups: dict[str, str] = {}
    for number, qid, group in read_pairs(path, ("qid", "group"), header=(
            ("qid", "query-id", "instance", "instance_id"), ("group", "group_id", "group-id"))):
        if qid in groups and groups[qid] != group:
            raise ImportFailure(str(path), number, "group",
                                f"instance {qid!r} already in group {groups[qid]!r}")
        groups[qid] = group
    return groups


def robustness(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    *,
    k: int = 10,
    groups: Mapping[str, str] | None = None,
) -> dict:
    """Robustness@k: mean over groups of the minimum nDCG@k of the group's instances.

        Robustness@k = (1 / |G|) * sum_{g in G} min_{i in g, i in run} nDCG@k(i)

    nDCG@k per instance is trec_eval's ``ndcg_cut_k`` (pytrec_eval: linear gain, ties by doc id
    descending). An instance is evaluated when it is in both the qrels and the run; a group
    whose instances are only partly in the run takes the minimum over the instances that are
    present (the absent ones are listed in ``missing_instances``); a group with no instance in
    the run is left out of the mean (listed in ``empty_groups``). Instances of the run without
    qrels are ignored.

    Parameters
    ----------
    qrels, run : dict
        ``qrels[qid][docid] -> int``; ``run[qid][docid] -> float``; qids are instance ids.
    k : int
        The nDCG cut-off (InstructIR reports k = 10).
    groups : dict, optional
        instance id -> group id. Default: the prefix of the instance id before the first ``_``
        (InstructIR's ``<query>_<n>`` ids). Every evaluated instance must have a group.

    Returns
    -------
    dict
        ``Robustness@k`` (:class:`~evaluation.undefined.Undefined` when no group could be
        evaluated: ``no group has an instance in the run``), ``nDCG@k`` (mean over the evaluated
        instances; Undefined when there is none), ``n_groups`` (groups in the mean), ``n_instances``,
        ``per_group`` ({group: min nDCG@k}), ``missing_instances``, ``empty_groups``.

    References
    ----------
    Oh, H., Lee, H., Ye, S., Shin, H., Jang, H., Jun, C., Seo, M. (2024). INSTRUCTIR.
    arXiv:2402.14334, §3.3.

    Examples
    --------
    >>> qrels = {"a_1": {"d1": 1}, "a_2": {"d2": 1}, "b_1": {"d1": 1}}
    >>> run = {"a_1": {"d1": 1.0}, "a_2": {"d1": 1.0, "d2": 0.5}, "b_1": {"d1": 1.0}}
    >>> r = robustness(qrels, run, k=10)
    >>> round(r["Robustness@10"], 4), round(r["nDCG@10"], 4), r["n_groups"]
    (0.8155, 0.877, 2)
    >>> robustness(qrels, {}, k=10)["Robustness@10"]
    Undefined(reason='no group has an instance in the run')
    """
    if int(k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    k = int(k)
    name = str(Measure("nDCG", k))
    result = evaluate(qrels, run, [Measure("nDCG", k)], missing="omit")
    per_instance = {qid: row[name] for qid, row in result["per_query"].items()}

    members, missing_instances = group_members(qrels, per_instance, groups)
    per_group, empty_groups, absent = group_minima(members, per_instance)
    missing_instances += absent
    return {
        f"Robustness@{k}": mean_or_undefined(per_group.values(), "no group has an instance in the run"),
        name: mean_or_undefined(per_instance.values(), "no instance is in both the qrels and the run"),
        "n_groups": len(per_group),
        "n_instances": len(per_instance),
        "per_group": per_group,
        "missing_instances": sorted(missing_instances),
        "empty_groups": sorted(empty_groups),
    }


def group_members(qrels: Mapping[str, Mapping[str, int]], evaluated, groups: Mapping[str, str] | None = None
                  ) -> tuple[dict[str, list[str]], list[str]]:
    """``({group: its instances in qrels order}, judged instances without a group)``; groups come
    from ``groups`` or the id prefix (:func:`default_group`). An instance in ``evaluated`` (the run)
    without a group is refused.

    >>> group_members({"a_1": {}, "a_2": {}, "b_1": {}}, {})
    ({'a': ['a_1', 'a_2'], 'b': ['b_1']}, [])
    """
    members: dict[str, list[str]] = {}
    ungrouped: list[str] = []
    for qid in qrels:
        if groups is not None and qid not in groups:
            if qid in evaluated:
                raise ValueError(f"instance {qid!r} is in the run and the qrels but has no group")
            ungrouped.append(qid)
            continue
        group = default_group(qid) if groups is None else groups[qid]
        members.setdefault(group, []).append(qid)
    return members, ungrouped


def group_minima(members: Mapping[str, list[str]], per_instance: Mapping[str, float]
                 ) -> tuple[dict[str, float], list[str], list[str]]:
    """``({group: minimum over its evaluated instances}, groups with none evaluated, instances not
    evaluated)``.

    >>> group_minima({"a": ["a_1", "a_2"], "b": ["b_1"]}, {"a_1": 0.5, "a_2": 0.25})
    ({'a': 0.25}, ['b'], ['b_1'])
    """
    per_group: dict[str, float] = {}
    empty: list[str] = []
    absent: list[str] = []
    for group, qids in members.items():
        present = [per_instance[q] for q in qids if q in per_instance]
        absent.extend(q for q in qids if q not in per_instance)
        if present:
            per_group[group] = min(present)
        else:
            empty.append(group)
    return per_group, empty, absent
