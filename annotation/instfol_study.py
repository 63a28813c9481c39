"""Humans as INSTFOL's judge (IFIR-EVAL, Appendix A.2; issue 11, item 5).

INSTFOL compares the judged match to the instruction of the top-k passages retrieved for the bare
query (C_q) and for the query with its instruction (C_inst). IFIR's judge is an LLM scoring each
passage 0-3 ("Please give a score between 0 and 3"). Here annotators are the judge:

1. :func:`create_instfol_study` takes two runs (``run[qid][doc_id] -> score``: the bare-query run
   and the instructed run), and for every sampled instance makes one ``instfol_match`` item (0-3)
   per passage in the top-k of either run; a passage in both top-k lists is judged once and counts
   in both. The item's payload keeps its rank in each run (``{"ranks": {"query": 3,
   "instructed": 1}}``).
2. :func:`human_judge_rows` turns the items' majority labels (:func:`annotation.outcomes.item_outcomes`:
   strict plurality, ties and lone labels of an item meant for several annotators are no majority;
   an adjudication wins) into judge-score rows ``(instance, mode, rank, score)``.
3. :func:`instfol_from_study` computes INSTFOL from them with :func:`evaluation.instfol.instfol`
   (mean per query, then over queries; max = 3) and, given an LLM judge's scores
   (:func:`evaluation.instfol.read_judge_scores`), the agreement of the two judges
   (:func:`evaluation.instfol.judge_agreement`).

Which ranking of a run belongs to an instance: the instructed run is looked up by the instance id;
the bare-query run by the instance id, then by the id of the query's bare-query instance (IFIR
``<qid>_0``), then by the query id. Ranks order documents by score, ties by document id
descending (trec_eval's order).
"""
from __future__ import annotations

from dataclasses import asdict

from annotation.outcomes import item_outcomes
from annotation.questions import GUIDELINES
from annotation.studies import StudySettings, bare_instances, balanced_plan, sample_instances
from evaluation.instfol import MODES, instfol, judge_agreement
from storage import projects, studies, users
from storage.errors import IFJudgeError
from storage.db import Database

QUESTION = "instfol_match"
MAX_SCORE = 3.0


def top_k(ranking: dict[str, float], k: int) -> list[str]:
    """The k best documents of one query's run: score descending, ties by doc id descending.

    >>> top_k({"a": 1.0, "b": 2.0, "c": 1.0}, 2)
    ['b', 'c']
    """
    return [d for d, _ in sorted(ranking.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k]]


def run_rankings(
    instances: list[dict], bare_run: dict[str, dict[str, float]], instructed_run: dict[str, dict[str, float]], k: int
) -> tuple[dict[str, dict[str, list[str]]], list[str]]:
    """instance id -> {"query": top-k of the bare run, "instructed": top-k of the instructed run},
    for the instances (with an instruction) found in both runs; and notes on those that are not."""
    bare_of = bare_instances(instances)
    out, missing = {}, {"query": [], "instructed": []}
    for inst in instances:
        if not inst["instruction"].strip():
            continue
        iid = inst["instance_id"]
        instructed = instructed_run.get(iid)
        bare = next((bare_run[q] for q in (iid, bare_of.get(inst["query_id"]), inst["query_id"])
                     if q is not None and q in bare_run), None)
        if not instructed:
            missing["instructed"].append(iid)
            continue
        if not bare:
            missing["query"].append(iid)
            continue
        out[iid] = {"query": top_k(bare, k), "instructed": top_k(instructed, k)}
    notes = []
    if missing["query"]:
        notes.append(f"{len(missing['query'])} instance(s) have no ranking in the bare-query run "
                     f"(looked up by instance id, bare-query instance id, query id): {', '.join(missing['query'][:5])}")
    return out, notes


