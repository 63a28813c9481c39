"""Setting up a study: sampling instances, building items, and the balanced assignment plan.

Defaults follow InstructIR's human verification (Oh et al., 2024, §3 and Appendix B): 8% of the
query groups, 2 instances per group, 3 annotators per item, seeded. The same seed gives the same
sample and the same assignment.
"""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import asdict, dataclass, field, replace

from annotation import check_items
from annotation.judges import strata_map as judge_strata_map
from annotation.questions.own import assign_keys, snapshot
from annotation.questions.question_type import Question
from annotation.questions.study import BUILTIN_QUESTIONS, INSTANCE_QUESTIONS, question, study_questions
from storage import projects, studies, users
from storage.errors import IFJudgeError
from storage.db import Database


@dataclass
class StudySettings:
    group_fraction: float = 0.08
    per_group: int = 2
    overlap: int = 3
    passages: int = 3
    naturalness: str = "yesno"
    relevance: str = "binary"
    # IFIR §3.4: "10% of the queries with instructions from each domain". When set, groups are
    # sampled per query subset (domain): round(subset_fraction * groups of the subset), at least
    # one per subset that has any; ``group_fraction`` is then not used.
    subset_fraction: float | None = None
    # per-domain rates (strata = the query subsets; see :func:`domain_sample_sizes`): one fraction
    # per domain, or ``group_fraction`` as the total allocated ``proportional`` to the domains'
    # sizes or by ``neyman`` allocation from the anticipated share of Yes in each domain
    domain_fractions: dict[str, float] | None = None
    allocation: str | None = None
    anticipated_shares: dict[str, float] | None = None
    # strata = a judge run's answers instead of the domains (annotation.judges.strata.plan: the run,
    # each group's judge stratum and each stratum's rate)
    judge_strata: dict | None = None
    # passage_match: also ask about the excluded passages of each instance (IFIR Table 2), at most
    # this many per instance (seeded sample; None: all of them; 0: none)
    max_excluded: int | None = None
    seed: int = 0
    # sample only instances (condition: queries) that no other study of the project already asks
    # the same questions about (see :func:`sample_overlap`)
    skip_covered: bool = False
    claim_timeout_s: float = 1800.0
    guidelines: dict[str, str] = field(default_factory=dict)
    # the project goal shown to annotators before their first item (empty: the default of the
    # project's kind, InstructIR Fig. 9a for InstructIR)
    goal: str = ""
    # the share of the study's screens that are check items with known answers, mixed into the
    # queue and left out of every estimate (annotation.check_items); 0: none
    check_share: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.subset_fraction, dict):  # one fraction per domain, given where a single one goes
            self.domain_fractions, self.subset_fraction = dict(self.subset_fraction), None

    def validate(self) -> None:
        if not 0 < self.group_fraction <= 1:
            raise IFJudgeError(f"group fraction must be in (0, 1], got {self.group_fraction}")
        if self.subset_fraction is not None and not 0 < self.subset_fraction <= 1:
            raise IFJudgeError(f"subset fraction must be in (0, 1], got {self.subset_fraction}")
        chosen = [name for name, v in (("a fraction for every domain", self.subset_fraction),
                                       ("one fraction per domain", self.domain_fractions),
                                       ("an allocation", self.allocation)) if v is not None]
        if len(chosen) > 1:
            raise IFJudgeError(f"give one way to sample the domains, got {' and '.join(chosen)}")
        for d, f in (self.domain_fractions or {}).items():
            if not isinstance(f, (int, float)) or not 0 < f <= 1:
                raise IFJudgeError(f"the fraction of domain {d or '(no domain)'!r} must be in (0, 1], got {f!r}")
        if self.judge_strata is not None and self.stratified:
            raise IFJudgeError("give one way to stratify the sample: by the judge's answers or by domain, not both")
        if self.allocation not in (None, *ALLOCATIONS):
            raise IFJudgeError(f"allocation must be one of {', '.join(ALLOCATIONS)}, got {self.allocation!r}")
        if self.allocation == "neyman" and not self.anticipated_shares:
            raise IFJudgeError("Neyman allocation needs the anticipated share of Yes in each domain "
                               "(anticipated_shares, e.g. fiqa=0.95,aila=0.8)")
        for d, p in (self.anticipated_shares or {}).items():
            if not isinstance(p, (int, float)) or not 0 <= p <= 1:
                raise IFJudgeError(f"the anticipated share of domain {d or '(no domain)'!r} must be in [0, 1], got {p!r}")
        if self.max_excluded is not None and self.max_excluded < 0:
            raise IFJudgeError(f"excluded passages per instance must be at least 0, got {self.max_excluded}")
        if self.per_group < 1:
            raise IFJudgeError(f"instances per group must be at least 1, got {self.per_group}")
        if self.overlap < 1:
            raise IFJudgeError(f"annotators per item must be at least 1, got {self.overlap}")
        if self.passages < 2:
            raise IFJudgeError(f"best_passage needs at least 2 passages, got {self.passages}")
        if not 0 <= self.check_share <= check_items.MAX_SHARE:
            raise IFJudgeError(f"the share of check items must be between 0 and {check_items.MAX_SHARE}, "
                               f"got {self.check_share}")
        for q in BUILTIN_QUESTIONS.values():  # each form a setting chooses exists
            q.form(asdict(self))

    @property
    def stratified(self) -> bool:
        """Whether groups are sampled per domain (a stratum per query subset)."""
        return any(v is not None for v in (self.subset_fraction, self.domain_fractions, self.allocation))


ALLOCATIONS = ("proportional", "neyman")


