"""Coverage of every 95% interval the tool reports, on simulated benchmarks: a benchmark the
interval can fail on.

**Benchmark-wide estimates** (the main table). For each scenario a population is built: query
groups in three domains (query subsets) of unequal sizes, the instances of a group answered alike
more often than two random instances (each group draws its own rate of Yes from a beta distribution
with intra-class correlation ``--icc``), an overall share from 50 to 99%, and an automatic judge's
answer for every instance (informative, biased on one domain, near-perfect). It is imported as a
project; then ``--reps`` times a study is drawn by :func:`annotation.studies.create_study` (its own
seed, the scenario's domain rates), its screens are answered through the storage path the annotate
screen uses (:func:`storage.studies.submit`, one annotator per item, answers = the population's
truth), and :func:`annotation.estimates.benchmark.benchmark_estimates` (what ``ifjudge report --judge FILE``
prints) gives the design-aware interval and the prediction-powered one (its weight fixed at 1/2,
the default). Printed per scenario: how often each contains the population's share (target
0.925-0.975), the mean width, the intervals of width 0, and as comparisons the naive independent
(Wilson) interval, the prediction-powered one with a tuned weight (``judge_weight=None``: cross-fitted;
``ifjudge report --judge-weight tuned``) and ``ppi_py``. A coverage outside the target
is marked ``<-``.

**Leaderboards** (``--section leaderboard``): per-query scores of 4 systems (correlated across
systems, skewed like nDCG) at 10, 20 and 30 queries; the BCa and percentile bootstrap intervals of
:func:`evaluation.leaderboard.leaderboard_stability` for a system's mean and a paired difference,
against the population mean.

**Agreement** (``--section agreement``): three annotators label clustered items (groups alike);
the kappas, Gwet's AC1, Krippendorff's alpha and the share of Yes of a sample of groups, with the
cluster bootstrap
(:func:`annotation.agreement.report.agreement_report` with the items' groups) and the item bootstrap,
against the values on the whole population.

**Discreteness** (``--section discreteness``, exact, no simulation): why a near-perfect judge's
interval covers about 0.99 at a weight near 1 (the tuned weight's). With about 1.7 disagreements expected in a sample of 202, the
prediction-powered estimate is the judge's share plus (Yes/No disagreements - No/Yes disagreements) /
202, two Poisson counts. For several pairs of their means with the same difference (the same
population share), the exact coverage of three rules for that difference: the score interval of a
paired difference (Tango 1998), the Wald interval with Agresti & Min's floor (the tool's disagreement
part at weight 1, equal weights), and Wilson's interval of the Yes/No count alone (which assumes the
judge never says Yes wrongly).

    python bench/bench_estimate_coverage.py                # every section, the full run (docs/statistics.md)
    python bench/bench_estimate_coverage.py --quick        # a smoke run: 1 scenario, 20 studies, small bootstraps
    python bench/bench_estimate_coverage.py --section estimates --reps 1000 --scenario 97-biased
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from accounts import auth  # noqa: E402
from annotation.estimates.benchmark import benchmark_estimates  # noqa: E402
from annotation.studies import StudySettings, create_study  # noqa: E402
from storage.projects import get_project  # noqa: E402
from formats.bundle import Bundle, Instance, Query  # noqa: E402
from storage import projects, studies  # noqa: E402
from storage.db import connect  # noqa: E402

TARGET = (0.925, 0.975)


# --------------------------------------------------------------------------- populations


@dataclass
class Scenario:
    """A population: per domain (groups, smallest and largest group, sampling fraction, shift of its
    share), the overall share, the judge, the intra-class correlation; ``per_group`` instances
    sampled per group."""

    key: str
    title: str
    share: float
    domains: list[tuple[int, int, int, float, float]]
    judge: dict = field(default_factory=dict)
    icc: float = 0.3
    per_group: int = 2


def _judge(rng, domain: int, y: np.ndarray, spec: dict) -> np.ndarray:
    """The judge's answers for one group's truth ``y``: flips each answer with ``spec["flip"]``; on
    ``spec["domain"]`` also says No to a further ``spec["off"]`` of the Yes instances (off < 0: Yes
    to the No ones, at five times the rate: the share moves by about the same amount)."""
    out = np.where(rng.random(len(y)) < spec.get("flip", 0.0), 1 - y, y)
    if domain == spec.get("domain"):
        off = spec.get("off", 0.0)
        if off > 0:
            out = np.where((y == 1) & (rng.random(len(y)) < off), 0.0, out)
        elif off < 0:
            out = np.where((y == 0) & (rng.random(len(y)) < -5 * off), 1.0, out)
    return out


SCENARIOS = [
    Scenario("50-informative", "50% share, judge right 90% of the time", 0.50,
             [(600, 3, 6, 0.08, 0.0), (300, 6, 12, 0.08, 0.0), (150, 10, 20, 0.08, 0.0)], {"flip": 0.10}),
    Scenario("75-biased", "75% share, judge off by 10 points on one domain", 0.75,
             [(600, 3, 6, 0.08, 0.0), (300, 6, 12, 0.08, 0.0), (150, 10, 20, 0.08, 0.0)],
             {"flip": 0.06, "domain": 1, "off": 0.10}),
    Scenario("97-biased", "97% share, judge off by 10 points on one domain", 0.97,
             [(600, 3, 6, 0.08, 0.0), (300, 6, 12, 0.08, 0.0), (150, 10, 20, 0.08, 0.0)],
             {"flip": 0.01, "domain": 1, "off": 0.10}),
    Scenario("97-yes-too-often", "97% share, judge says Yes too often on one domain", 0.97,
             [(600, 7, 10, 0.08, 0.0), (400, 7, 10, 0.08, 0.0), (267, 7, 10, 0.08, 0.0)],
             {"flip": 0.01, "domain": 1, "off": -0.10}),
    Scenario("97-near-perfect", "97% share, near-perfect judge (0.8% of answers flipped)", 0.97,
             [(600, 7, 10, 0.08, 0.0), (400, 7, 10, 0.08, 0.0), (267, 7, 10, 0.08, 0.0)], {"flip": 0.008}),
    Scenario("99-near-perfect", "99% share, near-perfect judge (0.5% flipped)", 0.99,
             [(600, 7, 10, 0.08, 0.0), (400, 7, 10, 0.08, 0.0), (267, 7, 10, 0.08, 0.0)], {"flip": 0.005}),
    Scenario("97-rates", "97% share, domains sampled at 4 / 10 / 25%", 0.97,
             [(600, 3, 6, 0.04, 0.0), (300, 6, 12, 0.10, -0.03), (150, 10, 20, 0.25, 0.02)], {"flip": 0.03}),
    Scenario("90-small", "small population (90 groups, half sampled: FPC matters), 90% share", 0.90,
             [(40, 3, 6, 0.5, 0.0), (30, 5, 12, 0.5, 0.0), (20, 8, 20, 0.5, 0.0)], {"flip": 0.05}),
    Scenario("97-instructir", "InstructIR-shaped: 1,267 groups of 7-10, 8%, one stratum, 97% share", 0.97,
             [(1267, 7, 10, 0.08, 0.0)], {"flip": 0.02}),
]
QUICK = ["75-biased"]


def population(sc: Scenario, rng) -> tuple[Bundle, dict, dict, float]:
    """The project's bundle, the truth and the judge per instance, and the population's share."""
    b, truth, judge = Bundle(), {}, {}
    a_b = (1 - sc.icc) / sc.icc
    for d, (n_groups, lo, hi, _, shift) in enumerate(sc.domains):
        p = min(max(sc.share + shift, 1e-4), 1 - 1e-4)
        rates = rng.beta(p * a_b, (1 - p) * a_b, n_groups)
        for g, rate in enumerate(rates):
            qid = f"d{d}q{g}"
            b.queries.append(Query(qid, f"query {qid}", subset=f"domain{d}" if len(sc.domains) > 1 else ""))
            y = (rng.random(int(rng.integers(lo, hi + 1))) < rate).astype(float)
            for k, (yk, jk) in enumerate(zip(y, _judge(rng, d, y, sc.judge))):
                iid = f"{qid}_{k}"
                b.instances.append(Instance(iid, qid, qid, f"instruction {k} of {qid}", "og"))
                truth[iid], judge[(iid, "validity", "")] = int(yk), "Yes" if jk else "No"
    return b, truth, judge, float(np.mean(list(truth.values())))


def _settings(sc: Scenario, seed: int) -> StudySettings:
    if len(sc.domains) == 1:
        return StudySettings(group_fraction=sc.domains[0][3], per_group=sc.per_group, overlap=1, seed=seed)
    return StudySettings(domain_fractions={f"domain{d}": spec[3] for d, spec in enumerate(sc.domains)},
                         per_group=sc.per_group, overlap=1, seed=seed)


def answer(db, study_id: int, user_id: int, truth: dict) -> None:
    """Every screen answered by the one annotator with the population's truth, through
    :func:`storage.studies.submit` (the write of the annotate screen)."""
    for item_id, screen, instance in db.execute("SELECT id, screen, instance_id FROM items WHERE study_id = ?",
                                                [study_id]).fetchall():
        value = "Yes" if truth[instance] else "No"
        studies.submit(db, study_id=study_id, user_id=user_id, screen=screen,
                       answers={item_id: {"value": value, "reason": "" if truth[instance] else "simulated"}},
                       based_on={item_id: None}, started_at=None, now=0.0)


def run_estimates(keys: list[str], reps: int, seed: int) -> list[dict]:
    rows = []
    for sc in [s for s in SCENARIOS if s.key in keys]:
        rng = np.random.default_rng(seed)
        bundle, truth, judge, share = population(sc, rng)
        db = connect(":memory:")
        projects.import_bundle(db, "sim", bundle, fmt="generic", kind="generic")
        user = auth.add_user(db, "a0", "annotator", "pw")
        uid = user["id"] if isinstance(user, dict) else db.execute("SELECT id FROM users WHERE name = 'a0'").fetchone()[0]
        acc = {"design": [], "ppi": [], "naive": [], "tuned": [], "ppi_py": []}
        judge_all = np.array([v == "Yes" for v in judge.values()], dtype=float)
        t0 = time.perf_counter()
        for r in range(reps):
            sid = create_study(db, project=get_project(db, "sim"), questions=["validity"], annotators=["a0"],
                               settings=_settings(sc, seed=r))["study_id"]
            answer(db, sid, uid, truth)
            (e,) = benchmark_estimates(db, sid, judge=judge)["estimates"]
            p, n = e["ppi_design"], e["naive_independent"]
            acc["design"].append((e["low"], e["high"]))
            acc["ppi"].append((p["low"], p["high"]))
            acc["naive"].append((n["low"], n["high"]))
            (t,) = benchmark_estimates(db, sid, judge=judge, judge_weight=None)["estimates"]
            acc["tuned"].append((t["ppi_design"]["low"], t["ppi_design"]["high"]))
            acc["ppi_py"].append(ppi_py_interval(db, sid, sc, truth, judge, judge_all))
        secs = time.perf_counter() - t0
        row = {"scenario": sc.title, "key": sc.key, "share": share, "judge_share": float(np.mean(
            [v == "Yes" for v in judge.values()])), "reps": reps, "seconds": secs, "items": len(truth)}
        for k, iv in acc.items():
            lo, hi = np.array(iv, dtype=float).T
            row[k] = {"coverage": float(np.mean((lo <= share) & (share <= hi))), "width": float(np.mean(hi - lo)),
                      "zero_width": int(np.sum(hi - lo <= 0))}
        rows.append(row)
        print_row(row)
    return rows


def ppi_py_interval(db, study_id: int, sc: Scenario, truth: dict, judge: dict, judge_all) -> tuple[float, float]:
    """The comparison: ``ppi_py.ppi_mean_ci`` (its own power tuning on the sample, its Wald interval)
    on the study's items with the design weights ``w = (N_h / n_h) (M_g / m_g)`` (mean 1) and the
    judge's answers on every instance as the unlabelled set."""
    import ppi_py

    iids = [r[0] for r in db.execute("SELECT DISTINCT instance_id FROM items WHERE study_id = ?", [study_id])]
    group = [i.rsplit("_", 1)[0] for i in iids]
    domain = [int(g[1:].split("q")[0]) for g in group]
    sampled_groups = {d: len({g for g, e in zip(group, domain) if e == d}) for d in set(domain)}
    per_group = {g: group.count(g) for g in set(group)}
    size = {}
    for key in truth:
        size[key.rsplit("_", 1)[0]] = size.get(key.rsplit("_", 1)[0], 0) + 1
    w = np.array([sc.domains[d][0] / sampled_groups[d] * size[g] / per_group[g] for g, d in zip(group, domain)])
    y = np.array([truth[i] for i in iids], dtype=float)
    yhat = np.array([judge[(i, "validity", "")] == "Yes" for i in iids], dtype=float)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, judge_all, alpha=0.05, w=w / w.mean())
    return float(np.ravel(lo)[0]), float(np.ravel(hi)[0])


