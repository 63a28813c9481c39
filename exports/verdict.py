"""The verdict: one paragraph in plain words that answers the lead's two questions, "is my
benchmark valid, and did the validation change its conclusions?", before any table.

Composed of named public pieces, each usable alone and each computed from a figure the tables
below it show (so a reader can check every number of the paragraph against a table):

* :func:`ranking_piece` -- does the leaderboard change on the validated qrels? From
  :func:`evaluation.leaderboard.leaderboard_change` (each system's rank on the published and on
  the validated qrels over every query each version judges, Kendall's tau between the two orders
  with its percentile bootstrap interval over queries).
* :func:`score_change_piece` -- the largest change of a system's score, and on how many queries,
  from :func:`evaluation.compare.published_vs_validated`. The view that can move comes first:
  the queries the study checked (the published mean over all of them, the validated mean over
  those it keeps). On InstructIR validation only drops instances, so on the queries both versions
  judge the change is 0 by construction; the checked view is where a change shows.
* :func:`share_pieces` -- the shares the humans decided (valid, natural, best passage is the
  target, ...), each as "k of n decided instances" and as the benchmark-wide design-aware
  estimate with its 95% interval (:func:`annotation.estimates.benchmark.benchmark_estimates`).
* :func:`coverage_piece` -- what the validated qrels cover of the benchmark: how many published
  judgments humans checked, how many were left out or changed, how many keep their published
  judgment unchecked (the newest build's provenance counts).

:func:`project_verdict` puts them together for one project; :func:`verdict_text` writes the
paragraph. The Evaluate page, ``ifjudge report`` and the exported report (``report.md``) all call
these, so they say the same thing.
"""
from __future__ import annotations

import math

from evaluation.undefined import UNDEFINED
from formats.bundle import VALIDATES
from storage import projects, studies
from storage.db import Database

PAIRS = tuple(VALIDATES.items())  # (validated version, the published version it validates)


