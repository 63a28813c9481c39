"""Benchmark: p-MRR and WISE/SICR on 10,000 queries x 1,000 documents per run.

p-MRR: original and changed qrels with 20 judged documents per query (10 relevant under the
original instruction, 3 of them turned non-relevant under the changed one), two runs.
WISE/SICR: the same qrels as original / instructed qrels and three runs (ori, ins, rev).
Two score regimes: continuous scores (a dense retriever: ties are rare) and scores rounded to 2
decimals (every judged document is tied with about 10 others, a stress case). Timed with both tie
options; the best of two repetitions is reported.

Each run is timed in the two forms the measures receive (``evaluation/runs.py``):

- **arrays**: a :class:`~evaluation.runs.RankedRun` as BM25 and the dense retriever hand it to the
  runner (each query's top k by ``top_k_arrays`` in trec_eval's order, coded against the corpus
  ids; building it is the retriever's work, printed apart and not counted in the measures);
- **dicts**, as read from TREC files (``run[qid][docid]``, documents in the file's order, here not
  sorted by score): converted once (``RankedRun.from_dict``, printed apart), then measured on the
  converted runs; the total is printed too.

Aim (issue 21): WISE/SICR < 1 s on 10,000 queries, < 1.5 s with ties everywhere.

Run: PYTHONPATH=$PWD .venv/bin/python bench/bench_eval_if_metrics.py
"""
from __future__ import annotations

import os
import time

import numpy as np

from evaluation.infosearch import infosearch_metrics
from evaluation.pmrr import p_mrr
from evaluation.retrievers.topk import top_k_arrays
from evaluation.runs import RankedRun, RunBuilder

N_QUERIES, N_DOCS, N_JUDGED, N_RELEVANT, N_CHANGED = 10_000, 1_000, 20, 10, 3
AIM = {None: 1.0, 2: 1.5}  # WISE/SICR seconds, continuous scores / ties everywhere


def make_data(seed: int = 0, decimals: int | None = None):
    """Qrels and three runs as dicts: each query ranks a window of 1,000 of 3,000 documents."""
    rng = np.random.default_rng(seed)
    ids = [f"doc{j}" for j in range(N_DOCS * 3)]
    qrels_og, qrels_changed = {}, {}
    runs = ({}, {}, {})
    for i in range(N_QUERIES):
        qid = f"q{i}"
        start = int(rng.integers(0, N_DOCS * 2))
        window = ids[start:start + N_DOCS]
        judged = [window[j] for j in rng.choice(N_DOCS + 50, size=N_JUDGED, replace=False).tolist()
                  if j < N_DOCS] or [window[0]]  # a few judged documents fall outside the run
        og = {d: int(k < N_RELEVANT) for k, d in enumerate(judged)}
        changed = dict(og)
        for d in judged[:N_CHANGED]:
            changed[d] = 0
        qrels_og[qid], qrels_changed[qid] = og, changed
        for run in runs:
            scores = rng.random(N_DOCS)
            if decimals is not None:
                scores = np.round(scores, decimals)
            run[qid] = dict(zip(window, scores.tolist()))
    return qrels_og, qrels_changed, runs


def as_retriever_run(run: dict) -> RankedRun:
    """The run as a retriever builds it: each query's top k (all 1,000) by ``top_k_arrays`` over its
    scores, positions coded against the corpus ids (``RunBuilder``)."""
    corpus = [f"doc{j}" for j in range(N_DOCS * 3)]
    position = {d: i for i, d in enumerate(corpus)}
    builder = RunBuilder(corpus)
    for qid, docs in run.items():
        ids = list(docs)
        at = np.array([position[d] for d in ids], dtype=np.int64)
        order, best = top_k_arrays(np.fromiter(docs.values(), dtype=np.float64, count=len(ids)), ids, len(ids))
        builder.add(qid, at[order], best)
    return builder.build()


def best_of(fn, repeat=2):
    best, value = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return best, value


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} (2 cores)")
    for decimals, label in ((None, "continuous scores (rare ties)"), (2, "scores rounded to 2 decimals (many ties)")):
        t = time.perf_counter()
        qrels_og, qrels_changed, dicts = make_data(decimals=decimals)
        print(f"{label}: {N_QUERIES} queries x {N_DOCS} documents per run, {N_JUDGED} judged per query "
              f"(built in {time.perf_counter() - t:.1f} s)")
        t = time.perf_counter()
        arrays = [as_retriever_run(r) for r in dicts]
        print(f"  arrays as the retrievers hand them, made here from the dicts (id look-ups, top_k_arrays, "
              f"RunBuilder; retrieval's work, not counted): {time.perf_counter() - t:.1f} s for 3 runs")
        t_conv, converted = best_of(lambda: [RankedRun.from_dict(r) for r in dicts])
        print(f"  dicts read from files -> arrays (RankedRun.from_dict): {t_conv / 3:.2f} s per run "
              f"({t_conv:.2f} s for the 3 runs of WISE/SICR, {t_conv * 2 / 3:.2f} s for the 2 of p-MRR)")
        for ties in ("docid", "run-order"):
            print(f"  ties={ties}:")
            for form, runs in (("arrays (retriever's run)", arrays), ("dicts from files, converted", converted)):
                t_p, p = best_of(lambda: p_mrr(qrels_og, qrels_changed, runs[0], runs[1], ties=ties))
                t_w, w = best_of(lambda: infosearch_metrics(qrels_og, qrels_changed, *runs, ties=ties))
                extra_p = extra_w = ""
                if form.startswith("dicts"):
                    extra_p = f", with the conversion {t_p + t_conv * 2 / 3:.2f} s"
                    extra_w = f", with the conversion {t_w + t_conv:.2f} s"
                print(f"    {form}:")
                print(f"      p-MRR     : {t_p:.2f} s{extra_p}  p-MRR={p['p-MRR']:.4f} over {p['n_queries']} "
                      f"queries, {p['n_documents']} documents")
                print(f"      WISE/SICR : {t_w:.2f} s{extra_w} (aim < {AIM[decimals]} s)  WISE={w['WISE']:.4f} "
                      f"SICR={w['SICR']:.4f} p-MRR={w['p-MRR']:.4f}")
        del qrels_og, qrels_changed, dicts, arrays, converted


if __name__ == "__main__":
    main()