def _mark(c: float) -> str:
    return "" if TARGET[0] <= c <= TARGET[1] else " <-"


def print_header() -> None:
    print(f"Benchmark-wide estimates: coverage of the 95% intervals (target {TARGET[0]}-{TARGET[1]}), mean width, "
          "intervals of width 0; the naive independent Wilson interval, the prediction-powered one with a tuned "
          "weight (cross-fitted) and ppi_py (design weights, its own tuning) for comparison only")
    print("| scenario | share | design-aware | width | prediction-powered (lam = 1/2) | width | zero-width | "
          "naive (comparison) | tuned weight (comparison) | width | ppi_py (comparison) | width |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")


def print_row(row: dict) -> None:
    d, p, n = row["design"], row["ppi"], row["naive"]
    print(f"| {row['scenario']} | {row['share']:.3f} | {d['coverage']:.3f}{_mark(d['coverage'])} | {d['width']:.3f} | "
          f"{p['coverage']:.3f}{_mark(p['coverage'])} | {p['width']:.3f} | {d['zero_width'] + p['zero_width']} | "
          f"{n['coverage']:.3f} | {row['tuned']['coverage']:.3f} | {row['tuned']['width']:.3f} | "
          f"{row['ppi_py']['coverage']:.3f} | {row['ppi_py']['width']:.3f} |", flush=True)


