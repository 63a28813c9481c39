"""Check items: screens whose answers are known, mixed into a study to measure each annotator's
accuracy (the "gold questions" of crowdsourcing quality control).

A lead chooses at set-up the share of the study's screens that are checks
(``StudySettings.check_share``). A check screen is an instance the study did NOT sample, asked
exactly like the others (same questions, same layout, same place in the queue, never marked on
screen). Its items are stored with ``is_check`` and the known answer in their payload
(``check_answer``); they are served like any item, and left out of every outcome, agreement
figure, estimate, adjudication queue and export (the storage reads of those filter them,
:data:`storage.studies.NOT_CHECK`). :func:`accuracy` gives each annotator's right answers on them.

Where the known answers come from, in this order:

1. **Earlier decisions** of the project: items of another study (same question, same answer
   scale) that a lead adjudicated, or that every one of at least two annotators answered alike.
2. **Constructed** (best passage only, for an instance without such a decision): its target
   passage beside passages of OTHER query groups, so that the target is plainly the most natural
   one; the instance's other questions on that screen have no known answer (asked, not scored).

If fewer check screens can be built than the share asks, the study gets those and a note says so.
"""
from __future__ import annotations

import random

from annotation.questions.question_type import Question
from annotation.questions.study import study_questions
from storage import projects, studies
from storage.db import Database

MAX_SHARE = 0.5  # at most half of the screens are checks


def check_count(share: float, regular_screens: int) -> int:
    """How many check screens make ``share`` of all the screens: ``round(share * n / (1 -
    share))`` of ``n`` regular screens, at least one when the share is positive.

    >>> check_count(0.1, 60), check_count(0.2, 8), check_count(0.0, 60), check_count(0.01, 5)
    (7, 2, 0, 1)
    """
    if share <= 0 or regular_screens <= 0:
        return 0
    return max(1, round(share * regular_screens / (1 - share)))


def known_decisions(db: Database, project_id: int, questions: list[Question]) -> dict:
    """``{(instance id, question, doc id or ""): {"value", "payload", "study"}}``: the decisions of
    earlier studies of the project that can serve as known answers (adjudicated, or unanimous over
    two labels or more), for ``questions`` asked with the same answers (a 1-5 naturalness is no
    check of a Yes / No one)."""
    from annotation.outcomes.table import outcome_table  # numpy: not at import (the CLI's parsers import studies)

    wanted = {q.id: q for q in questions}
    out: dict = {}
    for s in studies.list_studies(db, project_id):
        if s["settings"].get("purpose"):
            continue  # re-judging studies: not instance questions
        earlier = study_questions(s)
        asked = [q for q in wanted if q in earlier and earlier[q].categories == wanted[q].categories]
        if not asked:
            continue
        t = outcome_table(db, s["id"])
        payloads = None
        with_payload = [q for q in asked if wanted[q].needs_documents]
        for j in range(len(t.item)):
            q = t.question[j]
            if q not in asked or t.value[j] is None:
                continue
            if not (t.provenance[j] == "adjudicated" or (t.provenance[j] == "unanimous" and t.n_labels[j] >= 2)):
                continue
            if q in with_payload:
                payloads = payloads if payloads is not None else {
                    it["id"]: it["payload"] for it in studies.items_of_questions(db, s["id"], with_payload)}
            key = (t.instance[j], q, t.doc_id[j] or "")
            out.setdefault(key, {"value": t.value[j], "study": s["id"],
                                 "payload": dict((payloads or {}).get(int(t.item[j]), {}))})
    return out


def _constructed(candidates_of_group: dict[str, list[str]], inst: dict, target: str | None, n: int,
                 rng: random.Random) -> list[str] | None:
    """Best passage candidates for a constructed check: the target and ``n - 1`` passages of
    other groups (None when there are too few)."""
    others = sorted({d for g, docs in candidates_of_group.items() if g != inst["group_id"] for d in docs} - {target})
    if target is None or len(others) < n - 1:
        return None
    return sorted([target, *rng.sample(others, n - 1)])


