"""Do conclusions change on the corrected data? Stored eval runs of a project compared across
qrels versions (``original``, ``changed``, ``validated``, ...).

:func:`compare_project` returns plain dicts (JSON-ready; :func:`table_frame` turns the table into
a pandas DataFrame): the table of systems x versions with deltas against ``original``, the
leaderboard of each version, Kendall's tau between the leaderboards, the per-query changes with
the largest magnitude, and paired significance tests between systems within each version
(paired t-test and sign-flip permutation test, Holm-corrected: :mod:`evaluation.significance`).

A *system* is a retrieval setting: model, template, depth k, reranker and candidate mode (not
the variant: FollowIR's ``original`` and ``changed`` versions are the same system run on the
original and changed instructions). For each system and version the newest eval run is used.
"""
from __future__ import annotations

import itertools
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from evaluation import results
from evaluation.measure_registry import parse as parse_measure_name
from evaluation.significance import holm, kendall_tau, paired_permutation_test, paired_t_test
from evaluation.undefined import Undefined, defined_or_none
from storage import projects
from storage.errors import IFJudgeError

BASELINE = "original"
VERSION_ORDER = ("original", "changed", "reversed", "validated", "changed-validated", "reversed-validated",
                 "edited-validated")
# each validated version against the published version it validates
VALIDATED_PAIRS = (("original", "validated"), ("changed", "changed-validated"), ("reversed", "reversed-validated"))


def common_queries(pq1: dict, pq2: dict, measure: str) -> tuple[list[str], list[str], list[str]]:
    """(queries with ``measure`` in both per-query tables, left out of the first, left out of the
    second): comparisons between qrels versions are made on the intersection.

    >>> common_queries({"a": {"m": 1}, "b": {"m": 0}}, {"b": {"m": 1}, "c": {"m": 1}}, "m")
    (['b'], ['a'], ['c'])
    """
    a = {q for q, v in pq1.items() if v.get(measure) is not None}
    b = {q for q, v in pq2.items() if v.get(measure) is not None}
    return sorted(a & b), sorted(a - b), sorted(b - a)


def checked_queries(db, project_id: int, version: str) -> tuple[set[str] | None, int | None]:
    """The queries a study judged in the newest recorded build of a validated qrels ``version``
    (those with a judgment whose provenance is not ``not checked``; kept or dropped), and the
    build's id; ``(None, None)`` when the version was stored without a build (no provenance)."""
    builds = projects.qrels_builds(db, project_id, version, with_provenance=True)
    if not builds:
        return None, None
    newest = builds[0]
    return {p["qid"] for p in newest["provenance"] if p["provenance"] != "not checked"}, newest["id"]


def mean_over(per_query: dict, queries, measure: str) -> tuple[float | None, int]:
    """(mean of ``measure`` over ``queries`` that have it in ``per_query``, how many those are).

    >>> mean_over({"a": {"m": 1.0}, "b": {"m": 0.0}, "c": {}}, ["a", "b", "c", "d"], "m")
    (0.5, 2)
    """
    vals = [per_query[q][measure] for q in queries if per_query.get(q, {}).get(measure) is not None]
    return (float(np.mean(vals)) if vals else None), len(vals)


def _sides(pub_pq: dict, val_pq: dict, queries_pub, queries_val, measure: str, prefix: str) -> dict:
    a, n_a = mean_over(pub_pq, queries_pub, measure)
    b, n_b = mean_over(val_pq, queries_val, measure)
    return {f"{prefix}_published": a, f"{prefix}_n_published": n_a, f"{prefix}_validated": b,
            f"{prefix}_n_validated": n_b, f"{prefix}_delta": None if a is None or b is None else b - a}


def _short(model: str) -> str:
    return Path(model).name if ("/" in model and Path(model).exists()) else model


