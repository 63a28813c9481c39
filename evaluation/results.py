"""One result record: a stored evaluation read as ``(system, qrels version, query set, measure,
value)``, under the registry's canonical measure names.

An eval run (:mod:`storage.eval_runs`) stores its aggregate values (``metrics``), its per-query
values (``per_query``) and why a measure is undefined (``settings["evaluation"]["undefined"]``),
each keyed by a measure name. The CLI (``ifjudge eval run`` / ``eval compare``), the Evaluate page,
:mod:`evaluation.compare` and :mod:`evaluation.leaderboard` read them through this module:
:func:`load_runs` / :func:`load_run` read the stored runs with every key canonical, and
:func:`run_results` turns one run into :class:`Result` records, as ir-measures'
``Metric(query_id, measure, value)``.

Names are canonical: ``str(evaluation.measure_registry.parse(name))``, parameters in the name as
ir-measures' ``Measure.__repr__`` writes them (non-default values only). The paired measures carry
the changed-side qrels version they compare with ``original`` when it is not the evaluated one,
and their tie rule when it is not the default:

==============================  =====================================================
stored by IFJudge before 0.9    canonical (what is stored now, and what is read)
==============================  =====================================================
``p-MRR[changed]``               ``p-MRR(qrels='changed')``
``WISE[changed-validated]``      ``WISE(qrels='changed-validated')``
``p-MRR`` of a run-order run     ``p-MRR(ties='run-order')``
``SICR[changed]``, run-order     ``SICR(qrels='changed',ties='run-order')``
==============================  =====================================================

Old databases keep their old keys: :func:`canonical_name` maps them when they are read (the one
place that knows the old spelling), so every stored evaluation shows the same numbers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from evaluation.measure_registry import IF_MEASURES, IFMeasure, parse
from evaluation.undefined import Undefined
from storage import eval_runs as store

ALL = "all"  # the query set of an aggregate: every evaluated query (ir-measures' "all")
PAIRED = ("p-MRR", "WISE", "SICR")
_OLD_KEY = re.compile(r"^(p-MRR|WISE|SICR)(?:\[([^\]]+)\])?$")


@dataclass(frozen=True)
class Result:
    """One value of one stored evaluation.

    ``system`` is the system's label (:func:`evaluation.compare.system_of`; the model when no label
    is given), ``query_set`` :data:`ALL` for the mean over the evaluated queries or a query id,
    ``measure`` the canonical name; ``value`` is None exactly when ``undefined`` says why.
    """

    system: str
    qrels_version: str
    query_set: str
    measure: str
    value: float | None
    undefined: Undefined | None = None
    eval_run_id: int | None = None


def measure_name(base: str, *, qrels: str | None = None, ties: str | None = "docid", version: str | None = None) -> str:
    """The canonical name of a paired measure (p-MRR, WISE, SICR) on the changed-side ``qrels``
    (None: the evaluated version's own) with tie rule ``ties`` (and, for WISE, its ``version``:
    ``paper`` eq. 7 or ``evaluator``).

    >>> measure_name("p-MRR"), measure_name("p-MRR", qrels="changed"), measure_name("WISE", ties="run-order")
    ('p-MRR', "p-MRR(qrels='changed')", "WISE(ties='run-order')")
    >>> measure_name("WISE", version="evaluator"), measure_name("SICR", version="evaluator")
    ("WISE(version='evaluator')", 'SICR')
    """
    spec = IF_MEASURES[base].params
    values = {**{p: d for p, (_, d, _) in spec.items()}, "qrels": qrels, "ties": ties or "docid"}
    if version is not None and "version" in spec:
        values["version"] = version
    return str(IFMeasure(base, tuple(values.items())))


def canonical_name(key: str, *, ties: str | None = "docid") -> str:
    """The canonical name of a stored metric key: the one place that maps the keys stored before
    names were canonical (``p-MRR[changed]``; the tie rule kept beside the key, ``ties``) to
    today's. A canonical key is returned unchanged.

    >>> canonical_name("p-MRR[changed-validated]"), canonical_name("SICR", ties="run-order")
    ("p-MRR(qrels='changed-validated')", "SICR(ties='run-order')")
    >>> canonical_name("nDCG@10"), canonical_name("p-MRR(qrels='changed')", ties="run-order")
    ('nDCG@10', "p-MRR(qrels='changed')")
    """
    found = _OLD_KEY.match(key)
    if found is None:
        return key
    return measure_name(found.group(1), qrels=found.group(2), ties=ties)


def same_as(name: str) -> str | None:
    """The name of the paired measure ``name`` with its ``qrels`` left out (the evaluated
    version's own), or None when ``name`` has no ``qrels``: on a run of ``changed``,
    ``p-MRR(qrels='changed')`` and ``p-MRR`` are one value.

    >>> same_as("p-MRR(qrels='changed',ties='run-order')"), same_as("nDCG@10"), same_as("WISE")
    ("p-MRR(ties='run-order')", None, None)
    """
    base = name.split("(", 1)[0]
    if base not in PAIRED or "(" not in name:
        return None
    m = parse(name)
    if m.params.get("qrels") is None:
        return None
    return str(IFMeasure(m.name, tuple({**m.params, "qrels": None}.items())))


def without_ties(name: str) -> str:
    """A measure's canonical name with its tie rule left out, for a table whose rows say their
    tie rule beside the figures.

    >>> without_ties("p-MRR(qrels='changed',ties='run-order')"), without_ties("WISE(ties='run-order')"), without_ties("nDCG@10")
    ("p-MRR(qrels='changed')", 'WISE', 'nDCG@10')
    """
    base = name.split("(", 1)[0]
    if base not in PAIRED or "(" not in name:
        return name
    m = parse(name)
    return str(IFMeasure(m.name, tuple({**m.params, "ties": "docid"}.items())))


def canonical_run(run: dict) -> dict:
    """A stored eval run (as :mod:`storage.eval_runs` returns it) with every measure key canonical:
    ``metrics``, the rows of ``per_query`` and ``settings["evaluation"]["undefined"]``. Values and
    key order are kept; a run stored with canonical keys is returned as it is."""
    ties = (run.get("settings") or {}).get("ties")

    def keys(d: dict) -> dict:
        return {canonical_name(k, ties=ties): v for k, v in d.items()}

    if not any(_OLD_KEY.match(k) for k in run.get("metrics") or {}):
        return run
    out = {**run, "metrics": keys(run["metrics"])}
    if "per_query" in run:
        out["per_query"] = {q: keys(row) for q, row in run["per_query"].items()}
    evaluation = (run.get("settings") or {}).get("evaluation")
    if evaluation and "undefined" in evaluation:
        out["settings"] = {**run["settings"], "evaluation": {**evaluation, "undefined": keys(evaluation["undefined"])}}
    return out


def load_runs(db, project_id: int) -> list[dict]:
    """The evaluated runs of a project, oldest first, with their per-query values and canonical
    keys (:func:`storage.eval_runs.list_eval_runs`; the runs themselves left out)."""
    return [canonical_run(r) for r in store.list_eval_runs(db, project_id, with_per_query=True)]


def load_run(db, run_id: int, *, run: bool = False) -> dict:
    """One stored eval run with canonical keys (:func:`storage.eval_runs.load_eval_run`), without
    its paired runs; ``run=True`` adds its own run."""
    return canonical_run(store.load_eval_run(db, run_id, run=run, paired_runs=False))


def run_results(run: dict, *, system: str | None = None, per_query: bool = False) -> list[Result]:
    """The :class:`Result` records of one stored eval run (read by :func:`load_runs` /
    :func:`load_run`): one per measure over every evaluated query (query set :data:`ALL`), in the
    stored order; with ``per_query`` then one per query and measure.

    >>> run = {"id": 3, "model": "bm25", "qrels_version": "original", "settings": {"ties": "docid",
    ...        "evaluation": {"undefined": {"p-MRR": "no changed document"}}},
    ...        "metrics": {"nDCG@10": 0.5, "p-MRR": None}, "per_query": {"q1": {"nDCG@10": 0.5}}}
    >>> [(r.measure, r.query_set, r.value, r.undefined) for r in run_results(run, per_query=True)]
    [('nDCG@10', 'all', 0.5, None), ('p-MRR', 'all', None, Undefined(reason='no changed document')), ('nDCG@10', 'q1', 0.5, None)]
    """
    run = canonical_run(run)
    label = system if system is not None else run["model"]
    why = ((run.get("settings") or {}).get("evaluation") or {}).get("undefined") or {}
    out = [Result(label, run["qrels_version"], ALL, m, v,
                  None if v is not None else Undefined(why.get(m) or "not computed"), run.get("id"))
           for m, v in run["metrics"].items()]
    if per_query:
        out += [Result(label, run["qrels_version"], q, m, v, None if v is not None else Undefined("not computed"),
                       run.get("id"))
                for q, row in run.get("per_query", {}).items() for m, v in row.items()]
    return out


def metrics_of(results: list[Result]) -> dict[str, float | None]:
    """``{measure: value}`` of the :data:`ALL` records (the stored ``metrics``, canonical)."""
    return {r.measure: r.value for r in results if r.query_set == ALL}


def undefined_of(results: list[Result]) -> dict[str, str]:
    """``{measure: reason}`` of the undefined :data:`ALL` records."""
    return {r.measure: r.undefined.reason for r in results if r.query_set == ALL and r.undefined is not None}


def per_query_of(results: list[Result], measure: str) -> dict[str, float]:
    """``{query: value}`` of ``measure`` over the per-query records where it is defined."""
    return {r.query_set: r.value for r in results
            if r.query_set != ALL and r.measure == measure and r.value is not None}


def protocol_of(run: dict) -> str:
    """The protocol a stored eval run followed (:mod:`evaluation.protocols`): ``mteb`` or
    ``paper``; a run stored before protocols were recorded followed MTEB's defaults.

    >>> protocol_of({"settings": {"protocol": {"name": "paper"}}}), protocol_of({"settings": {}})
    ('paper', 'mteb')
    """
    found = (run.get("settings") or {}).get("protocol")
    return (found or {}).get("name", "mteb") if isinstance(found, dict) else (found or "mteb")


def _without_per_query(block: dict) -> dict:
    return {k: (_without_per_query(v) if isinstance(v, dict) and k == "on_instructed" else v)
            for k, v in block.items() if k != "per_query"}


def _mteb_levels(levels: dict, measure: str = "nDCG@20") -> dict:
    """``{"level_1": value, ...}`` of one measure (MTEB's IFIR tasks' ``level_scores``: nDCG@20).

    >>> _mteb_levels({"level1": {"nDCG@20": 0.5}, "level3": {"nDCG@20": 0.25}})
    {'level_1': 0.5, 'level_3': 0.25}
    """
    return {f"level_{k[-1]}": v[measure] for k, v in levels.items() if measure in v}


def run_summary(run: dict) -> dict:
    """What ``ifjudge eval run`` reports of one stored eval run (read by :func:`load_run`): its
    identity and protocol, the headline ``metrics`` (the means over subsets when the project has
    several: ``averaging``), each subset's figures (``subsets``), IFIR's ``levels``, the bare-query
    ``baseline``, p-MRR's and InfoSearch's details (with its Table 2).

    >>> run = {"id": 1, "model": "bm25", "template": "query_instruction", "qrels_version": "original",
    ...        "settings": {"k": 1000, "evaluation": {"n_queries": 2, "missing_queries": [], "undefined": {}}},
    ...        "metrics": {"nDCG@20": 0.5}}
    >>> s = run_summary(run); s["protocol"], s["metrics"], s["n_queries"]
    ('mteb', {'nDCG@20': 0.5}, 2)
    """
    run = canonical_run(run)
    s, records = run.get("settings") or {}, run_results(run)
    evaluation = s.get("evaluation") or {}
    summary = {
        "eval_run_id": run.get("id"), "model": run["model"], "template": run["template"],
        "qrels_version": run["qrels_version"], "protocol": protocol_of(run), "variant": s.get("variant"),
        "k": s.get("k"), "ties": s.get("ties", "docid"), "reused_run": s.get("reused_run"),
        "metrics": metrics_of(records), "n_queries": evaluation.get("n_queries"),
        "missing_queries": evaluation.get("missing_queries", []), "undefined": undefined_of(records),
    }
    if isinstance(s.get("protocol"), dict):
        summary["protocol_rules"] = s["protocol"]
    for key in ("averaging", "subsets", "levels", "query_means"):
        if key in evaluation:
            summary[key] = evaluation[key]
    if "levels" in evaluation:  # IFIR: also under MTEB's names (level_scores: level_1.. of nDCG@20)
        summary["level_scores"] = _mteb_levels(evaluation["levels"])
        for entry in summary.get("subsets", {}).values():
            if "levels" in entry:
                entry["level_scores"] = _mteb_levels(entry["levels"])
    if "baseline" in evaluation:
        summary["baseline"] = _without_per_query(evaluation["baseline"])
    pm = evaluation.get("p-MRR")
    if pm:
        summary["p_mrr"] = {"qrels": pm["qrels"], "ties": pm.get("ties"), "by_qrels": pm.get("by_qrels", {})}
    info = evaluation.get("infosearch")
    if info:
        summary["infosearch"] = {v: {"overall": b["overall"], "by_dimension": b["by_dimension"]}
                                 for v, b in info.get("by_qrels", {}).items()}
        if "table2" in info:
            summary["infosearch_table2"] = info["table2"]
        summary["wise_version"] = info.get("wise_version", "paper")
    return summary