def _allocate(total: int, sizes: dict[str, int], scores: dict[str, float]) -> dict[str, int]:
    """``total`` groups over the strata in proportion to ``scores``, each stratum at least one
    group and at most its size: a stratum whose share falls outside those bounds is fixed at the
    bound and the rest shared again; the shares are then rounded by largest remainder (Hamilton)."""
    total = min(max(total, len(sizes)), sum(sizes.values()))
    fixed: dict[str, int] = {}
    while True:
        free = [h for h in sizes if h not in fixed]
        left = total - sum(fixed.values())
        weight = sum(scores[h] for h in free)
        ideal = {h: left * (scores[h] / weight if weight > 0 else 1 / len(free)) for h in free}
        low = [h for h in free if ideal[h] < 1]
        high = [h for h in free if ideal[h] > sizes[h]]
        if not low and not high:
            break
        fixed.update({h: 1 for h in low} if low else {h: sizes[h] for h in high})
    n = {**fixed, **{h: int(v) for h, v in ideal.items()}}
    for h in sorted(ideal, key=lambda h: (-(ideal[h] - int(ideal[h])), h))[:total - sum(n.values())]:
        n[h] += 1
    return {h: n[h] for h in sizes}


def domain_sizes(db: Database, project: dict) -> dict[str, int]:
    """The query groups of each domain (query subset) of ``project`` (its row,
    :func:`storage.projects.get_project`), as a study samples them
    (instructed instances only; ``""``: groups without a domain), in domain order.

    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> domain_sizes(db, projects.get_project(db, "demo"))
    {'': 5}
    """
    pool = projects.instances(db, project["id"])
    if any(i["instruction"].strip() for i in pool):
        pool = [i for i in pool if i["instruction"].strip()]
    subsets = projects.query_subsets(db, project["id"])
    first: dict[str, str] = {}
    for inst in sorted(pool, key=lambda i: (i["group_id"], i["instance_id"])):
        first.setdefault(inst["group_id"], subsets.get(inst["query_id"], ""))
    return dict(sorted(Counter(first.values()).items()))


def domain_sample_sizes(sizes: dict[str, int], *, group_fraction: float, subset_fraction: float | None = None,
                        domain_fractions: dict[str, float] | None = None, allocation: str | None = None,
                        anticipated_shares: dict[str, float] | None = None) -> dict[str, int]:
    """Groups to sample per domain (stratum), from the groups each domain has (``sizes``).

    - ``subset_fraction`` f: ``max(1, round(f N_h))`` in every domain (IFIR §3.4: 10% of each);
    - ``domain_fractions`` {domain: f_h}: ``max(1, round(f_h N_h))``, one fraction per domain;
    - ``allocation="proportional"``: ``n = round(group_fraction * sum N_h)`` groups with
      ``n_h ~ N_h`` (the sample mirrors the domains' sizes);
    - ``allocation="neyman"``: the same n with ``n_h ~ N_h S_h``, ``S_h = sqrt(p_h (1 - p_h))`` from
      the anticipated share ``p_h`` of each domain (Neyman 1934; Cochran 1977, §5.5): more groups where
      answers vary most.

    Rounding keeps the total (largest remainder), at least one group per domain, at most all of them.

    >>> sizes = {"fiqa": 600, "aila": 300, "pm": 100}
    >>> domain_sample_sizes(sizes, group_fraction=0.1, allocation="proportional")
    {'fiqa': 60, 'aila': 30, 'pm': 10}
    >>> domain_sample_sizes(sizes, group_fraction=0.1, allocation="neyman",
    ...                     anticipated_shares={"fiqa": 0.99, "aila": 0.7, "pm": 0.9})
    {'fiqa': 26, 'aila': 61, 'pm': 13}
    >>> domain_sample_sizes(sizes, group_fraction=1, domain_fractions={"fiqa": 0.04, "aila": 0.1, "pm": 0.25})
    {'fiqa': 24, 'aila': 30, 'pm': 25}
    """
    if domain_fractions is not None:
        unknown = sorted(set(domain_fractions) - set(sizes))
        missing = sorted(set(sizes) - set(domain_fractions))
        if unknown or missing:
            names = ", ".join(repr(h) if h else "'' (no domain)" for h in sizes)
            raise IFJudgeError("one fraction per domain is needed: "
                               + "; ".join(x for x in (f"no domain {', '.join(map(repr, unknown))}" if unknown else "",
                                                      f"no fraction for {', '.join(repr(h) if h else '(no domain)' for h in missing)}"
                                                      if missing else "") if x)
                               + f" (the project's domains: {names})")
        return {h: min(N, max(1, round(domain_fractions[h] * N))) for h, N in sizes.items()}
    if allocation is not None:
        total = max(1, round(group_fraction * sum(sizes.values())))
        if allocation == "proportional":
            return _allocate(total, sizes, {h: float(N) for h, N in sizes.items()})
        shares = anticipated_shares or {}
        missing = sorted(set(sizes) - set(shares))
        if missing:
            raise IFJudgeError("Neyman allocation needs the anticipated share of every domain; none for "
                               + ", ".join(repr(h) if h else "(no domain)" for h in missing))
        return _allocate(total, sizes, {h: N * (shares[h] * (1 - shares[h])) ** 0.5 for h, N in sizes.items()})
    fraction = group_fraction if subset_fraction is None else subset_fraction
    return {h: min(N, max(1, round(fraction * N))) for h, N in sizes.items()}


