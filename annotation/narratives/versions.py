"""Narrative versions (FollowIR, Weller et al., 2024, §3): an expert makes a query's narrative more
specific or adds a negation; every save is a new version and starts a re-judging round.

FollowIR asks expert annotators to make a TREC narrative *more specific* (additional aspects of
relevance) or to add a *negation*, so that the documents relevant under the new narrative are a
subset of those relevant under the original one: only the originally relevant documents need
re-judging, and the experts aimed at about half of them becoming non-relevant.

- :func:`narrative_state` — a query's versions, the original, the newest and its relevant documents;
- :func:`save_narrative` — every save is a new version (author, time, parent) and creates a
  re-judging round: one ``relevance`` item per document relevant under the ORIGINAL qrels (plus an
  optional seeded sample of originally non-relevant documents as controls), assigned with the
  study's overlap; an unchanged text creates nothing. Its outcome is a NEW instruction version:
  qrels ``edited-validated``, never a correction of the published ``changed`` qrels;
- :func:`rejudge_published` — a lead starts the re-judging of the PUBLISHED changed instruction
  (no edit): the documents relevant under the original qrels (plus optional controls) judged under
  ``instruction_changed`` as imported; its outcome is qrels ``changed-validated``, compared with the
  published ``changed`` qrels judgment by judgment.

What the re-judging says is :mod:`annotation.narratives.rejudging`; the word diff :mod:`annotation.narratives.diff`;
the FollowIR export :mod:`exports.followir`. No Streamlit, no SQL.
"""
from __future__ import annotations

import random
from dataclasses import asdict

from annotation.questions.study import GUIDELINES
from annotation.studies import StudySettings, balanced_plan
from annotation.narratives.diff import diff_counts, same_words, tokenize, word_diff
from storage import narratives as store
from storage import projects, studies, users
from storage.errors import IFJudgeError, NotFound, PermissionDenied
from storage.db import Database

EDITOR_ROLES = ("expert", "lead")
# the two kinds of re-judging round: of the published changed instruction (rejudge_published) and of
# an expert's edit (save_narrative); annotation.narratives.rejudging says what each one finds
KINDS = ("published", "edit")
GUIDANCE = (
    "FollowIR (Weller et al., 2024, §3): make the narrative more specific by adding aspects a document "
    "must have to be relevant, or add a negation (documents about ... are not relevant). Documents relevant "
    "under the new narrative should be a subset of those relevant under the original one, so only those are "
    "re-judged. Aim to make about half of the originally relevant documents non-relevant."
)




def root_version(versions: list[dict]) -> dict:
    """The original narrative: the first version of variant ``og`` (else the first version)."""
    return next((v for v in versions if v["variant"] == "og"), versions[0])


def published_changed_version(versions: list[dict]) -> dict | None:
    """The published changed instruction: the first version of variant ``changed`` written by the
    import (an expert's save is author-named), or None when the release has no changed narrative."""
    return next((v for v in versions if v["variant"] == "changed" and v["author"] == "import"), None)


def narrative_state(db: Database, project: dict, query_id: str) -> dict:
    """A query's narrative history in ``project`` (its row, :func:`storage.projects.get_project`): ``{"project_id", "query_id", "query", "versions" (oldest
    first, each with ``added``/``removed`` token counts against the original), "original", "newest",
    "relevant" (doc ids relevant under the original qrels), "documents" (their title and text)}``."""
    vs = store.versions(db, project["id"], query_id)
    if not vs:
        known = store.narrative_queries(db, project["id"])
        raise NotFound(f"query {query_id!r} of project {project['name']!r} has no narrative; queries with one: "
                       f"{', '.join(known[:20]) or 'none'}")
    root = root_version(vs)
    for v in vs:
        v.update(diff_counts(word_diff(root["text"], v["text"])))
    original = projects.qrels(db, project["id"], "original")
    _, judged = original_judgments(original, query_id)
    relevant = sorted(d for d, r in judged.items() if r > 0)
    docs = projects.documents_by_id(db, project["id"], relevant)
    return {
        "project_id": project["id"], "query_id": query_id, "query": projects.queries(db, project["id"]).get(query_id, ""),
        "versions": vs, "original": root, "newest": vs[-1], "relevant": relevant,
        "documents": {d: docs[d] for d in relevant if d in docs},
    }