# --------------------------------------------------------------------------- leaderboards


def run_leaderboard(reps: int, seed: int, n_boot: int) -> list[dict]:
    """Per-query nDCG-like scores of 4 systems over a population of 2,000 queries (a query's
    difficulty shared by the systems, a skewed beta around it); samples of 10, 20 and 30 queries;
    coverage of the system means and the paired differences of the first two systems."""
    from evaluation.leaderboard import leaderboard_stability

    rng = np.random.default_rng(seed)
    n_pop = 2000
    difficulty = rng.beta(1.2, 2.0, n_pop)
    systems = {f"s{k}": np.clip(difficulty + rng.normal(0.04 * k, 0.15, n_pop), 0, 1) ** 1.5 for k in range(4)}
    truth = {s: float(v.mean()) for s, v in systems.items()}
    out = []
    for n_q in (10, 20, 30):
        hits = {m: {"mean": 0, "difference": 0} for m in ("bca", "studentized", "percentile")}
        widths = {m: {"mean": [], "difference": []} for m in ("bca", "studentized", "percentile")}
        for r in range(reps):
            qs = rng.choice(n_pop, n_q, replace=False)
            scores = {s: {f"q{q}": float(v[q]) for q in qs} for s, v in systems.items()}
            for method in ("bca", "studentized", "percentile"):
                res = leaderboard_stability(scores, scores, n_boot=n_boot, seed=r, interval=method)
                row = next(x for x in res["systems"] if x["system"] == "s0")["published"]
                pair = next(x for x in res["pairs"] if (x["a"], x["b"]) == ("s0", "s1"))["difference_published"]
                hits[method]["mean"] += row["low"] <= truth["s0"] <= row["high"]
                hits[method]["difference"] += pair["low"] <= truth["s0"] - truth["s1"] <= pair["high"]
                widths[method]["mean"].append(row["high"] - row["low"])
                widths[method]["difference"].append(pair["high"] - pair["low"])
        for method in ("bca", "studentized", "percentile"):
            row = {"queries": n_q, "method": method, "reps": reps,
                   **{f"{k}_coverage": hits[method][k] / reps for k in ("mean", "difference")},
                   **{f"{k}_width": float(np.mean(widths[method][k])) for k in ("mean", "difference")}}
            out.append(row)
            print(f"| {n_q} | {method} | {row['mean_coverage']:.3f}{_mark(row['mean_coverage'])} | {row['mean_width']:.3f} | "
                  f"{row['difference_coverage']:.3f}{_mark(row['difference_coverage'])} | {row['difference_width']:.3f} |",
                  flush=True)
    return out


