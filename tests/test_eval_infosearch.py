"""SICR / WISE (InfoSearch): every branch by hand, ties both ways, absent documents and queries."""
import math
from pathlib import Path

import pytest

from formats import trec_io
from evaluation.undefined import Undefined
from evaluation.infosearch import infosearch_metrics, sicr_indicator, wise_score

FIXTURES = Path(__file__).parent / "fixtures" / "eval"


def fixture_case():
    return (
        trec_io.read_qrels(FIXTURES / "is_qrels_ori.txt"),
        trec_io.read_qrels(FIXTURES / "is_qrels_ins.txt"),
        trec_io.read_run(FIXTURES / "is_run_ori.trec"),
        trec_io.read_run(FIXTURES / "is_run_ins.trec"),
        trec_io.read_run(FIXTURES / "is_run_rev.trec"),
    )


@pytest.mark.parametrize(
    "r_ori, r_ins, r_rev, n, expected",
    [
        (3, 1, 9, 5, 1.0),  # reward: R_ori < N and R_ins = 1
        (5, 1, 9, 5, 1 - 4 / 20),  # R_ori = N is not < N -> (1 - (R_ori - R_ins)/K) / sqrt(R_ins)
        (10, 4, 30, 5, (1 - 6 / 20) / 2),
        (20, 20, 21, 5, 1 / math.sqrt(20)),  # R_ins = R_ori <= K
        (21, 2, 40, 5, 0.01),  # R_ori > K
        (6, 8, 4, 5, -1.0),  # R_rev < R_ori < R_ins
        (4, 8, 6, 5, (4 - 8) / 8),  # R_ori <= R_ins
        (4, 4, 4, 5, 0.0),  # R_ori = R_ins = R_rev: not rewarded (R_ori < R_rev fails), penalty 0
        (6, 2, 3, 5, (3 - 6) / 6),  # R_rev <= R_ori, R_ins < R_ori
        (6, 2, 6, 5, 0.0),
    ],
)
def test_wise_branches(r_ori, r_ins, r_rev, n, expected):
    assert wise_score(r_ori, r_ins, r_rev, n=n) == pytest.approx(expected, abs=1e-15)


def test_wise_k_option():
    assert wise_score(10, 4, 30, n=5, k=10) == pytest.approx((1 - 6 / 10) / 2)
    assert wise_score(11, 4, 30, n=5, k=10) == 0.01


@pytest.mark.parametrize(
    "ranks, scores, expected",
    [
        ((3, 1, 5), (0.5, 0.9, 0.1), 1),
        ((3, 1, 5), (0.5, 0.5, 0.1), 0),  # S_ins must be > S_ori when R_ori > 1
        ((3, 3, 5), (0.5, 0.9, 0.1), 0),
        ((3, 1, 3), (0.5, 0.9, 0.1), 0),
        ((3, 1, 5), (0.5, 0.9, 0.5), 0),
        ((1, 1, 2), (0.5, 0.5, 0.1), 1),  # R_ori = 1: R_ins = 1 and S_ins >= S_ori suffice
        ((1, 1, 1), (0.5, 0.6, 0.1), 0),
        ((1, 2, 3), (0.5, 0.6, 0.1), 0),
        ((1, 1, 2), (0.5, 0.4, 0.1), 0),
    ],
)
def test_sicr_indicator(ranks, scores, expected):
    assert sicr_indicator(*ranks, *scores) == expected


def test_hand_computed_ties_by_docid():
    r = infosearch_metrics(*fixture_case())
    # q1: positive g (N = 2: g and negative h). ranks ori 3, ins 1, rev 4; S .7, .95, .1
    #     WISE = (1 - 2/20) / 1 = 0.9; SICR = 1. p-MRR on h: ori 1 -> ins 3: 1 - 1/3
    # q2: positives p1, p2, no negative (N = 2). p1/p2 tie in ori and ins -> p2 first.
    #     p1: ori 2, ins 2, rev 2 -> penalty (2-2)/2 = 0, SICR 0
    #     p2: ori 1, ins 1, rev 3 (absent, 2 docs) -> R_ori < N and R_ins = 1 -> 1;
    #         SICR: S_ins .6 >= S_ori .5 > S_rev 0 (absent) -> 1
    assert r["per_query"]["q1"]["WISE"] == pytest.approx(0.9)
    assert r["per_query"]["q2"]["WISE"] == pytest.approx(0.5)
    assert r["per_query"]["q2"]["SICR"] == 0.5
    assert r["per_query"]["q2"]["p-MRR"] is None
    assert r["WISE"] == pytest.approx(0.7, abs=1e-12)
    assert r["SICR"] == pytest.approx(0.75, abs=1e-12)
    assert r["p-MRR"] == pytest.approx(2 / 3, abs=1e-12)
    assert r["n_queries"] == 2 and r["n_queries_pmrr"] == 1
    assert r["missing_queries"] == ["q4"]  # absent from the reversed run
    assert r["mean_rank"]["ori"] == pytest.approx((3 + 1.5) / 2)