def original_judgments(original: dict[str, dict[str, int]], query_id: str) -> tuple[str, dict[str, int]]:
    """(qrels key, judgments) of a query in the original qrels: keyed by the query id, or by its
    ``og`` instance id (the FollowIR importer accepts both)."""
    for key in (query_id, f"{query_id}-og"):
        if key in original:
            return key, original[key]
    return query_id, {}


def _instance_for(db: Database, project_id: int, query_id: str) -> str:
    insts = {i["instance_id"]: i for i in projects.instances(db, project_id) if i["query_id"] == query_id}
    for candidate in (f"{query_id}-changed", f"{query_id}-og", query_id):
        if candidate in insts:
            return candidate
    if insts:
        return sorted(insts)[0]
    raise IFJudgeError(f"query {query_id!r} has no instance to attach re-judging items to")


def _check_author(db: Database, author: str) -> None:
    u = users.get_user(db, author)
    if u is None:
        raise NotFound(f"no user named {author!r}")
    if u["role"] not in EDITOR_ROLES:
        raise PermissionDenied(f"{author} is a {u['role']}; only an expert or a lead edits narratives")


def save_narrative(
    db: Database, *, project: dict, query_id: str, text: str, author: str, base_version_id: int | None = None,
    expected_newest_id: int | None = None, annotators: list[str] | None = None, overlap: int | None = None,
    controls: int = 0, relevance: str | None = None, seed: int | None = None,
) -> dict:
    """Save a modified narrative of ``project`` (its row, :func:`storage.projects.get_project`) as a
    new version and create its re-judging round.

    The new version's parent is ``base_version_id`` (default: the newest version). Nothing is
    created when ``text`` has the same words as the base, the newest or the original version
    (``{"created": False, "reason"}``). Otherwise, in one transaction: the version; the project's
    re-judging study if it is the first save (questions ``["relevance"]``, the relevance scale,
    overlap, seed and the relevance guidelines in its settings); one ``relevance`` item per
    document relevant (> 0) under the ORIGINAL qrels of the query, plus ``controls`` originally
    non-relevant documents sampled with the seed (payload ``{"control": true}``); each screen
    (key ``<instance>|<doc>|v<version>``) assigned to ``overlap`` annotators with
    :func:`annotation.studies.balanced_plan`, in a seeded order that mixes controls in.

    ``annotators`` default to the re-judging study's annotators; new names are added to it.
    ``overlap``, ``relevance`` (``binary`` | ``graded``) and ``seed`` default to the study's
    settings (first save: 3, binary, 0). ``expected_newest_id`` (the page passes the version it
    was opened on) refuses a save built on an outdated version with ``StaleEdit``.

    Saving supersedes the query's earlier rounds: their unjudged assignments leave the queues.

    Returns ``{"created", "version_id", "parent_id", "study_id", "study_created", "withdrawn",
    "items", "documents", "controls", "assignments", "per_annotator", "added", "removed", "notes"}``.

    Examples
    --------
    >>> from annotation.demo import load_demo
    >>> from storage.db import connect
    >>> db = connect(":memory:"); _ = load_demo(db)  # the demo: FollowIR query f-robot, 5 relevant documents
    >>> demo = projects.get_project(db, "demo")
    >>> newest = narrative_state(db, demo, "f-robot")["newest"]["text"]
    >>> r = save_narrative(db, project=demo, query_id="f-robot", author="expert",
    ...                    text=newest + " Documents about knee surgery are not relevant.",
    ...                    annotators=["ann1", "ann2", "ann3"])
    >>> r["created"], r["items"], r["assignments"], r["per_annotator"]
    (True, 5, 15, {'ann1': 5, 'ann2': 5, 'ann3': 5})
    >>> save_narrative(db, project=demo, query_id="f-robot", author="expert", text=newest + "  Documents  about "
    ...                "knee surgery are not relevant.")["reason"]  # same words: nothing saved
    'the text has the same words as the version it was started from (v3); nothing was saved'
    """
    _check_author(db, author)
    state = narrative_state(db, project, query_id)
    pid, newest = state["project_id"], state["newest"]
    base = _base_version(state, query_id, base_version_id)
    text = (text or "").replace("\r\n", "\n").strip()
    unchanged = _unchanged(text, base, state)
    if unchanged:
        return {"created": False, "reason": unchanged}
    study_id = store.rejudge_study_id(db, pid)
    existing = studies.get_study(db, study_id) if study_id is not None else None
    settings = _round_settings(existing, overlap=overlap, relevance=relevance, seed=seed, controls=controls)
    people = _people(db, annotators if annotators else (existing["annotators"] if existing else []))
    judged = _judged_documents(db, pid, [query_id])
    rnd = _round_items(db, pid, query_id, judged["existing"], controls=controls, settings=settings,
                       salt=len(state["versions"]), original=judged["original"])
    items = rnd["items"]
    if items and not people:
        raise IFJudgeError("choose the annotators who re-judge (none given and no re-judging study yet)")
    plan = balanced_plan([it["screen"] for it in items], [p["id"] for p in people], settings.overlap,
                         seed=settings.seed, loads=store.rejudge_screen_loads(db, pid)) if items else {}
    result = store.insert_version(
        db, project_id=pid, query_id=query_id, text=text, author=author, parent_id=base["id"],
        expected_newest_id=expected_newest_id if expected_newest_id is not None else newest["id"],
        study=_study_definition(f"{project['name']}: re-judging", settings, controls, author, people),
        items=items, plan=plan,
    )
    return {
        "created": True, "version_id": result["version_id"], "parent_id": base["id"], "study_id": result["study_id"],
        "study_created": result["study_created"], "withdrawn": result["withdrawn"], "items": len(items),
        "documents": len(rnd["relevant"]), "controls": len(rnd["controls"]),
        "assignments": sum(len(v) for v in plan.values()), "per_annotator": _per_annotator(people, plan) if items else {},
        **diff_counts(word_diff(state["original"]["text"], text)), "notes": rnd["notes"],
    }


