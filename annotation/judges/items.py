"""The items a judge answers: every item of the benchmark for one question, built by the same
rules as a study's items (:mod:`annotation.studies`, :mod:`annotation.narratives.versions`,
:mod:`annotation.instfol_study`), so that a judge's answer and a human outcome about the same item
share its key (instance id, question, doc id).

- ``validity`` / ``naturalness``: every instance with an instruction (a bare-query instance, IFIR's
  ``<qid>_0``, is not judged);
- ``best_passage``: every instance whose target and ``passages - 1`` other targets of its group are
  in the corpus; the candidates are the target and a seeded sample of the others (seed and
  instance id), payload ``{"candidates", "target"}``;
- ``passage_match``: every gold and every excluded passage of every instance
  (:func:`annotation.studies.match_passages`), payload ``{"kind"}``;
- ``condition``: for every query with a changed / reversed instance, every document relevant under
  the original qrels, under each mode's instruction (payload ``{"mode", "qid"}``);
- ``relevance``: for every query with a published changed narrative, every document relevant under
  the original qrels, judged under the changed instruction (FollowIR's re-judging);
- ``instfol_match``: every passage in the top-k of the bare-query or the instructed run of every
  instance ranked by both (:func:`annotation.instfol_study.passage_items`), payload ``{"ranks"}``.

``from_study``: a study's own items of the question instead (its candidates, its passages): the
judge answers exactly what the annotators saw.
"""
from __future__ import annotations

import random

from annotation.instfol_study import passage_items, run_rankings
from annotation.narratives.versions import original_judgments
from annotation.questions.study import BUILTIN_QUESTIONS
from annotation.studies import CONDITION_MODES, bare_instances, match_passages
from storage import projects, studies
from storage.db import Database
from storage.errors import IFJudgeError


def judge_items(db: Database, project: dict, question: str, *, passages: int = 3, seed: int = 0,
                runs: tuple[dict, dict] | None = None, top_k: int = 10,
                from_study: int | None = None) -> tuple[list[dict], list[str]]:
    """``(items, notes)``: the items of ``question`` in ``project`` (each ``{"instance_id",
    "question", "doc_id", "payload"}``) and notes on what could not be built.

    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> items, notes = judge_items(db, projects.get_project(db, "demo"), "best_passage")
    >>> len(items), items[0]["payload"]["target"] in items[0]["payload"]["candidates"]
    (12, True)
    """
    if from_study is not None:
        return study_items(db, project, question, from_study), []
    asked_per = BUILTIN_QUESTIONS[question].asked_per if question in BUILTIN_QUESTIONS else None
    if asked_per not in JUDGE_ITEMS:
        raise IFJudgeError(f"no judge items for question {question!r}")
    return JUDGE_ITEMS[asked_per](db, project["id"], question, passages=passages, seed=seed, runs=runs, top_k=top_k)


def _item(instance_id: str, question: str, doc_id: str = "", payload: dict | None = None) -> dict:
    return {"instance_id": instance_id, "question": question, "doc_id": doc_id or "", "payload": payload or {}}


def _instructed(instances: list[dict]) -> list[dict]:
    """Without bare-query instances, as a study samples (when some instance has an instruction)."""
    return [i for i in instances if i["instruction"].strip()] if any(i["instruction"].strip() for i in instances) \
        else instances


def study_items(db: Database, project: dict, question: str, study_id: int) -> list[dict]:
    """A study's items of ``question`` as judge items (the payload's candidates, gold, ranks kept)."""
    study = studies.get_study(db, study_id)
    if study["project_id"] != project["id"]:
        raise IFJudgeError(f"study {study_id} belongs to another project than {project['name']!r}")
    out, seen = [], set()
    for it in studies.items_of_study(db, study_id, question):
        key = (it["instance_id"], it["doc_id"] or "")
        if key in seen:  # a re-judging study asks about a document in several rounds: judged once
            continue
        seen.add(key)
        payload = {k: v for k, v in it["payload"].items() if k in ("candidates", "kind", "mode", "qid", "ranks")}
        if "gold" in it["payload"]:
            payload["target"] = it["payload"]["gold"]
        out.append(_item(it["instance_id"], question, it["doc_id"] or "", payload))
    if not out:
        raise IFJudgeError(f"study {study_id} has no {question} item")
    return out


def _instances(db: Database, pid: int, question: str, **_) -> tuple[list[dict], list[str]]:
    return [_item(i["instance_id"], question) for i in _instructed(projects.instances(db, pid))], []


