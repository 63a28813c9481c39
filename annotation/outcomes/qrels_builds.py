"""Validated qrels versions built from the studies a lead names, with provenance per judgment.

Published qrels (``original``, ``changed``, ``reversed``) are never overwritten: human outcomes
become their own versions (formats.bundle.DERIVED_QRELS_VERSIONS):

- ``validated``: instance validation (InstructIR / IFIR questions ``validity``, ``naturalness``,
  ``best_passage``): the ``original`` qrels without the instances the study rejected;
- ``changed-validated``: FollowIR re-judging of the PUBLISHED changed instruction (``relevance``
  items of the study of purpose ``rejudge-published``) and InfoSearch's instructed mode
  (``condition`` items of mode ``changed``): it validates the published ``changed`` qrels;
- ``edited-validated``: FollowIR re-judging of expert edits (a new instruction version, not a
  correction of ``changed``);
- ``reversed-validated``: InfoSearch's reversed mode (``condition`` items of mode ``reversed``).

A build is made from the studies the lead names (one or several, never "the newest" by default).
The labels of one (instance, question, document) are pooled across those studies and decided by
the one majority rule (:mod:`annotation.agreement.majority`); the newest adjudication wins. Each judgment
of the built version carries its provenance (``unanimous`` / ``majority`` / ``adjudicated`` /
``unresolved`` / ``not checked``) and label counts.

Unresolved judgments (a tie, a single label, no label) are listed and **block** a build until the
lead says how to treat them (``unresolved``): ``keep-published`` (the published label stays),
``drop`` (the judgment, or for instance validation the instance, is left out), ``relevant`` or
``not-relevant`` (document judgments only). A named study with unlabelled assignments blocks too
unless ``allow_incomplete``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from annotation.agreement import majority
from annotation.gc_pause import paused_gc
from annotation.outcomes.items import ValidationRules, match_score
from annotation.narratives.versions import original_judgments
from annotation.questions.question_type import Question
from annotation.questions.study import study_questions
from annotation.outcomes.resolution import UNRESOLVED_POLICIES  # noqa: F401  (named where --help reads them)
from annotation.narratives.rejudging import KIND_VERSIONS, PURPOSES, changed_judgments, kind_of_study, rejudge_summary
from formats.bundle import VALIDATES
from storage import narratives as narrative_store
from storage import projects, studies
from storage.errors import IFJudgeError
from storage.db import Database


class UnresolvedJudgments(IFJudgeError):
    """A build has unresolved judgments and no policy was chosen for them."""

    def __init__(self, message: str, rows: list[dict]):
        super().__init__(message)
        self.rows = rows


class IncompleteStudy(IFJudgeError):
    """A named study has planned assignments without a label."""


@dataclass
class QrelsBuild:
    """One derived qrels version: ``qrels`` (qid -> doc -> relevance), ``provenance`` (one row per
    judgment), ``unresolved`` (the provenance rows that were unresolved), ``studies`` (each named
    study with its completeness), ``counts`` and ``settings`` (rules, unresolved policy)."""

    version: str
    base_version: str
    qrels: dict[str, dict[str, int]]
    provenance: list[dict]
    studies: list[dict]
    settings: dict
    unresolved: list[dict] = field(default_factory=list)
    # instance validation only: instance id -> {"keep", "why", "open", "outcomes": {question: Decision}, "gold"}
    instances: dict[str, dict] = field(default_factory=dict)

    @property
    def counts(self) -> dict:
        by = Counter(p["provenance"] for p in self.provenance)
        return {
            "judgments": sum(len(d) for d in self.qrels.values()), "queries": len(self.qrels),
            "left_out": sum(p["relevance"] is None for p in self.provenance),
            "changed": sum(p["relevance"] is not None and p["published"] is not None and p["relevance"] != p["published"]
                           for p in self.provenance),
            "unresolved": len(self.unresolved), **{f"provenance_{k}": v for k, v in sorted(by.items())},
        }


def study_completeness(db: Database, study_id: int, *, study: dict | None = None) -> dict:
    """``{"id", "name", "questions", "labelled", "planned", "complete"}``: ``planned`` = the study's
    assignments (item x annotator), ``labelled`` = those with a current label (``study``: its row,
    when the caller has read it).

    Examples
    --------
    >>> from annotation.demo import load_demo
    >>> from storage.db import connect
    >>> db = connect(":memory:"); _ = load_demo(db)  # 8 screens x 3 questions x 3 annotators, unlabelled
    >>> study_completeness(db, 1)
    {'id': 1, 'name': 'demo: InstructIR validation', 'questions': ['validity', 'naturalness', 'best_passage'], 'labelled': 0, 'planned': 72, 'complete': False}
    """
    s = study or studies.get_study(db, study_id)
    n, planned = studies.labelled_assignments(db, study_id)
    return {"id": s["id"], "name": s["name"], "questions": s["questions"], "labelled": n, "planned": planned,
            "complete": n == planned}


#: the kind of study whose outcomes a qrels build reads, by the build a question declares
#: (``Question.qrels_build``), in the order a study of mixed questions is classed
STUDY_KINDS = (("validated", "instance"), ("condition", "condition"), ("rejudged", "relevance"))


def _study_kind(study: dict) -> str | None:
    """``instance``, ``condition`` or ``relevance``: the build the study's questions feed
    (None: none, e.g. INSTFOL)."""
    builds = {q.qrels_build for q in study_questions(study).values()}
    return next((kind for build, kind in STUDY_KINDS if build in builds), None)


@dataclass
class BuildInputs:
    """What the builds of one request read, once (as ``_Inputs`` of :mod:`evaluation.runner`): the
    project's row, the named studies' rows and their completeness (``infos``, checked: each
    belongs to the project, each is finished unless allowed) and each qrels version of the
    project, read when a build first asks for it. An export reads them once and passes them down
    to the builds, its manifest and its report."""

    db: Database
    project: dict
    studies: dict[int, dict]
    infos: list[dict]
    _qrels: dict[str, dict] = field(default_factory=dict)
    _pooled: dict[tuple, dict] = field(default_factory=dict)

    @classmethod
    def read(cls, db: Database, project: dict, study_ids: list[int], allow_incomplete: bool) -> "BuildInputs":
        """The inputs of builds from ``study_ids`` of ``project`` (its row, :func:`storage.projects.get_project`)."""
        if not study_ids:
            raise IFJudgeError("name the study (or studies) the validated qrels are built from: --study ID")
        rows = {sid: studies.get_study(db, sid) for sid in dict.fromkeys(study_ids)}
        infos = []
        for sid, s in rows.items():
            if s["project_id"] != project["id"]:
                raise IFJudgeError(f"study {sid} ({s['name']}) belongs to another project")
            n, planned = studies.labelled_assignments(db, sid)
            infos.append({"id": s["id"], "name": s["name"], "questions": s["questions"], "labelled": n,
                          "planned": planned, "complete": n == planned, "kind": _study_kind(s)})
        incomplete = [i for i in infos if not i["complete"]]
        if incomplete and not allow_incomplete:
            what = "; ".join(f"study {i['id']} ({i['name']}) has {i['labelled']} of {i['planned']} planned labels"
                             for i in incomplete)
            raise IncompleteStudy(f"{what}: confirm that you export from an unfinished study (--allow-incomplete)")
        return cls(db, project, rows, infos)

    def only(self, kind: str) -> "BuildInputs":
        """The same inputs restricted to the named studies of one kind (their qrels read once for all)."""
        infos = [i for i in self.infos if i["kind"] == kind]
        return BuildInputs(self.db, self.project, {i["id"]: self.studies[i["id"]] for i in infos}, infos, self._qrels)

    def qrels(self, version: str) -> dict[str, dict[str, int]]:
        """The project's qrels ``version`` (read once; read it, do not change it)."""
        if version not in self._qrels:
            self._qrels[version] = projects.qrels(self.db, self.project["id"], version)
        return self._qrels[version]

    def pooled(self, questions: tuple[str, ...]) -> dict[tuple, dict]:
        """:func:`pooled_decisions` of the named studies' items of ``questions`` (computed once)."""
        if questions not in self._pooled:
            self._pooled[questions] = pooled_decisions(self.db, [i["id"] for i in self.infos], questions)
        return self._pooled[questions]

    def questions(self) -> dict[str, Question]:
        """Question id -> declaration, over the named studies (the first study that asks it)."""
        out: dict[str, Question] = {}
        for i in self.infos:
            for qid, q in study_questions(self.studies[i["id"]]).items():
                out.setdefault(qid, q)
        return out


