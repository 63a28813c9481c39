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
stored order, so ``run-order`` gives one answer whether a run is reused or not.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from evaluation import measures as measures_mod
from evaluation.infosearch import infosearch_metrics
from evaluation.measure_registry import IFMeasure, default_measures, parse_all
from evaluation.pmrr import TIES, p_mrr
from evaluation.retrievers import Progress, Retriever
from evaluation.retrievers.build import build_retriever
from evaluation.results import measure_name
from evaluation.robustness import robustness
from evaluation.runs import RankedRun, as_dict, as_ranked_run
from evaluation.templates import default_template, get_template
from storage import eval_runs as store
from storage import projects
from formats.bundle import VALIDATES
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
    qrels versions, its instances and topics (:func:`all_topics`), each qrels version when first
    asked for, the query subsets and the re-judged instructions."""

    def __init__(self, db, proj: dict):
        self.db, self.proj, self.pid = db, proj, proj["id"]
        self.versions = projects.qrels_versions(db, self.pid)
        instances = projects.eval_topics(db, self.pid)
        self.variants = {t["variant"] for t in instances}  # of the instances (a bare query is no variant)
        self.topics = all_topics(db, self.pid, kind=proj["kind"], instances=instances)
        self._qrels: dict[str, dict] = {}

    def qrels(self, version: str) -> dict:
        if version not in self._qrels:
            self._qrels[version] = projects.qrels(self.db, self.pid, version)
        return self._qrels[version]

    def select(self, qrels_version: str, variant: str | None) -> tuple[list[dict], str | None]:
        return choose_topics(self.topics, qrels_version, variant)

    @cached_property
    def subsets(self) -> dict[str, str]:
        return projects.query_subsets(self.db, self.pid)

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
                           "import the benchmark's corpus first")
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


def run_eval(db: Database, project: str | dict, *, model, template: str | None = None, qrels_version: str = "original",
             k: int = DEFAULT_K, measures: Sequence[str] | None = None, variant: str | None = None, rerank=None,
             candidates: str = "auto", missing: str = "zero", score: str = "cosine", progress: Progress | None = None,
             cache_dir=None, reuse: bool = True, ties: str = "docid") -> int:
    """Retrieve (or reuse a stored run), evaluate, store; returns the eval run id
    (:func:`storage.eval_runs.load_eval_run`). The module docstring says what each measure needs.

    Parameters
    ----------
    project : str or dict
        Project name (or the dict of ``storage.projects.get_project``).
    model : str or Retriever
        ``"bm25"``, ``"minilm"`` (bundled all-MiniLM-L6-v2), a sentence-transformers directory or
        hub name, a TREC run file, ``"external:<name>"`` (a run stored by an import), or a
        :class:`~evaluation.retrievers.Retriever` (:func:`evaluation.retrievers.build.build_retriever`).
    template : str, optional
        A name of :data:`evaluation.templates.TEMPLATES` (ignored for external runs); default
        :func:`evaluation.templates.default_template` of the kind: MTEB's (query, space, instruction).
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
    score : {"cosine", "dot"}
        Similarity of a dense model.
    progress : callable, optional
        ``progress(done, total, message)``.
    cache_dir : path, optional
        Embedding cache root.
    reuse : bool
        Reuse a stored run with the same retrieval key (default); False retrieves again.
    ties : {"docid", "run-order"}
        Rank of equal scores for p-MRR, WISE, SICR (:func:`evaluation.pmrr.doc_ranks`): doc id
        descending (trec_eval, MTEB 2.26) or the run's order (FollowIR's code); in their names.

    Raises IFJudgeError (nothing retrieved or stored) when the project has no documents, no topic,
    or no judged query with a relevant document in ``qrels_version`` for the evaluated variant.

    Examples
    --------
    >>> from annotation.demo import load_demo
    >>> from storage.db import connect
    >>> from storage.eval_runs import load_eval_run
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> first = load_eval_run(db, run_eval(db, "demo", model="bm25", qrels_version="original"))
    >>> again = load_eval_run(db, run_eval(db, "demo", model="bm25", qrels_version="changed"))
    >>> first["model"], first["settings"]["reused_run"], again["settings"]["reused_run"]  # same retrieval: reused
    ('bm25', False, True)
    """
    proj = projects.get_project(db, project) if isinstance(project, str) else project
    inputs = _Inputs(db, proj)
    _check_options(proj, inputs.versions, qrels_version=qrels_version, candidates=candidates, ties=ties, k=k)
    asked = _Measures(proj["kind"], measures, ties=ties)
    retriever = build_retriever(model, rerank=rerank, score=score, cache_dir=cache_dir,
                                stored_run=lambda name: store.external_run(db, proj["id"], name))
    template_name = "external" if retriever.external else get_template(template or default_template(proj["kind"])).name
    topics, chosen_variant, qrels_all = check_evaluable(db, proj, qrels_version=qrels_version, variant=variant,
                                                        external=retriever.external, inputs=inputs)
    retrieval = _Retrieval(db, proj, retriever, template_name, k=k, reuse=reuse, progress=progress,
                           candidates=_candidate_lists(db, proj, topics, candidates))
    main = _main_run(inputs, retrieval, topics, qrels_version=qrels_version, variant=chosen_variant)
    return _score_and_store(inputs, retrieval, main, asked, qrels_all, qrels_version=qrels_version, missing=missing,
                            ties=ties, progress=progress)


def _score_and_store(inputs: "_Inputs", retrieval: "_Retrieval", main: "_MainRun", asked: "_Measures", qrels_all: dict,
                     *, qrels_version: str, missing: str, ties: str, progress: Progress | None) -> int:
    """Score the measures of the main run (standard ones, Robustness@k, those pairing the runs of
    several variants) and store the eval run; returns its id."""
    if progress:
        progress(0, 1, "evaluating")
    qrels_eval = {t["qid"]: qrels_all[t["qid"]] for t in main.topics if t["qid"] in qrels_all}
    scores = _score_measures(qrels_eval, main.run, main.topics, asked, missing=missing)
    paired = None
    if asked.paired:
        paired = _score_paired(inputs, scores, retrieval, main, qrels_version=qrels_version, ties=ties)
    asked.finish(scores)
    run_id = _store(inputs, retrieval, main, asked, scores, paired, qrels_version=qrels_version, ties=ties)
    if progress:
        progress(1, 1, "evaluating")
    return run_id


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
           paired: dict | None, *, qrels_version: str, ties: str) -> int:
    """Store the eval run: its settings (what decided the run and the scores), metrics, per-query values, run."""
    retriever = retrieval.retriever
    settings = {
        "k": retrieval.k_setting, "variant": main.variant,
        "candidates": "top_ranked" if retrieval.candidates is not None else "corpus",
        "rerank": retriever.reranker, "model_identity": retriever.identity(), "retrieval_key": main.key,
        "reused_run": main.reused, "retrieval_seconds": round(main.seconds, 4), "measures": asked.names,
        "ties": ties, "evaluation": scores.evaluation, **({"paired_run": paired} if paired is not None else {}),
    }
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


def _candidate_lists(db, proj: dict, topics: list[dict], candidates: str) -> dict[str, list[str]] | None:
    """The ``top_ranked`` lists the retriever scores (None: the whole corpus)."""
    if candidates == "corpus":
        return None
    ranked = projects.top_ranked(db, proj["id"])
    if candidates == "top_ranked" and not ranked:
        raise NotFound(f"project {proj['name']!r} has no top_ranked candidate lists")
    if ranked and (candidates == "top_ranked" or any(t["qid"] in ranked for t in topics)):
        return ranked
    return None


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


def _name(base: str, ties: str, qrels: str | None = None) -> str:
    """The canonical name a paired measure is stored under (:func:`evaluation.results.measure_name`)."""
    return measure_name(base, qrels=qrels, ties=ties)


def _in_rank_order(docs: dict[str, float]) -> dict[str, float]:
    """A ranking listed by score descending, equal scores by doc id descending (how IFJudge's
    retrievers list a run: :func:`evaluation.retrievers.topk.top_k`)."""
    return dict(sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True))


class _Retrieval:
    """The runs of one retriever in one evaluation: a variant's run is the stored one with the same
    retrieval key (when ``reuse``), else retrieved now. Documents are a
    :class:`storage.projects.StoredDocuments`, made when first needed: the retrievers read their
    texts a bounded chunk at a time.

    With candidate lists every candidate is ranked (``k`` is not used; the depth is the longest
    list), as MTEB ranks every document of ``top_ranked``."""

    def __init__(self, db, proj: dict, retriever: Retriever, template_name: str, *, k: int, reuse: bool,
                 progress: Progress | None, candidates: dict[str, list[str]] | None):
        self.db, self.pid, self.retriever, self.template_name = db, proj["id"], retriever, template_name
        # an external run reads no template; its reranker reads the bare query
        self.template = get_template("query" if retriever.external else template_name)
        self.k, self.reuse, self.progress, self.candidates = k, reuse, progress, candidates
        # the depth stored and keyed: None = every candidate of the top_ranked lists
        self.k_setting = None if candidates is not None else k
        self.documents = None

    def depth(self, topics: list[dict]) -> int:
        """How many documents a topic's run holds at most: ``k``, or the longest candidate list."""
        if self.candidates is None:
            return self.k
        return max((len(self.candidates.get(t["qid"], ())) for t in topics), default=0) or 1

    def key(self, variant: str | None, instructions: str | None = None) -> str:
        parts = dict(model=self.retriever.identity(), template=self.template_name, k=self.k_setting, variant=variant,
                     candidates=self.candidates is not None, rerank=self.retriever.reranker)
        if instructions is not None:  # instructions other than the imported ones (re-judged narratives)
            parts["instructions"] = instructions
        return retrieval_key(**parts)

    def run(self, variant: str | None, topics: list[dict], instructions: str | None = None) -> tuple[dict, str, bool]:
        """``(run, retrieval key, reused)`` of ``topics`` (the instances of ``variant``)."""
        key = self.key(variant, instructions)
        if self.reuse:
            stored = store.find_run(self.db, self.pid, key)
            if stored is not None:
                if getattr(self.retriever, "lists_ties_by_docid", False):
                    # IFJudge's retrievers list equal scores by doc id descending; records stored before
                    # run order was kept hold a paired run with sorted keys: listed again in that order
                    stored = {q: _in_rank_order(docs) for q, docs in stored.items()}
                return stored, key, True
        if self.documents is None and (not self.retriever.external or self.retriever.reranker is not None):
            # read from storage a chunk at a time by the retrievers: the corpus is never held in memory
            self.documents = projects.StoredDocuments(self.db, self.pid)
        run = self.retriever.retrieve(topics, self.documents or {}, template=self.template, k=self.depth(topics),
                                      candidates=self.candidates, progress=self.progress)
        return run, key, False