def _best_passage(db: Database, pid: int, question: str, *, passages: int, seed: int, **_) -> tuple[list[dict], list[str]]:
    qrels = projects.qrels(db, pid, "original")
    instances = _instructed(projects.instances(db, pid))
    targets = {i["instance_id"]: min((d for d, r in (qrels.get(i["instance_id"]) or {}).items() if r > 0), default=None)
               for i in instances}
    corpus = projects.existing_doc_ids(db, pid, [t for t in targets.values() if t])
    group_targets: dict[str, set[str]] = {}
    for i in instances:
        if targets[i["instance_id"]] in corpus:
            group_targets.setdefault(i["group_id"], set()).add(targets[i["instance_id"]])
    items, skipped = [], 0
    for i in instances:
        target = targets[i["instance_id"]]
        others = sorted(group_targets.get(i["group_id"], set()) - {target})
        if target not in corpus or len(others) < passages - 1:
            skipped += 1
            continue
        rng = random.Random(f"{seed}:{i['instance_id']}")
        items.append(_item(i["instance_id"], question, payload={
            "candidates": sorted([target, *rng.sample(others, passages - 1)]), "target": target}))
    notes = [f"{skipped} instance(s) without their target and {passages - 1} other passages of the group in the "
             "corpus: not judged"] if skipped else []
    return items, notes


def _passage_match(db: Database, pid: int, question: str, **_) -> tuple[list[dict], list[str]]:
    qrels = projects.qrels(db, pid, "original")
    all_instances = projects.instances(db, pid)
    bare = bare_instances(all_instances)
    corpus = projects.existing_doc_ids(db, pid, {d for rel in qrels.values() for d in rel})
    items = []
    for inst in _instructed(all_instances):
        gold, excluded = match_passages(qrels, inst, bare.get(inst["query_id"]), corpus)
        items += [_item(inst["instance_id"], question, d, {"kind": kind})
                  for kind, docs in (("gold", gold), ("excluded", excluded)) for d in docs]
    return items, []


def _condition(db: Database, pid: int, question: str, **_) -> tuple[list[dict], list[str]]:
    original = projects.qrels(db, pid, "original")
    by_query: dict[str, dict[str, dict]] = {}
    for inst in projects.instances(db, pid):
        if inst["variant"] in CONDITION_MODES:
            by_query.setdefault(inst["query_id"], {})[inst["variant"]] = inst
    items, notes = [], []
    for q in sorted(by_query):
        key = next((k for k in (q, f"{q}-og") if k in original), q)
        positives = sorted(d for d, r in original.get(key, {}).items() if r > 0)
        if not positives:
            notes.append(f"{q}: no relevant document under the original qrels")
        for mode in CONDITION_MODES:
            inst = by_query[q].get(mode)
            items += [_item(inst["instance_id"], question, d, {"mode": mode, "qid": key})
                      for d in positives] if inst else []
    return items, notes


def _relevance(db: Database, pid: int, question: str, **_) -> tuple[list[dict], list[str]]:
    original = projects.qrels(db, pid, "original")
    changed = {i["query_id"]: i for i in projects.instances(db, pid, variant="changed") if i["instruction"].strip()}
    items, notes = [], []
    for q, inst in sorted(changed.items()):
        relevant = sorted(d for d, r in original_judgments(original, q)[1].items() if r > 0)
        present = projects.existing_doc_ids(db, pid, relevant)
        if len(present) < len(relevant):
            notes.append(f"{q}: {len(relevant) - len(present)} relevant document(s) not in the corpus")
        items += [_item(inst["instance_id"], question, d, {"control": False}) for d in relevant if d in present]
    if not changed:
        notes.append("no query has a changed instruction (FollowIR's instruction_changed): nothing to re-judge")
    return items, notes


def _instfol(db: Database, pid: int, question: str, *, runs: tuple[dict, dict] | None, top_k: int,
             **_) -> tuple[list[dict], list[str]]:
    if runs is None:
        raise IFJudgeError(f"{question} items are the passages two runs retrieved: give the bare-query and the "
                           "instructed runs")
    k = top_k
    instances = projects.instances(db, pid)
    rankings, notes = run_rankings(instances, runs[0], runs[1], k)
    ranked = [i for i in instances if i["instance_id"] in rankings]
    docs = {d for r in rankings.values() for ds in r.values() for d in ds}
    built, absent = passage_items(ranked, rankings, projects.existing_doc_ids(db, pid, docs), overlap=1)
    if absent:
        notes.append(f"{len(absent)} ranked document(s) are not in the corpus and are not judged")
    return [_item(it["instance_id"], question, it["doc_id"], it["payload"]) for it in built], notes


#: the items a judge answers, by what the question is asked about (``Question.asked_per``): the
#: same rules as a study's items of it
JUDGE_ITEMS = {"instance": _instances, "candidates": _best_passage, "gold-and-excluded": _passage_match,
               "condition-documents": _condition, "narrative-documents": _relevance, "ranked-passages": _instfol}