def pooled_decisions(db: Database, study_ids: list[int], questions: tuple[str, ...]) -> dict[tuple, dict]:
    """(instance id, question, doc id or None, mode or None) -> {"decision": Decision, "studies",
    "gold", "payload"} with the labels of every named study pooled and the newest adjudication.
    ``payload`` (the item's, parsed) is shared by the items with the same payload text: read it, do
    not change it."""
    out: dict[tuple, dict] = {}
    adj_newest: dict[tuple, dict] = {}
    for sid in study_ids:
        labels = _values_by_item(db, sid)
        adj = studies.adjudications(db, sid)
        for item_id, inst, q, doc, cap, payload in studies.item_rows_of_questions(db, sid, questions):
            key = (inst, q, doc, payload.get("mode"))
            slot = out.get(key)
            if slot is None:
                slot = out[key] = {"labels": list(labels.get(item_id, ())), "studies": [sid], "gold": payload.get("gold"),
                                   "payload": payload, "planned": cap}  # annotators planned over the pooled studies
            else:
                slot["labels"] += labels.get(item_id, ())
                slot["planned"] += cap
                slot["studies"].append(sid)
            if adj:
                a = adj.get(item_id)
                if a is not None and (key not in adj_newest or a["id"] > adj_newest[key]["id"]):
                    adj_newest[key] = a
    # decide() is a pure function of these: 7,917 patterns for the 33,336 items of the 100k InstructIR study
    decisions: dict[tuple, majority.Decision] = {}
    for key, slot in out.items():
        a = adj_newest.get(key)
        pattern = (tuple(slot["labels"]), a["value"] if a else None, slot["planned"])
        d = decisions.get(pattern)
        if d is None:
            d = decisions[pattern] = majority.decide(slot["labels"], adjudication=pattern[1], overlap=pattern[2])
        slot["decision"] = d
    return out


