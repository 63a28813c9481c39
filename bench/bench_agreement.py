"""Time ``agreement_report`` on 1,000,000 labels: items x 3 annotators with 5% of the labels
missing, a 5-point ordinal scale, gold labels, annotators drawn from a pool (InstructIR: 10
annotators, 3 per item). Targets on a 2-core machine: < 5 s without intervals, < 30 s with 1,000
bootstrap replicates.

    python bench/bench_agreement.py [--labels 1000000] [--annotators 10] [--boot 1000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from annotation.agreement.report import agreement_report

CATEGORIES = ["1", "2", "3", "4", "5"]


def make_table(n_labels: int, n_annotators: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seeded synthetic labels: each item has a latent score; each of 3 annotators (drawn from the
    pool) gives it +-1 noise; 5% of the labels are then removed."""
    rng = np.random.default_rng(seed)
    n_items = int(round(n_labels / (3 * 0.95)))
    truth = rng.integers(0, 5, n_items)
    ann = np.argsort(rng.random((n_items, n_annotators)), axis=1)[:, :3]
    noise = rng.choice([-1, 0, 0, 0, 1], size=(n_items, 3))
    lab = np.clip(truth[:, None] + noise, 0, 4)
    keep = rng.random((n_items, 3)) >= 0.05
    items = np.repeat(np.arange(n_items), 3)[keep.ravel()]
    labels = pd.DataFrame({
        "item": pd.array([f"q{i}" for i in items], dtype="str"),
        "annotator": pd.array([f"ann{a:02d}" for a in ann.ravel()[keep.ravel()]], dtype="str"),
        "label": pd.array(np.array(CATEGORIES)[lab.ravel()[keep.ravel()]], dtype="str"),
    })
    gold = pd.DataFrame({"item": [f"q{i}" for i in range(n_items)], "label": np.array(CATEGORIES)[truth]})
    return labels, gold


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--labels", type=int, default=1_000_000)
    ap.add_argument("--annotators", type=int, default=10)
    ap.add_argument("--boot", type=int, default=1000)
    a = ap.parse_args()
    labels, gold = make_table(a.labels, a.annotators)
    print(f"table: {len(labels):,} labels, {labels['item'].nunique():,} items, {a.annotators} annotators, "
          f"5 ordinal categories, gold")
    t = time.perf_counter()
    r = agreement_report(labels, CATEGORIES, gold=gold, ordinal=True)
    t0 = time.perf_counter() - t
    print(f"report without intervals: {t0:6.2f} s  (target < 5 s)   "
          f"fleiss={r['fleiss_kappa']:.4f} alpha_ordinal={r['krippendorff_alpha_ordinal']:.4f} "
          f"pairs={len(r['cohen_kappa'])}")
    t = time.perf_counter()
    r = agreement_report(labels, CATEGORIES, gold=gold, ordinal=True, n_boot=a.boot, seed=0)
    t1 = time.perf_counter() - t
    iv = r["intervals"]["fleiss_kappa"]
    print(f"report with {a.boot} bootstrap replicates: {t1:6.2f} s  (target < 30 s)   "
          f"fleiss 95% [{iv['low']:.4f}, {iv['high']:.4f}]")


if __name__ == "__main__":
    main()