# --------------------------------------------------------------------------- agreement


STATISTICS = {"randolph_kappa": "Randolph kappa", "fleiss_kappa": "Fleiss kappa", "gwet_ac1": "Gwet AC1",
              "krippendorff_alpha_nominal": "Krippendorff alpha"}


def run_agreement(reps: int, seed: int, n_boot: int) -> list[dict]:
    """Three annotators label the instances of 1,500 groups of 4-8; an instance's true answer is
    alike within its group (ICC 0.5, 85% Yes), and each annotator errs at the group's rate (10% on
    average, beta(1, 9): some queries are harder than others). Samples of 80
    groups x 2 instances; coverage of the kappas, AC1, alpha and the share of Yes (majority) of the
    whole population by the cluster and the item bootstrap."""
    import pandas as pd

    from annotation.agreement.report import agreement_report

    rng = np.random.default_rng(seed)
    n_groups = 1500
    sizes = rng.integers(4, 9, n_groups)
    rates = rng.beta(0.85, 0.15, n_groups)
    truth = [(rng.random(m) < p).astype(int) for m, p in zip(sizes, rates)]
    errors = rng.beta(1.0, 9.0, n_groups)  # some queries are ambiguous: annotators err more on all their instances
    labels = [np.where(rng.random((m, 3)) < e, 1 - t[:, None], t[:, None]) for m, t, e in zip(sizes, truth, errors)]

    def frame(picks):
        rows = [(f"{g}_{i}", f"a{k}", "Yes" if labels[g][i, k] else "No", str(g)) for g, i in picks for k in range(3)]
        return pd.DataFrame(rows, columns=["item", "annotator", "label", "group"])

    everything = frame([(g, i) for g in range(n_groups) for i in range(sizes[g])])
    pop = agreement_report(everything[["item", "annotator", "label"]], ["Yes", "No"])
    target = {k: pop[k] for k in STATISTICS} | {"yes_share": pop["majority_shares"]["Yes"]}
    hits = {m: dict.fromkeys(target, 0) for m in ("groups", "items")}
    widths = {m: {k: [] for k in target} for m in ("groups", "items")}
    for r in range(reps):
        chosen = rng.choice(n_groups, 80, replace=False)
        f = frame([(g, i) for g in chosen for i in rng.choice(sizes[g], 2, replace=False)])
        clusters = dict(zip(f["item"], f["group"]))
        for method in ("groups", "items"):
            rep = agreement_report(f[["item", "annotator", "label"]], ["Yes", "No"], n_boot=n_boot, seed=r,
                                   clusters=clusters if method == "groups" else None)
            for k in target:
                iv = rep["intervals"]["majority_share_Yes" if k == "yes_share" else k]
                hits[method][k] += iv["low"] <= target[k] <= iv["high"]
                widths[method][k].append(iv["high"] - iv["low"])
    out = []
    for method in ("groups", "items"):
        row = {"method": method, "reps": reps, **{f"{k}_coverage": hits[method][k] / reps for k in target},
               **{f"{k}_width": float(np.mean(widths[method][k])) for k in target}}
        out.append(row)
        name = "cluster bootstrap (groups within domains)" if method == "groups" else "item bootstrap (comparison)"
        print(f"| {name} | " + " | ".join(f"{row[k + '_coverage']:.3f}{_mark(row[k + '_coverage'])} ({row[k + '_width']:.3f})"
                                          for k in target) + " |", flush=True)
    return out