def _unchanged(text: str, base: dict, state: dict) -> str | None:
    """Why an edit saves nothing (an empty text is refused), or None: the same words as the
    version it was started from, the newest or the original version."""
    if not tokenize(text):
        raise IFJudgeError("the narrative is empty; write the modified narrative first")
    for what, v in (("the version it was started from", base), ("the newest version", state["newest"]),
                    ("the original narrative", state["original"])):
        if same_words(text, v["text"]):
            return f"the text has the same words as {what} (v{v['id']}); nothing was saved"
    return None


def _base_version(state: dict, query_id: str, base_version_id: int | None) -> dict:
    """The version an edit starts from: ``base_version_id``, default the newest."""
    by_id = {v["id"]: v for v in state["versions"]}
    base = by_id.get(base_version_id if base_version_id is not None else state["newest"]["id"])
    if base is None:
        raise NotFound(f"version {base_version_id} is not a narrative version of query {query_id!r}")
    return base


def _round_settings(existing: dict | None, *, overlap: int | None, relevance: str | None, seed: int | None,
                    controls: int) -> StudySettings:
    """The settings of new rounds in a re-judging study (``existing``, or None before its first
    round): ``overlap``, ``relevance`` and ``seed`` default to the study's (first time: 3, binary,
    0); the relevance scale cannot change once the study exists; ``controls`` is 0 or more."""
    old = existing["settings"] if existing else {}
    if existing and relevance and relevance != old.get("relevance", "binary"):
        raise IFJudgeError(f"the re-judging study {existing['id']} uses the {old.get('relevance', 'binary')} relevance "
                           f"scale; got {relevance!r}")
    settings = StudySettings(
        overlap=int(overlap if overlap is not None else old.get("overlap", 3)),
        relevance=relevance or old.get("relevance", "binary"),
        seed=int(seed if seed is not None else old.get("seed", 0)),
        claim_timeout_s=float(old.get("claim_timeout_s", 1800.0)),
    )
    settings.validate()
    if controls < 0:
        raise IFJudgeError(f"controls must be 0 or more, got {controls}")
    return settings


def _people(db: Database, names: list[str]) -> list[dict]:
    """The users named (each once)."""
    people = users.users_by_name(db, names)
    if len({p["id"] for p in people}) != len(people):
        raise IFJudgeError("an annotator is listed twice")
    return people


def _study_definition(name: str, settings: StudySettings, controls: int, author: str, people: list[dict]) -> dict:
    """What storage needs to create the re-judging study on its first round (or add annotators to it)."""
    stored = asdict(settings)
    stored["controls"] = controls
    stored["guidelines"] = {"relevance": GUIDELINES["relevance"]}
    return {"name": name, "questions": ["relevance"], "settings": stored, "created_by": author,
            "annotator_ids": [p["id"] for p in people]}


def _per_annotator(people: list[dict], plan: dict[str, list[int]]) -> dict[str, int]:
    return {p["name"]: sum(p["id"] in v for v in plan.values()) for p in people}