@dataclass
class _Scores:
    """What is stored of an evaluation: mean ``metrics``, ``per_query`` values and the
    ``evaluation`` details (queries, missing ones, why a measure is undefined)."""

    metrics: dict[str, float | None]
    per_query: dict[str, dict]
    evaluation: dict


class _Measures:
    """The measures of one evaluation, parsed by :func:`evaluation.measure_registry.parse_all`:
    ``standard`` ones (:func:`evaluation.measures.evaluate`), ``Robustness@k`` cut-offs, the paired
    ones (p-MRR, WISE, SICR) and those the runner does not compute (INSTFOL). ``explicit`` when the
    caller named them (then each one is reported, undefined with a reason when not computable);
    else the kind's default list, whose instruction-following measures appear when computable."""

    def __init__(self, kind: str, measures: Sequence[str] | str | None, *, ties: str = "docid"):
        self.explicit, self.ties = measures is not None, ties
        parsed = parse_all(measures if measures is not None else list(default_measures(kind)))
        for m in parsed:
            if isinstance(m, IFMeasure) and m.name in PAIRED_MEASURES and str(m) != m.name:
                raise IFJudgeError(f"measure {str(m)!r}: {m.name} takes its tie rule from --ties (ties=), is computed "
                                   f"on every changed-side qrels version the project has (qrels=) and takes its "
                                   f"defaults otherwise; write {m.name}")
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
            if _name(base, self.ties) not in metrics:
                metrics[_name(base, self.ties)] = None
                undefined[_name(base, self.ties)] = ("needs og and changed instances of the same queries and the original and changed "
                                   "qrels (FollowIR, InfoSearch)" if base == "p-MRR" else
                                   "needs og, changed and reversed instances and the original and changed qrels "
                                   "(InfoSearch)")
        for m in self.elsewhere:
            metrics[str(m)] = None
            undefined[str(m)] = f"computed from judge scores by `{m.spec.command}` ({m.spec.computed_by})"


