"""Humans as INSTFOL's judge (IFIR-EVAL, Appendix A.2; issue 11, item 5).

INSTFOL compares the judged match to the instruction of the top-k passages retrieved for the bare
query (C_q) and for the query with its instruction (C_inst). IFIR's judge is an LLM scoring each
passage 0-3 ("Please give a score between 0 and 3"). Here annotators are the judge:

1. :func:`create_instfol_study` takes two runs (``run[qid][doc_id] -> score``: the bare-query run
   and the instructed run), and for every sampled instance makes one ``instfol_match`` item (0-3)
   per passage in the top-k of either run; a passage in both top-k lists is judged once and counts
   in both. The item's payload keeps its rank in each run (``{"ranks": {"query": 3,
   "instructed": 1}}``).
2. :func:`human_judge_rows` scores each passage with the **mean of its annotators' 0-3 labels**
   (:func:`passage_score`; IFIR's LLM score is the probability-weighted mean of the scale, App.
   A.2; an adjudication is the score) into judge-score rows ``(instance, mode, rank, score)``. No
   labelled passage is dropped: a tie (labels 1, 2) scores its mean (1.5).
3. :func:`instfol_from_study` computes INSTFOL from them with :func:`evaluation.instfol.instfol`
   (mean per query, then over queries; max = 3) and, given an LLM judge's scores
   (:func:`evaluation.instfol.read_judge_scores`), both judges' INSTFOL on the same passages
   (:func:`evaluation.instfol.same_passages`) and their agreement there
   (:func:`evaluation.instfol.judge_agreement`).

Which ranking of a run belongs to an instance: the instructed run is looked up by the instance id;
the bare-query run by the instance id, then by the id of the query's bare-query instance (IFIR
``<qid>_0``), then by the query id. Ranks order documents by score, ties by document id
descending (trec_eval's order).
"""
from __future__ import annotations

from dataclasses import asdict

from annotation.agreement import majority
from annotation.questions.study import GUIDELINES
from annotation.studies import StudySettings, bare_instances, balanced_plan, sample_instances
from evaluation.instfol import MODES, instfol, judge_agreement, same_passages
from evaluation.undefined import Undefined
from evaluation.retrievers.topk import top_k_ranking
from storage import projects, studies, users
from storage.errors import IFJudgeError
from storage.db import Database

QUESTION = "instfol_match"
MAX_SCORE = 3.0


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
        out[iid] = {"query": list(top_k_ranking(bare, k)), "instructed": list(top_k_ranking(instructed, k))}
    notes = []
    if missing["query"]:
        notes.append(f"{len(missing['query'])} instance(s) have no ranking in the bare-query run "
                     f"(looked up by instance id, bare-query instance id, query id): {', '.join(missing['query'][:5])}")
    return out, notes