def create_instfol_study(
    db: Database,
    *,
    project: str,
    bare_run: dict[str, dict[str, float]],
    instructed_run: dict[str, dict[str, float]],
    annotators: list[str],
    top_k_passages: int = 10,
    created_by: str = "cli",
    name: str | None = None,
    settings: StudySettings | None = None,
    groups: list[str] | None = None,
    sources: dict[str, str] | None = None,
) -> dict:
    """A study whose items are the top-k passages of the bare-query and instructed runs of each
    sampled instance, judged 0-3 (``instfol_match``) by ``settings.overlap`` annotators each.

    Sampling (groups, fraction or per-domain fraction, instances per group, seed) is that of
    :func:`annotation.studies.create_study`, over the instances present in the instructed run.
    ``sources`` (e.g. the run files' names) is stored with the study settings.
    Returns the same summary as ``create_study``.
    """
    settings = settings or StudySettings()
    settings.validate()
    if int(top_k_passages) < 1:
        raise IFJudgeError(f"top-k must be at least 1, got {top_k_passages}")
    proj = projects.get_project(db, project)
    people = users.users_by_name(db, annotators)
    if len({p["id"] for p in people}) != len(people):
        raise IFJudgeError("an annotator is listed twice")
    all_instances = projects.instances(db, proj["id"])
    rankings, notes = run_rankings(all_instances, bare_run, instructed_run, int(top_k_passages))
    if not rankings:
        raise IFJudgeError("no instance of project {!r} has a ranking in both runs (the instructed run is keyed by "
                           "instance id; the bare run by instance id, bare-query instance id or query id)".format(project))
    pool = [i for i in all_instances if i["instance_id"] in rankings]
    if groups is not None:
        unknown = sorted(set(groups) - {i["group_id"] for i in pool})
        if unknown:
            raise IFJudgeError(f"no instance of group(s) {', '.join(unknown)} has a ranking in both runs")
        pool = [i for i in pool if i["group_id"] in set(groups)]
    sample = sample_instances(
        pool, group_fraction=settings.group_fraction, per_group=settings.per_group, seed=settings.seed,
        subsets=projects.query_subsets(db, proj["id"]), subset_fraction=settings.subset_fraction,
    )
    corpus = set(projects.documents_by_id(db, proj["id"], {d for i in sample for m in MODES for d in rankings[i["instance_id"]][m]}))
    items, absent = [], set()
    for position, inst in enumerate(sample):
        iid = inst["instance_id"]
        ranks: dict[str, dict[str, int]] = {}
        for mode in MODES:
            for r, d in enumerate(rankings[iid][mode], start=1):
                ranks.setdefault(d, {})[mode] = r
        for d in sorted(ranks, key=lambda d: (min(ranks[d].values()), d)):
            if d not in corpus:
                absent.add(d)
                continue
            items.append({"instance_id": iid, "question": QUESTION, "doc_id": d, "cap": settings.overlap,
                          "screen": f"{iid}|{d}", "position": position, "payload": {"ranks": ranks[d]}})
    if absent:
        notes.append(f"{len(absent)} ranked document(s) are not in the project's corpus and are not judged: "
                     f"{', '.join(sorted(absent)[:5])}")
    screens = [it["screen"] for it in items]
    plan = balanced_plan(screens, [p["id"] for p in people], settings.overlap, seed=settings.seed)
    stored = asdict(settings)
    stored["guidelines"] = {QUESTION: settings.guidelines.get(QUESTION, GUIDELINES[QUESTION])}
    stored["top_k"] = int(top_k_passages)
    stored["runs"] = dict(sources or {})
    study_id = studies.insert_study(
        db, project_id=proj["id"], name=name or f"{project} INSTFOL study", questions=[QUESTION], settings=stored,
        created_by=created_by, annotator_ids=[p["id"] for p in people], items=items, plan=plan,
    )
    return {
        "study_id": study_id,
        "instances": len(sample),
        "screens": len(screens),
        "items": len(items),
        "items_by_question": {QUESTION: len(items)},
        "assignments": sum(len(v) for v in plan.values()),
        "per_annotator_screens": {p["name"]: sum(p["id"] in v for v in plan.values()) for p in people},
        "top_k": int(top_k_passages),
        "notes": notes,
    }


def human_judge_rows(db: Database, study_id: int) -> tuple[list[tuple[str, str, int, float]], dict]:
    """The judge-score rows ``(instance, mode, rank, score)`` from the study's majority labels,
    and counts: ``passages`` (ranked passages with an item), ``scored``, ``no_majority`` (passages
    whose item has no majority: no label, a tie, a lone label) and the items' ``provenance``.

    A passage in both top-k lists gives one row per mode, with the same score.
    """
    items = {it["id"]: it for it in studies.items_of_study(db, study_id, QUESTION)}
    if not items:
        raise IFJudgeError(f"study {study_id} has no {QUESTION} item: it is not an INSTFOL study")
    rows: list[tuple[str, str, int, float]] = []
    prov: dict[str, int] = {}
    passages = no_majority = 0
    for o in item_outcomes(db, study_id, QUESTION):
        prov[o.provenance] = prov.get(o.provenance, 0) + 1
        ranks = items[o.item_id]["payload"].get("ranks", {})
        passages += len(ranks)
        if o.value is None:
            no_majority += len(ranks)
            continue
        rows += [(o.instance_id, mode, int(r), float(o.value)) for mode, r in sorted(ranks.items())]
    return rows, {"passages": passages, "scored": len(rows), "no_majority": no_majority,
                  "provenance": dict(sorted(prov.items()))}