def _score_measures(qrels_eval: dict, run: dict, topics: list[dict], asked: _Measures, *,
                    missing: str) -> _Scores:
    """The standard measures, and Robustness@k when some group has several evaluated instances."""
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
    groups = {t["qid"]: t["group_id"] for t in topics if t["qid"] in qrels_eval}
    sizes: dict[str, int] = {}
    for g in groups.values():
        sizes[g] = sizes.get(g, 0) + 1
    for k in asked.robustness:
        name = f"Robustness@{k}"
        if not any(n > 1 for n in sizes.values()):
            if asked.explicit:
                scores.metrics[name] = None
                scores.evaluation["undefined"][name] = "no group has more than one evaluated instance"
            continue
        rob = robustness(qrels_eval, ranked_run, k=k, groups=groups)
        scores.metrics[name] = rob[name]
        scores.evaluation["robustness"] = {"n_groups": rob["n_groups"], "empty_groups": rob["empty_groups"]}
        if rob[name] is None:
            scores.evaluation["undefined"][name] = "no group has an instance in the run"
    return scores


def _score_paired(inputs: _Inputs, scores: _Scores, retrieval: _Retrieval, main: _MainRun, *, qrels_version: str,
                  ties: str) -> dict | None:
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
            scores.metrics[name] = None
            scores.evaluation["undefined"][name] = reason
        return paired
    runs_new, instructions = _changed_runs(inputs, retrieval, main, run_new, pair_versions)
    # a run read back from storage is a dict: converted to arrays once for every measure and version
    converted: dict[int, RankedRun] = {}
    for r in (run_og, run_new, *runs_new.values()):
        if id(r) not in converted:
            converted[id(r)] = as_ranked_run(r)
    run_og, run_new = converted[id(run_og)], converted[id(run_new)]
    runs_new = {nv: converted[id(r)] for nv, r in runs_new.items()}
    _score_pmrr(inputs, scores, run_og, runs_new, instructions, main_version=main_version, ties=ties)
    if proj["kind"] == "infosearch" and "reversed" in variants:
        paired["reversed"] = _score_infosearch(inputs, scores, retrieval, qrels_version=qrels_version,
                                               pair_versions=pair_versions, main_version=main_version,
                                               run_og=run_og, run_new=run_new, ties=ties)
    return paired


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
    metrics, undefined = scores.metrics, scores.evaluation["undefined"]
    by_qrels = {}
    for nv, run_new in runs_new.items():
        pm = p_mrr(inputs.qrels("original"), inputs.qrels(nv), run_og, run_new, ties=ties)
        by_qrels[nv] = {"p-MRR": pm["p-MRR"], "n_queries": pm["n_queries"], "n_documents": pm["n_documents"],
                        "missing_queries": pm["missing_queries"], "per_query": pm["per_query"]}
        metrics[_name("p-MRR", ties, nv)] = pm["p-MRR"]
        if pm["p-MRR"] is None:
            undefined[_name("p-MRR", ties, nv)] = f"no query has a document of original whose label differs in {nv}"
    main = by_qrels[main_version]
    metrics[_name("p-MRR", ties)] = main["p-MRR"]
    scores.evaluation["p-MRR"] = {
        "qrels": ["original", main_version], "n_queries": main["n_queries"],
        "missing_queries": main["missing_queries"], "ties": ties,
        "by_qrels": {nv: {k2: v for k2, v in b.items() if k2 != "per_query"} for nv, b in by_qrels.items()},
        "changed_run_instructions": instructions, "per_query": {nv: b["per_query"] for nv, b in by_qrels.items()}}
    if main["p-MRR"] is None:
        undefined[_name("p-MRR", ties)] = f"no query has a document of original whose label differs in {main_version}"