def sample_instances(
    instances: list[dict], *, group_fraction: float, per_group: int, seed: int,
    subsets: dict[str, str] | None = None, subset_fraction: float | None = None,
    domain_fractions: dict[str, float] | None = None, allocation: str | None = None,
    anticipated_shares: dict[str, float] | None = None,
) -> list[dict]:
    """Seeded sample: ``round(group_fraction * n_groups)`` groups (at least one), then up to
    ``per_group`` instances of each. Input order does not matter.

    Stratified (IFIR §3.4, "10% of the queries with instructions from each domain"): with
    ``subset_fraction``, ``domain_fractions`` or ``allocation``, each subset (domain) gets the
    groups :func:`domain_sample_sizes` gives it, drawn in subset order from one seeded generator;
    ``subsets`` maps a query id to its subset (a group's subset is that of its first instance's
    query; no subset: ``""``).

    >>> insts = [{"instance_id": f"{d}{g}_1", "group_id": f"{d}{g}", "query_id": f"{d}{g}"}
    ...          for d in "ab" for g in range(10)]
    >>> subsets = {i["query_id"]: i["query_id"][0] for i in insts}
    >>> sorted(i["group_id"][0] for i in sample_instances(
    ...     insts, group_fraction=1, per_group=1, seed=0, subsets=subsets, subset_fraction=0.1))
    ['a', 'b']
    """
    groups: dict[str, list[dict]] = {}
    for inst in sorted(instances, key=lambda i: (i["group_id"], i["instance_id"])):
        groups.setdefault(inst["group_id"], []).append(inst)
    rng = random.Random(seed)
    names = sorted(groups)
    if subset_fraction is None and domain_fractions is None and allocation is None:
        n = max(1, round(group_fraction * len(names))) if names else 0
        chosen = sorted(rng.sample(names, n))
    else:
        strata: dict[str, list[str]] = {}
        for g in names:
            strata.setdefault((subsets or {}).get(groups[g][0].get("query_id", ""), ""), []).append(g)
        n_h = domain_sample_sizes({h: len(m) for h, m in sorted(strata.items())}, group_fraction=group_fraction,
                                  subset_fraction=subset_fraction, domain_fractions=domain_fractions,
                                  allocation=allocation, anticipated_shares=anticipated_shares)
        chosen = []
        for h, members in sorted(strata.items()):
            chosen.extend(rng.sample(members, n_h[h]))
        chosen.sort()
    out = []
    for g in chosen:
        members = groups[g]
        out.extend(sorted(rng.sample(members, min(per_group, len(members))), key=lambda i: i["instance_id"]))
    return out


def balanced_plan(
    screens: list[str], annotator_ids: list[int], overlap: int, *, seed: int, loads: dict[int, int] | None = None
) -> dict[str, list[int]]:
    """Give each screen ``overlap`` distinct annotators so that loads differ by at most one.

    Greedy: each screen goes to the least-loaded annotators (ties broken by a seeded order).
    ``loads``: screens each annotator already has (a study that grows round by round), so the
    totals stay balanced, not only each round's share.
    """
    if overlap > len(annotator_ids):
        raise IFJudgeError(f"{overlap} annotators per item were asked for but only {len(annotator_ids)} annotators were given")
    rng = random.Random(seed)
    tiebreak = {u: rng.random() for u in annotator_ids}
    load = {u: (loads or {}).get(u, 0) for u in annotator_ids}
    plan = {}
    for s in screens:
        chosen = sorted(annotator_ids, key=lambda u: (load[u], tiebreak[u]))[:overlap]
        for u in chosen:
            load[u] += 1
        plan[s] = sorted(chosen)
    return plan


def _target(qrels: dict[str, dict[str, int]], inst: dict) -> str | None:
    rel = qrels.get(inst["instance_id"]) or {}
    positives = sorted(d for d, r in rel.items() if r > 0)
    return positives[0] if positives else None


def bare_instances(instances: list[dict]) -> dict[str, str]:
    """query id -> the id of its bare-query instance (IFIR ``<qid>_0``: empty instruction), for the
    queries that have one."""
    out: dict[str, str] = {}
    for inst in sorted(instances, key=lambda i: i["instance_id"]):
        if not inst["instruction"].strip():
            out.setdefault(inst["query_id"], inst["instance_id"])
    return out


def match_passages(
    qrels: dict[str, dict[str, int]], inst: dict, bare_id: str | None, corpus_ids: set[str]
) -> tuple[list[str], list[str]]:
    """(gold, excluded) passages of one instance for ``passage_match`` (IFIR §3.4, Table 2).

    Gold: the passages relevant to the instance. Excluded: those relevant to the bare query
    (the qrels of its bare-query instance ``bare_id``, IFIR's candidate set) but not gold for this
    instruction -- the passages the instruction rules out. Only passages in the corpus count.

    >>> qrels = {"q1_0": {"a": 1, "b": 1, "c": 1}, "q1_level1": {"a": 1}}
    >>> match_passages(qrels, {"instance_id": "q1_level1"}, "q1_0", {"a", "b", "c"})
    (['a'], ['b', 'c'])
    """
    gold = sorted(d for d, r in (qrels.get(inst["instance_id"]) or {}).items() if r > 0 and d in corpus_ids)
    if bare_id is None or bare_id == inst["instance_id"]:
        return gold, []
    gold_set = set(gold)
    excluded = sorted(d for d, r in (qrels.get(bare_id) or {}).items() if r > 0 and d in corpus_ids and d not in gold_set)
    return gold, excluded


@dataclass
class _ItemContext:
    """What the item builders of one study read once: the original qrels, the corpus's ids, each
    group's targets in the corpus, the bare-query instances, the seeded generator, the notes."""

    qrels: dict
    corpus_ids: set
    group_targets: dict
    bare: dict
    settings: StudySettings
    rng: random.Random
    notes: list = field(default_factory=list)
    no_bare: int = 0

    @classmethod
    def read(cls, db: Database, project_id: int, settings: StudySettings) -> "_ItemContext":
        qrels = projects.qrels(db, project_id, "original")
        corpus_ids = set(projects.StoredDocuments(db, project_id))  # ids only: no text read
        all_instances = projects.instances(db, project_id)
        group_targets: dict[str, list[str]] = {}
        for inst in all_instances:
            t = _target(qrels, inst)
            if t is not None and t in corpus_ids:
                group_targets.setdefault(inst["group_id"], []).append(t)
        return cls(qrels, corpus_ids, group_targets, bare_instances(all_instances), settings, random.Random(settings.seed))


def _instance_item(ctx: _ItemContext, inst: dict, q: Question, base: dict) -> list[dict]:
    """One item on the instance's screen (validity, naturalness, a lead's question per instance)."""
    return [{**base, "screen": inst["instance_id"]}]