def system_of(run: dict) -> tuple[str, tuple]:
    """(label, key) of the system an eval run belongs to; the protocol its figures follow
    (:func:`evaluation.results.protocol_of`) is part of the system, and named in the label when it
    is not MTEB's (the default every figure follows unless its system says otherwise).

    >>> system_of({"model": "bm25", "template": "sep", "settings": {"protocol": {"name": "paper"}}})[0]
    'bm25 [sep] (paper protocol)'
    """
    s = run["settings"]
    protocol = results.protocol_of(run)
    key = (run["model"], run["template"], s.get("k"), s.get("rerank"), json.dumps(s.get("candidates")), protocol)
    label = f"{_short(run['model'])} [{run['template']}]"
    if s.get("rerank"):
        label += f" >> {_short(s['rerank'])}"
    if s.get("k") not in (None, 1000):  # the default depth (evaluation.runner.DEFAULT_K) is not named
        label += f" k={s['k']}"
    if protocol != "mteb":
        label += f" ({protocol} protocol)"
    return label, key


@dataclass
class Selection:
    """The eval runs a comparison reads: the newest run of each (system, qrels version).

    ``latest`` maps (system key, version) to the run; ``labels`` system key -> distinct label
    (in order of first appearance); ``versions`` the versions present, ``original`` first.
    """

    latest: dict[tuple, dict]
    labels: dict[tuple, str]
    versions: list[str]

    @property
    def systems(self) -> list[tuple]:
        """The system keys, in order of first appearance."""
        return list(self.labels)

    def run(self, key: tuple, version: str) -> dict | None:
        """The newest eval run of system ``key`` on ``version`` (None when there is none)."""
        return self.latest.get((key, version))

    def value(self, key: tuple, version: str, measure: str) -> float | None:
        """The stored aggregate of ``measure`` of that run (None when absent)."""
        r = self.run(key, version)
        return None if r is None else r["metrics"].get(measure)


def load_runs(db, project: dict) -> tuple[dict, list[dict]]:
    """(project row, its eval runs with per-query values, oldest first, measure names canonical:
    :func:`evaluation.results.load_runs`) of ``project`` (its row); refuses a project without eval runs."""
    proj = project
    runs = results.load_runs(db, proj["id"])
    if not runs:
        raise IFJudgeError(f"project {proj['name']!r} has no eval runs yet; run `ifjudge eval run` first")
    return proj, runs


def pick_versions(runs: list[dict]) -> Selection:
    """The newest run of each (system, qrels version) of ``runs`` (oldest first), with distinct
    system labels (``#<first run id>`` added where two systems share a label) and the versions in
    :data:`VERSION_ORDER`, unknown versions last in name order.

    >>> runs = [{"id": i, "model": "bm25", "template": "query", "settings": {}, "qrels_version": v}
    ...         for i, v in enumerate(("changed", "original", "original"), start=1)]
    >>> sel = pick_versions(runs)
    >>> sel.versions, sel.run(sel.systems[0], "original")["id"]
    (['original', 'changed'], 3)
    """
    latest: dict[tuple, dict] = {}
    labels: dict[tuple, str] = {}
    for r in runs:  # oldest first: the newest wins
        label, key = system_of(r)
        labels[key] = label
        latest[(key, r["qrels_version"])] = r
    seen = Counter(labels.values())
    for key, label in list(labels.items()):
        if seen[label] > 1:
            labels[key] = f"{label} #{min(r['id'] for (k2, _), r in latest.items() if k2 == key)}"
    present = {v for _, v in latest}
    versions = [v for v in VERSION_ORDER if v in present] + sorted(present - set(VERSION_ORDER))
    return Selection(latest, labels, versions)