def _values_by_item(db: Database, study_id: int) -> dict[int, list[str]]:
    """item id -> the values of its current labels, by annotator name (the labels come by item)."""
    items, values = studies.current_label_values(db, study_id)
    if not items:
        return {}
    ids = np.asarray(items, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]]).tolist()
    ends = starts[1:] + [len(items)]
    return {items[a]: values[a:b] for a, b in zip(starts, ends)}


def _check_policy(unresolved: str | None, *, documents: bool) -> None:
    allowed = UNRESOLVED_POLICIES if documents else ("keep-published", "drop")
    if unresolved is not None and unresolved not in allowed:
        raise IFJudgeError(f"unresolved judgments: got {unresolved!r}; accepted here: {', '.join(allowed)}"
                           + ("" if documents else " (relevant / not-relevant apply to document judgments)"))


def _block(version: str, rows: list[dict], unresolved: str | None) -> None:
    if rows and unresolved is None:
        shown = ", ".join(f"{r['qid']}/{r['doc_id']} ({r['reason']})" for r in rows[:5])
        more = f" and {len(rows) - 5} more" if len(rows) > 5 else ""
        raise UnresolvedJudgments(
            f"{len(rows)} unresolved judgment(s) for {version}: {shown}{more}; choose how to treat them: "
            f"--unresolved {'|'.join(UNRESOLVED_POLICIES)}", rows)


# ------------------------------------------------------------------------------ instance validation


def build_validated(
    db: Database, project: dict, study_ids: list[int], *, rules: ValidationRules | None = None,
    unresolved: str | None = None, allow_incomplete: bool = False, inputs: BuildInputs | None = None,
) -> QrelsBuild:
    """``validated``: the ``original`` qrels of ``project`` (its row) without the instances the
    named studies rejected.

    Each question's outcome does to the qrels what it declares (``Question.qrels``): an answer
    that drops its instance (validity's No with ``drop_invalid``, naturalness's No or a score below
    ``likert_threshold`` with ``drop_unnatural``, a best passage other than the target with
    ``drop_best_passage_mismatch``, a lead's ``drop instance``), IFIR's passage-match rule, a lead's
    per-passage ``relevant`` / ``not relevant``. An instance is unresolved when a question that
    can drop it has no majority and no other resolved outcome already drops it. Provenance of each
    judgment of an instance: ``adjudicated`` if a deciding outcome was adjudicated, else
    ``unanimous`` if all were, else ``majority``; ``not checked`` for instances outside the studies.
    """
    rules = rules or ValidationRules()
    _check_policy(unresolved, documents=False)
    inputs = inputs or BuildInputs.read(db, project, study_ids, allow_incomplete)
    declared = {q.id: q for q in inputs.questions().values() if q.qrels_build == "validated"}
    pooled = inputs.pooled(tuple(declared))
    passages = {(inst, doc): slot for (inst, q, doc, _m), slot in pooled.items()
                if declared[q].qrels == "match-score" and doc}
    answered = {(inst, doc, q): slot for (inst, q, doc, _m), slot in pooled.items()
                if doc and declared[q].changes_passages}
    per_instance = _instance_outcomes(pooled, rules, declared)
    original = inputs.qrels("original")
    judged = set(passages) | {(inst, doc) for inst, doc, _q in answered}
    qrels, prov, open_rows = _instance_judgments(original, per_instance, judged, rules, unresolved, declared)
    pm_counts = _apply_passage_rule(qrels, prov, open_rows, passages, original, rules, unresolved)
    answer_counts = _apply_answer_rule(qrels, prov, open_rows, answered, original, declared, unresolved)
    _block("validated", open_rows, unresolved)
    for d in per_instance.values():
        d["keep"] = not d["why"] and not (d["open"] and unresolved == "drop")
    settings = {"rules": dict(rules.__dict__), "unresolved": unresolved}
    if passages:
        settings["passage_match"] = {"rule": rules.passage_rule(), "counts": pm_counts}
    if answered:
        settings["own_questions"] = answer_counts
    return QrelsBuild("validated", "original", qrels, prov, inputs.infos, settings, open_rows, per_instance)