def _candidates_item(ctx: _ItemContext, inst: dict, q: Question, base: dict) -> list[dict]:
    """The best passage's item: the target and ``passages - 1`` targets of the group's other
    instances, drawn with the study's seeded generator (InstructIR, Appendix B)."""
    target, n = _target(ctx.qrels, inst), ctx.settings.passages
    others = sorted(set(ctx.group_targets.get(inst["group_id"], [])) - {target})
    if target is None or target not in ctx.corpus_ids or len(others) < n - 1:
        ctx.notes.append(f"{inst['instance_id']}: no {q.id} item (needs its target and "
                         f"{n - 1} other passages of its group in the corpus)")
        return []
    candidates = sorted([target, *ctx.rng.sample(others, n - 1)])
    return [{**base, "screen": inst["instance_id"], "payload": {"candidates": candidates, "gold": target}}]


def _gold_and_excluded_items(ctx: _ItemContext, inst: dict, q: Question, base: dict) -> list[dict]:
    """IFIR's passage match: one item per gold and per excluded passage (:func:`match_passages`),
    the excluded ones subsampled to ``max_excluded`` (seeded)."""
    gold, excluded = match_passages(ctx.qrels, inst, ctx.bare.get(inst["query_id"]), ctx.corpus_ids)
    of = {}
    if ctx.settings.max_excluded is not None and len(excluded) > ctx.settings.max_excluded:
        # a seeded subsample: each excluded item records how many its instance has, the
        # weight of the third sampling stage (annotation.survey.design)
        of = {"excluded_of": len(excluded)}
        excluded = sorted(ctx.rng.sample(excluded, ctx.settings.max_excluded))
    if inst["query_id"] not in ctx.bare:
        ctx.no_bare += 1
    return [{**base, "screen": f"{inst['instance_id']}|{d}", "doc_id": d,
             "payload": {"kind": kind, **(of if kind == "excluded" else {})}}
            for kind, docs in (("gold", gold), ("excluded", excluded)) for d in docs]


def _passage_items(ctx: _ItemContext, inst: dict, q: Question, base: dict) -> list[dict]:
    """A lead's question per passage: one item per passage the original qrels judge relevant to
    the instance (in the corpus)."""
    gold, _ = match_passages(ctx.qrels, inst, None, ctx.corpus_ids)
    if not gold:
        ctx.notes.append(f"{inst['instance_id']}: no {q.id} item (no relevant passage in the corpus)")
    return [{**base, "screen": f"{inst['instance_id']}|{d}", "doc_id": d} for d in gold]


def _target_item(ctx: _ItemContext, inst: dict, q: Question, base: dict) -> list[dict]:
    """A lead's question about the instance's target passage (its first relevant one)."""
    target = _target(ctx.qrels, inst)
    if target is None or target not in ctx.corpus_ids:
        ctx.notes.append(f"{inst['instance_id']}: no {q.id} item (its target passage is not in the corpus)")
        return []
    return [{**base, "screen": f"{inst['instance_id']}|{target}", "doc_id": target}]


#: how a study of instances builds the items of a question, by what the question is asked about
#: (``Question.asked_per``); the other strategies are studies of their own
#: (:func:`create_condition_study`, ``annotation.instfol_study``, ``annotation.narratives.versions``)
ITEM_BUILDERS = {"instance": _instance_item, "candidates": _candidates_item, "gold-and-excluded": _gold_and_excluded_items,
                 "passage": _passage_items, "target": _target_item}


def build_instance_items(
    db: Database, project_id: int, sample: list[dict], question_ids: list, settings: StudySettings
) -> tuple[list[dict], list[str]]:
    """Items for the instance questions (ids of built-in questions, or declarations); returns
    (items, notes about what could not be built). An item about one passage has a screen of its
    own (``instance|doc``), shared by the questions asked about that passage; the instance's
    other questions share its screen."""
    qs = [q if isinstance(q, Question) else question(q, naturalness=settings.naturalness, relevance=settings.relevance)
          for q in question_ids]
    ctx = _ItemContext.read(db, project_id, settings)
    items, position = [], 0
    for inst in sample:
        screen_items: list[dict] = []
        doc_screens: dict[str, int] = {}
        for q in qs:
            base = {"instance_id": inst["instance_id"], "question": q.id, "cap": settings.overlap}
            for it in ITEM_BUILDERS[q.asked_per](ctx, inst, q, base):
                if "doc_id" not in it:
                    screen_items.append(it)
                    continue
                if it["screen"] not in doc_screens:
                    doc_screens[it["screen"]], position = position, position + 1
                items.append({**it, "position": doc_screens[it["screen"]]})
        for it in screen_items:
            it["position"] = position
        items.extend(screen_items)
        position += 1
    if ctx.no_bare:
        ctx.notes.append(f"passage_match: {ctx.no_bare} instance(s) have no excluded-passage items (their query has "
                         "no bare-query instance, an instance with an empty instruction such as IFIR's <qid>_0)")
    return items, ctx.notes


def declared_questions(questions: list[str], own_questions: list[Question] | None,
                       settings: StudySettings) -> list[Question]:
    """The declarations of the questions a study of instances asks, in the order it asks them:
    the built-in ones named in ``questions`` (in :data:`INSTANCE_QUESTIONS` order, in the form
    ``settings`` choose) and then the lead's own (``own_questions``, each asked whether or not
    ``questions`` names it), with the keys of their screens (:func:`annotation.questions.own.assign_keys`).
    Refuses an unknown id, a question asked in a study of its own, and an own question whose id
    is given twice."""
    own = list(own_questions or [])
    ids = [q.id for q in own]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise IFJudgeError(f"the study declares question {twice[0]!r} twice")
    if "instfol_match" in questions:
        raise IFJudgeError("instfol_match items are the passages two runs retrieved: create that study from the "
                           "bare-query and the instructed runs (ifjudge study create --questions instfol_match "
                           "--bare-run FILE --instructed-run FILE, or annotation.instfol_study.create_instfol_study)")
    unknown = [q for q in questions if q not in INSTANCE_QUESTIONS and q not in ids]
    if not (questions or own) or unknown:
        raise IFJudgeError(
            f"unknown question(s) {', '.join(unknown) or '(none given)'}; a study asks some of {', '.join(INSTANCE_QUESTIONS)}"
            + (" or questions it declares (--question-file)" if own or any(q not in BUILTIN_QUESTIONS for q in unknown)
               else "")
            + (" (condition is asked alone)" if "condition" in unknown else "")
        )
    builtin = [question(q, naturalness=settings.naturalness, relevance=settings.relevance)
               for q in INSTANCE_QUESTIONS if q in questions]
    return assign_keys([*builtin, *own])


