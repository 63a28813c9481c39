"""Does the leaderboard change? Bootstrap intervals over queries against a reference computation
(percentile, BCa by hand and beside scipy's), the one-sided bootstrap levels, Holm's verdict on a
changed order, Kendall tau and its refusal below 10 queries or 3 systems, from stored runs with the
validated qrels' coverage."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from evaluation.leaderboard import leaderboard_change, leaderboard_stability
from storage import eval_runs, projects


def _scores(n_queries, means, seed=0):
    rng = np.random.default_rng(seed)
    qs = [f"q{i:02d}" for i in range(n_queries)]
    return {s: {q: float(np.clip(m + rng.normal(0, 0.2), 0, 1)) for q in qs} for s, m in means.items()}


def test_two_systems_refuse_a_tau_but_keep_their_difference():
    pub = _scores(30, {"A": 0.6, "B": 0.3})
    r = leaderboard_stability(pub, pub, n_boot=200)
    assert r["kendall_tau"]["value"] is None
    assert r["kendall_tau"]["undefined"] == ("undefined with 30 queries and 2 systems: needs at least 10 queries "
                                             "and 3 systems")
    (pair,) = r["pairs"]
    assert pair["difference_published"]["low"] > 0 and pair["one_sided_level_published"] == 0.0


def test_fewer_than_ten_queries_gives_no_interval():
    pub = _scores(9, {"A": 0.6, "B": 0.5, "C": 0.4})
    r = leaderboard_stability(pub, pub, n_boot=50)
    row = r["systems"][0]
    assert row["published"]["low"] is None and "needs at least 10" in row["published"]["undefined"]
    assert row["published"]["value"] == pytest.approx(np.mean(list(pub["A"].values())))
    assert r["pairs"][0]["one_sided_level_published"] is None
    assert r["kendall_tau"]["value"] is None


def test_intervals_match_a_reference_bootstrap():
    pub = _scores(20, {"A": 0.6, "B": 0.5, "C": 0.3}, seed=1)
    val = {s: {q: v for q, v in d.items() if q not in ("q00", "q01")} for s, d in pub.items()}  # 2 queries dropped
    r = leaderboard_stability(pub, val, n_boot=300, seed=5, interval="percentile")
    # reference: the same multinomial draw over the 20 queries; validated weights only its 18 queries
    qs = sorted(pub["A"])
    counts = np.random.default_rng(5).multinomial(20, np.full(20, 1 / 20), size=300)
    keep = np.array([q not in ("q00", "q01") for q in qs])
    a = np.array([pub["A"][q] for q in qs])
    b = np.array([pub["B"][q] for q in qs])
    boot_a_val = (counts * keep) @ a / (counts * keep).sum(1)
    boot_d_pub = counts @ (a - b) / counts.sum(1)
    row_a = next(x for x in r["systems"] if x["system"] == "A")
    assert row_a["validated"]["value"] == pytest.approx(a[keep].mean())
    assert (row_a["validated"]["low"], row_a["validated"]["high"]) == pytest.approx(tuple(np.quantile(boot_a_val, [0.025, 0.975])))
    ab = next(p for p in r["pairs"] if (p["a"], p["b"]) == ("A", "B"))
    assert (ab["difference_published"]["low"], ab["difference_published"]["high"]) == pytest.approx(
        tuple(np.quantile(boot_d_pub, [0.025, 0.975])))
    assert ab["one_sided_level_published"] == pytest.approx(np.mean(np.sign(boot_d_pub) != np.sign((a - b).mean())))
    means_pub = [np.mean(list(pub[s].values())) for s in "ABC"]
    means_val = [np.mean(list(val[s].values())) for s in "ABC"]
    assert r["kendall_tau"]["value"] == pytest.approx(stats.kendalltau(means_pub, means_val).statistic)
    assert r["kendall_tau"]["low"] <= r["kendall_tau"]["value"] <= r["kendall_tau"]["high"]


def test_close_systems_swap_often():
    rng = np.random.default_rng(2)
    qs = [f"q{i}" for i in range(40)]
    base = {q: float(rng.random()) for q in qs}
    pub = {"A": base, "B": {q: v + rng.normal(0, 0.1) for q, v in base.items()},
           "C": {q: v - 0.5 for q, v in base.items()}}
    r = leaderboard_stability(pub, pub, n_boot=500)
    ab = next(p for p in r["pairs"] if (p["a"], p["b"]) == ("A", "B"))
    ac = next(p for p in r["pairs"] if (p["a"], p["b"]) == ("A", "C"))
    assert 0.05 < ab["one_sided_level_published"] < 0.95 and ac["one_sided_level_published"] == 0.0
    assert ab["replicates_ordered_differently"] == 0.0  # the same qrels on both sides: the same order in every replicate
    assert not r["order_changed"]["any"] and r["order_changed"]["tested"] == 3


def test_from_stored_eval_runs(demo):
    db, _ = demo
    pid = projects.get_project(db, "demo")["id"]
    scores = _scores(12, {"bm25": 0.5, "dense": 0.4, "tiny": 0.2}, seed=4)
    for version in ("original", "validated"):
        for model, per in scores.items():
            pq = {q: {"nDCG@10": v} for q, v in per.items() if version == "original" or q != "q00"}
            eval_runs.store_eval_run(db, pid, model=model, template="query", settings={"k": 1000},
                                     qrels_version=version, metrics={"nDCG@10": float(np.mean([x["nDCG@10"] for x in pq.values()]))},
                                     per_query=pq, run={})
    out = leaderboard_change(db, projects.get_project(db, "demo"), measure="ndcg@10", n_boot=100)
    assert out["measure"] == "nDCG@10" and out["undefined"] is None
    (c,) = out["comparisons"]
    assert (c["published"], c["validated"], c["n_queries_published"], c["n_queries_validated"]) == (
        "original", "validated", 12, 11)
    assert {r["system"] for r in c["systems"]} == {"bm25 [query]", "dense [query]", "tiny [query]"}
    assert c["kendall_tau"]["undefined"] is None


def test_no_validated_runs_is_named(demo):
    db, _ = demo
    out = leaderboard_change(db, projects.get_project(db, "demo"))
    assert out["comparisons"] == [] and "no stored evaluation" in out["undefined"]


def test_bca_interval_by_hand_and_beside_scipy():
    pub = _scores(15, {"A": 0.6, "B": 0.5, "C": 0.3}, seed=3)
    assert leaderboard_stability(pub, pub, n_boot=10)["interval"] == "studentized"  # the default (measured)
    r = leaderboard_stability(pub, pub, n_boot=4000, seed=1, interval="bca")
    qs = sorted(pub["A"])
    x = np.array([pub["A"][q] for q in qs])
    counts = np.random.default_rng(1).multinomial(15, np.full(15, 1 / 15), size=4000)
    boot = counts @ x / 15
    # z0 from the share of replicates below the mean; a from the jackknife means; Efron & Tibshirani (14.10)
    z0 = stats.norm.ppf((np.sum(boot < x.mean()) + 0.5 * np.sum(boot == x.mean())) / 4000)
    jack = (x.sum() - x) / 14
    d = jack.mean() - jack
    a = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)
    q = [stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in stats.norm.ppf([0.025, 0.975])]
    row = next(s for s in r["systems"] if s["system"] == "A")["published"]
    assert (row["low"], row["high"]) == pytest.approx(tuple(np.quantile(boot, q)))
    ref = stats.bootstrap((x,), np.mean, n_resamples=20000, method="BCa", random_state=np.random.default_rng(2))
    assert (row["low"], row["high"]) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high), abs=0.01)
    # studentized: t* = (mean* - mean) / se* of each replicate; the interval (mean - t*_.975 se, mean - t*_.025 se)
    stud = leaderboard_stability(pub, pub, n_boot=4000, seed=1, interval="studentized")
    srow = next(s for s in stud["systems"] if s["system"] == "A")["published"]
    second = counts @ x**2 / 15
    se_star = np.sqrt((second - boot**2) * 15 / 14 / 15)
    t = (boot - x.mean()) / se_star
    se = x.std(ddof=1) / np.sqrt(15)
    lo_t, hi_t = np.quantile(t, [0.025, 0.975])
    assert (srow["low"], srow["high"]) == pytest.approx((x.mean() - hi_t * se, x.mean() - lo_t * se))


def test_a_reversed_order_is_declared_after_holm():
    rng = np.random.default_rng(4)
    qs = [f"q{i}" for i in range(40)]
    base = {q: float(rng.random()) for q in qs}
    pub = {"A": {q: v + 0.10 for q, v in base.items()}, "B": dict(base), "C": {q: v - 0.3 for q, v in base.items()}}
    # on the validated qrels B overtakes A clearly; C stays last
    val = {"A": dict(pub["A"]), "B": {q: v + 0.25 + rng.normal(0, 0.02) for q, v in base.items()}, "C": dict(pub["C"])}
    r = leaderboard_stability(pub, val, n_boot=1000, seed=0)
    assert r["order_changed"]["pairs"] == [["A", "B"]] and r["order_changed"]["any"]
    ab = next(p for p in r["pairs"] if (p["a"], p["b"]) == ("A", "B"))
    assert ab["order_changed"]["p_value"] == pytest.approx(1 / 1001)  # no replicate keeps the published order
    assert ab["order_changed"]["p_holm"] == pytest.approx(3 / 1001) and ab["order_changed"]["changed"]
    ac = next(p for p in r["pairs"] if (p["a"], p["b"]) == ("A", "C"))
    assert ac["order_changed"]["p_value"] == 1.0 and not ac["order_changed"]["changed"]
    assert "Holm" in r["order_changed"]["method"] and r["order_changed"]["tested"] == 3


@pytest.mark.both_engines
def test_the_validated_qrels_coverage_is_read_from_the_build(labelled):
    from annotation.outcomes.qrels_builds import store_validated_qrels
    from evaluation.leaderboard import validated_coverage

    db, sid, _ = labelled
    pid = projects.get_project(db, "demo")["id"]
    assert "unknown" in validated_coverage(db, pid, "validated")["note"]
    store_validated_qrels(db, [sid], unresolved="keep-published")
    cov = validated_coverage(db, pid, "validated")
    checked, total = cov["queries_checked"], cov["queries"]
    assert 0 < checked < total and f"checked {checked} of {total} queries" in cov["note"]
