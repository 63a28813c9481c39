"""``ifjudge eval run`` and ``ifjudge eval compare``: shells over
:func:`evaluation.runner.run_eval` and :func:`evaluation.compare.compare_project`.

Registered by the ``eval`` group (cli/eval_cmd.py) through :func:`register_eval`.
"""
from __future__ import annotations

import json
import sys

from storage.errors import IFJudgeError
from cli.options import add_db, add_json, add_project
from cli.output import eval_run_lines, fmt_value, infosearch_lines
from evaluation.undefined import Undefined, show_why


def register_eval(eval_sub) -> None:
    """Add the ``run`` and ``compare`` sub-parsers to the ``eval`` group."""
    from evaluation.protocols import PROTOCOLS, WISE_VERSIONS
    from evaluation.templates import TEMPLATES

    p = eval_sub.add_parser(
        "run",
        help="retrieve with a model (or reuse its stored run) and evaluate it on one qrels version",
        description="Prints the eval run id and its metrics; progress goes to stderr.",
    )
    add_db(p)
    add_project(p)
    p.add_argument("--model", required=True,
                   help="bm25 | minilm (bundled all-MiniLM-L6-v2) | a local sentence-transformers directory | "
                        "a TREC run file | external:NAME (a run stored by an import) | a hub name (needs a hub)")
    p.add_argument("--protocol", default="mteb", choices=list(PROTOCOLS),
                   help="whose rules the figures follow: mteb (default: MTEB 2.26's task classes) or paper (the "
                        "benchmark's own evaluation code: InstructIR 'instruction [SEP] query' and Robustness by "
                        "query text, FollowIR's and InfoSearch's score-only stable tie order); see docs/evaluation.md")
    p.add_argument("--template", default=None, choices=list(TEMPLATES),
                   help="how instruction and query are combined (default: the protocol's; MTEB's query_instruction: "
                        "the query, a space, the instruction; instructor only when asked)")
    p.add_argument("--qrels-version", default="original",
                   help="published: original | changed | reversed; validated: validated | changed-validated | "
                        "reversed-validated")
    p.add_argument("--ties", default=None, choices=["docid", "run-order"],
                   help="tie rule of p-MRR / WISE / SICR (default: the protocol's): doc id descending (trec_eval's "
                        "and MTEB 2.26's rule) or the run's own order, a score-only stable sort (FollowIR's and "
                        "InfoSearch's code; over candidate lists equal scores keep the list's order)")
    p.add_argument("--wise-version", default="paper", choices=list(WISE_VERSIONS),
                   help="WISE's reward: paper (default, InfoSearch eq. 7: (1 - (R_ori - R_ins)/K)/sqrt(R_ins)) or "
                        "evaluator (the official evaluator's (1 - sqrt(R_ori - R_ins)/K)/sqrt(R_ins))")
    p.add_argument("--k", type=int, default=1000,
                   help="run depth of full-corpus retrieval (default 1000, as MTEB); with top_ranked candidate "
                        "lists every candidate is ranked")
    p.add_argument("--measures", default=None,
                   help="comma-separated measure names: trec_eval / ir-measures names (nDCG@20, AP@1000, RR@1, "
                        "map, P_30, ...) and Robustness@k, p-MRR, WISE, SICR (default: the benchmark's headline "
                        "measures, see docs/metrics.md)")
    p.add_argument("--changed-run", default=None, metavar="FILE",
                   help="with --model a TREC run file of the og instructions: the run file of the changed ones")
    p.add_argument("--reversed-run", default=None, metavar="FILE",
                   help="with --model a TREC run file of the og instructions: the run file of the reversed ones")
    p.add_argument("--variant", default=None, help="evaluate only the instances of this variant")
    p.add_argument("--rerank", default=None, help="local CrossEncoder directory re-scoring the top k")
    p.add_argument("--candidates", default="auto", choices=["auto", "corpus", "top_ranked"],
                   help="score the whole corpus or only the top_ranked lists (default: auto)")
    p.add_argument("--score", default="cosine", choices=["cosine", "dot"], help="dense similarity (default cosine)")
    p.add_argument("--device", default=None, help="dense encoder and --rerank cross-encoder device: cpu | cuda | cuda:N | mps (default: CUDA, then MPS, then CPU)")
    p.add_argument("--backend", default="torch", choices=["torch", "onnx", "onnx-int8"],
                   help="dense encoder backend (default torch; onnx-int8: int8 weights, see docs/evaluation.md)")
    p.add_argument("--batch-size", type=int, default=None, help="dense encoder batch (default: 128 CUDA, 64 MPS, 32 CPU)")
    p.add_argument("--no-fp16", action="store_true", help="keep fp32 on CUDA (default: half precision there)")
    p.add_argument("--missing", default="zero", choices=["zero", "omit"],
                   help="judged topics absent from the run count as 0 (default) or are left out")
    p.add_argument("--cache-dir", default=None, help="embedding cache (default $IFJUDGE_CACHE_DIR or .cache/embeddings)")
    p.add_argument("--no-reuse", action="store_true", help="retrieve again even if the same run is stored")
    add_json(p)
    p.add_argument("--background", action="store_true",
                   help="queue the evaluation as a job for a worker (`ifjudge worker`, or the one `ifjudge serve` "
                        "starts) and print its id; the same evaluation already queued or running is not queued twice")
    p.set_defaults(func=run_cmd)

    c = eval_sub.add_parser("compare", help="compare stored eval runs across qrels versions")
    add_db(c)
    add_project(c)
    c.add_argument("--measure", default="nDCG@10", help="measure ranked and tested (default nDCG@10)")
    c.add_argument("--permutations", type=int, default=10_000, help="permutation test samples (default 10000)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--top", type=int, default=10, help="biggest per-query changes per system and version")
    add_json(c)
    c.set_defaults(func=compare_cmd)


