"""A study stratified by the judge's answers against a plain random sample of the same size.

The synthetic benchmark: 2,000 instances (each its own query group), 97% of them truly Yes (60
No), and a judge with a known bias: it answers No for 54 of the 60 true No (90%) and, falsely, for
40 of the 1,940 Yes (2%), so it flags 94 groups and puts the share at 95.3%. ``--reps`` times:

- **judge-stratified**: the plan of :mod:`annotation.judges.strata` (``judge No`` / ``judge Yes``
  strata, Neyman allocation of ``--fraction`` of the groups at the assumed shares 0.5 and 0.99),
  drawn by :func:`annotation.studies.sample_by_judge`, estimated by
  :func:`annotation.estimates.benchmark.design_estimate` with the strata's sizes (weights ``N_h / n_h``) and
  the interval such a study reports (``stratified-wilson``: :mod:`annotation.survey.stratified_wilson`);
  beside it, the same sample with the default design Wilson interval of the summed variance (capped
  at Kish's effective size), which a judge-stratified study does not report;
- **plain**: the same number of groups drawn at random (:func:`annotation.studies.sample_instances`),
  the same estimator with one stratum;
- **weights ignored**: the judge-stratified sample's plain share and its Wilson interval (what a
  tool that forgot the design would report).

Printed: per design, how often the 95% interval contains the true share (target 0.95, with the
binomial standard error of ``--reps`` replicates), the mean width, the mean estimate against the
truth, and the analytic preview (:func:`annotation.judges.strata.width_preview`) the lead sees before
the study is created.

    python bench/bench_judge_strata.py                 # 2000 replicates
    python bench/bench_judge_strata.py --reps 400 --fraction 0.05
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from annotation.judges import strata as js  # noqa: E402
from annotation.estimates.benchmark import design_estimate  # noqa: E402
from annotation.studies import sample_instances  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

N, TRUE_NO, CAUGHT, FALSE_ALARMS = 2000, 60, 54, 40


def population(seed: int = 0) -> tuple[list[dict], dict[str, int], dict[str, str]]:
    """(instances, truth: instance -> 1 for Yes, judge stratum per group)."""
    rng = np.random.default_rng(seed)
    ids = [f"i{k:04d}" for k in range(N)]
    order = rng.permutation(N)
    no = {ids[k] for k in order[:TRUE_NO]}
    flagged = {ids[k] for k in order[:CAUGHT]} | {ids[k] for k in order[TRUE_NO:TRUE_NO + FALSE_ALARMS]}
    insts = [{"instance_id": i, "group_id": i, "query_id": i} for i in ids]
    return insts, {i: int(i not in no) for i in ids}, {i: js.NO if i in flagged else js.YES for i in ids}


def plan(group_stratum: dict[str, str], fraction: float) -> tuple[dict, dict[str, int]]:
    """The stored plan (as :func:`annotation.judges.strata.plan` builds it) and the strata's sizes."""
    sizes = {h: sum(v == h for v in group_stratum.values()) for h in (js.NO, js.YES)}
    shares = {h: js.ASSUMED_SHARES[h] for h in sizes}
    n_h = js.allocate(sizes, group_fraction=fraction, shares=shares)
    return {"group_stratum": group_stratum, "fractions": {h: n_h[h] / sizes[h] for h in sizes}}, sizes


def simulate(reps: int, *, fraction: float = 0.1, seed: int = 0) -> dict:
    """Coverage, mean width and mean estimate of each design over ``reps`` draws."""
    insts, truth, gs = population(seed)
    p_true = sum(truth.values()) / N
    strat_plan, sizes = plan(gs, fraction)
    names = ("judge-stratified", "judge-stratified, pooled Wilson (not reported)", "plain", "weights ignored")
    out = {name: {"cover": 0, "width": 0.0, "estimate": 0.0} for name in names}
    n_groups = 0
    for r in range(reps):
        s = js.sample_by_judge(insts, strat_plan, per_group=1, seed=seed + r)
        ids = [i["instance_id"] for i in s]
        n_groups = len(ids)
        y = [truth[i] for i in ids]
        e = design_estimate(y, [1] * len(ids), stratum=[gs[i] for i in ids], cluster=ids,
                            population_groups=sizes, group_units=dict.fromkeys(ids, 1), interval="stratified-wilson")
        e_pooled = design_estimate(y, [1] * len(ids), stratum=[gs[i] for i in ids], cluster=ids,
                                   population_groups=sizes, group_units=dict.fromkeys(ids, 1))
        lo, hi = proportion_confint(sum(y), len(y), method="wilson")
        p = [i["instance_id"] for i in sample_instances(insts, group_fraction=len(ids) / N, per_group=1, seed=seed + r)]
        e_plain = design_estimate([truth[i] for i in p], [1] * len(p), stratum=[""] * len(p), cluster=p,
                                  population_groups={"": N}, group_units=dict.fromkeys(p, 1))
        for name, (est, low, high) in (("judge-stratified", (e["share"], e["low"], e["high"])),
                                       (names[1], (e_pooled["share"], e_pooled["low"], e_pooled["high"])),
                                       ("plain", (e_plain["share"], e_plain["low"], e_plain["high"])),
                                       ("weights ignored", (sum(y) / len(y), lo, hi))):
            o = out[name]
            o["cover"] += low <= p_true <= high
            o["width"] += high - low
            o["estimate"] += est
    for o in out.values():
        o["coverage"] = o.pop("cover") / reps
        o["width"] /= reps
        o["estimate"] /= reps
    shares = {h: js.ASSUMED_SHARES[h] for h in sizes}
    n_h = {h: round(strat_plan["fractions"][h] * sizes[h]) for h in sizes}
    return {"reps": reps, "truth": p_true, "groups": n_groups, "strata": sizes, "sampled": n_h,
            "preview": js.width_preview(sizes, n_h, shares), "designs": out,
            "coverage_se": math.sqrt(0.95 * 0.05 / reps)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--fraction", type=float, default=0.1, help="share of the groups sampled (default 0.1)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    res = simulate(args.reps, fraction=args.fraction, seed=args.seed)
    load = os.getloadavg()[0]
    se = res["coverage_se"]
    print(f"{N} instances, true share {res['truth']:.3f}; judge flags {res['strata'][js.NO]} groups "
          f"({CAUGHT} of {TRUE_NO} true No, {FALSE_ALARMS} false alarms); {res['groups']} groups per study "
          f"(judge No {res['sampled'][js.NO]}, judge Yes {res['sampled'][js.YES]}); {res['reps']} draws, "
          f"{time.perf_counter() - t0:.1f} s, load {load:.2f}")
    print(f"coverage target 0.95, binomial SE of {res['reps']} draws {se:.4f} (0.95 +- 3 SE: "
          f"{0.95 - 3 * se:.3f}-{0.95 + 3 * se:.3f})")
    print("| design | coverage of the 95% interval | mean width | mean estimate - truth |")
    print("|---|---|---|---|")
    for name, o in res["designs"].items():
        print(f"| {name} | {o['coverage']:.3f} | {o['width']:.4f} | {o['estimate'] - res['truth']:+.4f} |")
    p = res["preview"]
    print(f"analytic preview (what `study create --stratify-by-judge` prints, at the assumed shares): "
          f"width {2 * p['half_width']:.4f} vs plain {2 * p['plain_half_width']:.4f} (ratio {p['width_ratio']:.2f})")
    return res


if __name__ == "__main__":
    main()