# --------------------------------------------------------------------------- discreteness


def _tango(b: int, c: int, n: int, z: float) -> tuple[float, float]:
    """Tango's (1998) score interval of ``(b - c) / n`` for paired binary data, in counts."""
    from scipy import optimize

    d_hat = (b - c) / n

    def score(d):
        w = (2 * n - b + c) * d - b - c
        p = (np.sqrt(max(w * w + 8 * n * c * d * (1 - d), 0.0)) - w) / (4 * n)
        v = n * (2 * p + d * (1 - d))
        if v <= 0:
            return 0.0 if d == d_hat else np.copysign(np.inf, d_hat - d)
        return n * (d_hat - d) / np.sqrt(v)

    edge = 1 - 1e-12
    return (optimize.brentq(lambda d: score(d) - z, -edge, d_hat) * n,
            optimize.brentq(lambda d: score(d) + z, d_hat, edge) * n)


def _wald_floor(b: int, c: int, n: int, z: float) -> tuple[float, float]:
    """Wald's interval of ``b - c`` with its variance at least Agresti & Min's (half a pseudo-item
    in each cell), in counts."""
    bt, ct = (b + 0.5) / (n + 2) * n, (c + 0.5) / (n + 2) * n
    half = z * np.sqrt(max(b + c - (b - c) ** 2 / n, bt + ct - (bt - ct) ** 2 / n))
    return b - c - half, b - c + half


