"""Coverage of the benchmark-wide intervals on simulated clustered samples.

A population shaped like InstructIR (1,267 query groups, 9,906 instances, 7-10 instructions per
group) is built for each share InstructIR reports in its Table 7 (valid 100%, natural 97%, top-1
accuracy 76.5%); instances of a group are correlated (each group draws its own Yes rate from a beta
distribution with intra-class correlation ``--icc``). The study's design is then repeated
``--reps`` times: 8% of the groups, 2 instances of each (InstructIR's own sample: 101 groups, 202
instances). For each sample we compute

- the design-aware 95% interval of :func:`annotation.estimates.design_estimate` (stratified
  two-stage ratio estimator, linearised variance with finite-population corrections), and
- the naive 95% Wilson interval that treats the 202 instances as independent (what the monitor
  showed before), and
- the same design variance with a plain ``R +- t sqrt(V)`` (Wald-t) interval, to show why the
  Korn-Graubard form is the default,

and count how often each contains the population's true share. Compared with: the nominal 95%.

    python bench/bench_estimate_coverage.py [--reps 1000] [--icc 0.5] [--seed 0]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from statsmodels.stats.proportion import proportion_confint

from annotation.estimates import design_estimate
from evaluation.undefined import is_defined

# InstructIR (Oh et al., 2024): 1,267 groups, 9,906 instances; Table 7 proportions of Yes / top-1 accuracy
N_GROUPS = 1267
N_INSTANCES = 9906
TABLE7 = {"Q1 valid (Proportion of Yes)": 1.00, "Q2 natural (Proportion of Yes)": 0.97, "Q3 top-1 accuracy": 0.765}
GROUP_FRACTION = 0.08
PER_GROUP = 2


def population(share: float, icc: float, rng: np.random.Generator) -> list[np.ndarray]:
    """Group answers (0/1 per instance) whose overall share is close to ``share``; each group's
    rate ~ Beta(share (1 - icc) / icc, (1 - share) (1 - icc) / icc) (intra-class correlation icc)."""
    sizes = np.full(N_GROUPS, 7)
    extra = rng.choice(N_GROUPS * 3, N_INSTANCES - 7 * N_GROUPS, replace=False) % N_GROUPS  # sizes 7-10
    np.add.at(sizes, extra, 1)
    if share in (0.0, 1.0):
        rates = np.full(N_GROUPS, share)
    else:
        a, b = share * (1 - icc) / icc, (1 - share) * (1 - icc) / icc
        rates = rng.beta(a, b, N_GROUPS)
    return [(rng.random(m) < p).astype(float) for m, p in zip(sizes, rates)]


def one_sample(groups: list[np.ndarray], rng: np.random.Generator):
    n = round(GROUP_FRACTION * len(groups))
    chosen = np.sort(rng.choice(len(groups), n, replace=False))
    y, cluster = [], []
    for g in chosen:
        pick = rng.choice(len(groups[g]), min(PER_GROUP, len(groups[g])), replace=False)
        y.extend(groups[g][pick])
        cluster.extend([str(g)] * len(pick))
    return np.array(y), cluster, {str(g): len(groups[g]) for g in chosen}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--icc", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"population: {N_GROUPS} groups, {N_INSTANCES} instances; sample: {GROUP_FRACTION:.0%} of the groups, "
          f"{PER_GROUP} instances each; intra-class correlation {args.icc}; {args.reps} samples; nominal coverage 95%")
    print(f"{'Table 7 share':34} {'truth':>7} {'design cover':>12} {'mean width':>10} {'Wilson cover':>12} "
          f"{'mean width':>10} {'Wald-t cover':>12} {'mean deff':>9}")
    start = time.perf_counter()
    for name, share in TABLE7.items():
        groups = population(share, args.icc, rng)
        truth = float(np.concatenate(groups).mean())
        cover_d = cover_w = cover_t = 0
        width_d, width_w, deffs = [], [], []
        for _ in range(args.reps):
            y, cluster, sizes = one_sample(groups, rng)
            r = design_estimate(y, np.ones_like(y), stratum=[""] * len(y), cluster=cluster,
                                population_groups={"": N_GROUPS}, group_units=sizes)
            cover_d += r["low"] <= truth <= r["high"]
            t = design_estimate(y, np.ones_like(y), stratum=[""] * len(y), cluster=cluster,
                                population_groups={"": N_GROUPS}, group_units=sizes, interval="wald")
            cover_t += t["low"] <= truth <= t["high"]
            width_d.append(r["high"] - r["low"])
            if is_defined(r["deff"]):
                deffs.append(r["deff"])
            lo, hi = proportion_confint(int(y.sum()), len(y), alpha=0.05, method="wilson")
            cover_w += lo <= truth <= hi
            width_w.append(hi - lo)
        print(f"{name:34} {truth:7.4f} {cover_d / args.reps:12.3f} {np.mean(width_d):10.4f} "
              f"{cover_w / args.reps:12.3f} {np.mean(width_w):10.4f} {cover_t / args.reps:12.3f} "
              f"{(np.mean(deffs) if deffs else float('nan')):9.2f}")
    print(f"({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