def build_checks(db: Database, proj: dict, sample: list[dict], questions: list[Question], settings, n: int,
                 build) -> tuple[list[dict], list[str]]:
    """Up to ``n`` check screens for a study of ``questions`` (declarations) over ``sample``: their
    items (marked ``is_check``, the known answer in ``payload["check_answer"]``, None when that
    question of the screen has none) and notes. ``build`` is
    :func:`annotation.studies.build_instance_items` (passed in: this module is imported by
    :mod:`annotation.studies`)."""
    if n <= 0:
        return [], []
    rng = random.Random(settings.seed + 7919)
    sampled = {i["instance_id"] for i in sample}
    pool = [i for i in projects.instances(db, proj["id"]) if i["instance_id"] not in sampled and i["instruction"].strip()]
    known = known_decisions(db, proj["id"], questions)
    on_screen = {q.id for q in questions if q.on_instance_screen}  # the questions of one instance's screen
    passages = {q.id for q in questions if q.answers_are_passages}  # a check can be constructed from other groups
    with_known = sorted({k[0] for k in known} & {i["instance_id"] for i in pool})
    rest = sorted({i["instance_id"] for i in pool} - set(with_known))
    rng.shuffle(with_known)
    rng.shuffle(rest)
    by_id = {i["instance_id"]: i for i in pool}
    qrels = projects.qrels(db, proj["id"], "original") if passages else {}
    corpus = set(projects.StoredDocuments(db, proj["id"])) if passages else set()
    group_docs: dict[str, list[str]] = {}
    for inst in pool:
        for d, r in (qrels.get(inst["instance_id"]) or {}).items():
            if r > 0 and d in corpus:
                group_docs.setdefault(inst["group_id"], []).append(d)
    items: list[dict] = []
    screens = 0
    for iid in with_known + (rest if passages else []):
        if screens >= n:
            break
        built, _ = build(db, proj["id"], [by_id[iid]], questions, settings)
        built = [it for it in built if it["question"] in on_screen or (it["instance_id"], it["question"],
                                                                       it.get("doc_id") or "") in known]
        if not built:
            continue
        scored = 0
        for it in built:
            k = known.get((it["instance_id"], it["question"], it.get("doc_id") or ""))
            payload = dict(it.get("payload") or {})
            if k is not None and it["question"] in passages:
                if k["value"] in (k["payload"].get("candidates") or []):
                    payload = {**payload, "candidates": k["payload"]["candidates"]}
                else:
                    k = None  # the earlier passages are not this item's: no known answer
            if k is None and it["question"] in passages:
                target = payload.get("gold")
                cands = _constructed(group_docs, by_id[iid], target, settings.passages, rng)
                if cands is not None:
                    payload["candidates"] = cands
                    k = {"value": target}
            payload["check_answer"] = None if k is None else k["value"]
            scored += k is not None
            it.update(payload=payload, is_check=True)
        if scored:
            items += built
            screens += len({it["screen"] for it in built})
    notes = []
    if screens < n:
        notes.append(f"check items: {screens} of the {n} check screens asked for could be built (they need instances "
                     "decided in an earlier study, or passages of other query groups for the best passage)")
    return items, notes


def mix_in(regular: list[dict], checks: list[dict], seed: int) -> list[dict]:
    """The study's items with the check screens spread over the queue: each screen keeps its items
    together, check screens at evenly spaced places (seeded), every screen's ``position``
    renumbered in the new order (the assignment order of every annotator).

    >>> reg = [{"screen": f"r{i}", "position": i} for i in range(4)]
    >>> [it["screen"] for it in mix_in(reg, [{"screen": "c0", "position": 0}, {"screen": "c1", "position": 0}], 1)]
    ['c0', 'r0', 'r1', 'r2', 'r3', 'c1']
    """
    def screens(items):
        out: dict[str, list[dict]] = {}
        for it in sorted(items, key=lambda it: it["position"]):
            out.setdefault(it["screen"], []).append(it)
        return list(out.values())

    reg, chk = screens(regular), screens(checks)
    if not chk:
        return regular
    rng = random.Random(seed)
    total = len(reg) + len(chk)
    slots: set[int] = set()
    for j in range(len(chk)):  # one check in each stretch of total / checks screens, at a random place in it
        k = min(total - 1, int((j + rng.random()) * total / len(chk)))
        while k in slots:
            k = (k + 1) % total
        slots.add(k)
    r, c = iter(reg), iter(chk)
    order = [next(c) if k in slots else next(r) for k in range(total)]
    out = []
    for position, group in enumerate(order):
        for it in group:
            out.append({**it, "position": position})
    return out


def accuracy(db: Database, study_id: int) -> dict[str, dict]:
    """annotator -> ``{"right", "answered"}`` over the check items with a known answer that they
    answered; empty when the study has no check item."""
    out: dict[str, dict] = {}
    for name, value, answer in studies.check_labels(db, study_id):
        if answer is None:
            continue
        d = out.setdefault(name, {"right": 0, "answered": 0})
        d["answered"] += 1
        d["right"] += value == answer
    if not out and studies.has_check_items(db, study_id):
        return {name: {"right": 0, "answered": 0} for name in studies.get_study(db, study_id)["annotators"]}
    return out