def test_hand_computed_ties_by_run_order():
    r = infosearch_metrics(*fixture_case(), ties="run-order")
    # q2 in file order: p1 ori 1, ins 1, rev 2 (S .5, .6, .3) -> WISE 1, SICR 1
    #                   p2 ori 2, ins 2, rev 3 -> R_ori = N: (1 - 0/20)/sqrt(2), SICR 0
    q2_wise = (1 + 1 / math.sqrt(2)) / 2
    assert r["per_query"]["q2"]["WISE"] == pytest.approx(q2_wise, abs=1e-12)
    assert r["WISE"] == pytest.approx((0.9 + q2_wise) / 2, abs=1e-12)
    assert r["SICR"] == pytest.approx(0.75, abs=1e-12)
    assert r["p-MRR"] == pytest.approx(2 / 3, abs=1e-12)


def test_no_positive_is_undefined():
    qrels_ori = {"q": {"a": 1}}
    qrels_ins = {"q": {"a": 0}}
    run = {"q": {"a": 1.0, "b": 0.5}}
    r = infosearch_metrics(qrels_ori, qrels_ins, run, run, run)
    reason = "no query has a document relevant under both instructions"
    assert r["WISE"] == Undefined(reason) and r["SICR"] == Undefined(reason) and r["n_queries"] == 0
    assert r["p-MRR"] == 0.0  # the negative a stays at rank 1


def test_no_negative_makes_p_mrr_undefined():
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 0.5}}
    r = infosearch_metrics(qrels, qrels, run, run, run)
    assert r["p-MRR"] == Undefined("no document is relevant originally and not under the instruction")
    assert r["n_queries_pmrr"] == 0 and r["WISE"] == 0.0  # a: rank 1 in every run, R_rev not below R_ori


def _naive_rank(docs, doc, ties):
    key = (lambda x: x[1]) if ties == "run-order" else (lambda x: (x[1], x[0]))
    order = [d for d, _ in sorted(docs.items(), key=key, reverse=True)]
    return (order.index(doc) + 1, docs[doc]) if doc in docs else (len(order) + 1, 0.0)


@pytest.mark.parametrize("ties", ["docid", "run-order"])
def test_random_cases_equal_a_naive_full_sort_implementation(ties):
    import random

    rng = random.Random(11)
    qrels_ori, qrels_ins, runs = {}, {}, ({}, {}, {})
    for i in range(60):
        qid = f"q{i}"
        ids = [f"d{j}" for j in range(rng.randrange(5, 30))]
        judged = rng.sample(ids + ["gone1", "gone2"], 6)
        qrels_ori[qid] = {d: rng.choice([0, 1, 1]) for d in judged}
        qrels_ins[qid] = {d: rel * rng.choice([0, 1]) for d, rel in qrels_ori[qid].items()}
        for run in runs:
            ordered = rng.sample(ids, len(ids))
            run[qid] = {d: float(rng.randrange(5)) for d in ordered}
    r = infosearch_metrics(qrels_ori, qrels_ins, *runs, ties=ties)
    wise_q, sicr_q, pmrr_q = [], [], []
    for qid in qrels_ori:
        pos = [d for d, v in qrels_ori[qid].items() if v >= 1 and qrels_ins[qid][d] >= 1]
        neg = [d for d, v in qrels_ori[qid].items() if v >= 1 and qrels_ins[qid][d] < 1]
        if pos:
            w, s = [], []
            for d in pos:
                (ro, so), (ri, si), (rr, sr) = (_naive_rank(run[qid], d, ties) for run in runs)
                w.append(wise_score(ro, ri, rr, n=len(pos) + len(neg)))
                s.append(sicr_indicator(ro, ri, rr, so, si, sr))
            wise_q.append(sum(w) / len(w))
            sicr_q.append(sum(s) / len(s))
        if neg:
            vals = []
            for d in neg:
                ro, ri = _naive_rank(runs[0][qid], d, ties)[0], _naive_rank(runs[1][qid], d, ties)[0]
                vals.append(ri / ro - 1 if ro >= ri else 1 - ro / ri)
            pmrr_q.append(sum(vals) / len(vals))
    assert r["WISE"] == pytest.approx(sum(wise_q) / len(wise_q), abs=1e-12)
    assert r["SICR"] == pytest.approx(sum(sicr_q) / len(sicr_q), abs=1e-12)
    assert r["p-MRR"] == pytest.approx(sum(pmrr_q) / len(pmrr_q), abs=1e-12)