class _Bar:
    """A tqdm bar on stderr driven by ``progress(done, total, message)``."""

    def __init__(self):
        self.bar = None
        self.message = None

    def __call__(self, done: int, total: int, message: str) -> None:
        from tqdm import tqdm

        if self.bar is None or message != self.message or total != self.bar.total:
            self.close()
            self.bar = tqdm(total=total, desc=message, file=sys.stderr, leave=False)
            self.message = message
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def run_cmd(args) -> int:
    from evaluation.runner import run_eval
    from storage import projects
    from storage.db import connect
    from evaluation.results import load_run, run_summary

    from evaluation.measure_registry import parse_all

    if args.k < 1:
        raise IFJudgeError(f"--k must be >= 1, got {args.k}")
    measures = [str(m) for m in parse_all(args.measures)] if args.measures is not None else None
    if (args.changed_run or args.reversed_run) and args.background:
        raise IFJudgeError("--changed-run / --reversed-run cannot be queued with --background; run without it")
    db = connect(args.db)
    if args.background:
        return _submit(db, args, measures)
    bar = _Bar()
    try:
        run_id = run_eval(
            db, projects.get_project(db, args.project), model=_model(args), template=args.template, qrels_version=args.qrels_version,
            k=args.k, measures=measures, variant=args.variant, rerank=_rerank(args), candidates=args.candidates,
            missing=args.missing, score=args.score, progress=bar, cache_dir=args.cache_dir, reuse=not args.no_reuse,
            ties=args.ties, protocol=args.protocol, wise_version=args.wise_version,
        )
    finally:
        bar.close()
    summary = run_summary(load_run(db, run_id))
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print("\n".join(eval_run_lines(summary, missing=args.missing)))
    return 0


def _submit(db, args, measures) -> int:
    import getpass

    from evaluation.jobs import describe, submit_eval

    encoder = _encoder_options(args)
    if encoder is None and args.rerank:  # --device / --backend / ... of the cross-encoder, as in _rerank
        encoder = {"device": args.device, "backend": args.backend, "batch_size": args.batch_size, "fp16": not args.no_fp16}
    from storage import projects

    job, created = submit_eval(
        db, projects.get_project(db, args.project), created_by=f"cli:{getpass.getuser()}", model=args.model, template=args.template,
        qrels_version=args.qrels_version, k=args.k, variant=args.variant, rerank=args.rerank,
        **({"measures": measures} if measures is not None else {}),
        candidates=args.candidates, missing=args.missing, score=args.score, cache_dir=args.cache_dir,
        reuse=not args.no_reuse, ties=args.ties, encoder=encoder, protocol=args.protocol, wise_version=args.wise_version,
    )
    if args.json:
        print(json.dumps({"job_id": job["id"], "created": created, "state": job["state"]}))
    elif created:
        print(f"job {job['id']} queued: {describe(job)}")
    else:
        print(f"job {job['id']} ({job['state']}) already runs this evaluation: {describe(job)}")
    return 0