def _judged_documents(db: Database, pid: int, query_ids: list[str]) -> dict:
    """The project's original qrels and which of the documents they judge for ``query_ids`` are
    in the corpus (a set query: the corpus text is not read)."""
    original = projects.qrels(db, pid, "original")
    ids = [d for q in query_ids for d in original_judgments(original, q)[1]]
    return {"original": original, "existing": projects.existing_doc_ids(db, pid, ids)}


def _round_items(db: Database, pid: int, query_id: str, corpus, *, controls: int,
                 settings: StudySettings, salt, original: dict | None = None) -> dict:
    """One round's ``relevance`` items: every document relevant (> 0) under the ORIGINAL qrels of
    the query, plus ``controls`` originally non-relevant documents sampled with the seed (payload
    ``{"control": true}``), in a seeded order that mixes controls in; screen keys
    ``<instance>|<doc>|v{version}``. ``corpus``: the ids of the judged documents that are in the
    corpus (any container); ``original``: the project's original qrels (read when not given).
    Returns ``{"items", "relevant", "controls", "notes"}``."""
    original = original if original is not None else projects.qrels(db, pid, "original")
    _, judged = original_judgments(original, query_id)
    notes = []
    relevant = sorted(d for d, r in judged.items() if r > 0)
    missing = [d for d in relevant if d not in corpus]
    if missing:
        notes.append(f"{query_id}: {len(missing)} relevant document(s) not in the corpus, not re-judged: "
                     f"{', '.join(missing[:5])}")
    relevant = [d for d in relevant if d in corpus]
    negatives = sorted(d for d, r in judged.items() if r <= 0 and d in corpus)
    rng = random.Random(f"{settings.seed}:{query_id}:{salt}")
    chosen_controls = sorted(rng.sample(negatives, min(controls, len(negatives))))
    if controls > len(negatives):
        notes.append(f"{query_id}: only {len(negatives)} originally non-relevant document(s) available as controls")
    docs = [(d, False) for d in relevant] + [(d, True) for d in chosen_controls]
    rng.shuffle(docs)
    items = []
    if docs:
        instance_id = _instance_for(db, pid, query_id)
        for position, (d, control) in enumerate(docs):
            items.append({
                "screen": f"{instance_id}|{d}|v{{version}}", "position": position, "instance_id": instance_id,
                "question": "relevance", "doc_id": d, "payload": {"control": control}, "cap": settings.overlap,
            })
    else:
        notes.append(f"{query_id}: no document is relevant under the original qrels: nothing to re-judge")
    return {"items": items, "relevant": relevant, "controls": chosen_controls, "notes": notes}