def create_study(
    db: Database,
    *,
    project: dict,
    questions: list[str],
    annotators: list[str],
    created_by: str = "cli",
    name: str | None = None,
    settings: StudySettings | None = None,
    groups: list[str] | None = None,
    own_questions: list[Question] | None = None,
) -> dict:
    """Sample instances of ``project`` (its row, :func:`storage.projects.get_project`), create the items of ``questions`` and assign them.

    ``groups`` restricts the sample to those query groups. ``own_questions``: the lead's own
    questions (:mod:`annotation.questions.own`), asked after the built-in ones and stored with the
    study (``settings["own_questions"]``).
    Returns ``{"study_id", "instances", "screens", "items", "assignments", "per_annotator", "notes"}``.
    """
    settings = settings or StudySettings()
    if list(questions) == ["condition"] and not own_questions:
        return create_condition_study(db, project=project, annotators=annotators, created_by=created_by, name=name,
                                      settings=settings, queries=groups)
    settings.validate()
    declared = declared_questions(list(questions), own_questions, settings)
    questions = [q.id for q in declared]
    people = users.users_by_name(db, annotators)
    if len({p["id"] for p in people}) != len(people):
        raise IFJudgeError("an annotator is listed twice")
    pool, skipped = _instance_pool(db, project, questions, settings, groups)
    sample = _sample(db, project, pool, settings, settings.seed)
    if not sample:
        if settings.skip_covered:
            raise IFJudgeError(f"every instance of project {project['name']!r} is already asked these questions by another "
                               "study: nothing remains to sample")
        raise IFJudgeError(f"project {project['name']!r} has no instances to sample")
    items, notes = build_instance_items(db, project["id"], sample, declared, settings)
    if not items:
        raise IFJudgeError("no item could be built: " + "; ".join(notes[:3]))
    regular = len({it["screen"] for it in items})
    checks, check_notes = check_items.build_checks(db, project, sample, declared, settings,
                                                   check_items.check_count(settings.check_share, regular),
                                                   build_instance_items)
    items, notes = check_items.mix_in(items, checks, settings.seed), notes + check_notes
    screens = list(dict.fromkeys(it["screen"] for it in items))
    plan = _assignment_plan(screens, {it["screen"] for it in checks}, [p["id"] for p in people], settings)
    stored = asdict(settings)
    stored["guidelines"] = {q.id: settings.guidelines.get(q.id, q.guidelines) for q in declared}
    if own_questions:  # the lead's declarations as asked (with their keys): what the study's labels mean
        stored["own_questions"] = {q.id: snapshot(q) for q in declared if not q.builtin}
    if settings.skip_covered:  # the population it sampled: the project's instances these studies did not ask
        stored["skipped_studies"] = skipped
    study_id = studies.insert_study(
        db, project_id=project["id"], name=name or f"{project['name']} study", questions=questions, settings=stored,
        created_by=created_by, annotator_ids=[p["id"] for p in people], items=items, plan=plan,
    )
    per = {p["name"]: sum(p["id"] in v for v in plan.values()) for p in people}
    return {
        "study_id": study_id,
        "instances": len(sample),
        "screens": len(screens),
        "items": sum(not it.get("is_check") for it in items),
        "items_by_question": {q: sum(it["question"] == q and not it.get("is_check") for it in items) for q in questions},
        "check_screens": len({it["screen"] for it in items if it.get("is_check")}),
        "items_by_kind": dict(sorted(Counter(
            it["payload"]["kind"] for it in items if "kind" in it.get("payload", {})).items())),
        "assignments": sum(len(plan[it["screen"]]) for it in items),
        "per_annotator_screens": per,
        "notes": notes,
    }


def _assignment_plan(screens: list[str], check_screens: set[str], ids: list[int], settings: StudySettings) -> dict:
    """Who answers each screen: the regular screens balanced over the annotators
    (:func:`balanced_plan`), then the check screens planned apart, on top of those loads, so that
    every annotator gets their share of checks."""
    plan = balanced_plan([s for s in screens if s not in check_screens], ids, settings.overlap, seed=settings.seed)
    if check_screens:
        loads = {u: sum(u in v for v in plan.values()) for u in ids}
        plan.update(balanced_plan([s for s in screens if s in check_screens], ids, settings.overlap,
                                  seed=settings.seed + 1, loads=loads))
    return plan


CONDITION_MODES = ("changed", "reversed")