def deltas_vs(base: dict | None, run: dict, measure: str) -> tuple[dict, dict, dict | None]:
    """(delta per measure, its basis, common-query info of ``measure``) of ``run`` against the
    ``base`` run: the difference of means over the queries both judge ("common queries"), or of
    the stored aggregates for a measure without per-query values ("aggregate").

    ``common_info`` also gives the two means the delta of ``measure`` is the difference of
    (``original_mean``, ``version_mean``, on the common queries).

    >>> base = {"metrics": {"m": 0.5}, "per_query": {"a": {"m": 1.0}, "b": {"m": 0.0}}}
    >>> run = {"metrics": {"m": 0.0}, "per_query": {"b": {"m": 0.0}}}
    >>> deltas_vs(base, run, "m")  # doctest: +NORMALIZE_WHITESPACE
    ({'m': 0.0}, {'m': 'common queries'}, {'n_common': 1, 'left_out_original': ['a'], 'left_out_version': [],
     'original_mean': 0.0, 'version_mean': 0.0})
    """
    deltas, basis, common_info = {}, {}, None
    for m, val in run["metrics"].items():
        b = None if base is None else base["metrics"].get(m)
        common, only_base, only_v = ([], [], []) if base is None else common_queries(base["per_query"], run["per_query"], m)
        if common:  # a per-query measure: the delta on the queries both versions judge
            mean_v = float(np.mean([run["per_query"][q][m] for q in common]))
            mean_o = float(np.mean([base["per_query"][q][m] for q in common]))
            deltas[m] = mean_v - mean_o
            basis[m] = "common queries"
            if m == measure:
                common_info = {"n_common": len(common), "left_out_original": only_base, "left_out_version": only_v,
                               "original_mean": mean_o, "version_mean": mean_v}
        else:
            deltas[m] = None if (val is None or b is None) else val - b
            basis[m] = "aggregate"
    return deltas, basis, common_info


def system_table(sel: Selection, measure: str) -> list[dict]:
    """One row per system and version: its metrics and the deltas against ``original``
    (:func:`deltas_vs`)."""
    table = []
    for key in sel.systems:
        base = sel.run(key, BASELINE)
        for v in sel.versions:
            r = sel.run(key, v)
            if r is None:
                continue
            deltas, basis, common_info = deltas_vs(base, r, measure)
            table.append({
                "system": sel.labels[key], "model": r["model"], "template": r["template"], "qrels_version": v,
                "protocol": results.protocol_of(r), "ties": (r.get("settings") or {}).get("ties", "docid"),
                "eval_run_id": r["id"], "metrics": r["metrics"], "n_queries": len(r["per_query"]),
                "delta_vs_original": deltas, "delta_basis": basis, "common_with_original": common_info,
            })
    return table


def leaderboards(sel: Selection, measure: str) -> dict[str, list[dict]]:
    """{version: systems ranked by their stored ``measure``, best first}."""
    out = {}
    for v in sel.versions:
        rows = [(sel.labels[key], sel.value(key, v, measure)) for key in sel.systems if sel.value(key, v, measure) is not None]
        rows.sort(key=lambda x: -x[1])
        out[v] = [{"rank": i, "system": s, "value": val} for i, (s, val) in enumerate(rows, start=1)]
    return out


def means_on_common(sel: Selection, key: tuple, v1: str, v2: str, measure: str) -> tuple:
    """(value on v1, value on v2, common, left out of v1, left out of v2) of ``measure`` for
    system ``key`` over the queries both versions judge; the stored aggregates when it has no
    per-query values; (None, None, [], [], []) when a run is missing."""
    r1, r2 = sel.run(key, v1), sel.run(key, v2)
    if r1 is None or r2 is None:
        return None, None, [], [], []
    common, only1, only2 = common_queries(r1["per_query"], r2["per_query"], measure)
    if not common:
        return sel.value(key, v1, measure), sel.value(key, v2, measure), [], only1, only2
    return (float(np.mean([r1["per_query"][q][measure] for q in common])),
            float(np.mean([r2["per_query"][q][measure] for q in common])), common, only1, only2)