def _used_questions(rules: ValidationRules, declared: dict[str, Question]) -> set[str]:
    """The questions whose outcome can drop an instance under ``rules``."""
    return {qid for qid, q in declared.items() if q.can_drop(rules)}


def _instance_outcomes(pooled: dict[tuple, dict], rules: ValidationRules,
                       declared: dict[str, Question]) -> dict[str, dict]:
    """instance id -> ``{"why": [reasons to drop it], "open": [unresolved questions the rules use],
    "outcomes": {question: Decision}, "studies", "gold": {question: gold}}``."""
    used = _used_questions(rules, declared)
    per_instance: dict[str, dict] = {}
    for (inst, q, _doc, _mode), slot in pooled.items():
        d = per_instance.setdefault(inst, {"why": [], "open": [], "outcomes": {}, "studies": set(), "gold": {}})
        d["studies"].update(slot["studies"])
        dec = slot["decision"]
        d["outcomes"][q] = dec
        if slot["gold"]:
            d["gold"][q] = slot["gold"]
        if q not in used:
            continue
        if dec.value is None:
            d["open"].append(f"{q}: {dec.reason}")
            continue
        why = declared[q].drop_reason(dec.value, gold=slot["gold"], rules=rules)
        if why is not None:
            d["why"].append(why)
    return per_instance


def _instance_verdict(d: dict | None, rules: ValidationRules, unresolved: str | None, used: set[str]) -> tuple:
    """(keep, provenance, reason, label counts, studies) of one instance (None: not in the studies);
    ``used``: :func:`_used_questions` of ``rules``."""
    if d is None:
        keep = rules.keep_unsampled
        return keep, "not checked", "" if keep else "not checked by the named studies", {}, []
    decs = [d["outcomes"][q] for q in used if q in d["outcomes"]]
    counts = {q: dec.counts for q, dec in d["outcomes"].items()}
    if d["why"]:
        keep, reason = False, ", ".join(d["why"])
    elif d["open"]:
        keep, reason = unresolved != "drop", "; ".join(d["open"])
    else:
        keep, reason = True, ""
    if d["open"] and not d["why"]:
        provenance = "unresolved"
    elif any(x.provenance == "adjudicated" for x in decs):
        provenance = "adjudicated"
    elif decs and all(x.provenance == "unanimous" for x in decs):
        provenance = "unanimous"
    else:
        provenance = "majority"
    return keep, provenance, reason, counts, sorted(d["studies"])


def _instance_judgments(original: dict, per_instance: dict, passages: set, rules: ValidationRules,
                        unresolved: str | None, declared: dict[str, Question]) -> tuple[dict, list[dict], list[dict]]:
    """The ``original`` qrels of the instances kept, with one provenance row per judgment (the
    ``passages`` a passage rule judges are left to it) and the unresolved rows."""
    qrels, prov, open_rows = {}, [], []
    used = _used_questions(rules, declared)
    for qid, docs in sorted(original.items()):
        keep, provenance, reason, counts, sids = _instance_verdict(per_instance.get(qid), rules, unresolved, used)
        if keep:
            qrels[qid] = dict(docs)
        for doc, rel in sorted(docs.items()):
            row = {"qid": qid, "doc_id": doc, "published": rel, "relevance": rel if keep else None,
                   "provenance": provenance, "reason": reason, "label_counts": counts, "studies": sids}
            if keep and (qid, doc) in passages:
                continue  # judged by the passage-match rule below
            prov.append(row)
            if provenance == "unresolved":
                open_rows.append(row)
    return qrels, prov, open_rows


def _apply_passage_rule(qrels: dict, prov: list[dict], open_rows: list[dict], passages: dict, original: dict,
                        rules: ValidationRules, unresolved: str | None) -> dict:
    """IFIR's passage-match rule on the kept instances' passages (:func:`_passage_row`), in place;
    returns the counts of what it did."""
    pm_counts = {"gold_to_not_relevant": 0, "excluded_to_relevant": 0, "unchanged": 0, "undecided": 0}
    for (inst, doc), slot in sorted(passages.items()):
        if inst not in qrels:
            continue  # the instance is left out: its passages change nothing
        row = _passage_row(inst, doc, slot, original.get(inst, {}).get(doc), rules, unresolved, pm_counts)
        if row["relevance"] is None:
            qrels[inst].pop(doc, None)
        else:
            qrels[inst][doc] = row["relevance"]
        if row["published"] is not None or row["relevance"] is not None or row["provenance"] == "unresolved":
            prov.append(row)
        if row["provenance"] == "unresolved":
            open_rows.append(row)
    return pm_counts


