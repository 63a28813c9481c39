"""How a study sampled the benchmark, read back from its settings and the project: the design that
:mod:`annotation.estimates.benchmark` estimates under (strata, groups in the population, units per group),
the same pool and strata :func:`annotation.studies.create_study` drew from."""
from __future__ import annotations

from collections import defaultdict

from annotation.judges import strata as judge_strata
from annotation.questions.study import study_questions
from annotation.studies import covered_instances, domain_sample_sizes
from storage import projects, studies
from storage.db import Database
from storage.errors import IFJudgeError


def study_design(db: Database, study_id: int) -> dict:
    """``{"kind": "instances" | "condition" | "relevance", "description", "strata": {stratum: N_h},
    "group_units": {group: M_g}, "unit_group": {unit: group}, "group_stratum": {group: stratum},
    "seed", "overlap", "notes"}``. Units are instances (``relevance``: documents of a re-judged
    query, every one of them judged, from an infinite population of queries: no finite-population
    correction). The population is every instance (query) of the project the study could sample:
    with ``skip_covered``, those the studies it skipped did not ask (named in the notes).
    """
    study = studies.get_study(db, study_id)
    s = study["settings"]
    pid = study["project_id"]
    qs = study["questions"]
    cols = studies.item_columns(db, study_id)  # shared within a page run (storage.studies.share_reads)
    out = {"seed": s.get("seed", 0), "overlap": s.get("overlap")}
    notes: list[str] = []
    designs = {q.design for q in study_questions(study).values()}  # how its questions' items were drawn
    if designs == {"relevance"}:
        groups = defaultdict(set)
        for inst, doc in zip(cols["instance_id"], cols["doc_id"]):
            groups[inst].add(f"{inst}|{doc}")
        return {**out, "kind": "relevance", "strata": {"": None}, "notes": notes,
                "group_units": {g: len(u) for g, u in groups.items()},
                "unit_group": {u: g for g, us in groups.items() for u in us}, "group_stratum": dict.fromkeys(groups, ""),
                "description": (f"re-judged queries as groups ({len(groups)}), every relevant document judged; the "
                                "queries are those experts edited, not a random sample: no finite-population correction")}
    skipped = _skipped(db, pid, s, qs, notes)
    if designs == {"condition"}:
        modes = s.get("modes") or ["changed", "reversed"]
        by_query = defaultdict(set)
        for inst in projects.instances(db, pid):
            if inst["variant"] in modes:
                by_query[inst["query_id"]].add(inst["instance_id"])
        by_query = {q: i for q, i in by_query.items() if not i & skipped}
        unit_group = {i: q for q, insts in by_query.items() for i in insts}
        sampled = sorted({unit_group.get(inst, inst) for inst in cols["instance_id"]})
        return {**out, "kind": "condition", "strata": {"": len(by_query)}, "notes": notes,
                "group_units": {q: len(by_query.get(q, ())) or 1 for q in sampled}, "unit_group": unit_group,
                "group_stratum": dict.fromkeys(sampled, ""),
                "description": (f"{len(sampled)} of {len(by_query)} queries sampled at random (fraction "
                                f"{s.get('group_fraction')}, seed {out['seed']}); every document relevant under the "
                                "original qrels judged for each mode")}
    pool = projects.instances(db, pid)
    if any(i["instruction"].strip() for i in pool):
        pool = [i for i in pool if i["instruction"].strip()]
    pool = [i for i in pool if i["instance_id"] not in skipped]
    subsets = projects.query_subsets(db, pid)
    members: dict[str, list[dict]] = defaultdict(list)
    for inst in sorted(pool, key=lambda i: (i["group_id"], i["instance_id"])):
        members[inst["group_id"]].append(inst)
    stratified = any(s.get(k) is not None for k in ("subset_fraction", "domain_fractions", "allocation", "judge_strata"))
    js = s.get("judge_strata")
    group_stratum = {g: (judge_strata.stratum_of(js, g) if js else subsets.get(m[0]["query_id"], "") if stratified
                         else "") for g, m in members.items()}
    strata: dict[str, int] = defaultdict(int)
    for g, h in group_stratum.items():
        strata[h] += 1
    unit_group = {i["instance_id"]: g for g, m in members.items() for i in m}
    sampled_groups: dict[str, int] = defaultdict(int)
    for g in {unit_group[inst] for inst in cols["instance_id"] if inst in unit_group}:
        sampled_groups[group_stratum[g]] += 1
    planned = _planned(s, dict(strata), stratified)
    notes += [f"stratum {h or '(all)'}: {sampled_groups.get(h, 0)} groups sampled where the settings give "
              f"{planned[h]} of {N}; the study was restricted to chosen groups, and the population is taken to be "
              "every group of the project" for h, N in strata.items()
              if planned.get(h) is not None and sampled_groups.get(h, 0) != planned[h]]
    if s.get("max_excluded") is not None and any(q.asked_per == "gold-and-excluded" for q in study_questions(study).values()):
        notes.append(f"passage match: at most {s['max_excluded']} excluded passages per instance were sampled (seeded); "
                     "each is weighted by its instance's excluded passages over those sampled (a third sampling stage)")
    n_sampled = len(set(cols["instance_id"]))
    if js:  # strata sampled at very unequal rates, a rare No in the large one: MOVER over the strata's intervals
        out["interval"] = "stratified-wilson"
    return {**out, "kind": "instances", "strata": dict(strata), "group_units": {g: len(m) for g, m in members.items()},
            "unit_group": unit_group, "group_stratum": group_stratum, "notes": notes,
            "description": (f"{_how(s, len(strata))} sampled at random (seed {out['seed']}), then up to "
                            f"{s.get('per_group')} instances per group ({n_sampled} instances sampled of {len(pool)} in "
                            f"{len(members)} groups); {out['overlap']} annotators per item, majority vote")}