def tau_entry(x: list[float], y: list[float]) -> dict:
    """:func:`~evaluation.significance.kendall_tau` as JSON: ``tau``, ``p_value``, ``n_systems``
    and ``reason`` (None when tau is defined; undefined values are None).

    >>> tau_entry([0.5], [0.6])
    {'tau': None, 'p_value': None, 'n_systems': 1, 'reason': 'undefined with 1 system(s): needs at least 2'}
    """
    res = kendall_tau(x, y)
    tau = res["tau"]
    return {"tau": defined_or_none(tau), "p_value": defined_or_none(res["p_value"]), "n_systems": res["n_systems"],
            "reason": tau.reason if isinstance(tau, Undefined) else None}


def version_taus(sel: Selection, measure: str) -> list[dict]:
    """Kendall's tau between the leaderboards of each pair of versions, over the systems
    evaluated on both, each on the queries both versions judge (:func:`means_on_common`)."""
    taus = []
    for v1, v2 in itertools.combinations(sel.versions, 2):
        pairs = {key: means_on_common(sel, key, v1, v2, measure) for key in sel.systems}
        both = [key for key in sel.systems if pairs[key][0] is not None and pairs[key][1] is not None]
        res = tau_entry([pairs[k][0] for k in both], [pairs[k][1] for k in both])
        n_common = sorted({len(pairs[k][2]) for k in both})
        taus.append({"versions": [v1, v2], **res, "n_common_queries": n_common[0] if len(n_common) == 1 else n_common})
    return taus


def judgment_flips(qrels_a: dict, qrels_b: dict, queries) -> int:
    """How many judgments of ``queries`` are relevant (label > 0) in one qrels and not in the
    other (a document missing from a qrels counts as not relevant).

    >>> judgment_flips({"q": {"d1": 1, "d2": 0}}, {"q": {"d1": 0, "d3": 2}}, ["q"])
    2
    """
    return sum(1 for q in queries for d in set(qrels_a.get(q, {})) | set(qrels_b.get(q, {}))
               if (qrels_a.get(q, {}).get(d, 0) > 0) != (qrels_b.get(q, {}).get(d, 0) > 0))


def validated_row(sel: Selection, key: tuple, pub: str, val: str, measure: str, checked: set | None) -> dict | None:
    """One system's row of a published-vs-validated pair (see :func:`compare_project`); None
    when the system lacks a value on either side."""
    a, b, common, only_pub, only_val = means_on_common(sel, key, pub, val, measure)
    if a is None or b is None:
        return None
    pq1, pq2 = sel.run(key, pub)["per_query"], sel.run(key, val)["per_query"]
    per_query = [{"qid": q, "published": pq1[q][measure], "validated": pq2[q][measure],
                  "delta": pq2[q][measure] - pq1[q][measure]} for q in common]
    row = {
        "system": sel.labels[key], "published": a, "validated": b, "delta": b - a,
        "n_common_queries": len(common),
        **_sides(pq1, pq2, sorted(checked or ()), sorted(checked or ()), measure, "checked"),
        **_sides(pq1, pq2, sorted(pq1), sorted(pq2), measure, "full"),
        "left_out_published": only_pub, "left_out_validated": only_val,
        "queries_changed": sum(1 for x in per_query if x["delta"] != 0), "per_query": per_query,
    }
    if row["full_n_published"] == 0 and row["full_n_validated"] == 0:  # no per-query values
        va, vb = sel.value(key, pub, measure), sel.value(key, val, measure)
        row.update({"full_published": va, "full_validated": vb, "full_n_published": len(pq1),
                    "full_n_validated": len(pq2), "full_delta": None if va is None or vb is None else vb - va})
    if checked is None:
        row.update(dict.fromkeys(("checked_published", "checked_validated", "checked_delta",
                                  "checked_n_published", "checked_n_validated")))
    return row


