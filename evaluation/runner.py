"""Run a retriever on a project's topics, evaluate it on one qrels version, store the eval run.

One call of :func:`run_eval` = one row of ``eval_runs``. The retrieval is identified by a
*retrieval key* (model identity, template, k, variant, candidate lists, reranker): evaluating the
same retrieval on another qrels version (``original`` -> ``validated``) reuses the stored run
and retrieves nothing; a different retrieval with the same model still finds every embedding it
has seen in the embedding cache.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation import measures as measures_mod
from evaluation.infosearch import infosearch_metrics
from evaluation.pmrr import TIES, p_mrr
from evaluation.retrievers import Progress, Retriever
from evaluation.retrievers.build import build_retriever
from evaluation.robustness import robustness
from evaluation.templates import get_template
from storage import eval_runs as store
from storage import projects
from formats.bundle import VALIDATES
from storage.errors import IFJudgeError, NotFound
from storage.db import Database

DEFAULT_MEASURES = measures_mod.DEFAULT_STANDARD  # the one default list: evaluation.measure_registry
ROBUSTNESS_K = 10
# kinds whose og / changed instances of one query are paired for p-MRR (a generic project can hold
# FollowIR-style queries beside others, e.g. the demo)
PAIRED_KINDS = ("followir", "infosearch", "generic")
# Which instances a qrels version judges, when qrels are keyed by query id and several variants
# of a query share that id (FollowIR, InfoSearch); a validated version judges the variant of the
# published version it validates (formats.bundle.VALIDATES).
VERSION_VARIANT = {"original": "og", "changed": "changed", "reversed": "reversed"}
CANDIDATE_MODES = ("auto", "corpus", "top_ranked")


def _variant_for(qrels_version: str, variants: Sequence[str]) -> str:
    # a validated version judges the variant of the published version it validates: ``validated``
    # (instance validation) the og instances, ``changed-validated`` (FollowIR re-judging) the changed ones
    return VERSION_VARIANT.get(VALIDATES.get(qrels_version, qrels_version), "og")


def _paired_versions(qrels_version: str, versions: Sequence[str]) -> tuple[list[str], str | None]:
    """The changed-side qrels p-MRR is computed on (published ``changed`` and, when built,
    ``changed-validated``), and the one reported as ``p-MRR`` for ``qrels_version``."""
    cands = ["changed", "changed-validated"]
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
    """The topics evaluated against ``qrels_version`` and the variant they were chosen by.

    All instances when their qids are distinct (InstructIR: one qid per instance). When several
    variants share a qid (FollowIR: ``og`` and ``changed`` of one query), only one variant can be
    evaluated at a time: ``variant`` if given, else the one the qrels version judges
    (original -> og, changed -> changed, reversed -> reversed; a validated version as the version it validates).
    """
    topics = projects.eval_topics(db, project_id)
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
                    external: bool = False) -> tuple[list[dict], str | None, dict]:
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
    topics, chosen_variant = select_topics(db, pid, qrels_version, variant)
    if not topics:
        raise IFJudgeError(f"project {proj['name']!r} has no queries (instances) to evaluate")
    qrels_all = projects.qrels(db, pid, qrels_version)
    if not any(r > 0 for t in topics for r in qrels_all.get(t["qid"], {}).values()):
        what = f" of variant {chosen_variant!r}" if chosen_variant else ""
        raise IFJudgeError(f"qrels version {qrels_version!r} has no judged query with a relevant document among the "
                           f"{len(topics)} evaluated topics{what} of {proj['name']!r}: nothing to evaluate")
    return topics, chosen_variant, qrels_all


def run_eval(
    db: Database,
    project: str | dict,
    *,
    model,
    template: str = "instruction_query",
    qrels_version: str = "original",
    k: int = 100,
    measures: Sequence[str] = DEFAULT_MEASURES,
    variant: str | None = None,
    rerank=None,
    candidates: str = "auto",
    missing: str = "zero",
    score: str = "cosine",
    progress: Progress | None = None,
    cache_dir=None,
    reuse: bool = True,
    ties: str = "docid",
) -> int:
    """Retrieve (or reuse a stored run), evaluate, store; returns the eval run id.

    Parameters
    ----------
    db : Database
    project : str or dict
        Project name (or the dict of ``storage.projects.get_project``).
    model : str or Retriever
        ``"bm25"``; ``"minilm"`` (bundled all-MiniLM-L6-v2); a local sentence-transformers
        directory or a hub name; a TREC run file; ``"external:<name>"`` for a run stored by an
        import (:func:`evaluation.retrievers.build.build_retriever`); or a
        :class:`~evaluation.retrievers.Retriever`.
    template : str
        Name from :data:`evaluation.templates.TEMPLATES` (ignored for external runs).
    qrels_version : str
        A published version (``original``, ``changed``, ``reversed``) or a validated one
        (``validated``, ``changed-validated``, ``reversed-validated``) -- must exist in the project.
    k : int
        Depth of the run (and of the reranked first stage).
    measures : list of str
        Standard measures (:func:`evaluation.measures.evaluate`), trec_eval semantics.
        ``Robustness@10`` (InstructIR) is added when some group has more than one evaluated
        instance; ``p-MRR`` (FollowIR eq. 1) for followir / infosearch projects that have both
        ``og`` and ``changed`` instances and the ``original`` and changed (or validated) qrels;
        for infosearch projects with ``reversed`` instances too, ``WISE``, ``SICR`` and
        InfoSearch's ``p-MRR`` (:func:`evaluation.infosearch.infosearch_metrics`).
    variant : str, optional
        Evaluate only the instances of this variant (see :func:`select_topics` for the default).
    rerank : str or Reranker, optional
        A CrossEncoder path (or a :class:`~evaluation.retrievers.rerank.Reranker`) re-scoring
        the top ``k`` of the first stage.
    candidates : {"auto", "corpus", "top_ranked"}
        Score the whole corpus, or only each query's ``top_ranked`` list (FollowIR);
        ``auto`` uses the lists when the project has some for the evaluated qids.
    missing : {"zero", "omit"}
        Topics judged in the qrels version but absent from the run (or with an empty ranking)
        count as 0 (default), or are left out of the means. Either way they are listed.
    score : {"cosine", "dot"}
        Similarity of a dense model (ignored by BM25 and external runs).
    progress : callable, optional
        ``progress(done, total, message)``.
    cache_dir : path, optional
        Embedding cache root.
    reuse : bool
        Reuse a stored run with the same retrieval key (default). False forces retrieval (the
        embedding cache still applies).
    ties : {"docid", "run-order"}
        How equal scores are ranked for p-MRR, WISE and SICR (:func:`evaluation.pmrr.doc_ranks`):
        doc id descending (trec_eval) or the run's own order (FollowIR's / MTEB's code).

    p-MRR is computed between the og run and the changed run on every changed-side qrels the
    project has: published (``original`` vs ``changed``) and validated (``original`` vs
    ``changed-validated``), stored as ``p-MRR[changed]`` and ``p-MRR[changed-validated]``;
    ``p-MRR`` is the one of ``qrels_version`` (``changed`` unless a validated version is
    evaluated). InfoSearch's WISE / SICR / p-MRR likewise, each also per dimension
    (``queries.subset``) in ``settings["evaluation"]["infosearch"]["by_qrels"]``.

    Raises IFJudgeError (nothing is retrieved or stored) when the project has no documents (a
    retriever has nothing to rank), no topic, or no judged query with a relevant document in
    ``qrels_version`` for the evaluated variant.

    Returns
    -------
    int
        The id of the stored eval run (:func:`storage.eval_runs.load_eval_run`).

    Examples
    --------
    >>> from annotation.demo import load_demo
    >>> from storage.db import connect
    >>> from storage.eval_runs import load_eval_run
    >>> db = connect(":memory:"); _ = load_demo(db)
    >>> first = load_eval_run(db, run_eval(db, "demo", model="bm25", template="query", qrels_version="original"))
    >>> again = load_eval_run(db, run_eval(db, "demo", model="bm25", template="query", qrels_version="changed"))
    >>> first["model"], first["settings"]["reused_run"], again["settings"]["reused_run"]  # same retrieval: reused
    ('bm25', False, True)
    """
    proj = projects.get_project(db, project) if isinstance(project, str) else project
    pid = proj["id"]
    versions = projects.qrels_versions(db, pid)
    _check_options(proj, versions, qrels_version=qrels_version, candidates=candidates, ties=ties)
    measure_names = [str(m) for m in measures_mod.parse_measures(list(measures))]

    # build the retriever, then check what it needs
    retriever = build_retriever(model, rerank=rerank, score=score, cache_dir=cache_dir,
                                stored_run=lambda name: store.external_run(db, pid, name))
    template_name = "external" if retriever.external else get_template(template).name
    topics, chosen_variant, qrels_all = check_evaluable(db, proj, qrels_version=qrels_version, variant=variant,
                                                        external=retriever.external)
    retrieval = _Retrieval(db, proj, retriever, template_name, k=k, reuse=reuse, progress=progress,
                           candidates=_candidate_lists(db, proj, topics, candidates))

    # retrieve (or reuse) the run of the selected topics
    rejudged = rejudged_instructions(db, pid) if "changed-validated" in versions else {}
    instr_key = None
    if qrels_version == "changed-validated" and chosen_variant == "changed":
        # the validated changed qrels of a re-judged FollowIR query judge its newest narrative:
        # the changed run they are scored with uses that narrative as the instruction
        topics, instr_key = _with_instructions(topics, rejudged)
    started = time.perf_counter()
    run, key, reused = retrieval.run(chosen_variant, topics, instr_key)
    retrieval_seconds = time.perf_counter() - started

    # score the measures: standard ones, Robustness@10, and those pairing the runs of several variants
    if progress:
        progress(0, 1, "evaluating")
    qrels_eval = {t["qid"]: qrels_all[t["qid"]] for t in topics if t["qid"] in qrels_all}
    scores = _score_measures(qrels_eval, run, topics, measure_names, missing=missing)
    paired = _score_paired(db, proj, versions, scores, retrieval, run, qrels_version=qrels_version,
                           variant=chosen_variant, instr_key=instr_key, rejudged=rejudged, ties=ties)

    # store
    settings = {
        "k": k, "variant": chosen_variant, "candidates": "top_ranked" if retrieval.candidates is not None else "corpus",
        "rerank": retriever.reranker, "model_identity": retriever.identity(), "retrieval_key": key,
        "reused_run": reused, "retrieval_seconds": round(retrieval_seconds, 4), "measures": measure_names,
        "ties": ties, "evaluation": scores.evaluation, **({"paired_run": paired} if paired is not None else {}),
    }
    run_id = store.store_eval_run(
        db, pid, model=retriever.name, template=template_name, settings=settings, qrels_version=qrels_version,
        metrics=scores.metrics, per_query=scores.per_query, run=run,
    )
    if progress:
        progress(1, 1, "evaluating")
    return run_id


def _check_options(proj: dict, versions: Sequence[str], *, qrels_version: str, candidates: str, ties: str) -> None:
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


class _Retrieval:
    """The runs of one retriever in one evaluation: a variant's run is the stored one with the same
    retrieval key (when ``reuse``), else retrieved now. Documents are read once, when first needed."""

    def __init__(self, db, proj: dict, retriever: Retriever, template_name: str, *, k: int, reuse: bool,
                 progress: Progress | None, candidates: dict[str, list[str]] | None):
        self.db, self.pid, self.retriever, self.template_name = db, proj["id"], retriever, template_name
        # an external run reads no template; its reranker reads the bare query
        self.template = get_template("query" if retriever.external else template_name)
        self.k, self.reuse, self.progress, self.candidates = k, reuse, progress, candidates
        self.documents = None

    def key(self, variant: str | None, instructions: str | None = None) -> str:
        parts = dict(model=self.retriever.identity(), template=self.template_name, k=self.k, variant=variant,
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
                return stored, key, True
        if self.documents is None and (not self.retriever.external or self.retriever.reranker is not None):
            self.documents = projects.documents(self.db, self.pid)
        run = self.retriever.retrieve(topics, self.documents or {}, template=self.template, k=self.k,
                                      candidates=self.candidates, progress=self.progress)
        return run, key, False


@dataclass
class _Scores:
    """What is stored of an evaluation: mean ``metrics``, ``per_query`` values and the
    ``evaluation`` details (queries, missing ones, why a measure is undefined)."""

    metrics: dict[str, float | None]
    per_query: dict[str, dict]
    evaluation: dict


def _score_measures(qrels_eval: dict, run: dict, topics: list[dict], measure_names: list[str], *,
                    missing: str) -> _Scores:
    """The standard measures, and Robustness@10 when some group has several evaluated instances."""
    ranked_run = {q: docs for q, docs in run.items() if docs and q in qrels_eval}
    result = measures_mod.evaluate(qrels_eval, ranked_run, measure_names, missing=missing)
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
    if any(n > 1 for n in sizes.values()):
        rob = robustness(qrels_eval, ranked_run, k=ROBUSTNESS_K, groups=groups)
        name = f"Robustness@{ROBUSTNESS_K}"
        scores.metrics[name] = rob[name]
        scores.evaluation["robustness"] = {"n_groups": rob["n_groups"], "empty_groups": rob["empty_groups"]}
        if rob[name] is None:
            scores.evaluation["undefined"][name] = "no group has an instance in the run"
    return scores


def _score_paired(db, proj: dict, versions: Sequence[str], scores: _Scores, retrieval: _Retrieval, run: dict, *,
                  qrels_version: str, variant: str | None, instr_key: str | None, rejudged: dict[str, str],
                  ties: str) -> dict | None:
    """p-MRR (FollowIR) and InfoSearch's WISE / SICR / p-MRR, from the runs of the other variants
    (retrieved or reused): added to ``scores``; returns the paired runs' record, or None when the
    project cannot pair instances."""
    pid = proj["id"]
    variants = {t["variant"] for t in projects.eval_topics(db, pid)}
    pair_versions, main_version = _paired_versions(qrels_version, versions)
    if not (proj["kind"] in PAIRED_KINDS and {"og", "changed"} <= variants and "original" in versions
            and pair_versions and variant in ("og", "changed")):
        return None
    metrics, evaluation = scores.metrics, scores.evaluation
    other = "changed" if variant == "og" else "og"
    other_topics, _ = select_topics(db, pid, qrels_version, other)
    other_run, other_key, other_reused = retrieval.run(other, other_topics)
    run_og, run_new = (run, other_run) if variant == "og" else (other_run, run)
    runs_new = {}
    published_topics = select_topics(db, pid, "changed", "changed")[0]
    validated_topics, vkey = _with_instructions(published_topics, rejudged)
    for nv in pair_versions:  # the changed run each changed-side qrels judges
        wanted = vkey if nv == "changed-validated" else None
        if (variant == "changed" and wanted == instr_key) or (variant == "og" and wanted is None):
            runs_new[nv] = run_new
        else:
            runs_new[nv] = retrieval.run("changed", validated_topics if wanted else published_topics, wanted)[0]
    qrels_og = projects.qrels(db, pid, "original")
    by_qrels = {}
    for nv in pair_versions:
        pm = p_mrr(qrels_og, projects.qrels(db, pid, nv), run_og, runs_new[nv], ties=ties)
        by_qrels[nv] = {"p-MRR": pm["p-MRR"], "n_queries": pm["n_queries"], "n_documents": pm["n_documents"],
                        "missing_queries": pm["missing_queries"], "per_query": pm["per_query"]}
        metrics[f"p-MRR[{nv}]"] = pm["p-MRR"]
        if pm["p-MRR"] is None:
            evaluation["undefined"][f"p-MRR[{nv}]"] = f"no query has a document of original whose label differs in {nv}"
    main = by_qrels[main_version]
    metrics["p-MRR"] = main["p-MRR"]
    evaluation["p-MRR"] = {"qrels": ["original", main_version], "n_queries": main["n_queries"],
                           "missing_queries": main["missing_queries"], "ties": ties,
                           "by_qrels": {nv: {k2: v for k2, v in b.items() if k2 != "per_query"} for nv, b in by_qrels.items()},
                           "changed_run_instructions": {nv: ("re-judged narratives" if nv == "changed-validated" and vkey
                                                             else "imported") for nv in pair_versions},
                           "per_query": {nv: b["per_query"] for nv, b in by_qrels.items()}}
    if main["p-MRR"] is None:
        evaluation["undefined"]["p-MRR"] = f"no query has a document of original whose label differs in {main_version}"
    paired = {"variant": other, "retrieval_key": other_key, "run": other_run, "reused": other_reused}
    if proj["kind"] == "infosearch" and "reversed" in variants:
        paired["reversed"] = _score_infosearch(db, pid, scores, retrieval, qrels_version=qrels_version,
                                               pair_versions=pair_versions, main_version=main_version,
                                               qrels_og=qrels_og, run_og=run_og, run_new=run_new, ties=ties)
    return paired


def _score_infosearch(db, pid: int, scores: _Scores, retrieval: _Retrieval, *, qrels_version: str,
                      pair_versions: list[str], main_version: str, qrels_og: dict, run_og: dict, run_new: dict,
                      ties: str) -> dict:
    """InfoSearch (SPEC "Evaluation metrics"): WISE, SICR and its p-MRR from the original,
    instructed and reversed runs; p-MRR is InfoSearch's (negatives = relevant originally, not under
    the instruction), not FollowIR's changed-document rule; per dimension too. Returns the record
    of the reversed run."""
    metrics, evaluation = scores.metrics, scores.evaluation
    rev_topics, _ = select_topics(db, pid, qrels_version, "reversed")
    rev_run, rev_key, rev_reused = retrieval.run("reversed", rev_topics)
    subsets = projects.query_subsets(db, pid)
    names = ("WISE", "SICR", "p-MRR")
    info_by = {}
    for nv in pair_versions:
        info = infosearch_metrics(qrels_og, projects.qrels(db, pid, nv), run_og, run_new, rev_run, ties=ties)
        info_by[nv] = {
            "overall": {**{n: info[n] for n in names}, "n_queries": info["n_queries"],
                        "n_queries_pmrr": info["n_queries_pmrr"]},
            "by_dimension": _by_dimension(info["per_query"], subsets, names),
            "missing_queries": info["missing_queries"], "mean_rank": info["mean_rank"],
        }
        for n in names:
            metrics[f"{n}[{nv}]"] = info[n]
    info = info_by[main_version]
    for name in names:
        metrics[name] = info["overall"][name]
        if info["overall"][name] is None:
            evaluation["undefined"][name] = ("no query has a document relevant under both instructions"
                                             if name != "p-MRR" else
                                             "no document is relevant originally and not under the instruction")
        else:
            evaluation["undefined"].pop(name, None)
    evaluation["infosearch"] = {"qrels": ["original", main_version], "n_queries": info["overall"]["n_queries"],
                                "n_queries_pmrr": info["overall"]["n_queries_pmrr"],
                                "missing_queries": info["missing_queries"], "mean_rank": info["mean_rank"],
                                "by_dimension": info["by_dimension"], "ties": ties, "by_qrels": info_by}
    return {"retrieval_key": rev_key, "run": rev_run, "reused": rev_reused}
