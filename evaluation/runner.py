"""Run a retriever on a project's topics, evaluate it on one qrels version, store the eval run.

One call of :func:`run_eval` = one row of ``eval_runs``. The retrieval is identified by a
*retrieval key* (model identity, template, k, variant, candidate lists, reranker): evaluating the
same retrieval on another qrels version (``original`` -> ``validated``) reuses the stored run
and retrieves nothing; a different retrieval with the same model still finds every embedding it
has seen in the embedding cache.

What is computed (:func:`run_eval`): the standard measures with trec_eval semantics
(:func:`evaluation.measures.evaluate`); ``Robustness@k`` (InstructIR) when a group has more than
one evaluated instance; ``p-MRR`` (FollowIR eq. 1) when the project has og and changed instances
and the ``original`` and changed qrels; ``WISE``, ``SICR`` and InfoSearch's ``p-MRR``
(:func:`evaluation.infosearch.infosearch_metrics`) with ``reversed`` instances too. In a default
list they are computed when the project has what they need. p-MRR is computed between the og run
and the changed run on every changed-side qrels the project has (``changed``,
``changed-validated``, ``edited-validated``), stored as ``p-MRR(qrels='changed')``, ...;
``p-MRR`` is the one of the evaluated version (``changed`` unless a validated one is evaluated);
InfoSearch's WISE / SICR / p-MRR likewise, also per dimension (``queries.subset``) in
``settings["evaluation"]["infosearch"]["by_qrels"]``. With ``ties="run-order"`` the names carry
it (``p-MRR(ties='run-order')``): every stored name is canonical (:mod:`evaluation.results`).
IFJudge's retrievers list equal scores by doc id descending and a reused run is read back in its
stored order, so ``run-order`` gives one answer whether a run is reused or not; over candidate
lists their equal scores are ranked in the lists' order (:func:`in_candidate_order`).

**Query sets.** Bare queries (variant ``bare``, IFIR's ``<qid>_0``) are never part of a headline
figure: they are retrieved apart and reported as the baseline (``evaluation["baseline"]``, their
run kept as ``settings["baseline_run"]`` for INSTFOL). **Subsets.** A project published in subsets
(IFIR domains, InfoSearch dimensions, MTEB subsets) is retrieved subset by subset, each against
its own corpus and in its own mode (:class:`_Retrieval`), and its figures are the means over
subsets (:mod:`evaluation.subsets`), each subset's in ``evaluation["subsets"]``; IFIR's level
scores are in ``evaluation["levels"]``. **Protocol.** Whose rules decide the template, the tie
rule and InstructIR's Robustness groups is ``settings["protocol"]`` (:mod:`evaluation.protocols`).
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from evaluation import measures as measures_mod
from evaluation.infosearch import infosearch_metrics
from evaluation.measure_registry import IFMeasure, default_measures, parse_all
from evaluation.pmrr import TIES, p_mrr
from evaluation.retrievers import Progress, Retriever
from evaluation.retrievers.build import build_retriever
from evaluation.results import measure_name
from evaluation.protocols import check_wise_version
from evaluation.protocols import resolve as resolve_protocol
from evaluation.robustness import robustness
from evaluation.runs import RankedRun, as_dict, as_ranked_run
from evaluation.subsets import level_means, levels_over_subsets, over_subsets, split_by_subset, subset_means
from evaluation.templates import get_template
from evaluation.undefined import Undefined, defined_or_none
from storage import eval_runs as store
from storage import projects
from formats.bundle import BARE, VALIDATES
from storage.errors import IFJudgeError, NotFound
from storage.db import Database

DEFAULT_K = 1000  # MTEB's retrieval depth (max of AbsTaskRetrieval.k_values); full-corpus retrieval only
ROBUSTNESS_K = 10
# the instruction-following measures the runner computes from its own runs (INSTFOL needs judge scores)
PAIRED_MEASURES = ("p-MRR", "WISE", "SICR")
# kinds whose og / changed instances of one query are paired for p-MRR (a generic project can hold
# FollowIR-style queries beside others, e.g. the demo)
PAIRED_KINDS = ("followir", "infosearch", "generic")
# Which instances a qrels version judges, when qrels are keyed by query id and several variants
# of a query share that id (FollowIR, InfoSearch); a validated version judges the variant of the
# published version it validates (formats.bundle.VALIDATES).
VERSION_VARIANT = {"original": "og", "changed": "changed", "reversed": "reversed", "edited-validated": "changed"}
# changed-side versions built by re-judging (FollowIR): each is scored with the changed run made with the
# instruction its annotators judged under (the published changed text, or an expert's edited narrative)
REJUDGED_VERSIONS = ("changed-validated", "edited-validated")
CANDIDATE_MODES = ("auto", "corpus", "top_ranked")


def _variant_for(qrels_version: str, variants: Sequence[str]) -> str:
    # a validated version judges the variant of the published version it validates: ``validated``
    # (instance validation) the og instances, ``changed-validated`` (FollowIR re-judging) the changed ones
    return VERSION_VARIANT.get(VALIDATES.get(qrels_version, qrels_version), "og")


def _paired_versions(qrels_version: str, versions: Sequence[str]) -> tuple[list[str], str | None]:
    """The changed-side qrels p-MRR is computed on (published ``changed`` and, when built,
    ``changed-validated`` and ``edited-validated``), and the one reported as ``p-MRR`` for ``qrels_version``."""
    cands = ["changed", *REJUDGED_VERSIONS]
    present = [v for v in cands if v in versions]
    if not present:
        return [], None
    main = qrels_version if qrels_version in present and qrels_version != "changed" else None
    if main is None:
        main = "changed" if "changed" in present else present[0]
    return present, main


def _by_dimension(per_query: dict[str, dict], subsets: dict[str, str], names: Sequence[str]) -> dict[str, dict]:
    """Per-query values averaged per query subset (InfoSearch dimension): {subset: {name: mean
    over the subset's queries where defined, "n_queries"}}."""
    groups: dict[str, list[dict]] = {}
    for qid, row in per_query.items():
        groups.setdefault(subsets.get(qid) or "(no dimension)", []).append(row)
    out = {}
    for dim in sorted(groups):
        rows = groups[dim]
        entry = {"n_queries": len(rows)}
        for n in names:
            vals = [r[n] for r in rows if r.get(n) is not None]
            entry[n] = sum(vals) / len(vals) if vals else None
        out[dim] = entry
    return out


def select_topics(db, project_id: int, qrels_version: str, variant: str | None) -> tuple[list[dict], str | None]:
    """The topics evaluated against ``qrels_version`` and the variant they were chosen by
    (:func:`choose_topics` of :func:`all_topics`)."""
    return choose_topics(all_topics(db, project_id), qrels_version, variant)


def choose_topics(topics: list[dict], qrels_version: str, variant: str | None) -> tuple[list[dict], str | None]:
    """Of a project's ``topics``, those evaluated against ``qrels_version``, and the variant they
    were chosen by.

    All instances when their qids are distinct (InstructIR: one qid per instance). When several
    variants share a qid (FollowIR: ``og`` and ``changed`` of one query), only one variant can be
    evaluated at a time: ``variant`` if given, else the one the qrels version judges
    (original -> og, changed -> changed, reversed -> reversed; a validated version as the version it validates).

    >>> topics = [{"qid": "1", "variant": "og"}, {"qid": "1", "variant": "changed"}]
    >>> choose_topics(topics, "changed", None)
    ([{'qid': '1', 'variant': 'changed'}], 'changed')
    """
    variants = sorted({t["variant"] for t in topics})
    if variant is None and len({t["qid"] for t in topics}) < len(topics):
        variant = _variant_for(qrels_version, variants)
    if variant is not None:
        chosen = [t for t in topics if t["variant"] == variant]
        if not chosen:
            raise NotFound(f"no instance of variant {variant!r}; this project has variants: {', '.join(variants) or 'none'}")
        topics = chosen
    qids = [t["qid"] for t in topics]
    if len(set(qids)) < len(qids):
        dup = sorted({q for q in qids if qids.count(q) > 1})[:5]
        raise IFJudgeError(f"several instances of variant {variant!r} share the qids {', '.join(dup)}; cannot build one run")
    return topics, variant


def all_topics(db, project_id: int, *, kind: str | None = None, instances: list[dict] | None = None) -> list[dict]:
    """Every topic of a project (its ``instances``: :func:`storage.projects.eval_topics`); in a
    generic project (``kind``, read when not given) a query without instruction is a topic too,
    with the instruction ``""`` (as MTEB's datasets hold it), so that every query is evaluated, as
    MTEB averages over every query."""
    topics = projects.eval_topics(db, project_id) if instances is None else instances
    if (kind or projects.get_project_by_id(db, project_id)["kind"]) != "generic":
        return topics
    have = {t["query_id"] for t in topics}
    extra = [{"instance_id": qid, "query_id": qid, "group_id": qid, "instruction": "", "variant": "og",
              "query": text, "qid": qid} for qid, text in projects.queries(db, project_id).items() if qid not in have]
    return topics + extra


def rejudged_instructions(db, project_id: int, version: str = "changed-validated") -> dict[str, str]:
    """query id -> the instruction the stored ``version`` qrels were judged under (FollowIR): the
    narrative version each query's re-judging round showed, as named by the version's newest build
    -- the published changed text for a re-judging of the published instruction, the edited text
    for an expert edit's round. Empty when no build of ``version`` comes from a re-judging (the
    imported instructions apply)."""
    from storage import narratives as narrative_store

    builds = projects.qrels_builds(db, project_id, version)
    if not builds:
        return {}
    judged = builds[0]["settings"].get("instructions")  # query -> narrative version judged
    if judged is None:  # a build made before the version judged was recorded: its studies' rounds
        judged = {}
        for s in builds[0]["studies"]:
            for vid in narrative_store.round_version_ids(db, s["id"]):  # oldest first: the newest wins
                judged[narrative_store.get_version(db, vid)["query_id"]] = vid
    return {q: narrative_store.get_version(db, vid)["text"] for q, vid in judged.items()}


class _Inputs:
    """What one evaluation reads from storage, each read once and passed down: the project, its
    qrels versions, its instances and topics (:func:`all_topics`) -- the instructed ones, and
    apart from them the bare queries (variant ``bare``: the baseline, never in a headline figure)
    --, each qrels version when first asked for, the query subsets and their corpora, the
    re-judged instructions, and the evaluation ``protocol`` (:func:`evaluation.protocols.resolve`)."""

    def __init__(self, db, proj: dict, protocol: str | None = None):
        self.db, self.proj, self.pid = db, proj, proj["id"]
        self.protocol = resolve_protocol(proj["kind"], protocol)
        self.versions = projects.qrels_versions(db, self.pid)
        instances = projects.eval_topics(db, self.pid)
        self.variants = {t["variant"] for t in instances if t["variant"] != BARE}
        topics = all_topics(db, self.pid, kind=proj["kind"], instances=instances)
        self.topics = [t for t in topics if t["variant"] != BARE]
        self.bare = [t for t in topics if t["variant"] == BARE]
        self._qrels: dict[str, dict] = {}

    def qrels(self, version: str) -> dict:
        if version not in self._qrels:
            self._qrels[version] = projects.qrels(self.db, self.pid, version)
        return self._qrels[version]

    def select(self, qrels_version: str, variant: str | None) -> tuple[list[dict], str | None]:
        if variant == BARE:  # asked for by name: the bare queries themselves
            return choose_topics(self.bare, qrels_version, variant)
        return choose_topics(self.topics, qrels_version, variant)

    @cached_property
    def subsets(self) -> dict[str, str]:
        return projects.query_subsets(self.db, self.pid)

    @cached_property
    def subset_documents(self) -> dict[str, list[str]]:
        """subset -> the ids of its own corpus (empty: one corpus for every query)."""
        return projects.subset_documents(self.db, self.pid)

    @cached_property
    def rejudged(self) -> dict[str, dict[str, str]]:
        """{re-judged version: its :func:`rejudged_instructions`} of the versions the project has."""
        return {v: rejudged_instructions(self.db, self.pid, v) for v in REJUDGED_VERSIONS if v in self.versions}


def _with_instructions(topics: list[dict], texts: dict[str, str]) -> tuple[list[dict], str | None]:
    """The ``changed`` topics with their re-judged narrative as instruction, and a hash of the
    replaced instructions (None when nothing differs)."""
    out, changed = [], {}
    for t in topics:
        text = texts.get(t["query_id"]) if t["variant"] == "changed" else None
        if text is not None and text != t["instruction"]:
            t = {**t, "instruction": text}
            changed[t["qid"]] = text
        out.append(t)
    if not changed:
        return topics, None
    return out, hashlib.sha256(json.dumps(changed, sort_keys=True).encode()).hexdigest()


def check_evaluable(db: Database, proj: dict, *, qrels_version: str, variant: str | None = None,
                    external: bool = False, inputs: _Inputs | None = None) -> tuple[list[dict], str | None, dict]:
    """What an evaluation of ``proj`` on ``qrels_version`` needs, checked before anything runs:
    documents to rank (unless the run is external), topics, and at least one judged query with a
    relevant document among them. Returns ``(topics, chosen variant, qrels of the version)``.

    Raises
    ------
    IFJudgeError
        Saying what is missing (no documents; no queries; no judged query).
    """
    pid = proj["id"]
    if not external and projects.project_counts(db, pid)["documents"] == 0:
        raise IFJudgeError(f"project {proj['name']!r} has no documents: a retriever has nothing to rank; "
                           f"add the benchmark's corpus to it (ifjudge import --project {proj['name']} --add corpus "
                           "FILE, or the Projects page's import section)")
    inputs = inputs or _Inputs(db, proj)
    topics, chosen_variant = inputs.select(qrels_version, variant)
    if not topics:
        raise IFJudgeError(f"project {proj['name']!r} has no queries (instances) to evaluate")
    qrels_all = inputs.qrels(qrels_version)
    if not any(r > 0 for t in topics for r in qrels_all.get(t["qid"], {}).values()):
        what = f" of variant {chosen_variant!r}" if chosen_variant else ""
        raise IFJudgeError(f"qrels version {qrels_version!r} has no judged query with a relevant document among the "
                           f"{len(topics)} evaluated topics{what} of {proj['name']!r}: nothing to evaluate")
    return topics, chosen_variant, qrels_all


def run_eval(db: Database, project: dict, *, model, template: str | None = None, qrels_version: str = "original",
             k: int = DEFAULT_K, measures: Sequence[str] | None = None, variant: str | None = None, rerank=None,
             candidates: str = "auto", missing: str = "zero", score: str = "cosine", progress: Progress | None = None,
             cache_dir=None, reuse: bool = True, ties: str | None = None, protocol: str | None = None,
             wise_version: str = "paper") -> int:
    """Retrieve (or reuse a stored run), evaluate, store; returns the eval run id
    (:func:`storage.eval_runs.load_eval_run`). The module docstring says what each measure needs.

    Parameters
    ----------
    project : dict
        The project's row (``storage.projects.get_project``).
    model : str or Retriever
        ``"bm25"``, ``"minilm"`` (bundled all-MiniLM-L6-v2), a sentence-transformers directory or
        hub name, a TREC run file, ``"external:<name>"`` (a run stored by an import), or a
        :class:`~evaluation.retrievers.Retriever` (:func:`evaluation.retrievers.build.build_retriever`).
    template : str, optional
        A name of :data:`evaluation.templates.TEMPLATES` (ignored for external runs); default: the
        protocol's (MTEB's query, space, instruction; InstructIR's paper ``sep``).
    qrels_version : str
        ``original``, ``changed``, ``reversed`` or a validated version; must exist in the project.
    k : int
        Depth of a full-corpus run (and of its reranked first stage), 1000 as MTEB; with
        ``top_ranked`` candidate lists every candidate is ranked, as MTEB does.
    measures : list of str, optional
        Names of :mod:`evaluation.measure_registry`; default
        :func:`~evaluation.measure_registry.default_measures` of the kind. Asked for by name and
        not computable, a measure is stored as undefined with the reason.
    variant : str, optional
        Evaluate only this variant's instances (default: :func:`choose_topics`).
    rerank : str or Reranker, optional
        A CrossEncoder re-scoring the top ``k`` of the first stage.
    candidates : {"auto", "corpus", "top_ranked"}
        The whole corpus or each query's ``top_ranked`` list; ``auto``: the lists when there are some.
    missing : {"zero", "omit"}
        Judged topics absent from the run count as 0 or are left out of the means (listed either way).
    score, progress, cache_dir : optional
        Similarity of a dense model (cosine, dot); ``progress(done, total, message)``; embedding cache.
    reuse : bool
        Reuse a stored run with the same retrieval key (default); False retrieves again.
    ties : {"docid", "run-order"}, optional
        Rank of equal scores for p-MRR, WISE, SICR (:func:`evaluation.pmrr.doc_ranks`), in their
        names: doc id descending (MTEB 2.26) or a score-only stable sort (FollowIR's code: over
        candidate lists, the lists' order). Default: the protocol's.
    protocol : {"mteb", "paper"}, optional
        MTEB 2.26's rules (default) or the paper's code (:mod:`evaluation.protocols`); stored.
    wise_version : {"paper", "evaluator"}
        WISE as eq. 7 (default) or as the evaluator computes it (:func:`evaluation.infosearch.wise_score`).


    Raises IFJudgeError (nothing retrieved or stored) when the project has no documents, no topic,
    or no judged query with a relevant document in ``qrels_version`` for the evaluated variant.

    Examples
    --------
    >>> from annotation.demo import load_demo
    >>> from storage.db import connect
    >>> from storage.eval_runs import load_eval_run
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> demo = projects.get_project(db, "demo")
    >>> first = load_eval_run(db, run_eval(db, demo, model="bm25", qrels_version="original"))
    >>> again = load_eval_run(db, run_eval(db, demo, model="bm25", qrels_version="changed"))
    >>> first["model"], first["settings"]["reused_run"], again["settings"]["reused_run"]  # same retrieval: reused
    ('bm25', False, True)
    """
    proj = project
    inputs = _Inputs(db, proj, protocol)
    ties = ties or inputs.protocol.ties
    _check_options(proj, inputs.versions, qrels_version=qrels_version, candidates=candidates, ties=ties, k=k)
    asked = _Measures(proj["kind"], measures, ties=ties, wise_version=check_wise_version(wise_version))
    retriever = build_retriever(model, rerank=rerank, score=score, cache_dir=cache_dir,
                                stored_run=lambda name: store.external_run(db, proj["id"], name))
    template_name = "external" if retriever.external else get_template(template or inputs.protocol.template).name
    topics, chosen_variant, qrels_all = check_evaluable(db, proj, qrels_version=qrels_version, variant=variant,
                                                        external=retriever.external, inputs=inputs)
    retrieval = _Retrieval(db, proj, retriever, template_name, k=k, reuse=reuse, progress=progress,
                           candidates=candidates, inputs=inputs)
    main = _main_run(inputs, retrieval, topics, qrels_version=qrels_version, variant=chosen_variant)
    return _score_and_store(inputs, retrieval, main, asked, qrels_all, qrels_version=qrels_version, missing=missing,
                            ties=ties, progress=progress)


def _score_and_store(inputs: "_Inputs", retrieval: "_Retrieval", main: "_MainRun", asked: "_Measures", qrels_all: dict,
                     *, qrels_version: str, missing: str, ties: str, progress: Progress | None) -> int:
    """Score the measures of the main run (standard ones, Robustness@k, those pairing the runs of
    several variants), per subset and as the mean over subsets, the bare-query baseline, and
    store the eval run; returns its id."""
    if progress:
        progress(0, 1, "evaluating")
    qrels_eval = {t["qid"]: qrels_all[t["qid"]] for t in main.topics if t["qid"] in qrels_all}
    protocol = inputs.protocol
    scored_run = without_identical_ids(main.run) if protocol.ignore_identical_ids else main.run
    groups = robustness_groups(main.topics, protocol.robustness_groups)
    scores = _score_measures(qrels_eval, scored_run, main.topics, asked, missing=missing, groups=groups,
                             singletons=protocol.robustness_singletons)
    paired = None
    if asked.paired:
        paired = _score_paired(inputs, scores, retrieval, main, qrels_version=qrels_version, ties=ties, asked=asked)
    asked.finish(scores)
    _score_subsets(inputs, scores, retrieval, main, asked, groups)
    baseline = None
    if inputs.bare and main.variant != BARE:
        baseline = _score_baseline(inputs, scores, retrieval, main, asked, qrels_eval, qrels_version=qrels_version,
                                   missing=missing)
    run_id = _store(inputs, retrieval, main, asked, scores, paired, baseline, qrels_version=qrels_version, ties=ties)
    if progress:
        progress(1, 1, "evaluating")
    return run_id


def without_identical_ids(run: Mapping[str, Mapping[str, float]]) -> Mapping[str, Mapping[str, float]]:
    """The run without a document whose id is its query's (BEIR's and InstructIR's
    ``ignore_identical_ids``); the run itself when no query ranks its own id.

    >>> without_identical_ids({"q1": {"q1": 0.9, "d1": 0.5}})
    {'q1': {'d1': 0.5}}
    """
    if not any(q in docs for q, docs in run.items()):
        return run
    return {q: {d: v for d, v in docs.items() if d != q} if q in docs else docs for q, docs in run.items()}


def robustness_groups(topics: list[dict], rule: str = "group") -> dict[str, str]:
    """qid -> the group Robustness@k takes its minimum over: the instance's ``group_id`` (MTEB;
    InstructIR's ids ``<query>_<n>``) or, with ``rule="query-text"``, its query's text, as
    InstructIR's ``robust_eval.py`` groups (``split('[SEP]')``, one group per query).

    >>> topics = [{"qid": "a_1", "group_id": "a", "query": "pizza "}, {"qid": "b_1", "group_id": "b", "query": "pizza"}]
    >>> robustness_groups(topics), robustness_groups(topics, "query-text")
    ({'a_1': 'a', 'b_1': 'b'}, {'a_1': 'pizza', 'b_1': 'pizza'})
    """
    if rule == "query-text":
        return {t["qid"]: t["query"].strip() for t in topics}
    return {t["qid"]: t["group_id"] for t in topics}


def _score_subsets(inputs: "_Inputs", scores: "_Scores", retrieval: "_Retrieval", main: "_MainRun",
                   asked: "_Measures", groups: dict[str, str]) -> None:
    """Each subset's figures and the mean over subsets (:mod:`evaluation.subsets`), and IFIR's
    level scores: added to ``scores`` (``evaluation["subsets"]``, ``evaluation["levels"]``); with
    several subsets the stored ``metrics`` are the means over subsets, the means over queries
    kept in ``evaluation["query_means"]``."""
    subset_of = {t["qid"]: inputs.subsets.get(t["query_id"], "") for t in main.topics}
    level_of = {t["qid"]: t["variant"] for t in main.topics if t["variant"] in ("level1", "level2", "level3")}
    present = {subset_of.get(q, "") for q in scores.per_query}
    if len(present) < 2:
        if level_of:
            scores.evaluation["levels"] = level_means(scores.per_query, level_of, asked.standard)
        return
    summed = [str(m) for m in parse_all(asked.standard) if getattr(m, "aggregate", "mean") == "sum"]
    by_subset = subset_means(scores.per_query, subset_of, asked.standard, summed=summed)
    for k, per_group in scores.transient.get("robustness", {}).items():
        subset_of_group = {g: subset_of.get(q, "") for q, g in groups.items()}
        for subset, entry in by_subset.items():
            values = [v for g, v in per_group.items() if subset_of_group.get(g) == subset and v is not None]
            entry["metrics"][f"Robustness@{k}"] = sum(values) / len(values) if values else None
    for name in scores.metrics:
        per_query = _paired_per_query(scores, name)
        if per_query is None:
            continue
        for subset, entry in by_subset.items():
            values = [v for q, v in per_query.items() if subset_of.get(q, "") == subset and v is not None]
            entry["metrics"][name] = sum(values) / len(values) if values else None
    modes = {subset: (cands is not None, corpus) for subset, _, corpus, cands in retrieval.parts(main.topics)}
    for subset, entry in by_subset.items():
        cands, corpus = modes.get(subset, (False, None))
        entry["candidates"] = "top_ranked" if cands else "corpus"
        entry["corpus"] = len(inputs.subset_documents[corpus]) if corpus is not None else "whole project"
        if level_of:
            pq = {q: row for q, row in scores.per_query.items() if subset_of.get(q, "") == subset}
            if levels := level_means(pq, level_of, asked.standard):
                entry["levels"] = levels
    names = [n for n in scores.metrics if any(n in e["metrics"] for e in by_subset.values())]
    scores.evaluation["query_means"] = {n: scores.metrics[n] for n in names}
    for n, value in over_subsets(by_subset, names, summed=summed).items():
        scores.metrics[n] = defined_or_none(value)  # stored as null, as before
    scores.evaluation["subsets"] = by_subset
    scores.evaluation["averaging"] = f"mean over {len(by_subset)} subsets"
    if level_of:
        scores.evaluation["levels"] = levels_over_subsets(by_subset)


def _paired_per_query(scores: "_Scores", name: str) -> dict[str, float | None] | None:
    """The per-query values behind a stored paired measure (p-MRR, WISE, SICR), None for another."""
    base = name.split("(", 1)[0]
    if base not in PAIRED_MEASURES:
        return None
    qrels = parse_all([name])[0].params.get("qrels")
    info = scores.transient.get("infosearch")
    if info is not None:
        rows = info.get(qrels or info["main"], {})
        return {q: row.get(base) for q, row in rows.items()}
    pm = scores.evaluation.get("p-MRR")
    if base == "p-MRR" and pm:
        return pm["per_query"].get(qrels or pm["qrels"][1], {})
    return None


def _score_baseline(inputs: "_Inputs", scores: "_Scores", retrieval: "_Retrieval", main: "_MainRun",
                    asked: "_Measures", qrels_eval: dict, *, qrels_version: str, missing: str) -> dict:
    """The bare queries (variant ``bare``) as the baseline of the instructed ones, never averaged
    into a headline figure: their run (kept for INSTFOL: ``ifjudge eval instfol``), its standard
    measures on the bare queries' own qrels (IFIR's ``no_inst``) and on the qrels of the
    instructed queries of the same group (each instructed instance scored with its bare query's
    ranking: what the instruction gains, per level). Added to ``scores.evaluation["baseline"]``;
    returns the record of the bare run."""
    bare = inputs.bare
    run, key, reused = retrieval.run(BARE, bare)
    version = qrels_version
    qrels = inputs.qrels(version)
    if not any(t["qid"] in qrels for t in bare):
        version, qrels = "original", inputs.qrels("original")
    own = {t["qid"]: qrels[t["qid"]] for t in bare if t["qid"] in qrels}
    names = asked.standard or ["nDCG@10"]
    subset_of = {t["qid"]: inputs.subsets.get(t["query_id"], "") for t in [*bare, *main.topics]}
    level_of = {t["qid"]: t["variant"] for t in main.topics if t["variant"] in ("level1", "level2", "level3")}

    def figures(qrels_part: dict, run_part: Mapping) -> dict:
        result = measures_mod.evaluate(qrels_part, {q: run_part[q] for q in qrels_part if q in run_part}, names,
                                       missing=missing)
        out = {"n_queries": result["n_queries"], "metrics": result["measures"],
               "missing_queries": result["missing_queries"]}
        if len({subset_of.get(q, "") for q in result["per_query"]}) > 1:
            by_subset = subset_means(result["per_query"], subset_of, names)
            out["metrics"] = {n: defined_or_none(v) for n, v in over_subsets(by_subset, names).items()}
            out["subsets"] = by_subset
        if level_of and (levels := level_means(result["per_query"], level_of, names)):
            out["levels"] = levels
        out["per_query"] = result["per_query"]
        return out

    bare_of_group = {t["group_id"]: t["qid"] for t in bare}
    on_instructed = {t["qid"]: run[bare_of_group[t["group_id"]]] for t in main.topics
                     if t["group_id"] in bare_of_group and bare_of_group[t["group_id"]] in run}
    scores.evaluation["baseline"] = {
        "variant": BARE, "qrels": version, **figures(own, run),
        "on_instructed": figures({q: qrels_eval[q] for q in on_instructed if q in qrels_eval}, on_instructed),
    }
    return {"variant": BARE, "retrieval_key": key, "run": as_dict(run), "reused": reused}


@dataclass
class _MainRun:
    """The run of the evaluated topics (``topics``: those of ``variant``, with re-judged
    instructions when ``instr_key`` names them) and how it was obtained."""

    run: dict
    key: str
    reused: bool
    topics: list[dict]
    variant: str | None
    instr_key: str | None
    seconds: float


def _main_run(inputs: _Inputs, retrieval: "_Retrieval", topics: list[dict], *, qrels_version: str,
              variant: str | None) -> _MainRun:
    """Retrieve (or reuse) the run of the selected topics. The validated changed qrels of a
    re-judged FollowIR query judge its newest narrative: the changed run they are scored with uses
    that narrative as the instruction."""
    instr_key = None
    if variant == "changed" and qrels_version in REJUDGED_VERSIONS and qrels_version in inputs.versions:
        topics, instr_key = _with_instructions(topics, inputs.rejudged[qrels_version])
    started = time.perf_counter()
    run, key, reused = retrieval.run(variant, topics, instr_key)
    seconds = time.perf_counter() - started
    if retrieval.retriever.external:
        _check_external_matches(retrieval.retriever, run, topics)
    return _MainRun(run, key, reused, topics, variant, instr_key, seconds)


def _store(inputs: _Inputs, retrieval: "_Retrieval", main: _MainRun, asked: "_Measures", scores: "_Scores",
           paired: dict | None, baseline: dict | None, *, qrels_version: str, ties: str) -> int:
    """Store the eval run: its settings (what decided the run and the scores: the protocol and
    the options it resolved to), metrics, per-query values, run."""
    retriever = retrieval.retriever
    candidates, k, corpora = retrieval.modes(main.topics)
    settings = {
        "protocol": inputs.protocol.record(template=retrieval.template_name, ties=ties),
        "k": k, "variant": main.variant,
        "candidates": {s: "top_ranked" if c else "corpus" for s, c in candidates.items()}
        if isinstance(candidates, dict) else "top_ranked" if candidates else "corpus",
        **({"corpora": corpora} if corpora else {}),
        "rerank": retriever.reranker, "model_identity": retriever.identity(), "retrieval_key": main.key,
        "reused_run": main.reused, "retrieval_seconds": round(main.seconds, 4), "measures": asked.names,
        "ties": ties, "wise_version": asked.wise_version, "evaluation": scores.evaluation,
        **({"paired_run": paired} if paired is not None else {}),
        **({"baseline_run": baseline} if baseline is not None else {}),
    }
    if retrieval.template_name == "external":
        settings["protocol"]["overridden"] = [o for o in settings["protocol"]["overridden"] if o != "template"]
    return store.store_eval_run(
        inputs.db, inputs.pid, model=retriever.name, template=retrieval.template_name, settings=settings,
        qrels_version=qrels_version, metrics=scores.metrics, per_query=scores.per_query, run=as_dict(main.run),
    )


def _check_options(proj: dict, versions: Sequence[str], *, qrels_version: str, candidates: str, ties: str,
                   k: int) -> None:
    if not isinstance(k, int) or k < 1:
        raise IFJudgeError(f"k must be an integer >= 1, got {k!r}")
    if qrels_version not in versions:
        raise NotFound(f"project {proj['name']!r} has no qrels version {qrels_version!r}; it has: {', '.join(versions) or 'none'}")
    if candidates not in CANDIDATE_MODES:
        raise IFJudgeError(f"unknown candidates mode {candidates!r}; expected one of {', '.join(CANDIDATE_MODES)}")
    if ties not in TIES:
        raise IFJudgeError(f"unknown tie rule {ties!r}; expected one of {', '.join(TIES)}")


def retrieval_key(**parts) -> str:
    """SHA-256 of the parts that decide a run (model identity, template, k, variant, candidates,
    reranker, replaced instructions): equal keys, equal runs.

    >>> retrieval_key(model={"retriever": "bm25"}, k=10) == retrieval_key(k=10, model={"retriever": "bm25"})
    True
    """
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _check_external_matches(retriever: Retriever, run: dict, topics: list[dict]) -> None:
    """Refuse an external run that ranks none of the evaluated topics (nothing would be scored but zeros)."""
    if any(run.get(t["qid"]) for t in topics):
        return
    ids = sorted(getattr(retriever, "query_ids", lambda: [])())
    wanted = sorted({t["qid"] for t in topics})
    variants = sorted({t["variant"] for t in topics})
    mteb = ", ".join(f"{wanted[0]}-{v}" for v in variants) if wanted else ""
    raise IFJudgeError(
        f"{retriever.name} ranks none of the {len(wanted)} evaluated queries: its query ids are "
        f"{', '.join(ids[:3]) or 'none'}{', ...' if len(ids) > 3 else ''}; expected the project's ids "
        f"({', '.join(wanted[:3])}{', ...' if len(wanted) > 3 else ''}) or MTEB's ({mteb}); nothing was scored")


def _name(base: str, ties: str, qrels: str | None = None, wise_version: str = "paper") -> str:
    """The canonical name a paired measure is stored under (:func:`evaluation.results.measure_name`)."""
    return measure_name(base, qrels=qrels, ties=ties, version=wise_version)


def _in_rank_order(docs: dict[str, float]) -> dict[str, float]:
    """A ranking listed by score descending, equal scores by doc id descending (how IFJudge's
    retrievers list a run: :func:`evaluation.retrievers.topk.top_k`)."""
    return dict(sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True))


class _Retrieval:
    """The runs of one retriever in one evaluation: a variant's run is the stored one with the same
    retrieval key (when ``reuse``), else retrieved now. Documents are a
    :class:`storage.projects.StoredDocuments`, made when first needed: the retrievers read their
    texts a bounded chunk at a time.

    **A subset is its own dataset** (:mod:`evaluation.subsets`): the topics are retrieved subset by
    subset, each against its own corpus when the release publishes one per subset
    (``storage.projects.subset_documents``) and in its own mode: with ``candidates="auto"`` a
    subset whose topics have ``top_ranked`` lists ranks every candidate (``k`` is not used; the
    depth is the longest list), as MTEB ranks every document of ``top_ranked``, and a subset
    without lists ranks its corpus to depth ``k``."""

    def __init__(self, db, proj: dict, retriever: Retriever, template_name: str, *, k: int, reuse: bool,
                 progress: Progress | None, candidates: str, inputs: "_Inputs"):
        self.db, self.pid, self.retriever, self.template_name = db, proj["id"], retriever, template_name
        # an external run reads no template; its reranker reads the bare query
        self.template = get_template("query" if retriever.external else template_name)
        self.k, self.reuse, self.progress, self.mode = k, reuse, progress, candidates
        self.ranked = projects.top_ranked(db, self.pid) if candidates != "corpus" else {}
        if candidates == "top_ranked" and not self.ranked:
            raise NotFound(f"project {proj['name']!r} has no top_ranked candidate lists")
        self.subset_of = inputs.subsets
        self.corpora = {} if retriever.external else inputs.subset_documents
        self.corpora_key = hashlib.sha256(json.dumps(self.corpora, sort_keys=True).encode()).hexdigest()
        self._documents: dict[str | None, projects.StoredDocuments] = {}

    def parts(self, topics: list[dict]) -> list[tuple[str, list[dict], str | None, dict | None]]:
        """``(subset, its topics, the subset whose own corpus they rank or None for the whole
        corpus, candidate lists or None)`` for each subset of ``topics``."""
        out = []
        for subset, ts in split_by_subset(topics, self.subset_of).items():
            if self.mode == "corpus" or not (self.mode == "top_ranked" or any(t["qid"] in self.ranked for t in ts)):
                cands = None
            else:
                cands = self.ranked
            out.append((subset, ts, subset if subset in self.corpora else None, cands))
        return out

    def modes(self, topics: list[dict]) -> tuple[bool | dict, int | None, dict]:
        """``(candidates, k stored and keyed, corpora)`` of a retrieval of ``topics``: candidates
        True / False when every subset is retrieved one way, else ``{subset: bool}``; k None when
        every candidate of every list is ranked; corpora ``{subset: documents}`` of the subsets
        ranked against their own corpus."""
        parts = self.parts(topics)
        by_subset = {subset: cands is not None for subset, _, _, cands in parts}
        uniform = len(set(by_subset.values())) <= 1
        candidates = next(iter(by_subset.values()), False) if uniform else by_subset
        corpora = {subset: len(self.corpora[corpus]) for subset, _, corpus, _ in parts if corpus is not None}
        return candidates, (None if candidates is True else self.k), corpora

    def key(self, variant: str | None, topics: list[dict], instructions: str | None = None) -> str:
        candidates, k, corpora = self.modes(topics)
        parts = dict(model=self.retriever.identity(), template=self.template_name, k=k, variant=variant,
                     candidates=candidates, rerank=self.retriever.reranker)
        if instructions is not None:  # instructions other than the imported ones (re-judged narratives)
            parts["instructions"] = instructions
        if corpora:  # each subset against its own corpus: not the run of the union corpus
            parts["corpora"] = self.corpora_key
        return retrieval_key(**parts)

    def documents(self, corpus: str | None) -> projects.StoredDocuments:
        """The project's documents (``corpus`` None) or one subset's own corpus, made once per
        evaluation (BM25 keeps its index of the same documents for the next run)."""
        if corpus not in self._documents:
            self._documents[corpus] = projects.StoredDocuments(self.db, self.pid, subset=corpus)
        return self._documents[corpus]

    def run(self, variant: str | None, topics: list[dict], instructions: str | None = None) -> tuple[Mapping, str, bool]:
        """``(run, retrieval key, reused)`` of ``topics`` (the instances of ``variant``)."""
        key = self.key(variant, topics, instructions)
        if self.reuse:
            stored = store.find_run(self.db, self.pid, key)
            if stored is not None:
                if getattr(self.retriever, "lists_ties_by_docid", False):
                    # IFJudge's retrievers list equal scores by doc id descending; records stored before
                    # run order was kept hold a paired run with sorted keys: listed again in that order
                    stored = {q: _in_rank_order(docs) for q, docs in stored.items()}
                return stored, key, True
        needs_documents = not self.retriever.external or self.retriever.reranker is not None
        runs = []
        for _, ts, corpus, cands in self.parts(topics):
            # read from storage a chunk at a time by the retrievers: the corpus is never held in memory
            docs = self.documents(corpus) if needs_documents else {}
            depth = self.k if cands is None else max((len(cands.get(t["qid"], ())) for t in ts), default=0) or 1
            runs.append(self.retriever.retrieve(ts, docs, template=self.template, k=depth, candidates=cands,
                                                progress=self.progress))
        return merge_runs(runs), key, False


def merge_runs(runs: list[Mapping]) -> Mapping:
    """One run of the runs of disjoint query sets (the subsets of an evaluation): the run itself
    when there is one, else one dict of every query's ranking (each in its own order).

    >>> merge_runs([{"a": {"d1": 1.0}}, {"b": {"d2": 0.5}}])
    {'a': {'d1': 1.0}, 'b': {'d2': 0.5}}
    """
    if len(runs) == 1:
        return runs[0]
    merged: dict[str, dict[str, float]] = {}
    for run in runs:
        merged.update(as_dict(run))
    return merged


@dataclass
class _Scores:
    """What is stored of an evaluation: mean ``metrics``, ``per_query`` values and the
    ``evaluation`` details (queries, missing ones, why a measure is undefined)."""

    metrics: dict[str, float | None]
    per_query: dict[str, dict]
    evaluation: dict
    # what later steps read and nothing stores (Robustness's per-group minima, InfoSearch's rows)
    transient: dict = field(default_factory=dict)

    def record(self, name: str, value) -> None:
        """Store one measure's value as a measure returned it: a number, or null in ``metrics``
        with the reason of its :class:`~evaluation.undefined.Undefined` beside it in
        ``evaluation["undefined"]`` (a defined value drops an earlier reason of that name)."""
        self.metrics[name] = defined_or_none(value)
        if isinstance(value, Undefined):
            self.evaluation["undefined"][name] = value.reason
        else:
            self.evaluation["undefined"].pop(name, None)


class _Measures:
    """The measures of one evaluation, parsed by :func:`evaluation.measure_registry.parse_all`:
    ``standard`` ones (:func:`evaluation.measures.evaluate`), ``Robustness@k`` cut-offs, the paired
    ones (p-MRR, WISE, SICR) and those the runner does not compute (INSTFOL). ``explicit`` when the
    caller named them (then each one is reported, undefined with a reason when not computable);
    else the kind's default list, whose instruction-following measures appear when computable."""

    def __init__(self, kind: str, measures: Sequence[str] | str | None, *, ties: str = "docid",
                 wise_version: str = "paper"):
        self.explicit, self.ties, self.wise_version = measures is not None, ties, wise_version
        parsed = parse_all(measures if measures is not None else list(default_measures(kind)))
        for m in parsed:
            if isinstance(m, IFMeasure) and m.name in PAIRED_MEASURES and str(m) != m.name:
                raise IFJudgeError(f"measure {str(m)!r}: {m.name} takes its tie rule from --ties (ties=), its "
                                   f"version from --wise-version (version=), is computed on every changed-side "
                                   f"qrels version the project has (qrels=) and takes its defaults otherwise; "
                                   f"write {m.name}")
        self.names = [str(m) for m in parsed]
        self.standard = [str(m) for m in parsed if not isinstance(m, IFMeasure)]
        self.robustness = [m.cutoff for m in parsed if isinstance(m, IFMeasure) and m.name == "Robustness"]
        self.paired_names = [m.name for m in parsed if isinstance(m, IFMeasure) and m.name in PAIRED_MEASURES]
        self.elsewhere = [m for m in parsed if isinstance(m, IFMeasure)
                          and m.name not in PAIRED_MEASURES and m.name != "Robustness"]

    @property
    def paired(self) -> bool:
        return bool(self.paired_names)

    def finish(self, scores: "_Scores") -> None:
        """Drop the paired measures not asked for; report asked ones that could not be computed."""
        metrics, undefined = scores.metrics, scores.evaluation["undefined"]
        for name in list(metrics):
            base = name.split("(", 1)[0]  # a paired measure's parameters are in parentheses
            if base in PAIRED_MEASURES and base not in self.paired_names:
                del metrics[name]
                undefined.pop(name, None)
        if not self.explicit:
            return
        for base in self.paired_names:
            name = _name(base, self.ties, wise_version=self.wise_version)
            if name not in metrics:
                scores.record(name, Undefined(
                    "needs og and changed instances of the same queries and the original and changed qrels "
                    "(FollowIR, InfoSearch)" if base == "p-MRR" else
                    "needs og, changed and reversed instances and the original and changed qrels (InfoSearch)"))
        for m in self.elsewhere:
            scores.record(str(m), Undefined(f"computed from judge scores by `{m.spec.command}` ({m.spec.computed_by})"))


def _score_measures(qrels_eval: dict, run: Mapping, topics: list[dict], asked: _Measures, *,
                    missing: str, groups: dict[str, str] | None = None, singletons: bool = False) -> _Scores:
    """The standard measures, and Robustness@k when some group (``groups``: qid -> group, default
    the instances' group ids) has several evaluated instances (or always, with ``singletons``:
    InfoSearch's Table 2 reports it per mode, where it is nDCG@k for one-instance groups)."""
    ranked_run = {q: docs for q, docs in run.items() if docs and q in qrels_eval}
    # with no standard measure asked, NumQ gives the per-query rows and counts, then is dropped
    result = measures_mod.evaluate(qrels_eval, ranked_run, asked.standard or ["NumQ"], missing=missing)
    if not asked.standard:
        result["measures"] = {}
        result["per_query"] = {q: {} for q in result["per_query"]}
    scores = _Scores(metrics=dict(result["measures"]), per_query=result["per_query"], evaluation={
        "n_queries": result["n_queries"],
        "missing_queries": result["missing_queries"],
        "missing": missing,
        "undefined": {},
    })
    groups = robustness_groups(topics) if groups is None else groups
    groups = {q: g for q, g in groups.items() if q in qrels_eval}
    sizes: dict[str, int] = {}
    for g in groups.values():
        sizes[g] = sizes.get(g, 0) + 1
    for k in asked.robustness:
        name = f"Robustness@{k}"
        if not sizes or not (singletons or any(n > 1 for n in sizes.values())):
            if asked.explicit:
                scores.record(name, Undefined("no group has more than one evaluated instance"))
            continue
        rob = robustness(qrels_eval, ranked_run, k=k, groups=groups)
        scores.record(name, rob[name])
        scores.transient.setdefault("robustness", {})[k] = rob["per_group"]
        scores.evaluation["robustness"] = {"n_groups": rob["n_groups"], "empty_groups": rob["empty_groups"]}
    return scores


def _score_paired(inputs: _Inputs, scores: _Scores, retrieval: _Retrieval, main: _MainRun, *, qrels_version: str,
                  ties: str, asked: _Measures) -> dict | None:
    """p-MRR (FollowIR) and InfoSearch's WISE / SICR / p-MRR, from the runs of the other variants
    (retrieved or reused): added to ``scores``; returns the paired runs' record, or None when the
    project cannot pair instances."""
    proj, variants, variant = inputs.proj, inputs.variants, main.variant
    pair_versions, main_version = _paired_versions(qrels_version, inputs.versions)
    if not (proj["kind"] in PAIRED_KINDS and {"og", "changed"} <= variants and "original" in inputs.versions
            and pair_versions and variant in ("og", "changed")):
        return None
    other = "changed" if variant == "og" else "og"
    other_run, other_key, other_reused = retrieval.run(other, inputs.select(qrels_version, other)[0])
    paired = {"variant": other, "retrieval_key": other_key, "run": as_dict(other_run), "reused": other_reused}
    run_og, run_new = (main.run, other_run) if variant == "og" else (other_run, main.run)
    if retrieval.retriever.external and run_og == run_new:
        reason = ("the external run ranks the og and changed instances alike (keyed by query id): give "
                  "'<qid>-og' / '<qid>-changed' ids (MTEB's) or one run file per mode")
        for name in (_name("p-MRR", ties), *(_name("p-MRR", ties, nv) for nv in pair_versions)):
            scores.record(name, Undefined(reason))
        return paired
    runs_new, instructions = _changed_runs(inputs, retrieval, main, run_new, pair_versions)
    # a run read back from storage is a dict: converted to arrays once for every measure and version
    converted: dict[int, RankedRun] = {}
    for r in (run_og, run_new, *runs_new.values()):
        if id(r) not in converted:
            converted[id(r)] = as_ranked_run(_tie_listed(r, retrieval, ties))
    run_og, run_new = converted[id(run_og)], converted[id(run_new)]
    runs_new = {nv: converted[id(r)] for nv, r in runs_new.items()}
    _score_pmrr(inputs, scores, run_og, runs_new, instructions, main_version=main_version, ties=ties)
    if proj["kind"] == "infosearch" and "reversed" in variants:
        paired["reversed"] = _score_infosearch(inputs, scores, retrieval, main, asked, qrels_version=qrels_version,
                                               pair_versions=pair_versions, main_version=main_version,
                                               run_og=run_og, run_new=run_new, ties=ties)
    return paired


def in_candidate_order(run: Mapping[str, Mapping[str, float]], lists: Mapping[str, Sequence[str]]) -> dict:
    """The run listed by score descending, equal scores in the order of the query's candidate list
    (``top_ranked``): what a score-only stable sort of FollowIR's code gives, whose results list
    each query's candidates in their list's order. A query without a list keeps its order.

    >>> in_candidate_order({"q": {"a": 0.0, "b": 0.5, "c": 0.0}}, {"q": ["c", "b", "a"]})
    {'q': {'b': 0.5, 'c': 0.0, 'a': 0.0}}
    """
    out = {}
    for qid, docs in run.items():
        order = lists.get(qid)
        if not order:
            out[qid] = dict(docs)
            continue
        position = {d: i for i, d in enumerate(order)}
        out[qid] = dict(sorted(docs.items(), key=lambda x: (-x[1], position.get(x[0], len(order)))))
    return out


def _tie_listed(run: Mapping, retrieval: "_Retrieval", ties: str) -> Mapping:
    """The run whose order ``ties="run-order"`` ranks by: IFJudge's own retrievers list equal scores
    by doc id descending, which says nothing of a paper's order; over candidate lists they are
    listed in the lists' order (:func:`in_candidate_order`). An external run keeps its own order."""
    if ties != "run-order" or not retrieval.ranked or not getattr(retrieval.retriever, "lists_ties_by_docid", False):
        return run
    return in_candidate_order(run, retrieval.ranked)


def _changed_runs(inputs: _Inputs, retrieval: _Retrieval, main: _MainRun, run_new: dict,
                  pair_versions: list[str]) -> tuple[dict[str, dict], dict[str, str]]:
    """The changed run each changed-side qrels version judges (made with the instruction its
    annotators judged under: the published changed text, or a re-judged narrative), and which
    instructions those were (``imported`` / ``re-judged narratives``)."""
    published_topics = inputs.select("changed", "changed")[0]
    rejudged_topics = {nv: _with_instructions(published_topics, texts) for nv, texts in inputs.rejudged.items()}
    runs_new, instructions = {}, {}
    for nv in pair_versions:
        nv_topics, wanted = rejudged_topics.get(nv, (published_topics, None))
        if (main.variant == "changed" and wanted == main.instr_key) or (main.variant == "og" and wanted is None):
            runs_new[nv] = run_new
        else:
            runs_new[nv] = retrieval.run("changed", nv_topics, wanted)[0]
        instructions[nv] = "re-judged narratives" if wanted else "imported"
    return runs_new, instructions


def _score_pmrr(inputs: _Inputs, scores: _Scores, run_og: RankedRun, runs_new: dict[str, RankedRun],
                instructions: dict[str, str], *, main_version: str, ties: str) -> None:
    """FollowIR's p-MRR of the og run against the changed run on each changed-side qrels version
    (``p-MRR(qrels=...)``), and the evaluated one's as ``p-MRR``: added to ``scores``."""
    by_qrels, values = {}, {}
    for nv, run_new in runs_new.items():
        pm = p_mrr(inputs.qrels("original"), inputs.qrels(nv), run_og, run_new, ties=ties,
                   qrels_names=("original", nv))
        values[nv] = pm["p-MRR"]
        by_qrels[nv] = {"p-MRR": defined_or_none(pm["p-MRR"]), "n_queries": pm["n_queries"],
                        "n_documents": pm["n_documents"], "missing_queries": pm["missing_queries"],
                        "per_query": pm["per_query"]}
        scores.record(_name("p-MRR", ties, nv), pm["p-MRR"])
    main = by_qrels[main_version]
    scores.record(_name("p-MRR", ties), values[main_version])
    scores.evaluation["p-MRR"] = {
        "qrels": ["original", main_version], "n_queries": main["n_queries"],
        "missing_queries": main["missing_queries"], "ties": ties,
        "by_qrels": {nv: {k2: v for k2, v in b.items() if k2 != "per_query"} for nv, b in by_qrels.items()},
        "changed_run_instructions": instructions, "per_query": {nv: b["per_query"] for nv, b in by_qrels.items()}}


def _score_infosearch(inputs: _Inputs, scores: _Scores, retrieval: _Retrieval, main: _MainRun, asked: _Measures, *,
                      qrels_version: str, pair_versions: list[str], main_version: str, run_og: RankedRun,
                      run_new: RankedRun, ties: str) -> dict:
    """InfoSearch (docs/metrics.md): WISE, SICR and its p-MRR from the original,
    instructed and reversed runs; p-MRR is InfoSearch's (negatives = relevant originally, not under
    the instruction), not FollowIR's changed-document rule; per dimension too; and the paper's
    Table 2 (:func:`_table2`). Returns the record of the reversed run."""
    evaluation = scores.evaluation
    rev_topics = inputs.select(qrels_version, "reversed")[0]
    rev_run, rev_key, rev_reused = retrieval.run("reversed", rev_topics)
    rev_ranked = as_ranked_run(_tie_listed(rev_run, retrieval, ties))  # converted once when read back from storage
    subsets = inputs.subsets
    names = ("WISE", "SICR", "p-MRR")
    wise_version = asked.wise_version
    info_by, rows_by, values = {}, {}, {}
    for nv in pair_versions:
        info = infosearch_metrics(inputs.qrels("original"), inputs.qrels(nv), run_og, run_new, rev_ranked, ties=ties,
                                  wise_version=wise_version)
        rows_by[nv] = info["per_query"]
        info_by[nv] = {
            "overall": {**{n: defined_or_none(info[n]) for n in names}, "n_queries": info["n_queries"],
                        "n_queries_pmrr": info["n_queries_pmrr"]},
            "by_dimension": _by_dimension(info["per_query"], subsets, names),
            "missing_queries": info["missing_queries"], "mean_rank": info["mean_rank"],
        }
        values[nv] = info
        for n in names:
            scores.record(_name(n, ties, nv, wise_version), info[n])
    scores.transient["infosearch"] = {"main": main_version, **rows_by}
    for n in names:
        scores.record(_name(n, ties, wise_version=wise_version), values[main_version][n])
    info = info_by[main_version]
    evaluation["infosearch"] = {"qrels": ["original", main_version], "n_queries": info["overall"]["n_queries"],
                                "n_queries_pmrr": info["overall"]["n_queries_pmrr"],
                                "missing_queries": info["missing_queries"], "mean_rank": info["mean_rank"],
                                "by_dimension": info["by_dimension"], "ties": ties, "wise_version": wise_version,
                                "by_qrels": info_by}
    runs = {"original": (inputs.select(qrels_version, "og")[0], run_og, "original"),
            "instructed": (inputs.select(qrels_version, "changed")[0], run_new, main_version)}
    rev_version = "reversed-validated" if main_version != "changed" and "reversed-validated" in inputs.versions \
        else "reversed"
    if rev_version in inputs.versions:
        runs["reversed"] = (rev_topics, rev_ranked, rev_version)
    evaluation["infosearch"]["table2"] = _table2(inputs, runs, rows_by[main_version], missing=evaluation["missing"])
    return {"retrieval_key": rev_key, "run": as_dict(rev_run), "reused": rev_reused}


TABLE2_K = 10  # InfoSearch Table 2: nDCG@10 and Robustness@10 in each mode


def _table2(inputs: _Inputs, runs: dict[str, tuple[list[dict], Mapping, str]], rows: dict[str, dict], *,
            missing: str) -> dict:
    """InfoSearch's Table 2 (Zhou et al., 2025): nDCG@10 and Robustness@10 of the original,
    instructed and reversed modes (each run on its own qrels: ``runs[mode] = (topics, run, qrels
    version)``), p-MRR, WISE and SICR (``rows``: :func:`evaluation.infosearch.infosearch_metrics`'s
    per-query rows), per dimension and as the mean over dimensions (the paper's "averaged over six
    dimensions"). Robustness@10 groups the instances of one mode by their query text."""
    subset_of = inputs.subsets
    ndcg, rob = f"nDCG@{TABLE2_K}", f"Robustness@{TABLE2_K}"
    per_mode: dict[str, dict] = {}
    for mode, (topics, run, version) in runs.items():
        qrels_all = inputs.qrels(version)
        qrels = {t["qid"]: qrels_all[t["qid"]] for t in topics if t["qid"] in qrels_all}
        result = measures_mod.evaluate(qrels, {q: run[q] for q in qrels if q in run}, [ndcg], missing=missing)
        groups = robustness_groups([t for t in topics if t["qid"] in qrels], "query-text")
        per_group = robustness(qrels, {q: run[q] for q in qrels if q in run}, k=TABLE2_K, groups=groups)["per_group"] \
            if qrels else {}
        per_mode[mode] = (result["per_query"], groups, per_group)
    dims = sorted({subset_of.get(q, "") for pq, _, _ in per_mode.values() for q in pq})
    table: dict[str, dict] = {}
    for dim in dims:
        entry: dict = {"n_queries": 0, ndcg: {}, rob: {}}
        for mode, (pq, groups, per_group) in per_mode.items():
            values = [row[ndcg] for q, row in pq.items() if subset_of.get(q, "") == dim]
            entry["n_queries"] = max(entry["n_queries"], len(values))
            entry[ndcg][mode] = sum(values) / len(values) if values else None
            dim_of_group = {g: subset_of.get(q, "") for q, g in groups.items()}
            mins = [v for g, v in per_group.items() if v is not None and dim_of_group.get(g) == dim]
            entry[rob][mode] = sum(mins) / len(mins) if mins else None
        for n in ("p-MRR", "WISE", "SICR"):
            values = [r[n] for q, r in rows.items() if subset_of.get(q, "") == dim and r.get(n) is not None]
            entry[n] = sum(values) / len(values) if values else None
        table[dim or "(no dimension)"] = entry

    def avg(values):
        values = [v for v in values if v is not None]
        return sum(values) / len(values) if values else None

    mean = {"n_queries": sum(e["n_queries"] for e in table.values()),
            **{m: {mode: avg(e[m][mode] for e in table.values()) for mode in runs} for m in (ndcg, rob)},
            **{n: avg(e[n] for e in table.values()) for n in ("p-MRR", "WISE", "SICR")}}
    return {"qrels": {mode: version for mode, (_, _, version) in runs.items()}, "dimensions": table,
            "mean": mean, "averaging": f"mean over {len(table)} dimension{'s' if len(table) != 1 else ''}"}