def create_condition_study(
    db: Database,
    *,
    project: dict,
    annotators: list[str],
    created_by: str = "cli",
    name: str | None = None,
    settings: StudySettings | None = None,
    modes: tuple[str, ...] = CONDITION_MODES,
    queries: list[str] | None = None,
) -> dict:
    """InfoSearch validation (Zhou et al., 2025, §2): one ``condition`` item ("Does this document
    satisfy the instruction's condition?", Yes / No) per (query, mode, document) for the modes
    ``changed`` (instructed) and ``reversed``, over the documents relevant under the ``original``
    qrels of the query, shown with the instance of that mode (its instruction). A seeded
    ``settings.group_fraction`` of the queries (or ``queries``) is sampled, or with
    ``settings.subset_fraction`` that share of each dimension (:func:`_sample_queries`); each item
    goes to ``settings.overlap`` annotators. The outcomes build ``changed-validated`` and
    ``reversed-validated`` (:func:`annotation.outcomes.qrels_builds.build_condition`). ``project``: its row
    (:func:`storage.projects.get_project`).

    Returns ``{"study_id", "queries", "screens", "items", "items_by_mode", "assignments", "notes"}``.
    """
    settings = settings or StudySettings()
    settings.validate()
    bad = [m for m in modes if m not in CONDITION_MODES]
    if not modes or bad:
        raise IFJudgeError(f"condition modes must be some of {', '.join(CONDITION_MODES)}, got {', '.join(bad) or 'none'}")
    people = users.users_by_name(db, annotators)
    if len({p["id"] for p in people}) != len(people):
        raise IFJudgeError("an annotator is listed twice")
    original = projects.qrels(db, project["id"], "original")
    skipped = condition_skipped_studies(db, project["id"]) if settings.skip_covered else []
    by_query, pool = _condition_pool(db, project, settings, modes, queries)
    chosen = _sample_queries(db, project, pool, settings, settings.seed)
    if not chosen and settings.skip_covered:
        raise IFJudgeError(f"every query of project {project['name']!r} is already judged by another condition study: "
                           "nothing remains to sample")
    items, notes, position = [], [], 0
    for q in chosen:
        key = next((k for k in (q, f"{q}-og") if k in original), q)
        positives = sorted(d for d, r in original.get(key, {}).items() if r > 0)
        if not positives:
            notes.append(f"{q}: no relevant document under the original qrels, no item")
            continue
        for mode in modes:
            inst = by_query[q].get(mode)
            if inst is None:
                notes.append(f"{q}: no {mode} instance, no {mode} item")
                continue
            for d in positives:
                items.append({"instance_id": inst["instance_id"], "question": "condition", "doc_id": d,
                              "screen": f"{inst['instance_id']}|{d}", "cap": settings.overlap, "position": position,
                              "payload": {"mode": mode, "qid": key}})
                position += 1
    if not items:
        raise IFJudgeError(f"no condition item could be built for {project['name']!r}: "
                           + ("; ".join(notes[:3]) or f"no instance of variant {' / '.join(modes)}"))
    screens = [it["screen"] for it in items]
    plan = balanced_plan(screens, [p["id"] for p in people], settings.overlap, seed=settings.seed)
    stored = asdict(settings)
    stored["modes"] = list(modes)
    if settings.skip_covered:
        stored["skipped_studies"] = skipped
    stored["guidelines"] = {"condition": settings.guidelines.get("condition", BUILTIN_QUESTIONS["condition"].guidelines)}
    study_id = studies.insert_study(
        db, project_id=project["id"], name=name or f"{project['name']}: condition", questions=["condition"], settings=stored,
        created_by=created_by, annotator_ids=[p["id"] for p in people], items=items, plan=plan,
    )
    return {
        "study_id": study_id, "queries": len(chosen), "instances": len({it["instance_id"] for it in items}),
        "screens": len(screens), "items": len(items),
        "items_by_mode": {m: sum(it["payload"]["mode"] == m for it in items) for m in modes},
        "assignments": sum(len(plan[s]) for s in screens), "notes": notes,
    }


@dataclass
class CreationSummary:
    """What the lead reads after creating a study: one sentence naming the study and what it
    holds, a warning per question that got no item (shown as a warning, not a success), and the
    sampler's notes."""

    text: str
    warnings: list[str]
    notes: list[str]


def creation_summary(db: Database, result: dict) -> CreationSummary:
    """Describe in words the result of :func:`create_study` (or of the condition and INSTFOL
    study builders): the study's id and name, instances, screens, items per question (by their
    labels), assignments and annotators.

    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); r = load_demo(db)["study"]
    >>> creation_summary(db, r).text  # doctest: +NORMALIZE_WHITESPACE
    'Study 1 “demo: InstructIR validation” created: 8 instances on 8 screens; 24 items (Valid instruction 8,
    Natural instruction 8, Most natural passage 8); 72 assignments (ann1 8 screens, ann2 8 screens, ann3 8 screens).'
    """
    study = studies.get_study(db, result["study_id"])
    names = {q: d.title for q, d in study_questions(study).items()}
    by_question = result.get("items_by_question") or {q: result.get("items", 0) for q in study["questions"]}
    parts = ", ".join(f"{names[q]} {by_question.get(q, 0)}" for q in study["questions"])
    per = result.get("per_annotator_screens") or {}
    people = ", ".join(f"{n} {k} screen{'s' if k != 1 else ''}" for n, k in per.items())
    queries = f"{result['queries']} queries, " if "queries" in result else ""
    checks = result.get("check_screens") or 0
    text = (f"Study {study['id']} “{study['name']}” created: {queries}{result.get('instances', 0)} instances on "
            f"{result.get('screens', 0) - checks} screens; {result.get('items', 0)} items ({parts}); "
            f"{result.get('assignments', 0)} assignments" + (f" ({people})." if people else ".")
            + (f" Mixed in: {checks} check screens with known answers (not counted in any estimate)." if checks else ""))
    warnings = [f"{names[q]} got 0 items: its annotators will not be asked it. Check the notes below (e.g. too few "
                f"passages or documents in the project)." for q in study["questions"] if not by_question.get(q, 0)]
    return CreationSummary(text, warnings, list(result.get("notes") or []))