def _score_infosearch(inputs: _Inputs, scores: _Scores, retrieval: _Retrieval, *, qrels_version: str,
                      pair_versions: list[str], main_version: str, run_og: RankedRun, run_new: RankedRun,
                      ties: str) -> dict:
    """InfoSearch (SPEC "Evaluation metrics"): WISE, SICR and its p-MRR from the original,
    instructed and reversed runs; p-MRR is InfoSearch's (negatives = relevant originally, not under
    the instruction), not FollowIR's changed-document rule; per dimension too. Returns the record
    of the reversed run."""
    metrics, evaluation = scores.metrics, scores.evaluation
    rev_run, rev_key, rev_reused = retrieval.run("reversed", inputs.select(qrels_version, "reversed")[0])
    rev_ranked = as_ranked_run(rev_run)  # converted once when read back from storage
    subsets = inputs.subsets
    names = ("WISE", "SICR", "p-MRR")
    info_by = {}
    for nv in pair_versions:
        info = infosearch_metrics(inputs.qrels("original"), inputs.qrels(nv), run_og, run_new, rev_ranked, ties=ties)
        info_by[nv] = {
            "overall": {**{n: info[n] for n in names}, "n_queries": info["n_queries"],
                        "n_queries_pmrr": info["n_queries_pmrr"]},
            "by_dimension": _by_dimension(info["per_query"], subsets, names),
            "missing_queries": info["missing_queries"], "mean_rank": info["mean_rank"],
        }
        for n in names:
            metrics[_name(n, ties, nv)] = info[n]
    info = info_by[main_version]
    for n in names:
        name = _name(n, ties)
        metrics[name] = info["overall"][n]
        if info["overall"][n] is None:
            evaluation["undefined"][name] = ("no query has a document relevant under both instructions"
                                             if n != "p-MRR" else
                                             "no document is relevant originally and not under the instruction")
        else:
            evaluation["undefined"].pop(name, None)
    evaluation["infosearch"] = {"qrels": ["original", main_version], "n_queries": info["overall"]["n_queries"],
                                "n_queries_pmrr": info["overall"]["n_queries_pmrr"],
                                "missing_queries": info["missing_queries"], "mean_rank": info["mean_rank"],
                                "by_dimension": info["by_dimension"], "ties": ties, "by_qrels": info_by}
    return {"retrieval_key": rev_key, "run": as_dict(rev_run), "reused": rev_reused}