def published_vs_validated(db, project_id: int, sel: Selection, measure: str) -> list[dict]:
    """For each validated version beside the published one it validates
    (:data:`VALIDATED_PAIRS`): per system :func:`validated_row`, the :func:`judgment_flips`
    on the queries every row shares, and Kendall's tau of the two leaderboards."""
    out = []
    for pub, val in VALIDATED_PAIRS:
        if pub not in sel.versions or val not in sel.versions:
            continue
        qrels_pub, qrels_val = projects.qrels(db, project_id, pub), projects.qrels(db, project_id, val)
        checked, build_id = checked_queries(db, project_id, val)
        rows = [r for key in sel.systems if (r := validated_row(sel, key, pub, val, measure, checked)) is not None]
        common_q = set.intersection(*[{x["qid"] for x in r["per_query"]} for r in rows]) if rows else set()
        out.append({
            "published": pub, "validated": val, "measure": measure, "systems": rows,
            "judgment_flips": judgment_flips(qrels_pub, qrels_val, common_q),
            "kendall_tau": tau_entry([r["published"] for r in rows], [r["validated"] for r in rows]),
            "n_checked_queries": None if checked is None else len(checked), "checked_build_id": build_id,
        })
    return out


def pmrr_published_vs_validated(sel: Selection) -> list[dict]:
    """Per system, p-MRR on original vs changed and original vs changed-validated from the first
    of its runs (in version order) that stores both, also on their common queries."""
    pmrr = []
    for key in sel.systems:
        for v in sel.versions:
            r = sel.run(key, v)
            ev = (r or {}).get("settings", {}).get("evaluation", {}).get("p-MRR", {})
            # changed-side qrels version -> {query: p-MRR}, for the versions whose per-query values are stored
            per: dict[str, dict[str, float]] = {nv: {} for nv in ev.get("per_query") or {}}
            for rec in results.pmrr_records(ev, per_query=True) if ev else []:
                if rec.query_set != results.ALL:
                    per.setdefault(parse_measure_name(rec.measure).params["qrels"], {})[rec.query_set] = rec.value
            if "changed" in per and "changed-validated" in per:
                pub, val = per["changed"], per["changed-validated"]
                common = sorted(set(pub) & set(val))
                pmrr.append({
                    "system": sel.labels[key], "qrels_version": v, "ties": ev.get("ties"),
                    "published": r["metrics"].get(results.measure_name("p-MRR", qrels="changed", ties=ev.get("ties"))),
                    "validated": r["metrics"].get(results.measure_name("p-MRR", qrels="changed-validated",
                                                                       ties=ev.get("ties"))),
                    "n_published": len(pub), "n_validated": len(val), "n_common_queries": len(common),
                    "published_on_common": float(np.mean([pub[q] for q in common])) if common else None,
                    "validated_on_common": float(np.mean([val[q] for q in common])) if common else None,
                    "left_out_published": sorted(set(pub) - set(common)),
                    "left_out_validated": sorted(set(val) - set(common)),
                })
                break
    return pmrr


def paired_test_entry(a: list[float], b: list[float], *, n_permutations: int = 10_000, seed: int = 0) -> dict:
    """The paired t-test and permutation test of two systems' per-query values, as JSON:
    ``n_queries``, ``mean_diff``, ``t``, ``t_p``, ``permutation_p`` (None when undefined) and
    ``undefined`` (the reason, else None).

    >>> paired_test_entry([0.5], [0.25])["undefined"]
    'fewer than 2 common queries'
    """
    t = paired_t_test(a, b)
    perm = paired_permutation_test(a, b, n_permutations=n_permutations, seed=seed)
    why = next((v.reason for v in (t["p_value"], perm) if isinstance(v, Undefined)), None)
    return {"n_queries": len(a), "mean_diff": float(np.mean(np.subtract(a, b))) if a else None,
            "t": defined_or_none(t["t"]), "t_p": defined_or_none(t["p_value"]),
            "permutation_p": defined_or_none(perm), "undefined": why}