def _passage_row(inst: str, doc: str, slot: dict, published: int | None, rules: ValidationRules,
                 unresolved: str | None, counts: dict) -> dict:
    """The provenance row of one ``passage_match`` passage under the rule of ``rules`` (IFIR, §3.4):
    a gold passage with match score <= ``match_gold_max`` -> 0, an excluded one with score >=
    ``match_excluded_min`` -> 1, else its published label; an undecided passage (fewer than two
    labels, no adjudication) keeps the published label (``keep-published``) or is left out (``drop``)."""
    kind = slot["payload"].get("kind")
    score, provenance, why = match_score(slot["labels"], slot["decision"])
    rel = published
    if score is None:
        counts["undecided"] += 1
        reason = f"{kind} passage: {why}"
        if unresolved == "drop":
            rel = None
    elif kind == "gold" and score <= rules.match_gold_max and (published or 0) > 0:
        counts["gold_to_not_relevant"] += 1
        rel, reason = 0, f"gold passage, match score {score:g} <= {rules.match_gold_max}: not relevant"
    elif kind == "excluded" and score >= rules.match_excluded_min and (published or 0) <= 0:
        counts["excluded_to_relevant"] += 1
        rel, reason = 1, f"excluded passage, match score {score:g} >= {rules.match_excluded_min}: relevant"
    else:
        counts["unchanged"] += 1
        reason = f"{kind} passage, match score {score:g}: unchanged"
    return {"qid": inst, "doc_id": doc, "published": published, "relevance": rel, "provenance": provenance,
            "reason": reason, "label_counts": dict(Counter(slot["labels"])), "studies": sorted(set(slot["studies"]))}


def _apply_answer_rule(qrels: dict, prov: list[dict], open_rows: list[dict], answered: dict, original: dict,
                       declared: dict[str, Question], unresolved: str | None) -> dict:
    """A lead's per-passage questions on the kept instances' passages, in place: each decided
    answer does what its question declares (``on_outcome``: ``relevant`` -> the published grade,
    or 1 when the passage was not relevant; ``not relevant`` -> 0; ``unchanged``); an undecided
    passage keeps its published label (``keep-published``) or is left out (``drop``). Returns,
    per question, how many passages each action touched."""
    counts: dict[str, dict[str, int]] = {}
    for (inst, doc, qid), slot in sorted(answered.items()):
        if inst not in qrels:
            continue  # the instance is left out: its passages change nothing
        c = counts.setdefault(qid, {"relevant": 0, "not relevant": 0, "unchanged": 0, "undecided": 0})
        published = original.get(inst, {}).get(doc)
        dec = slot["decision"]
        if dec.value is None:
            c["undecided"] += 1
            rel, reason = (None if unresolved == "drop" else published), f"{qid}: {dec.reason}"
        else:
            action = declared[qid].passage_action(dec.value)
            c[action] += 1
            rel = {"relevant": published if (published or 0) > 0 else 1, "not relevant": 0}.get(action, published)
            reason = f"{qid}: {dec.value} -> {action}"
        if rel is None:
            qrels[inst].pop(doc, None)
        else:
            qrels[inst][doc] = rel
        row = {"qid": inst, "doc_id": doc, "published": published, "relevance": rel,
               "provenance": dec.provenance, "reason": reason, "label_counts": dict(dec.counts),
               "studies": sorted(set(slot["studies"]))}
        prov.append(row)
        if dec.value is None:
            open_rows.append(row)
    return counts


# ------------------------------------------------------------------------------ document judgments


def _doc_build(version: str, base_version: str, base: dict, published: dict, judged: list[dict],
               infos: list[dict], unresolved: str | None, extra: dict | None = None) -> QrelsBuild:
    """Apply document judgments (``{"qid", "doc_id", "decision", "relevance" (if resolved),
    "studies"}``) to ``base`` (the qrels the re-judged queries start from); ``published`` gives
    the published label a ``keep-published`` unresolved judgment keeps."""
    judged_queries = {j["qid"] for j in judged}
    qrels = {q: dict(base.get(q, {})) for q in sorted(judged_queries)}
    prov, open_rows = [], []
    seen = set()
    for j in judged:
        dec = j["decision"]
        q, doc = j["qid"], j["doc_id"]
        pub = published.get(q, {}).get(doc, base.get(q, {}).get(doc))
        rel = j.get("relevance")
        reason = ""
        if dec.value is None:
            reason = dec.reason or ""
            rel = {"keep-published": pub, "drop": None, "relevant": pub if (pub or 0) > 0 else 1,
                   "not-relevant": 0, None: pub}[unresolved]
        if rel is None:
            qrels[q].pop(doc, None)
        else:
            qrels[q][doc] = int(rel)
        row = {"qid": q, "doc_id": doc, "published": pub, "relevance": rel, "provenance": dec.provenance,
               "reason": reason, "label_counts": dec.counts, "studies": j["studies"]}
        prov.append(row)
        seen.add((q, doc))
        if dec.value is None:
            open_rows.append(row)
    for q in qrels:
        for doc, rel in sorted(base.get(q, {}).items()):
            if (q, doc) not in seen:
                prov.append({"qid": q, "doc_id": doc, "published": published.get(q, {}).get(doc, rel), "relevance": rel,
                             "provenance": "not checked", "reason": "", "label_counts": {}, "studies": []})
    _block(version, open_rows, unresolved)
    return QrelsBuild(version, base_version, qrels, prov, infos, {"unresolved": unresolved, **(extra or {})}, open_rows)