def _wilson_b(b: int, c: int, n: int, z: float) -> tuple[float, float]:
    """Wilson's interval of b alone, minus c as if c were known: in counts."""
    p, den = b / n, 1 + z * z / n
    centre, half = (p + z * z / (2 * n)) / den, z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (centre - half) * n - c, (centre + half) * n - c


def run_discreteness(n: int = 202) -> list[dict]:
    from scipy import stats

    z = float(stats.t.ppf(0.975, n // 2 - 3))
    means = [(1.68, 0.0), (1.73, 0.05), (2.18, 0.5), (2.68, 1.0), (3.68, 2.0)]
    rules = {"Tango score": _tango, "Wald, Agresti-Min floor": _wald_floor, "Wilson of Yes/No alone": _wilson_b}
    out = []
    for name, rule in rules.items():
        row = {"rule": name}
        for mb, mc in means:
            row[(mb, mc)] = float(sum(stats.poisson.pmf(b, mb) * stats.poisson.pmf(c, mc)
                                      for b in range(40) for c in range(30)
                                      if rule(b, c, n, z)[0] <= mb - mc <= rule(b, c, n, z)[1]))
        out.append(row)
        print(f"| {name} | " + " | ".join(f"{row[m]:.3f}{_mark(row[m])}" for m in means) + " |", flush=True)
    return out


# --------------------------------------------------------------------------- main


def _table(title: str, columns: list[str]) -> None:
    """A section's title and the head of its Markdown table."""
    print(f"\n{title}\n| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000, help="studies per scenario (default 1000)")
    ap.add_argument("--scenario", action="append", help="only this scenario (repeatable): " +
                    ", ".join(s.key for s in SCENARIOS))
    ap.add_argument("--section", action="append", choices=("estimates", "leaderboard", "agreement", "discreteness"))
    ap.add_argument("--icc", type=float, default=None, help="intra-class correlation of every scenario")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 1 scenario x 20 studies, small bootstraps")
    args = ap.parse_args(argv)
    sections = args.section or ["estimates", "leaderboard", "agreement", "discreteness"]
    reps = 20 if args.quick else args.reps
    keys = args.scenario or (QUICK if args.quick else [s.key for s in SCENARIOS])
    if args.icc is not None:
        for s in SCENARIOS:
            s.icc = args.icc
    print(f"load: {os.getloadavg()[0]:.2f} (1 min); seed {args.seed}; {reps} samples per row; target coverage "
          f"{TARGET[0]}-{TARGET[1]} (a 95% interval; 1,000 samples measure a coverage to +-0.014)")
    out: dict = {}
    start = time.perf_counter()
    if "estimates" in sections:
        print_header()
        out["estimates"] = run_estimates(keys, reps, args.seed)
    if "leaderboard" in sections:
        _table("Leaderboard: coverage of a system's mean nDCG and of a paired difference over sampled queries",
               ["queries", "interval", "mean: coverage", "width", "difference: coverage", "width"])
        out["leaderboard"] = run_leaderboard(reps if not args.quick else 10, args.seed,
                                             200 if args.quick else 1000)
    if "agreement" in sections:
        _table("Agreement: coverage (mean width) of the intervals of Table 7's statistics (80 groups x 2 items, "
               "3 annotators)", ["interval", *STATISTICS.values(), "share of Yes"])
        out["agreement"] = run_agreement(reps if not args.quick else 10, args.seed,
                                         100 if args.quick else 500)
    if "discreteness" in sections:
        _table("Discreteness: exact coverage of an interval of the disagreement difference (Yes/No minus No/Yes, "
               "per 202 items; Poisson counts with the means shown, the same difference)",
               ["rule", "(1.68, 0)", "(1.73, 0.05)", "(2.18, 0.5)", "(2.68, 1)", "(3.68, 2)"])
        out["discreteness"] = run_discreteness()
    print(f"({time.perf_counter() - start:.0f} s)")
    return out


if __name__ == "__main__":
    main()