def _skipped(db: Database, project_id: int, settings: dict, questions: list[str], notes: list[str]) -> set[str]:
    """The instances a ``skip_covered`` study left out of its pool (asked by the studies it
    recorded), with a note on what the estimates are then of."""
    if not settings.get("skip_covered"):
        return set()
    ids = settings.get("skipped_studies")
    if ids is None:
        notes.append("the study sampled only instances no other study asked, but which studies those were is not "
                     "recorded: the population is taken to be every instance of the project")
        return set()
    if not ids:
        return set()
    covered = covered_instances(db, project_id, questions)
    out = {i for i, sids in covered.items() if sids & set(ids)}
    notes.append(f"the study sampled only what studies {', '.join(map(str, ids))} did not ask ({len(out)} instances left "
                 "out): the estimates are of the rest of the benchmark, not of all of it")
    return out


def _planned(settings: dict, sizes: dict[str, int], stratified: bool) -> dict[str, int | None]:
    """The groups the settings give each stratum (None where they cannot be recomputed)."""
    try:
        if settings.get("judge_strata"):
            return judge_strata.planned_sizes(settings["judge_strata"], sizes)
        if stratified:
            return domain_sample_sizes(sizes, group_fraction=settings.get("group_fraction") or 0.0,
                                       subset_fraction=settings.get("subset_fraction"),
                                       domain_fractions=settings.get("domain_fractions"),
                                       allocation=settings.get("allocation"),
                                       anticipated_shares=settings.get("anticipated_shares"))
        fraction = settings.get("group_fraction")
        return {h: (max(1, round(fraction * N)) if fraction is not None else None) for h, N in sizes.items()}
    except IFJudgeError:  # settings of a project whose domains changed since: no plan to compare with
        return dict.fromkeys(sizes)


def _how(settings: dict, n_strata: int) -> str:
    """How the groups were drawn, in words."""
    if settings.get("judge_strata"):
        return judge_strata.describe(settings["judge_strata"])
    if settings.get("domain_fractions"):
        rates = ", ".join(f"{h or '(no domain)'} {f}" for h, f in sorted(settings["domain_fractions"].items()))
        return f"query groups per domain at its own rate ({rates}; {n_strata} strata)"
    if settings.get("allocation") == "proportional":
        return (f"{settings.get('group_fraction')} of the query groups, allocated to the {n_strata} domains in proportion "
                "to their sizes")
    if settings.get("allocation") == "neyman":
        shares = ", ".join(f"{h or '(no domain)'} {p}" for h, p in sorted((settings.get("anticipated_shares") or {}).items()))
        return (f"{settings.get('group_fraction')} of the query groups, allocated to the {n_strata} domains by Neyman "
                f"allocation (anticipated shares {shares})")
    if settings.get("subset_fraction") is not None:
        return f"{settings.get('subset_fraction')} of the query groups per domain ({n_strata} strata)"
    return f"{settings.get('group_fraction')} of the query groups"