def _encoder_options(args) -> dict | None:
    """The dense encoder options given (None for a model that is not dense); refuses them for
    bm25, run files and external runs."""
    from evaluation.retrievers.external import names_external_run

    dense = not (args.model == "bm25" or names_external_run(args.model))
    if not dense:
        given = [flag for flag, on in (("--device", args.device), ("--backend", args.backend != "torch"),
                                       ("--batch-size", args.batch_size), ("--no-fp16", args.no_fp16)) if on]
        if given and not args.rerank:  # a cross-encoder reranker takes them too (_rerank)
            raise IFJudgeError(f"{', '.join(given)} apply to dense models only; --model {args.model!r} is not one")
        return None
    return {"device": args.device, "backend": args.backend, "batch_size": args.batch_size, "fp16": not args.no_fp16}


def _rerank(args):
    """``--rerank`` as run_eval takes it: a cross-encoder on ``--device`` / ``--backend`` /
    ``--batch-size`` / ``--no-fp16``, as the dense encoder."""
    if args.rerank is None:
        return None
    from evaluation.retrievers.rerank import cross_encoder_reranker

    return cross_encoder_reranker(args.rerank, device=args.device, backend=args.backend, fp16=not args.no_fp16,
                                  batch_size=args.batch_size, cache_dir=args.cache_dir)


def _model(args):
    """``--model`` as run_eval takes it: a DenseRetriever carrying the encoder options for a dense
    model (its run identity is the same as run_eval's own for the same options), the name otherwise."""
    from evaluation.retrievers.dense import DenseRetriever
    from evaluation.retrievers.external import ExternalRun, looks_like_run_file

    per_mode = {"changed": args.changed_run, "reversed": args.reversed_run}
    if any(per_mode.values()):
        if not looks_like_run_file(args.model):
            raise IFJudgeError(f"--changed-run / --reversed-run need --model to be the og run file; got {args.model!r}")
        for flag, path in (("--changed-run", args.changed_run), ("--reversed-run", args.reversed_run)):
            if path and not looks_like_run_file(path):
                raise IFJudgeError(f"{flag}: no file {path!r}")
        return ExternalRun.from_files({"og": args.model, **{v: p for v, p in per_mode.items() if p}})
    encoder = _encoder_options(args)
    if encoder is None:
        return args.model
    return DenseRetriever(args.model, score=args.score, cache_dir=args.cache_dir,
                          **{k: v for k, v in encoder.items() if v is not None})


_fmt = fmt_value


def delta_lines(table: list[dict], measure: str) -> list[str]:
    """One line per system and version: its mean over its own queries, and for a version other
    than original the delta beside the two means it is the difference of and their query set.

    >>> rows = [{"system": "bm25", "qrels_version": "original", "metrics": {"m": 0.5}, "n_queries": 4,
    ...          "delta_vs_original": {}, "common_with_original": None},
    ...         {"system": "bm25", "qrels_version": "validated", "metrics": {"m": 0.6}, "n_queries": 3,
    ...          "delta_vs_original": {"m": 0.1}, "delta_basis": {"m": "common queries"}, "common_with_original":
    ...          {"n_common": 3, "original_mean": 0.5, "version_mean": 0.6, "left_out_original": ["q4"], "left_out_version": []}}]
    >>> print("\\n".join(delta_lines(rows, "m")))
      bm25  original   0.5000 over 4 queries
      bm25  validated  0.6000 over 3 queries; vs original on the 3 queries both judge: 0.5000 -> 0.6000 (delta +0.1000; left out: q4 judged by original only)
    """
    width = max((len(r["system"]) for r in table), default=0)
    lines = []
    for row in table:
        v = row["qrels_version"]
        line = f"  {row['system']:<{width}}  {v:<10} {_fmt(row['metrics'].get(measure))} over {row['n_queries']} queries"
        d, common = row["delta_vs_original"].get(measure), row.get("common_with_original")
        if v != "original" and common:
            left = [f"{', '.join(common['left_out_original'][:5])} judged by original only"] if common["left_out_original"] else []
            left += [f"{', '.join(common['left_out_version'][:5])} judged by {v} only"] if common["left_out_version"] else []
            line += (f"; vs original on the {common['n_common']} queries both judge: {_fmt(common['original_mean'])} -> "
                     f"{_fmt(common['version_mean'])} (delta {'+' if d >= 0 else ''}{_fmt(d)}"
                     + (f"; left out: {'; '.join(left)}" if left else "") + ")")
        elif v != "original":
            basis = (row.get("delta_basis") or {}).get(measure)
            line += ("; no original run of this system" if d is None and basis is None else
                     f"; delta vs original's mean (no per-query values): {'+' if (d or 0) >= 0 else ''}{_fmt(d)}")
        lines.append(line)
    return lines