def paired_tests(sel: Selection, measure: str, *, n_permutations: int = 10_000, seed: int = 0,
                 alpha: float = 0.05) -> dict[str, list[dict]]:
    """{version: one :func:`paired_test_entry` per pair of systems over their common queries,
    the p-values Holm-corrected within the version, ``significant`` at ``alpha`` after it}."""
    tests: dict[str, list[dict]] = {}
    for v in sel.versions:
        entries = []
        keys = [key for key in sel.systems if (key, v) in sel.latest]
        for k1, k2 in itertools.combinations(keys, 2):
            pq1, pq2 = sel.run(k1, v)["per_query"], sel.run(k2, v)["per_query"]
            common = sorted(q for q in pq1 if q in pq2 and measure in pq1[q] and measure in pq2[q])
            entry = paired_test_entry([pq1[q][measure] for q in common], [pq2[q][measure] for q in common],
                                      n_permutations=n_permutations, seed=seed)
            entries.append({"a": sel.labels[k1], "b": sel.labels[k2], **entry})
        for name in ("t_p", "permutation_p"):
            for e, adj in zip(entries, holm([e[name] for e in entries])):
                e[f"{name}_holm"] = adj
        for e in entries:
            e["significant"] = None if e["permutation_p_holm"] is None else bool(e["permutation_p_holm"] < alpha)
        tests[v] = entries
    return tests


def biggest_changes(sel: Selection, measure: str, *, top_changes: int = 10) -> list[dict]:
    """Per system and non-original version, the ``top_changes`` queries whose per-query
    ``measure`` moved most from ``original`` (ties: by query id)."""
    changes = []
    for key in sel.systems:
        base = sel.run(key, BASELINE)
        if base is None:
            continue
        for v in sel.versions:
            if v == BASELINE or (key, v) not in sel.latest:
                continue
            pq = sel.run(key, v)["per_query"]
            rows = []
            for q in sorted(set(base["per_query"]) | set(pq)):
                before = base["per_query"].get(q, {}).get(measure)
                after = pq.get(q, {}).get(measure)
                if before is None or after is None or before == after:
                    continue
                rows.append({"system": sel.labels[key], "qrels_version": v, "qid": q,
                             "original": before, "value": after, "delta": after - before})
            rows.sort(key=lambda r: (-abs(r["delta"]), r["qid"]))
            changes.extend(rows[:top_changes])
    return changes


def infosearch_summary(sel: Selection) -> list[dict]:
    """Per system, WISE / SICR / p-MRR overall and per dimension on each changed-side qrels
    version, from its newest eval run that stores them."""
    out = []
    for key in sel.systems:
        newest = max((r for (k, _), r in sel.latest.items() if k == key and r["settings"].get("evaluation", {}).get("infosearch")),
                     key=lambda r: r["id"], default=None)
        if newest is not None:
            by = newest["settings"]["evaluation"]["infosearch"].get("by_qrels", {})
            out.append({"system": sel.labels[key], "eval_run_id": newest["id"],
                        "by_qrels": {v: {"overall": b["overall"], "by_dimension": b["by_dimension"]} for v, b in by.items()}})
    return out