def _ordinal(n: int) -> str:
    """``1`` -> ``"1st"``.

    >>> [_ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22)]
    ['1st', '2nd', '3rd', '4th', '11th', '12th', '13th', '21st', '22nd']
    """
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _pct(x: float | None) -> str:
    """A share as a percentage with one decimal (``"—"`` when undefined).

    >>> _pct(0.98333), _pct(1.0), _pct(None)
    ('98.3%', '100.0%', '—')
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return UNDEFINED
    return f"{100 * x:.1f}%"


def _defined(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def ranking_piece(comparison: dict | None, *, measure: str) -> dict:
    """Does the ranking change? From one comparison of
    :func:`evaluation.leaderboard.leaderboard_change` (``None``: no system is evaluated on both
    versions).

    Returns ``{"known", "changed", "n_systems", "moves": [(system, rank published, rank
    validated)], "tau", "low", "high", "why_no_interval", "p_order_differs", "significant"}``: ``changed`` is
    True when some system's rank differs; ``moves`` lists those systems; ``tau`` with ``low`` and
    ``high`` is Kendall's tau between the two orders and its 95% bootstrap interval
    (``why_no_interval`` when it is undefined); ``p_order_differs`` is, for two systems, the
    share of bootstrap replicates in which the two versions order them differently;
    ``significant`` is the leaderboard's Holm-adjusted verdict (``{"pairs", "tested"}``: the pairs
    whose published order the validated qrels reverse beyond chance, over ``tested`` pairs), None
    when no pair could be tested.

    >>> board = {"systems": [{"system": "a", "rank_published": 1, "rank_validated": 2},
    ...                      {"system": "b", "rank_published": 2, "rank_validated": 1}],
    ...          "kendall_tau": {"value": None, "low": None, "high": None, "undefined": "needs 3 systems"},
    ...          "pairs": [{"replicates_ordered_differently": 0.25}], "n_queries_published": 12, "n_queries_validated": 11}
    >>> p = ranking_piece(board, measure="nDCG@10")
    >>> p["changed"], p["moves"], p["p_order_differs"]
    (True, [('a', 1, 2), ('b', 2, 1)], 0.25)
    """
    if not comparison or not comparison.get("systems"):
        return {"known": False, "measure": measure}
    rows = comparison["systems"]
    moves = [(r["system"], r["rank_published"], r["rank_validated"]) for r in rows
             if r["rank_published"] != r["rank_validated"]]
    tau = comparison.get("kendall_tau") or {}
    pairs = comparison.get("pairs") or []
    verdict = comparison.get("order_changed") or {}
    return {
        "known": True, "measure": measure, "changed": bool(moves), "n_systems": len(rows),
        "systems": [(r["system"], r["rank_published"], r["rank_validated"]) for r in rows], "moves": moves,
        "tau": tau.get("value"), "low": tau.get("low"), "high": tau.get("high"),
        "why_no_interval": tau.get("undefined"),
        "p_order_differs": (pairs[0].get("replicates_ordered_differently", pairs[0].get("p_order_differs"))
                            if len(rows) == 2 and pairs else None),
        "significant": ({"pairs": [tuple(x) for x in verdict.get("pairs") or []], "tested": verdict.get("tested", 0)}
                        if verdict.get("tested") else None),
        "n_queries_published": comparison.get("n_queries_published"),
        "n_queries_validated": comparison.get("n_queries_validated"),
    }


def score_change_piece(pair: dict | None) -> dict:
    """The largest change of one system's score between the published and the validated qrels,
    from one entry of :func:`evaluation.compare.published_vs_validated`.

    The view: ``checked`` (the queries the study judged: the published mean over all of them,
    the validated mean over those it keeps) when the validated version has a build, else
    ``full`` (every query each version judges). The system is the one whose change has the
    largest magnitude (the first listed on a tie). Returns ``{"known", "view", "system",
    "measure", "published", "validated", "delta", "n_published", "n_validated",
    "full_delta", "n_full_published", "n_full_validated", "queries_changed"}``
    (``queries_changed``: queries both versions judge whose score differs).

    >>> pair = {"measure": "nDCG@10", "n_checked_queries": 4, "systems": [
    ...     {"system": "a", "checked_published": 0.5, "checked_validated": 0.5, "checked_delta": 0.0,
    ...      "checked_n_published": 4, "checked_n_validated": 3, "full_published": 0.5, "full_validated": 0.5,
    ...      "full_delta": 0.0, "full_n_published": 9, "full_n_validated": 8, "queries_changed": 0},
    ...     {"system": "b", "checked_published": 0.4, "checked_validated": 0.3, "checked_delta": -0.1,
    ...      "checked_n_published": 4, "checked_n_validated": 3, "full_published": 0.45, "full_validated": 0.4,
    ...      "full_delta": -0.05, "full_n_published": 9, "full_n_validated": 8, "queries_changed": 0}]}
    >>> p = score_change_piece(pair)
    >>> p["view"], p["system"], p["delta"], p["n_published"], p["n_validated"]
    ('checked', 'b', -0.1, 4, 3)
    """
    if not pair or not pair.get("systems"):
        return {"known": False}
    rows = pair["systems"]
    view = "checked" if pair.get("n_checked_queries") is not None and any(
        _defined(r.get("checked_delta")) for r in rows) else "full"
    candidates = [r for r in rows if _defined(r.get(f"{view}_delta"))]
    if not candidates:
        return {"known": False}
    best = max(candidates, key=lambda r: abs(r[f"{view}_delta"]))  # max keeps the first of equal magnitudes
    return {
        "known": True, "view": view, "system": best["system"], "measure": pair["measure"],
        "published_version": pair.get("published", "original"), "validated_version": pair.get("validated", "validated"),
        "published": best[f"{view}_published"], "validated": best[f"{view}_validated"], "delta": best[f"{view}_delta"],
        "n_published": best[f"{view}_n_published"], "n_validated": best[f"{view}_n_validated"],
        "full_delta": best.get("full_delta"), "n_full_published": best.get("full_n_published"),
        "n_full_validated": best.get("full_n_validated"), "queries_changed": best.get("queries_changed") or 0,
        "n_systems": len(rows),
    }


def share_pieces(estimates: list[dict]) -> list[dict]:
    """The decided shares of the studies, from :func:`annotation.estimates.benchmark.benchmark_estimates`'
    ``estimates``: per estimate its name, the decided items (``n``) and those that say Yes for it
    (``k``), the sample share ``k / n``, and the benchmark-wide design-aware share with its 95%
    interval (``share``, ``low``, ``high``; ``why`` when undefined).

    >>> share_pieces([{"estimand": "valid instruction", "yes_items": 58, "n_items": 59, "share": 0.986,
    ...                "low": 0.926, "high": 1.0, "undefined": None}])[0]["sample_share"]
    0.9830508474576272
    """
    out = []
    for e in estimates:
        n, k = e.get("n_items") or 0, e.get("yes_items") or 0
        out.append({"name": e["estimand"], "question": e.get("question"), "k": k, "n": n,
                    "sample_share": k / n if n else None, "share": e.get("share"), "low": e.get("low"),
                    "high": e.get("high"), "why": e.get("undefined")})
    return out


def coverage_piece(db: Database, project_id: int, version: str = "validated", *, build=None) -> dict:
    """What the newest stored build of ``version`` (or ``build``, an
    :class:`annotation.outcomes.qrels_builds.QrelsBuild` not stored, as an export makes) covers of the
    benchmark: the published judgments it
    starts from, those humans checked (every judgment whose provenance is not "not checked"),
    those it leaves out, those whose label it changed, and those that keep their published
    judgment unchecked; ``unit`` is "instances" when each judged query is an instance
    (InstructIR), else "judgments". ``{"known": False}`` when the version has no build.

    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> coverage_piece(db, 1)
    {'known': False, 'version': 'validated'}
    """
    if build is not None:
        b = {"id": None, "base_version": build.base_version, "counts": build.counts, "settings": build.settings,
             "studies": build.studies}
    else:
        builds = projects.qrels_builds(db, project_id, version)
        if not builds:
            return {"known": False, "version": version}
        b = builds[0]
    c = b["counts"]
    unchecked = int(c.get("provenance_not checked", 0))
    kept, left_out = int(c.get("judgments", 0)), int(c.get("left_out", 0))
    total = kept + left_out
    instances = {i["instance_id"] for i in projects.instances(db, project_id)}
    qids = set(projects.qrels(db, project_id, b["base_version"]))
    return {
        "known": True, "version": version, "base_version": b["base_version"], "build_id": b["id"],
        "unit": "instances" if qids and qids <= instances else "judgments",
        "published": total, "checked": total - unchecked, "left_out": left_out, "changed": int(c.get("changed", 0)),
        "unchecked": unchecked, "kept": kept, "unresolved": int(c.get("unresolved", 0)),
        "unresolved_policy": (b.get("settings") or {}).get("unresolved"),
        "studies": [(s["id"], s["name"]) for s in b["studies"]],
    }


def project_verdict(db: Database, project: dict, *, study_ids: list[int] | None = None, measure: str = "nDCG@10",
                    n_boot: int = 2000, seed: int = 0, alpha: float = 0.05, boards: dict | None = None,
                    comparison: dict | None = None, estimates: list[dict] | None = None,
                    builds: dict | None = None) -> dict:
    """The verdict of one project (its row): for each validated qrels version it has (``validated``,
    ``changed-validated``, ``reversed-validated``), :func:`ranking_piece`,
    :func:`score_change_piece` and :func:`coverage_piece`; over the studies, :func:`share_pieces`.

    ``study_ids``: the studies whose shares are stated (default: those the newest build of each
    validated version was built from). ``boards`` (a :func:`evaluation.leaderboard.leaderboard_change`
    result), ``comparison`` (a :func:`evaluation.compare.compare_project` result) and
    ``estimates`` (:func:`annotation.estimates.benchmark.benchmark_estimates` results) are used when the
    caller has them already, else computed here; ``builds`` (version -> an unstored
    :class:`annotation.outcomes.qrels_builds.QrelsBuild`, as an export builds them) is what the coverage
    describes instead of the stored builds. Returns ``{"project", "measure", "versions":
    [{"validated", "published", "ranking", "change", "coverage"}], "shares", "study_ids", "text"}``.
    """
    from annotation.estimates.benchmark import benchmark_estimates
    from evaluation.compare import pick_versions, published_vs_validated
    from evaluation.leaderboard import leaderboard_change
    from evaluation import results

    proj = project
    builds = builds or {}
    have = set(projects.qrels_versions(db, proj["id"])) | set(builds)
    if boards is None:
        boards = leaderboard_change(db, proj, measure=measure, n_boot=n_boot, seed=seed, alpha=alpha)
    measure = boards.get("measure", measure)
    if comparison is not None:
        pairs = comparison.get("published_vs_validated") or []
    else:
        runs = results.load_runs(db, proj["id"])
        pairs = published_vs_validated(db, proj["id"], pick_versions(runs), measure) if runs else []
    versions = []
    for val, pub in PAIRS:
        if val not in have:
            continue
        board = next((c for c in boards.get("comparisons") or [] if c["validated"] == val), None)
        pair = next((p for p in pairs if p["validated"] == val), None)
        versions.append({"validated": val, "published": pub, "ranking": ranking_piece(board, measure=measure),
                         "change": score_change_piece(pair), "coverage": coverage_piece(db, proj["id"], val, build=builds.get(val))})
    if study_ids is None:  # the studies the validated qrels come from; before any build, the project's studies
        study_ids = list(dict.fromkeys(s for v in versions for s, _ in v["coverage"].get("studies", []))) or [
            s["id"] for s in studies.list_studies(db, proj["id"])]
    if estimates is None:
        estimates = [benchmark_estimates(db, sid, alpha=alpha) for sid in study_ids]
    shares = share_pieces([e for est in estimates for e in est["estimates"]])
    out = {"project": proj["name"], "measure": measure, "versions": versions, "shares": shares,
           "study_ids": list(study_ids)}
    out["text"] = verdict_text(out)
    return out


def ranking_sentence(p: dict, published: str, validated: str) -> str:
    """The sentence of :func:`ranking_piece`.

    >>> ranking_sentence({"known": True, "measure": "nDCG@10", "changed": False, "n_systems": 3, "moves": [],
    ...                   "tau": 1.0, "low": 0.333, "high": 1.0, "why_no_interval": None}, "original", "validated")
    'The ranking of the 3 systems by nDCG@10 does not change from the original to the validated qrels (Kendall tau 1.000, 95% interval 0.333 to 1.000).'
    """
    if not p.get("known"):
        return (f"Whether the ranking of retrievers changes is not known yet: no retriever has been evaluated on both "
                f"the {published} and the {validated} qrels.")
    n, m = p["n_systems"], p["measure"]
    if p["changed"]:
        moves = "; ".join(f"{s} moves from {_ordinal(a)} to {_ordinal(b)}" for s, a, b in p["moves"])
        head = f"The ranking of the {n} systems by {m} changes from the {published} to the {validated} qrels: {moves}"
    else:
        head = f"The ranking of the {n} systems by {m} does not change from the {published} to the {validated} qrels"
    if _defined(p.get("tau")) and _defined(p.get("low")):
        tail = f" (Kendall tau {p['tau']:.3f}, 95% interval {p['low']:.3f} to {p['high']:.3f})"
    elif p.get("why_no_interval"):
        tail = f" (no interval for Kendall tau: {p['why_no_interval']})"
    else:
        tail = ""
    if _defined(p.get("p_order_differs")):
        tail += (f"; the two systems swap order in {_pct(p['p_order_differs'])} of the bootstrap replicates")
    sig = p.get("significant")
    if sig:
        k = sig["tested"]
        over = f"Holm's adjustment over {k} pair{'' if k == 1 else 's'}"
        if sig["pairs"]:
            tail += ("; beyond chance (" + over + "): the order of "
                     + ", ".join(f"{a} and {b}" for a, b in sig["pairs"]) + " is reversed")
        else:
            tail += f"; no pair's order is reversed beyond chance ({over})"
    return head + tail + "."


VIEWS = {"checked": "the {n} queries the study checked", "full": "every query each version judges ({n} queries)"}


def change_sentence(p: dict) -> str:
    """The sentence of :func:`score_change_piece`.

    >>> change_sentence({"known": True, "view": "checked", "system": "bm25", "measure": "nDCG@10",
    ...                  "published_version": "original", "validated_version": "validated", "published": 0.528,
    ...                  "validated": 0.5262, "delta": -0.0018, "n_published": 60, "n_validated": 59,
    ...                  "full_delta": -0.0001, "n_full_published": 941, "n_full_validated": 940,
    ...                  "queries_changed": 0, "n_systems": 3})
    'The largest score change is bm25: nDCG@10 0.5280 with the original qrels and 0.5262 with the validated ones (-0.0018) on the 60 queries the study checked (the validated qrels keep 59 of them); over every query each version judges (941 and 940 queries) it changes by -0.0001.'
    """
    if not p.get("known"):
        return ""
    if p["delta"] == 0 and not p.get("queries_changed"):
        where = "on the queries the study checked" if p["view"] == "checked" else "on any query"
        return f"No system's {p['measure']} changes {where} ({p['n_systems']} systems)."
    if p["view"] == "checked":
        where = (f"on the {p['n_published']} queries the study checked (the validated qrels keep "
                 f"{p['n_validated']} of them)")
    else:
        where = f"over every query each version judges ({p['n_published']} and {p['n_validated']} queries)"
    text = (f"The largest score change is {p['system']}: {p['measure']} {p['published']:.4f} with the "
            f"{p['published_version']} qrels and {p['validated']:.4f} with the {p['validated_version']} ones "
            f"({p['delta']:+.4f}) {where}")
    if p["view"] == "checked" and _defined(p.get("full_delta")):
        text += (f"; over every query each version judges ({p['n_full_published']} and {p['n_full_validated']} "
                 f"queries) it changes by {p['full_delta']:+.4f}")
    if p.get("queries_changed"):
        text += f"; {p['queries_changed']} queries both versions judge changed their score"
    return text + "."


def shares_sentence(shares: list[dict]) -> str:
    """The sentences of :func:`share_pieces`: per estimate the decided instances that say Yes
    for it, and the benchmark-wide estimate with its interval.

    >>> shares_sentence([{"name": "valid instruction", "k": 58, "n": 59, "sample_share": 58 / 59, "share": 0.986,
    ...                   "low": 0.926, "high": 1.0, "why": None}])
    'Valid instruction: 58 of 59 decided instances (98.3%); over the whole benchmark an estimated 98.6% (95% interval 92.6% to 100.0%).'
    """
    if not shares:
        return "No study has judged this project yet."
    parts = []
    for s in shares:
        name = s["name"][:1].upper() + s["name"][1:]
        if not s["n"]:
            parts.append(f"{name}: no decided instance yet.")
            continue
        text = f"{name}: {s['k']} of {s['n']} decided instances ({_pct(s['sample_share'])})"
        if _defined(s["share"]) and _defined(s["low"]):
            text += (f"; over the whole benchmark an estimated {_pct(s['share'])} (95% interval {_pct(s['low'])} "
                     f"to {_pct(s['high'])})")
        elif s.get("why"):
            text += f" (no benchmark-wide interval: {s['why']})"
        parts.append(text + ".")
    return " ".join(parts)


def coverage_sentence(p: dict) -> str:
    """The sentence of :func:`coverage_piece`.

    >>> coverage_sentence({"known": True, "version": "validated", "base_version": "original", "unit": "instances",
    ...                    "published": 941, "checked": 60, "left_out": 1, "changed": 0, "unchecked": 881, "kept": 940,
    ...                    "unresolved": 3, "unresolved_policy": "keep-published", "studies": [(2, "s")]})
    "The validated qrels cover 60 of the benchmark's 941 instances with a human check (6.4%): 1 left out, 59 kept (3 of them unresolved, kept as published); the other 881 keep their original judgment unchecked."
    """
    if not p.get("known"):
        return ""
    unit, n = p["unit"], p["published"]
    text = (f"The {p['version']} qrels cover {p['checked']} of the benchmark's {n} {unit} with a human check "
            f"({_pct(p['checked'] / n if n else None)}): {p['left_out']} left out")
    if p["changed"]:
        text += f", {p['changed']} changed"
    kept_checked = p["checked"] - p["left_out"] - p["changed"]
    text += f", {kept_checked} kept"
    if p["unresolved"]:
        policy = {"keep-published": "kept as published", "drop": "left out", "relevant": "made relevant",
                  "not-relevant": "made not relevant"}.get(p.get("unresolved_policy") or "", "")
        text += f" ({p['unresolved']} of them unresolved{', ' + policy if policy else ''})"
    return text + f"; the other {p['unchecked']} keep their {p['base_version']} judgment unchecked."


def verdict_text(verdict: dict) -> str:
    """The paragraph: per validated version the ranking, the largest score change and the
    coverage; then the decided shares."""
    sentences = []
    for v in verdict["versions"]:
        sentences += [ranking_sentence(v["ranking"], v["published"], v["validated"]), change_sentence(v["change"]),
                      coverage_sentence(v["coverage"])]
    if not verdict["versions"]:
        sentences.append("This project has no validated qrels yet: build them from a study (Export) to see whether "
                         "its conclusions change.")
    sentences.append(shares_sentence(verdict["shares"]))
    return " ".join(s for s in sentences if s)