def _rejudge_kinds(inputs: BuildInputs) -> dict[str, int]:
    """kind (``published`` / ``edit``) -> study id, for the re-judging studies among the inputs."""
    out = {}
    for i in inputs.infos:
        k = kind_of_study(inputs.studies[i["id"]])
        if k is not None:
            out[k] = i["id"]
    return out


def build_rejudged(db: Database, project: dict, study_ids: list[int], *, unresolved: str | None = None,
                   allow_incomplete: bool = False, inputs: BuildInputs | None = None,
                   kind: str | None = None) -> QrelsBuild:
    """The qrels of a FollowIR re-judging (:func:`annotation.narratives.rejudging.rejudge_summary`) in
    ``project`` (its row), by the kind of the named re-judging study (``kind`` picks one when both
    are named):

    - ``published`` (the published changed instruction re-judged, no edit) -> ``changed-validated``:
      for each re-judged query its published ``changed`` qrels with every re-judged document set to
      the human outcome; ``published`` of each judgment = its published changed label (0 when the
      query's changed qrels do not list it). It validates ``changed``.
    - ``edit`` (an expert's new narrative version) -> ``edited-validated``: each re-judged query's
      ``original`` qrels with the re-judged documents set to the outcome under the NEW narrative;
      a new instruction version, not a correction of ``changed`` (``published`` = the original
      label). ``settings["instructions"]`` names the version judged per query.

    Control documents never enter the qrels (FollowIR's changed documents are relevant -> not
    relevant, so a control judged relevant would become a p-MRR changed document); what they show
    is in ``settings["controls"]``: ``{"documents", "resolved", "judged_relevant"}``."""
    _check_policy(unresolved, documents=True)
    inputs = inputs or BuildInputs.read(db, project, study_ids, allow_incomplete)
    kinds = _rejudge_kinds(inputs)
    if kind is None:
        if len(kinds) > 1:
            raise IFJudgeError("the named studies re-judge both the published changed instruction and expert edits; "
                               "build one kind at a time")
        kind = next(iter(kinds), None)
    if kind not in kinds:
        raise IFJudgeError(f"none of the named studies is a re-judging study of {inputs.project['name']!r}"
                           + ("" if kind is None else f" of kind {kind!r}"))
    rid = kinds[kind]
    original, changed = inputs.qrels("original"), inputs.qrels("changed")
    summary = rejudge_summary(db, inputs.project, kind=kind, titles=False,  # the titles are not part of qrels
                              qrels={"original": original, "changed": changed})
    base, published, judged, key_of = {}, {}, [], {}
    for q in summary["queries"]:
        okey, ojudged = original_judgments(original, q["query_id"])
        ckey, cjudged = changed_judgments(changed, q["query_id"])
        if kind == "published" and ckey is not None:
            key, base[ckey] = ckey, dict(cjudged)
            published[key] = {**{d: 0 for d in ojudged}, **cjudged}
        else:
            key, base[okey] = okey, dict(ojudged)
            published[key] = dict(ojudged)
        key_of[q["query_id"]] = key
    controls = {"documents": 0, "resolved": 0, "judged_relevant": 0}
    decisions: dict[tuple, majority.Decision] = {}  # decide() is a pure function of these: a few patterns
    for d in summary["documents"]:
        if d["control"]:
            controls["documents"] += 1
            controls["resolved"] += d["changed"] is not None
            controls["judged_relevant"] += d["changed"] is not None and d["changed"] > 0
            continue
        pattern = (tuple(d["counts"].items()), d["adjudication"], d.get("planned"))
        dec = decisions.get(pattern)
        if dec is None:
            dec = decisions[pattern] = majority.decide(list(_labels_of(d)), adjudication=d["adjudication"],
                                                       overlap=d.get("planned"))
        judged.append({"qid": key_of[d["query_id"]], "doc_id": d["doc_id"], "decision": dec, "relevance": d["changed"],
                       "studies": [rid]})
    version = KIND_VERSIONS[kind]
    extra = {"scale": summary["scale"], "kind": kind, "controls": controls,
             "instructions": {q["query_id"]: q["version_id"] for q in summary["queries"]}}
    return _doc_build(version, "changed" if kind == "published" else "original", base, published, judged,
                      inputs.infos, unresolved, extra)