def create_instfol_study(
    db: Database,
    *,
    project: dict,
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
    sampled instance of ``project`` (its row, :func:`storage.projects.get_project`), judged 0-3
    (``instfol_match``) by ``settings.overlap`` annotators each.

    Sampling (groups, fraction or per-domain fraction, instances per group, seed) is that of
    :func:`annotation.studies.create_study`, over the instances present in the instructed run.
    ``sources`` (e.g. the run files' names) is stored with the study settings.
    Returns the same summary as ``create_study``.
    """
    settings = settings or StudySettings()
    settings.validate()
    k = int(top_k_passages)
    if k < 1:
        raise IFJudgeError(f"top-k must be at least 1, got {top_k_passages}")
    people = users.users_by_name(db, annotators)
    if len({p["id"] for p in people}) != len(people):
        raise IFJudgeError("an annotator is listed twice")
    pool, rankings, notes = ranked_pool(projects.instances(db, project["id"]), bare_run, instructed_run, k,
                                        project=project, groups=groups)
    sample = sample_instances(
        pool, group_fraction=settings.group_fraction, per_group=settings.per_group, seed=settings.seed,
        subsets=projects.query_subsets(db, project["id"]), subset_fraction=settings.subset_fraction,
    )
    corpus = set(projects.documents_by_id(db, project["id"], {d for i in sample for m in MODES for d in rankings[i["instance_id"]][m]}))
    items, absent = passage_items(sample, rankings, corpus, overlap=settings.overlap)
    if absent:
        notes.append(f"{len(absent)} ranked document(s) are not in the project's corpus and are not judged: "
                     f"{', '.join(sorted(absent)[:5])}")
    screens = [it["screen"] for it in items]
    plan = balanced_plan(screens, [p["id"] for p in people], settings.overlap, seed=settings.seed)
    stored = asdict(settings)
    stored["guidelines"] = {QUESTION: settings.guidelines.get(QUESTION, GUIDELINES[QUESTION])}
    stored["top_k"] = k
    stored["runs"] = dict(sources or {})
    study_id = studies.insert_study(
        db, project_id=project["id"], name=name or f"{project['name']} INSTFOL study", questions=[QUESTION], settings=stored,
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
        "top_k": k,
        "notes": notes,
    }


def ranked_pool(
    instances: list[dict], bare_run: dict[str, dict[str, float]], instructed_run: dict[str, dict[str, float]], k: int,
    *, project: dict, groups: list[str] | None = None,
) -> tuple[list[dict], dict[str, dict[str, list[str]]], list[str]]:
    """The instances an INSTFOL study may sample: those with a ranking in both runs
    (:func:`run_rankings`), restricted to ``groups`` when given; with their top-k rankings and the
    notes on instances left out. ``project``: its row (named in the messages). Raises when none is left or a named group has no ranked instance."""
    rankings, notes = run_rankings(instances, bare_run, instructed_run, k)
    if not rankings:
        raise IFJudgeError("no instance of project {!r} has a ranking in both runs (the instructed run is keyed by "
                           "instance id; the bare run by instance id, bare-query instance id or query id)".format(project["name"]))
    pool = [i for i in instances if i["instance_id"] in rankings]
    if groups is not None:
        unknown = sorted(set(groups) - {i["group_id"] for i in pool})
        if unknown:
            raise IFJudgeError(f"no instance of group(s) {', '.join(unknown)} has a ranking in both runs")
        pool = [i for i in pool if i["group_id"] in set(groups)]
    return pool, rankings, notes


def passage_items(sample: list[dict], rankings: dict[str, dict[str, list[str]]], corpus: set[str], *,
                  overlap: int) -> tuple[list[dict], set[str]]:
    """The study's items: per sampled instance, one ``instfol_match`` item per passage in the top-k
    of either run (best rank first, then doc id), its payload the passage's rank in each run; and
    the ranked documents left out because they are not in the corpus.

    >>> items, absent = passage_items([{"instance_id": "q1"}], {"q1": {"query": ["a", "b"], "instructed": ["b", "x"]}},
    ...                               {"a", "b"}, overlap=2)
    >>> [(it["doc_id"], it["payload"]["ranks"]) for it in items], absent
    ([('a', {'query': 1}), ('b', {'query': 2, 'instructed': 1})], {'x'})
    """
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
            items.append({"instance_id": iid, "question": QUESTION, "doc_id": d, "cap": overlap,
                          "screen": f"{iid}|{d}", "position": position, "payload": {"ranks": ranks[d]}})
    return items, absent


def passage_score(labels: list[str], *, adjudication: str | None = None) -> float | None:
    """The human judge's score of one passage: the mean of its annotators' 0-3 labels (IFIR's
    LLM score is the mean of the scale weighted by the score tokens' probabilities; the share of
    annotators giving each score plays that role). A tie is no obstacle: the mean is defined
    whenever there is a label. A lead's adjudication, when there is one, is the score. None
    without any label.

    >>> passage_score(["1", "2", "3"]), passage_score(["1", "2"]), passage_score(["0"], adjudication="2")
    (2.0, 1.5, 2.0)
    >>> passage_score([]) is None
    True
    """
    if adjudication is not None:
        return float(adjudication)
    if not labels:
        return None
    return sum(float(v) for v in labels) / len(labels)


def human_judge_rows(db: Database, study_id: int) -> tuple[list[tuple[str, str, int, float]], dict]:
    """The judge-score rows ``(instance, mode, rank, score)`` of the study: each passage's score is
    :func:`passage_score` (the mean of its current labels; the lead's adjudication when there is
    one), and counts of ranked passages (one per mode a passage is ranked in): ``passages``,
    ``scored``, ``unlabelled`` (no label yet: the only passages left out), ``ties`` (scored
    passages whose labels have no strict plurality: kept, with their mean), ``partial`` (fewer
    labels than the planned overlap) and ``adjudicated``.

    A passage in both top-k lists gives one row per mode, with the same score.
    """
    items = studies.items_of_study(db, study_id, QUESTION)
    if not items:
        raise IFJudgeError(f"study {study_id} has no {QUESTION} item: it is not an INSTFOL study")
    labels: dict[int, list[str]] = {}
    for r in studies.current_labels(db, study_id, QUESTION):
        labels.setdefault(r["item"], []).append(r["value"])
    adj = studies.adjudications(db, study_id)
    rows: list[tuple[str, str, int, float]] = []
    counts = dict.fromkeys(("passages", "scored", "unlabelled", "ties", "partial", "adjudicated"), 0)
    for it in items:
        ranks = it["payload"].get("ranks", {})
        values = labels.get(it["id"], [])
        a = adj.get(it["id"])
        score = passage_score(values, adjudication=a["value"] if a else None)
        n = len(ranks)
        counts["passages"] += n
        if score is None:
            counts["unlabelled"] += n
            continue
        counts["scored"] += n
        counts["adjudicated"] += n if a else 0
        counts["partial"] += n if not a and len(values) < int(it["cap"]) else 0
        counts["ties"] += n if not a and majority.decide(values).reason == "tie" else 0
        rows += [(it["instance_id"], mode, int(r), score) for mode, r in sorted(ranks.items())]
    return rows, counts


def instfol_from_study(
    db: Database,
    study_id: int,
    *,
    llm_scores: list[tuple[str, str, int, float]] | None = None,
    k: int | None = None,
) -> dict:
    """INSTFOL with the study's annotators as the judge, and the comparison with an LLM judge.

    Per instance (IFIR's "query"), q = mean human score (:func:`passage_score`: the mean of the
    annotators' labels) of its bare-query top-k passages, i = the same for the instructed top-k;
    INSTFOL = mean over instances of (i - q) / (3 - q) (0 when i = q; i - q when q = 3) --
    :func:`evaluation.instfol.instfol`. Every labelled passage counts, ties included; an instance
    left with no labelled passage in one of the two modes is left out and listed in ``left_out``.

    Parameters
    ----------
    llm_scores : rows (query, mode, rank, score), optional
        An LLM judge's scores (:func:`evaluation.instfol.read_judge_scores`; ``query`` is the
        instance id). Adds ``llm``: both judges' INSTFOL on the same passages
        (:func:`evaluation.instfol.same_passages`: the (instance, mode, rank) both scored, within
        the study's instances), ``INSTFOL`` (the LLM's), ``human_INSTFOL``, ``n_queries``,
        ``passages`` and the counts of passages only one judge scored; and the agreement of the two
        judges on those passages (:func:`evaluation.instfol.judge_agreement`).
    k : int, optional
        Only ranks <= k (default: the study's top-k).

    Returns
    -------
    dict
        ``INSTFOL``, ``n_queries``, ``per_query``, ``max`` (3), ``k``, ``judge`` ("human mean"),
        ``counts`` (from :func:`human_judge_rows`), ``left_out``, and ``llm`` when given.

    Examples
    --------
    Instance x: bare top-2 passages with labels (1, 1, 2) and (0, 0, 1), means 4/3 and 1/3
    (q = 5/6); instructed (3, 3, 2) and (1, 1, 2), means 8/3 and 4/3 (i = 2):
    INSTFOL = (2 - 5/6) / (3 - 5/6) = 7/13.
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
    result = instfol(kept, max_score=MAX_SCORE, k=k)  # no row: INSTFOL undefined, no query
    result.update({"judge": "human mean", "study_id": study_id, "counts": counts, "left_out": left_out})
    if llm_scores is not None:
        result["llm"] = _llm_comparison(kept, list(llm_scores), k, set(planned))
    return result


def _llm_comparison(human: list, llm: list, k: int | None, instances: set[str]) -> dict:
    """Both judges' INSTFOL on the passages both scored, and their agreement there."""
    h_rows, l_rows, counts = same_passages(human, [r for r in llm if r[0] in instances], k=k)
    out: dict = {"passages": counts["passages"], "only_human": counts["only_first"],
                 "only_llm": counts["only_second"], "dropped_queries": counts["dropped_queries"]}
    try:
        res = instfol(l_rows, max_score=MAX_SCORE, k=k)  # no row: INSTFOL undefined, no query
    except ValueError as exc:  # an LLM score above the scale
        res, out["note"] = {"INSTFOL": Undefined(str(exc)), "per_query": {}}, str(exc)
    hum = instfol(h_rows, max_score=MAX_SCORE, k=k)
    out["n_queries"] = hum["n_queries"]
    out["INSTFOL"] = res["INSTFOL"]
    out["per_query"] = res["per_query"]
    out["human_INSTFOL"] = hum["INSTFOL"]
    out["human_per_query"] = hum["per_query"]
    out["agreement"] = judge_agreement([r[3] for r in h_rows], [r[3] for r in l_rows], max_score=int(MAX_SCORE))
    return out
