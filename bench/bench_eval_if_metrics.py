"""Benchmark: p-MRR and WISE/SICR on 10,000 queries x 1,000 documents per run.

p-MRR: original and changed qrels with 20 judged documents per query (10 relevant under the
original instruction, 3 of them turned non-relevant under the changed one), two runs.
WISE/SICR: the same qrels as original / instructed qrels and three runs (ori, ins, rev).
Two score regimes: continuous scores (a dense retriever: ties are rare) and scores rounded to 2
decimals (every judged document is tied with about 10 others: the tie-breaking path on every
document, a stress case). Timed with both tie options; the best of two repetitions is reported.
Aim: under 2 s each.

Run: .venv/bin/python bench/bench_eval_if_metrics.py
"""
from __future__ import annotations

import time

import numpy as np

from evaluation.infosearch import infosearch_metrics
from evaluation.pmrr import p_mrr

N_QUERIES, N_DOCS, N_JUDGED, N_RELEVANT, N_CHANGED = 10_000, 1_000, 20, 10, 3


def make_data(seed: int = 0, decimals: int | None = None):
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


def best_of(fn, repeat=2):
    best, value = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return best, value


def main() -> None:
    for decimals, label in ((None, "continuous scores (rare ties)"), (2, "scores rounded to 2 decimals (many ties)")):
        t = time.perf_counter()
        qrels_og, qrels_changed, (run_ori, run_ins, run_rev) = make_data(decimals=decimals)
        print(f"{label}: {N_QUERIES} queries x {N_DOCS} documents per run, {N_JUDGED} judged per query "
              f"(built in {time.perf_counter() - t:.1f} s)")
        for ties in ("docid", "run-order"):
            t_p, p = best_of(lambda: p_mrr(qrels_og, qrels_changed, run_ori, run_ins, ties=ties))
            t_w, w = best_of(lambda: infosearch_metrics(qrels_og, qrels_changed, run_ori, run_ins, run_rev,
                                                         ties=ties))
            print(f"  ties={ties}:")
            print(f"    p-MRR     : {t_p:.2f} s (aim < 2 s: {t_p / 2:.2f} of the budget)  "
                  f"p-MRR={p['p-MRR']:.4f} over {p['n_queries']} queries, {p['n_documents']} documents")
            print(f"    WISE/SICR : {t_w:.2f} s (aim < 2 s: {t_w / 2:.2f} of the budget)  "
                  f"WISE={w['WISE']:.4f} SICR={w['SICR']:.4f} p-MRR={w['p-MRR']:.4f}")
        del qrels_og, qrels_changed, run_ori, run_ins, run_rev


if __name__ == "__main__":
    main()