def store_validated_qrels(
    db: Database, study_id: int | list[int], rules: ValidationRules | None = None, *,
    unresolved: str | None = None, allow_incomplete: bool = False, created_by: str = "",
) -> int:
    """Build and store the ``validated`` qrels version from the named study (or studies), with its
    provenance (:func:`build_validated`); returns the rows written.
    Unresolved instances need an ``unresolved`` policy, an unfinished study ``allow_incomplete``."""
    ids = [study_id] if isinstance(study_id, int) else list(study_id)
    if not ids:
        raise ValueError("name at least one study")
    study = studies.get_study(db, ids[0])
    project = projects.get_project_by_id(db, study["project_id"])
    build = build_validated(db, project, ids, rules=rules, unresolved=unresolved, allow_incomplete=allow_incomplete)
    store_build(db, project, build, created_by=created_by)
    return build.counts["judgments"]


def store_changed_qrels(db: Database, project: dict, *, unresolved: str | None = None,
                        allow_incomplete: bool = False, created_by: str = "") -> dict:
    """Store qrels version ``changed-validated`` (never the published ``changed``) from the
    re-judging of the PUBLISHED changed instruction (:func:`build_rejudged`, kind ``published``):
    each re-judged query's published changed qrels with the resolved documents set to the human
    outcome, with provenance per judgment against the published label. Unresolved documents
    need ``unresolved`` (keep-published | drop | relevant | not-relevant); an unfinished round
    needs ``allow_incomplete``. Returns ``{"version", "queries", "rows", "build_id", "unresolved",
    "changed", "controls"}``."""
    return _store_rejudged(db, project, "published", unresolved=unresolved, allow_incomplete=allow_incomplete,
                           created_by=created_by)


def store_edited_qrels(db: Database, project: dict, *, unresolved: str | None = None,
                       allow_incomplete: bool = False, created_by: str = "") -> dict:
    """Store qrels version ``edited-validated`` from the re-judging of expert edits (a new
    instruction version, :func:`build_rejudged`, kind ``edit``); same arguments and result as
    :func:`store_changed_qrels`."""
    return _store_rejudged(db, project, "edit", unresolved=unresolved, allow_incomplete=allow_incomplete,
                           created_by=created_by)


def _store_rejudged(db: Database, project: dict, kind: str, *, unresolved: str | None, allow_incomplete: bool,
                    created_by: str) -> dict:
    proj = project
    sid = narrative_store.rejudge_study_id(db, proj["id"], PURPOSES[kind])
    if sid is None:
        raise IFJudgeError(f"project {proj['name']!r} has no re-judging of "
                           + ("the published changed instruction yet: start one first" if kind == "published"
                              else "expert edits yet: save a modified narrative first"))
    build = build_rejudged(db, proj, [sid], unresolved=unresolved, allow_incomplete=allow_incomplete, kind=kind)
    build_id = store_build(db, proj, build, created_by=created_by)
    return {"version": build.version, "queries": len(build.qrels), "rows": build.counts["judgments"],
            "build_id": build_id, "unresolved": len(build.unresolved), "changed": build.counts["changed"],
            "controls": build.settings["controls"]}


def _labels_of(doc_row: dict) -> list[str]:
    return [v for v, n in doc_row["counts"].items() for _ in range(n)]


def build_condition(db: Database, project: dict, study_ids: list[int], mode: str, *,
                    unresolved: str | None = None, allow_incomplete: bool = False,
                    inputs: BuildInputs | None = None) -> QrelsBuild:
    """``changed-validated`` / ``reversed-validated`` from InfoSearch ``condition`` items of ``mode``
    (``changed`` | ``reversed``): the published qrels of the mode with each checked document set
    to the human outcome (a positive answer, Yes -> its published grade if relevant, else 1; No -> 0)."""
    _check_policy(unresolved, documents=True)
    inputs = inputs or BuildInputs.read(db, project, study_ids, allow_incomplete)
    declared = {q.id: q for q in inputs.questions().values() if q.qrels == "condition-modes"}
    pooled = inputs.pooled(tuple(declared))
    published = inputs.qrels(mode)
    judged = []
    for (inst, _q, doc, m), slot in sorted(pooled.items(), key=lambda kv: (kv[0][0], kv[0][2] or "")):
        if m != mode:
            continue
        qid = slot["payload"].get("qid", inst)
        dec = slot["decision"]
        pub = published.get(qid, {}).get(doc)
        rel = None if dec.value is None else ((pub if (pub or 0) > 0 else 1) if declared[_q].is_positive(dec.value) else 0)
        judged.append({"qid": qid, "doc_id": doc, "decision": dec, "relevance": rel, "studies": sorted(set(slot["studies"]))})
    version = f"{mode}-validated"
    if not judged:
        raise IFJudgeError(f"the named studies have no condition item of mode {mode!r}")
    return _doc_build(version, VALIDATES[version], published, published, judged, inputs.infos, unresolved,
                      {"mode": mode})