def instfol_from_study(
    db: Database,
    study_id: int,
    *,
    llm_scores: list[tuple[str, str, int, float]] | None = None,
    k: int | None = None,
) -> dict:
    """INSTFOL with the study's annotators as the judge, and their agreement with an LLM judge.

    Per instance (IFIR's "query"), q = mean majority score of its bare-query top-k passages,
    i = the same for the instructed top-k; INSTFOL = mean over instances of
    (i - q) / (3 - q) (0 when i = q; i - q when q = 3) -- :func:`evaluation.instfol.instfol`.
    Passages without a majority are left out of the means; an instance left with no scored
    passage in one of the two modes is left out of INSTFOL and listed in ``left_out``.

    Parameters
    ----------
    llm_scores : rows (query, mode, rank, score), optional
        An LLM judge's scores (:func:`evaluation.instfol.read_judge_scores`; ``query`` is the
        instance id). Adds ``llm``: the LLM's INSTFOL on the same instances, and the agreement of
        the human majority and the LLM on the (instance, mode, rank) both scored
        (:func:`evaluation.instfol.judge_agreement`).
    k : int, optional
        Only ranks <= k (default: the study's top-k).

    Returns
    -------
    dict
        ``INSTFOL``, ``n_queries``, ``per_query``, ``max`` (3), ``k``, ``judge`` ("human majority"),
        ``counts`` (from :func:`human_judge_rows`), ``left_out``, and ``llm`` when given.

    Examples
    --------
    Instance x: bare top-2 majority scores 1 and 2 (q = 1.5), instructed 3 and 2 (i = 2.5):
    INSTFOL = (2.5 - 1.5) / (3 - 1.5) = 2/3.
    """
    study = studies.get_study(db, study_id)
    k = int(k or study["settings"].get("top_k") or 0) or None
    rows, counts = human_judge_rows(db, study_id)
    if k is not None:
        rows = [r for r in rows if r[2] <= k]
    modes: dict[str, set[str]] = {}
    for inst, mode, _, _ in rows:
        modes.setdefault(inst, set()).add(mode)
    planned = sorted({it["instance_id"] for it in studies.items_of_study(db, study_id, QUESTION)})
    left_out = [i for i in planned if modes.get(i, set()) != set(MODES)]
    kept = [r for r in rows if r[0] not in set(left_out)]
    result = instfol(kept, max_score=MAX_SCORE, k=k) if kept else {
        "INSTFOL": None, "n_queries": 0, "per_query": {}, "max": MAX_SCORE, "k": k}
    result.update({"judge": "human majority", "study_id": study_id, "counts": counts, "left_out": left_out})
    if llm_scores is not None:
        result["llm"] = _llm_comparison(kept, list(llm_scores), k, set(result["per_query"]))
    return result


def _llm_comparison(human: list, llm: list, k: int | None, queries: set[str]) -> dict:
    llm_rows = [r for r in llm if r[0] in queries and (k is None or r[2] <= k)]
    out: dict = {"n_queries": len({r[0] for r in llm_rows})}
    try:
        res = instfol(llm_rows, max_score=MAX_SCORE, k=k) if llm_rows else None
    except ValueError as exc:
        res, out["note"] = None, str(exc)
    out["INSTFOL"] = None if res is None else res["INSTFOL"]
    out["per_query"] = {} if res is None else res["per_query"]
    by_key = {(q, m, r): s for q, m, r, s in llm_rows}
    pairs = [(s, by_key[(q, m, r)]) for q, m, r, s in human if (q, m, r) in by_key]
    out["agreement"] = judge_agreement([h for h, _ in pairs], [x for _, x in pairs], max_score=int(MAX_SCORE))
    return out
