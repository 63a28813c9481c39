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

The nested blocks of a run (p-MRR on each changed-side qrels version, InfoSearch's WISE / SICR /
p-MRR overall and per dimension, InfoSearch's Table 2) are read as records too, by one function
each that every consumer calls: :func:`pmrr_records`, :func:`infosearch_records`,
:func:`table2_records` (all three of a stored run: :func:`nested_results`). A record of a
dimension has the dimension as its ``query_set``; an undefined value carries the measure's own
reason (:func:`evaluation.pmrr.undefined_reason`, :data:`evaluation.infosearch.UNDEFINED_REASONS`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from evaluation import infosearch as infosearch_mod
from evaluation import pmrr as pmrr_mod
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
    ``n_queries`` is the number of queries the value is a mean over, when the stored block says it
    (the nested p-MRR and InfoSearch blocks).
    """

    system: str
    qrels_version: str
    query_set: str
    measure: str
    value: float | None
    undefined: Undefined | None = None
    eval_run_id: int | None = None
    n_queries: int | None = None

    @property
    def shown(self):
        """The value to show: the number, or the :class:`Undefined` with its reason
        (:func:`evaluation.undefined.show_why` prints either)."""
        return self.value if self.undefined is None else self.undefined


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


INFOSEARCH = ("WISE", "SICR", "p-MRR")  # the order InfoSearch's blocks are printed in


def pmrr_records(block: dict, *, system: str = "", qrels_version: str = "", eval_run_id: int | None = None,
                 per_query: bool = False) -> list[Result]:
    """The :class:`Result` records of a run's nested p-MRR block (``settings["evaluation"]["p-MRR"]``
    or ``run_summary(...)["p_mrr"]``): one per changed-side qrels version ``nv``, measure
    ``p-MRR(qrels=nv)`` (canonical, with the block's tie rule), over :data:`ALL` with its number of
    queries; with ``per_query`` also one per query (``block["per_query"][nv]``).

    >>> block = {"qrels": ["original", "changed"], "ties": "docid", "by_qrels": {
    ...     "changed": {"p-MRR": 0.25, "n_queries": 3, "n_documents": 4},
    ...     "changed-validated": {"p-MRR": None, "n_queries": 0, "n_documents": 0}}}
    >>> [(r.measure, r.value, r.n_queries) for r in pmrr_records(block)][0]
    ("p-MRR(qrels='changed')", 0.25, 3)
    >>> pmrr_records(block)[1].undefined.reason
    'no query has a document of original whose label differs in changed-validated'
    """
    ties = block.get("ties") or "docid"
    out = []
    for nv, b in (block.get("by_qrels") or {}).items():
        name = measure_name("p-MRR", qrels=nv, ties=ties)
        why = None if b["p-MRR"] is not None else Undefined(pmrr_mod.undefined_reason("original", nv))
        out.append(Result(system, qrels_version, ALL, name, b["p-MRR"], why, eval_run_id, b.get("n_queries")))
        if per_query:
            out += [Result(system, qrels_version, q, name, v, None, eval_run_id, 1)
                    for q, v in ((block.get("per_query") or {}).get(nv) or {}).items()]
    return out


def infosearch_records(block: dict, *, qrels: str, system: str = "", qrels_version: str = "",
                       ties: str = "docid", wise_version: str | None = None,
                       eval_run_id: int | None = None) -> list[Result]:
    """The :class:`Result` records of one InfoSearch block (``{"overall", "by_dimension"}`` of a
    run's ``settings["evaluation"]["infosearch"]["by_qrels"][qrels]``): WISE, SICR and p-MRR of each
    dimension (``query_set`` the dimension, ``n_queries`` its queries), then over :data:`ALL`
    (``n_queries``: the queries with a positive for WISE and SICR, with a negative for p-MRR). The
    measures are named canonically, with ``qrels``, the tie rule and WISE's version.

    >>> row = {"WISE": 0.5, "SICR": None, "p-MRR": -0.25, "n_queries": 2}
    >>> recs = infosearch_records({"by_dimension": {"audience": row}, "overall": {**row, "n_queries_pmrr": 1}},
    ...                           qrels="changed")
    >>> [(r.query_set, r.measure, r.value, r.n_queries) for r in recs][3:]
    [('all', "WISE(qrels='changed')", 0.5, 2), ('all', "SICR(qrels='changed')", None, 2), ('all', "p-MRR(qrels='changed')", -0.25, 1)]
    >>> recs[1].undefined.reason
    'no query has a document relevant under both instructions'
    """
    out = []
    rows = [*((dim, row, row.get("n_queries")) for dim, row in block.get("by_dimension", {}).items()),
            (ALL, block["overall"], None)]
    for query_set, row, n in rows:
        for base in INFOSEARCH:
            value = row.get(base)
            count = n if n is not None else row.get("n_queries_pmrr" if base == "p-MRR" else "n_queries")
            out.append(Result(system, qrels_version, query_set,
                              measure_name(base, qrels=qrels, ties=ties, version=wise_version), value,
                              None if value is not None else infosearch_mod.undefined(base), eval_run_id, count))
    return out


def base_name(measure: str) -> str:
    """A measure's name without its parameters.

    >>> base_name("WISE(qrels='changed',ties='run-order')"), base_name("nDCG@10")
    ('WISE', 'nDCG@10')
    """
    return measure.split("(", 1)[0]


TABLE2_MODES = ("original", "instructed", "reversed")


def table2_records(table: dict, *, system: str = "", eval_run_id: int | None = None) -> list[Result]:
    """The :class:`Result` records of InfoSearch's Table 2 (a run's
    ``settings["evaluation"]["infosearch"]["table2"]``): per dimension, then its ``averaging`` row
    (the mean over dimensions, ``query_set`` the averaging's words), nDCG@10 and Robustness@10 of
    each mode on that mode's qrels version (``qrels_version``: ``table["qrels"][mode]``), then p-MRR,
    WISE and SICR on the instructed mode's qrels.

    >>> t = {"qrels": {"original": "original", "instructed": "changed"}, "averaging": "mean over 1 dimension",
    ...      "dimensions": {"Language": {"n_queries": 3, "nDCG@10": {"original": 1.0, "instructed": 0.5},
    ...      "Robustness@10": {"original": None, "instructed": 0.5}, "p-MRR": 0.1, "WISE": -0.2, "SICR": 0.0}}}
    >>> t["mean"] = t["dimensions"]["Language"]
    >>> [(r.qrels_version, r.measure, r.value) for r in table2_records(t)][:3]
    [('original', 'nDCG@10', 1.0), ('changed', 'nDCG@10', 0.5), ('original', 'Robustness@10', None)]
    >>> table2_records(t)[2].undefined.reason
    'no group of this dimension has an instance in the run'
    """
    q = table["qrels"]
    out = []
    for query_set, e in [*table["dimensions"].items(), (table["averaging"], table["mean"])]:
        for m in ("nDCG@10", "Robustness@10"):
            for mode in TABLE2_MODES:
                if mode not in q:
                    continue
                value = e[m].get(mode)
                why = None if value is not None else Undefined(
                    "no query of this dimension is in the run" if m == "nDCG@10" else
                    "no group of this dimension has an instance in the run")
                out.append(Result(system, q[mode], query_set, m, value, why, eval_run_id, e["n_queries"]))
        for base in ("p-MRR", "WISE", "SICR"):
            value = e[base]
            out.append(Result(system, q.get("instructed", ""), query_set, base, value,
                              None if value is not None else infosearch_mod.undefined(base), eval_run_id,
                              e["n_queries"]))
    return out


def nested_results(run: dict, *, system: str | None = None, per_query: bool = False) -> list[Result]:
    """Every :class:`Result` record of one stored eval run's nested blocks (read by :func:`load_run`
    or :func:`load_runs`): :func:`pmrr_records`, :func:`infosearch_records` of each changed-side
    qrels version, :func:`table2_records`.

    >>> run = {"id": 4, "model": "bm25", "qrels_version": "changed", "settings": {"evaluation": {
    ...        "p-MRR": {"qrels": ["original", "changed"], "ties": "docid",
    ...                  "by_qrels": {"changed": {"p-MRR": 0.5, "n_queries": 2}}}}}}
    >>> [(r.system, r.measure, r.value) for r in nested_results(run)]
    [('bm25', "p-MRR(qrels='changed')", 0.5)]
    """
    label = system if system is not None else run["model"]
    evaluation = (run.get("settings") or {}).get("evaluation") or {}
    common = {"system": label, "qrels_version": run["qrels_version"], "eval_run_id": run.get("id")}
    out = pmrr_records(evaluation["p-MRR"], per_query=per_query, **common) if evaluation.get("p-MRR") else []
    info = evaluation.get("infosearch") or {}
    for nv, block in (info.get("by_qrels") or {}).items():
        out += infosearch_records(block, qrels=nv, ties=info.get("ties") or "docid",
                                  wise_version=info.get("wise_version"), **common)
    if info.get("table2"):
        out += table2_records(info["table2"], system=label, eval_run_id=run.get("id"))
    return out