def rejudge_published(
    db: Database, *, project: dict, author: str, annotators: list[str], query_ids: list[str] | None = None,
    overlap: int | None = None, controls: int = 0, relevance: str | None = None, seed: int | None = None,
) -> dict:
    """Start the re-judging of the PUBLISHED changed instruction (FollowIR §3) of ``project`` (its
    row, :func:`storage.projects.get_project`), with no edit.

    For each query (default: every query with a published changed narrative that has no round
    yet; named queries that already have one are refused), one round tied to the imported
    ``changed`` version (:func:`published_changed_version`; no version is added): one ``relevance``
    item per document relevant under the ORIGINAL qrels, plus ``controls`` originally
    non-relevant documents (seeded), judged under ``instruction_changed`` as published. All
    screens are assigned to ``overlap`` of ``annotators`` at once with
    :func:`annotation.studies.balanced_plan`, in one transaction, in the project's study of purpose
    ``rejudge-published``. ``overlap``, ``relevance`` (``binary`` | ``graded``) and ``seed`` default
    to the study's settings (first time: 3, binary, 0); the scale cannot change once the study
    exists. Only a lead starts it.

    Its outcome is qrels ``changed-validated`` (:func:`annotation.outcomes.qrels_builds.build_rejudged`).

    Returns ``{"study_id", "study_created", "queries", "items", "documents", "controls",
    "assignments", "per_annotator", "notes"}``.

    Examples
    --------
    >>> from annotation.demo import load_demo
    >>> from storage.db import connect
    >>> db = connect(":memory:"); _ = load_demo(db)  # FollowIR query f-robot: 5 relevant, 1 not
    >>> r = rejudge_published(db, project=projects.get_project(db, "demo"), author="lead",
    ...                       annotators=["ann1", "ann2", "ann3"], controls=1)
    >>> r["queries"], r["documents"], r["controls"], r["assignments"]
    (['f-robot'], 5, 1, 18)
    """
    _check_lead(db, author)
    pid = project["id"]
    sid = store.rejudge_study_id(db, pid, store.PUBLISHED_PURPOSE)
    existing = studies.get_study(db, sid) if sid is not None else None
    settings = _round_settings(existing, overlap=overlap, relevance=relevance, seed=seed, controls=controls)
    if not annotators:
        raise IFJudgeError("choose the annotators who re-judge the published changed instruction")
    people = _people(db, annotators)
    wanted = _wanted_queries(db, pid, project["name"], query_ids)
    built = _published_rounds(db, pid, sid, wanted, named=bool(query_ids), controls=controls, settings=settings)
    if not built["rounds"]:
        raise IFJudgeError("nothing to re-judge: no query has a published changed instruction without a round"
                           + (f" ({'; '.join(built['notes'])})" if built["notes"] else ""))
    plan = balanced_plan([it["screen"] for it in built["items"]], [p["id"] for p in people], settings.overlap,
                         seed=settings.seed, loads=store.rejudge_screen_loads(db, pid, store.PUBLISHED_PURPOSE))
    result = store.insert_published_rounds(
        db, project_id=pid, rounds=built["rounds"], plan=plan,
        study=_study_definition(f"{project['name']}: re-judging of the published changed instruction", settings, controls,
                                author, people),
    )
    return {"study_id": result["study_id"], "study_created": result["study_created"], "queries": built["started"],
            "items": len(built["items"]), "documents": built["documents"], "controls": built["controls"],
            "assignments": sum(len(v) for v in plan.values()), "per_annotator": _per_annotator(people, plan),
            "notes": built["notes"]}


def _check_lead(db: Database, author: str) -> None:
    u = users.get_user(db, author)
    if u is None:
        raise NotFound(f"no user named {author!r}")
    if u["role"] != "lead":
        raise PermissionDenied(f"{author} is a {u['role']}; only a lead starts the re-judging of the published instruction")


def _wanted_queries(db: Database, pid: int, project: str, query_ids: list[str] | None) -> list[str]:
    """The named queries (each once; each must have a narrative), default every query with one."""
    known = store.narrative_queries(db, pid)
    wanted = list(dict.fromkeys(query_ids)) if query_ids else known
    unknown = [q for q in wanted if q not in known]
    if unknown:
        raise NotFound(f"query {unknown[0]!r} of project {project!r} has no narrative; queries with one: "
                       f"{', '.join(known[:20]) or 'none'}")
    return wanted


def _published_rounds(db: Database, pid: int, sid: int | None, wanted: list[str], *, named: bool, controls: int,
                      settings: StudySettings) -> dict:
    """One round per query of ``wanted`` whose published changed instruction has none yet in study
    ``sid`` (``named`` queries without one, or with a round already, are refused), its screens named
    apart by version. Returns ``{"rounds", "items", "started", "documents", "controls", "notes"}``."""
    done = set(store.round_version_ids(db, sid)) if sid is not None else set()
    judged = _judged_documents(db, pid, wanted)
    out = {"rounds": [], "items": [], "started": [], "documents": 0, "controls": 0, "notes": []}
    for q in wanted:
        pub = published_changed_version(store.versions(db, pid, q))
        if pub is None:
            if named:
                raise IFJudgeError(f"query {q!r} has no published changed instruction (no imported 'changed' narrative)")
            continue
        if pub["id"] in done:
            if named:
                raise IFJudgeError(f"query {q!r}: the published changed instruction (v{pub['id']}) is already being "
                                   f"re-judged in study {sid}; nothing was created")
            continue
        rnd = _round_items(db, pid, q, judged["existing"], controls=controls, settings=settings, salt="published",
                           original=judged["original"])
        out["notes"] += rnd["notes"]
        if not rnd["items"]:
            continue
        # each round's screens are distinct (its own instance and version): name them apart for the plan
        items = [{**it, "screen": it["screen"].replace("{version}", str(pub["id"])), "position": i}
                 for i, it in enumerate(rnd["items"], start=len(out["items"]))]
        out["rounds"].append({"version_id": pub["id"], "items": items})
        out["items"] += items
        out["documents"] += len(rnd["relevant"])
        out["controls"] += len(rnd["controls"])
        out["started"].append(q)
    return out