def compare_project(
    db,
    project: dict,
    *,
    measure: str = "nDCG@10",
    n_permutations: int = 10_000,
    seed: int = 0,
    top_changes: int = 10,
    alpha: float = 0.05,
) -> dict:
    """Compare every stored (system, qrels version) of a project.

    Returns
    -------
    dict
        ``measure``; ``versions`` (those with eval runs, ``original`` first); ``systems``;
        ``table`` (one row per system and version: ``metrics``, ``n_queries``,
        ``delta_vs_original`` = mean on this version - mean on ``original`` over the queries
        both judge (``delta_basis`` "common queries"; "aggregate" for measures without per-query
        values), ``common_with_original`` (``n_common`` and the left-out queries of each side); ``leaderboards``
        ({version: rows ranked by ``measure``}); ``kendall_tau`` (one entry per pair of
        versions, over the systems evaluated on both); ``paired_tests`` ({version: one entry
        per pair of systems over their common queries: mean difference, paired t-test and
        permutation p-values, each Holm-corrected within the version, ``significant`` at
        ``alpha`` after correction}); ``biggest_changes`` (per system and non-original version,
        the ``top_changes`` queries whose per-query ``measure`` moved most from ``original``);
        ``published_vs_validated`` (for each validated version beside the published one it
        validates: per system the means on the common queries, the delta, the left-out queries,
        the per-query deltas and the number of queries that changed; ``judgment_flips`` (judgments
        whose relevant / not-relevant status differs between the two qrels on those queries) and the
        Kendall tau of the two leaderboards). Each system row also has two views that can move when
        the validated version drops instances (InstructIR: a kept instance keeps its published
        qrels, so on the common queries the delta is 0 by construction): ``checked_*`` -- the
        queries the study judged (:func:`checked_queries`), the published mean over all of them,
        the validated mean over those the validated version keeps -- and ``full_*`` -- every query
        each version judges; each with ``*_published``, ``*_n_published``, ``*_validated``,
        ``*_n_validated`` and ``*_delta`` (validated - published). The pair carries
        ``n_checked_queries`` and ``checked_build_id`` (None, and the ``checked_*`` values None,
        when the validated version was stored without a build); ``p_mrr_published_vs_validated`` (per system, p-MRR
        on original vs changed and original vs changed-validated, also on their common queries);
        ``infosearch`` (per system, WISE / SICR / p-MRR overall and per dimension on each
        changed-side qrels version, from its newest eval run).
        Kendall tau between versions is computed on the common queries too.

    Examples
    --------
    >>> from annotation.demo import load_demo
    >>> from evaluation.runner import run_eval
    >>> from storage.db import connect
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> for version in ("original", "changed"):  # BM25 on the published qrels versions of the demo
    ...     _ = run_eval(db, projects.get_project(db, "demo"), model="bm25", template="query", qrels_version=version)
    >>> out = compare_project(db, projects.get_project(db, "demo"))
    >>> [(row["qrels_version"], row["n_queries"]) for row in out["table"]]
    [('original', 13), ('changed', 1)]
    >>> out["kendall_tau"][0]["reason"]
    'undefined with 1 system(s): needs at least 2'
    """
    measure = str(parse_measure_name(measure))  # canonical name (ndcg@10 -> nDCG@10); unknown: refused
    proj, runs = load_runs(db, project)
    sel = pick_versions(runs)
    return {
        "project": proj["name"], "measure": measure, "versions": sel.versions, "infosearch": infosearch_summary(sel),
        "systems": list(sel.labels.values()), "table": system_table(sel, measure),
        "leaderboards": leaderboards(sel, measure), "kendall_tau": version_taus(sel, measure),
        "paired_tests": paired_tests(sel, measure, n_permutations=n_permutations, seed=seed, alpha=alpha),
        "biggest_changes": biggest_changes(sel, measure, top_changes=top_changes),
        "published_vs_validated": published_vs_validated(db, proj["id"], sel, measure),
        "p_mrr_published_vs_validated": pmrr_published_vs_validated(sel),
    }


def table_frame(comparison: dict) -> pd.DataFrame:
    """The comparison's table as a DataFrame: one row per system, one column per
    (version, measure) and per (version, "Δ measure") for the non-original versions."""
    rows: dict[str, dict] = {}
    for row in comparison["table"]:
        out = rows.setdefault(row["system"], {"system": row["system"]})
        for m, val in row["metrics"].items():
            out[f"{row['qrels_version']} {m}"] = val
            if row["qrels_version"] != BASELINE:
                out[f"{row['qrels_version']} Δ {m}"] = row["delta_vs_original"].get(m)
    return pd.DataFrame(list(rows.values()))