def _instance_pool(db: Database, proj: dict, questions: list[str], settings: StudySettings,
                   groups: list[str] | None) -> tuple[list[dict], list[int]]:
    """The instances a study of ``questions`` samples from: the project's (or those of ``groups``),
    without bare-query instances, and without those already covered when ``settings.skip_covered``;
    and the ids of the studies whose instances were left out."""
    pool = projects.instances(db, proj["id"])
    if groups is not None:
        unknown_groups = sorted(set(groups) - {i["group_id"] for i in pool})
        if unknown_groups:
            raise IFJudgeError(f"project {proj['name']!r} has no group(s) {', '.join(unknown_groups)}")
        pool = [i for i in pool if i["group_id"] in set(groups)]
    if any(i["instruction"].strip() for i in pool):  # a bare-query instance (IFIR <qid>_0) is not judged
        pool = [i for i in pool if i["instruction"].strip()]
    skipped: set[int] = set()
    if settings.skip_covered:
        covered = covered_instances(db, proj["id"], questions)
        skipped = {s for i in pool for s in covered.get(i["instance_id"], ())}
        pool = [i for i in pool if i["instance_id"] not in covered]
    return pool, sorted(skipped)


def _sample(db: Database, proj: dict, pool: list[dict], settings: StudySettings, seed: int) -> list[dict]:
    if settings.judge_strata is not None:
        return sample_by_judge(pool, settings.judge_strata, per_group=settings.per_group, seed=seed)
    return sample_instances(
        pool, group_fraction=settings.group_fraction, per_group=settings.per_group, seed=seed,
        subsets=projects.query_subsets(db, proj["id"]), subset_fraction=settings.subset_fraction,
        domain_fractions=settings.domain_fractions, allocation=settings.allocation,
        anticipated_shares=settings.anticipated_shares,
    )


def sample_by_judge(pool: list[dict], judge_strata: dict, *, per_group: int, seed: int) -> list[dict]:
    """The seeded sample of ``pool`` under a judge-stratified plan (:mod:`annotation.judges.strata`):
    per judge stratum ``max(1, round(f_h N_h))`` groups (a group the judge run did not see is
    ``not judged``), then up to ``per_group`` instances of each (:func:`sample_instances`).

    >>> pool = [{"instance_id": f"g{k}_1", "group_id": f"g{k}"} for k in range(10)]
    >>> plan = {"group_stratum": {"g0": "judge No", "g1": "judge No"}, "fractions": {"judge No": 1.0, "not judged": 0.25}}
    >>> [i["group_id"] for i in sample_by_judge(pool, plan, per_group=1, seed=0)][:2]
    ['g0', 'g1']
    """
    keyed, strata, rates = judge_strata_map.as_domains(pool, judge_strata)
    by_id = {i["instance_id"]: i for i in pool}
    drawn = sample_instances(keyed, group_fraction=1.0, per_group=per_group, seed=seed, subsets=strata,
                             domain_fractions=rates)
    return [by_id[i["instance_id"]] for i in drawn]


def _condition_pool(db: Database, proj: dict, settings: StudySettings, modes, queries) -> tuple[dict, list[str]]:
    """({query: {mode: instance}}, the queries a condition study samples from)."""
    by_query: dict[str, dict[str, dict]] = {}
    for inst in projects.instances(db, proj["id"]):
        if inst["variant"] in modes:
            by_query.setdefault(inst["query_id"], {})[inst["variant"]] = inst
    pool = sorted(q for q in by_query if queries is None or q in set(queries))
    if queries is not None and set(queries) - set(by_query):
        raise IFJudgeError(f"project {proj['name']!r} has no {'/'.join(modes)} instance for: "
                           f"{', '.join(sorted(set(queries) - set(by_query))[:5])}")
    if settings.skip_covered:
        covered = covered_instances(db, proj["id"], ["condition"])
        pool = [q for q in pool if not any(i["instance_id"] in covered for i in by_query[q].values())]
    return by_query, pool


def condition_skipped_studies(db: Database, project_id: int) -> list[int]:
    """The condition studies of the project so far: those whose queries a ``skip_covered``
    condition study leaves out."""
    return sorted({s for ids in covered_instances(db, project_id, ["condition"]).values() for s in ids})


def _sample_queries(db: Database, proj: dict, pool: list[str], settings: StudySettings, seed: int) -> list[str]:
    """The queries a condition study asks about: a seeded ``group_fraction`` of ``pool``, or with
    ``subset_fraction`` that share of each query subset (InfoSearch dimension), at least one per
    subset, as :func:`sample_instances` samples groups per subset."""
    if settings.subset_fraction is not None:
        units = [{"instance_id": q, "group_id": q, "query_id": q} for q in pool]
        return [u["query_id"] for u in sample_instances(units, group_fraction=1.0, per_group=1, seed=seed,
                                                         subsets=projects.query_subsets(db, proj["id"]),
                                                         subset_fraction=settings.subset_fraction)]
    rng = random.Random(seed)
    n = max(1, round(settings.group_fraction * len(pool))) if pool else 0
    return sorted(rng.sample(pool, n)) if pool else []


def covered_instances(db: Database, project_id: int, questions: list[str]) -> dict[str, set[int]]:
    """Instance id -> the ids of the studies of the project that already ask one of ``questions``
    about it (an item of that question on that instance)."""
    out: dict[str, set[int]] = {}
    for s in studies.list_studies(db, project_id):
        for q in set(s["questions"]) & set(questions):
            for it in studies.items_of_study(db, s["id"], q):
                out.setdefault(it["instance_id"], set()).add(s["id"])
    return out


@dataclass
class SampleOverlap:
    """What a new study would re-ask: of the ``sampled`` units (instances; queries for a condition
    study) its settings draw, ``covered`` are already asked the same questions by ``studies``
    (``[{"id", "name", "covered"}]``); ``remaining`` units of the pool no study covers;
    ``new_seed`` a seed whose sample re-asks the fewest (``new_seed_covered``; None when no other
    seed was tried). ``text`` says it in a sentence for the page and the CLI ("" without overlap)."""

    unit: str
    sampled: int
    covered: int
    studies: list[dict]
    remaining: int
    new_seed: int | None
    new_seed_covered: int

    @property
    def text(self) -> str:
        if not self.covered:
            return ""
        who = "; ".join(f"study {s['id']} “{s['name']}” ({s['covered']})" for s in self.studies)
        seed = ("" if self.new_seed is None else
                f" Seed {self.new_seed} draws a sample with {self.new_seed_covered} of them already asked.")
        return (f"This sample would ask again about {self.covered} of its {self.sampled} {self.unit} that another "
                f"study of the project already asks the same questions about: {who}. Each annotator of both "
                f"studies would judge them twice.{seed} Or sample only the {self.remaining} {self.unit} "
                "no study asks yet.")