# ------------------------------------------------------------------------------ all at once


def build_versions(
    db: Database, project: dict, study_ids: list[int], *, rules: ValidationRules | None = None,
    unresolved: str | None = None, allow_incomplete: bool = False, inputs: BuildInputs | None = None,
) -> dict[str, QrelsBuild]:
    """Every derived version the named studies of ``project`` (its row) can build: ``validated`` from instance studies,
    ``changed-validated`` from the re-judging of the published changed instruction or InfoSearch
    condition items (mode changed), ``edited-validated`` from the re-judging of expert edits,
    ``reversed-validated`` from condition items of mode reversed.

    Raises IncompleteStudy (a named study has unlabelled assignments, without ``allow_incomplete``)
    and UnresolvedJudgments (unresolved judgments without an ``unresolved`` policy). ``inputs``:
    the project, studies and qrels already read (:class:`BuildInputs`; then ``project``,
    ``study_ids`` and ``allow_incomplete`` are theirs)."""
    with paused_gc():  # hundreds of thousands of dicts and lists, no cycles (annotation.gc_pause)
        inputs = inputs or BuildInputs.read(db, project, list(study_ids), allow_incomplete)
        return _build_versions(db, inputs, rules=rules, unresolved=unresolved)


def _build_versions(db: Database, inputs: BuildInputs, *, rules: ValidationRules | None,
                    unresolved: str | None) -> dict[str, QrelsBuild]:
    out: dict[str, QrelsBuild] = {}
    inst = inputs.only("instance")
    if inst.infos:
        out["validated"] = build_validated(db, inputs.project, [], rules=rules, unresolved=unresolved, inputs=inst)
    rel = inputs.only("relevance")
    for kind in _rejudge_kinds(rel):
        b = build_rejudged(db, inputs.project, [], unresolved=unresolved, inputs=rel, kind=kind)
        out[b.version] = b
    cond = inputs.only("condition")
    if cond.infos:
        asked = tuple(q.id for q in cond.questions().values() if q.qrels == "condition-modes")
        modes = {slot["payload"].get("mode") for slot in cond.pooled(asked).values()}
        for mode in ("changed", "reversed"):
            if mode in modes:
                if f"{mode}-validated" in out:
                    raise IFJudgeError(f"{mode}-validated would be built twice (re-judging and condition studies); "
                                       "name one kind of study")
                out[f"{mode}-validated"] = build_condition(db, inputs.project, [], mode, unresolved=unresolved,
                                                           inputs=cond)
    none = [i for i in inputs.infos if i["kind"] is None]
    if none:
        raise IFJudgeError(f"study {none[0]['id']} asks no question a qrels version is built from")
    return out


def store_build(db: Database, project: dict, build: QrelsBuild, *, created_by: str = "") -> int:
    """Store a build (its qrels version, the studies, the provenance per judgment) in ``project``
    (its row, :func:`storage.projects.get_project`); returns the build id."""
    return projects.store_qrels_build(
        db, project["id"], build.version, build.qrels, base_version=build.base_version, studies=build.studies,
        settings=build.settings, counts=build.counts, provenance=build.provenance, created_by=created_by,
    )


def store_versions(
    db: Database, project: dict, study_ids: list[int], *, rules: ValidationRules | None = None,
    unresolved: str | None = None, allow_incomplete: bool = False, created_by: str = "",
) -> dict[str, tuple[int, QrelsBuild]]:
    """Build every derived version the named studies can build (:func:`build_versions`) and store
    each (:func:`store_build`): the one sequence behind ``ifjudge validate`` and the Export page's
    "Store the validated qrels" button. Returns version -> (build id, build), in build order.

    Nothing is stored unless every version builds: IncompleteStudy and UnresolvedJudgments are
    raised as by :func:`build_versions` before the first store."""
    with paused_gc(), studies.shared_reads(db):  # the builds read each study's items and labels once
        inputs = BuildInputs.read(db, project, list(study_ids), allow_incomplete)
        builds = build_versions(db, project, study_ids, rules=rules, unresolved=unresolved, inputs=inputs)
    with paused_gc():
        return {v: (store_build(db, inputs.project, b, created_by=created_by), b) for v, b in builds.items()}


def describe_studies(infos: list[dict]) -> str:
    """``study 1 (demo): 72/72 labels; study 2 (second): 0/24 labels``."""
    return "; ".join(f"study {i['id']} ({i['name']}): {i['labelled']}/{i['planned']} labels" for i in infos)