def compare_cmd(args) -> int:
    from evaluation import results
    from evaluation.compare import compare_project
    from storage.db import connect

    db = connect(args.db)
    from storage import projects

    out = compare_project(db, projects.get_project(db, args.project), measure=args.measure, n_permutations=args.permutations,
                          seed=args.seed, top_changes=args.top)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    m = out["measure"]
    print(f"{out['project']}: {m} by system and qrels version: the mean over the queries each version judges, then "
          "the change against original on the queries both judge (systems follow MTEB's protocol unless marked)")
    print("\n".join(delta_lines(out["table"], m)))
    for t in out["kendall_tau"]:
        tau = show_why(Undefined(t["reason"])) if t["tau"] is None else f"{t['tau']:.3f} over {t['n_systems']} systems"
        print(f"Kendall tau {t['versions'][0]} vs {t['versions'][1]} (on common queries): {tau}")
    for pair in out["published_vs_validated"]:
        print(f"{pair['published']} (published) vs {pair['validated']} on the queries both judge "
              f"({pair['judgment_flips']} judgments flipped):")
        for r in pair["systems"]:
            left = r["left_out_published"] + r["left_out_validated"]
            print(f"  {r['system']:<40} {_fmt(r['published'])} -> {_fmt(r['validated'])} ({r['n_common_queries']} queries, "
                  f"{r['queries_changed']} changed; left out: {', '.join(left[:10]) or 'none'})")
            for view, name in (("checked", "checked instances"), ("full", "full set")):
                if r[f"{view}_n_published"] is None:
                    print(f"    {name}: unknown (the validated qrels were stored without a build)")
                    continue
                print(f"    {name}: {_fmt(r[f'{view}_published'])} ({r[f'{view}_n_published']} queries) -> "
                      f"{_fmt(r[f'{view}_validated'])} ({r[f'{view}_n_validated']} queries), delta {_fmt(r[f'{view}_delta'])}")
        t = pair["kendall_tau"]
        print(f"  Kendall tau: {show_why(Undefined(t['reason'])) if t['tau'] is None else format(t['tau'], '.3f')}")
    for row in out["infosearch"]:
        for v, b in row["by_qrels"].items():
            print(f"InfoSearch {row['system']} on original vs {v} (WISE / SICR / p-MRR, queries):")
            print("\n".join(infosearch_lines(results.infosearch_records(b, qrels=v), indent="  ")))
    for p in out["p_mrr_published_vs_validated"]:
        print(f"p-MRR {p['system']}: published {_fmt(p['published'])} ({p['n_published']} queries), validated "
              f"{_fmt(p['validated'])} ({p['n_validated']}); on the {p['n_common_queries']} common queries "
              f"{_fmt(p['published_on_common'])} vs {_fmt(p['validated_on_common'])}")
    for v, entries in out["paired_tests"].items():
        for e in entries:
            print(f"[{v}] {e['a']} vs {e['b']}: mean diff {_fmt(e['mean_diff'])}, t-test p(Holm) {_fmt(e['t_p_holm'])},"
                  f" permutation p(Holm) {_fmt(e['permutation_p_holm'])}")
    return 0