SEEDS_TRIED = 200


def sample_overlap(db: Database, *, project: dict, questions: list[str], settings: StudySettings | None = None,
                   groups: list[str] | None = None) -> SampleOverlap:
    """How much of the sample :func:`create_study` would draw with these arguments is already asked
    the same questions by other studies of ``project`` (its row; same seed, same sample: a second study with
    the default seed re-asks the first one's items), the remaining pool, and the seed among the
    next :data:`SEEDS_TRIED` whose sample overlaps least. ``skip_covered`` is ignored here.

    >>> from storage.db import connect
    >>> from annotation.demo import load_demo
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> from annotation.demo import demo_data
    >>> groups = sorted({i["query"] for i in demo_data()["instances"]})
    >>> same = StudySettings(group_fraction=1.0, per_group=2, seed=0)  # the demo study's sample settings
    >>> demo = projects.get_project(db, "demo")
    >>> o = sample_overlap(db, project=demo, questions=["validity"], settings=same, groups=groups)
    >>> o.sampled, o.covered, [s["id"] for s in o.studies], o.remaining  # 12 instances, 8 of them asked
    (8, 8, [1], 4)
    >>> create_study(db, project=demo, questions=["validity"], annotators=["ann1", "ann2", "ann3"],
    ...              settings=replace(same, skip_covered=True), groups=groups)["instances"]  # the remaining ones
    4
    >>> sample_overlap(db, project=demo, questions=["passage_match"], settings=same, groups=groups).covered  # not asked yet
    0
    """
    settings = replace(settings or StudySettings(), skip_covered=False)
    questions = list(questions)
    covered = covered_instances(db, project["id"], questions)
    if all(q in BUILTIN_QUESTIONS and BUILTIN_QUESTIONS[q].design == "condition" for q in questions or ["-"]):
        by_query, pool = _condition_pool(db, project, settings, CONDITION_MODES, groups)
        units = {q: {i["instance_id"] for i in by_query[q].values()} for q in pool}
        draw = lambda seed: _sample_queries(db, project, pool, settings, seed)  # noqa: E731
        unit = "queries"
    else:
        pool_i, _ = _instance_pool(db, project, questions, settings, groups)
        units = {i["instance_id"]: {i["instance_id"]} for i in pool_i}
        draw = lambda seed: [i["instance_id"] for i in _sample(db, project, pool_i, settings, seed)]  # noqa: E731
        unit = "instances"

    def hits(sample):
        return [u for u in sample if any(i in covered for i in units[u])]

    sample = draw(settings.seed)
    hit = hits(sample)
    by_study: Counter = Counter(s for u in hit for i in units[u] for s in covered.get(i, ()))
    names = {s["id"]: s["name"] for s in studies.list_studies(db, project["id"])}
    remaining = sum(1 for u in units if not any(i in covered for i in units[u]))
    best, best_n = None, len(hit)
    if hit:
        for seed in range(settings.seed + 1, settings.seed + 1 + SEEDS_TRIED):
            n = len(hits(draw(seed)))
            if best is None or n < best_n:
                best, best_n = seed, n
            if n == 0:
                break
    return SampleOverlap(unit, len(sample), len(hit),
                         [{"id": s, "name": names.get(s, "?"), "covered": n} for s, n in sorted(by_study.items())],
                         remaining, best, best_n if best is not None else 0)


@dataclass
class KindQuestions:
    """The questions the Set up page offers for a project of one kind, those it preselects, the
    naturalness scale the benchmark uses, and a note for the lead ("" when none)."""

    offered: list[str]
    preselected: list[str]
    naturalness: str = "yesno"
    note: str = ""


def questions_for_kind(kind: str, *, has_documents: bool = True) -> KindQuestions:
    """What a study of a project of ``kind`` asks, following its benchmark's protocol: InstructIR
    (Appendix B) validity, naturalness and the most natural passage (only with documents to show);
    IFIR (§3.4) passage match and 1-5 naturalness; InfoSearch (§2) the condition; FollowIR (§3)
    re-judging, which starts from a modified narrative on the Narratives page (no question here);
    a generic project is offered every question, InstructIR's preselected.

    >>> questions_for_kind("ifir").preselected, questions_for_kind("ifir").naturalness
    (['passage_match', 'naturalness'], 'likert')
    >>> questions_for_kind("instructir", has_documents=False).offered
    ['validity', 'naturalness']
    >>> questions_for_kind("followir").offered, "Narratives" in questions_for_kind("followir").note
    ([], True)
    """
    passage = ["best_passage"] if has_documents else []
    no_docs = ("" if has_documents else "The project has no documents: the most natural passage "
               "(best passage) cannot be asked. Import the corpus to ask it.")
    if kind == "instructir":
        return KindQuestions(["validity", "naturalness", *passage], ["validity", "naturalness", *passage], note=no_docs)
    if kind == "ifir":
        return KindQuestions(["passage_match", "naturalness"], ["passage_match", "naturalness"], "likert")
    if kind == "infosearch":
        return KindQuestions(["condition"], ["condition"])
    if kind == "followir":
        return KindQuestions([], [], note="FollowIR re-judging starts on the Narratives page: an expert saves a "
                             "modified narrative of a query, and the documents relevant under the original narrative "
                             "are queued for re-judging there (choose the annotators on that page).")
    offered = [q for q in INSTANCE_QUESTIONS if has_documents or not BUILTIN_QUESTIONS[q].needs_documents]
    return KindQuestions([*offered, "condition"], ["validity", "naturalness", *passage], note=no_docs)
