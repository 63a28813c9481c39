"""Standard measures: names, trec_eval semantics, equality with pytrec_eval called directly."""
import math
import random

import pytest
import pytrec_eval

from evaluation.measures import Measure, evaluate, parse_measure, parse_measures, top_k


def test_names_parse_to_canonical_values():
    assert [str(m) for m in parse_measures("ndcg@10, map@1000,MRR@10,recall@100,p@5,AP,nDCG")] == [
        "nDCG@10", "AP@1000", "RR@10", "R@100", "P@5", "AP", "nDCG",
    ]
    assert parse_measure("nDCG@10") == Measure("nDCG", 10)
    assert parse_measure("AP@1000").trec_key == "map_cut_1000"
    for bad in ("foo@3", "P", "R", "nDCG@0", "nDCG@x"):
        with pytest.raises(ValueError):
            parse_measure(bad)


def test_ndcg_uses_linear_gain_and_ties_by_docid_descending():
    qrels = {"q": {"a": 1, "b": 2, "c": 0}}
    # c first; a and b tie at 0.5 -> b (larger id) before a
    run = {"q": {"a": 0.5, "b": 0.5, "c": 0.9, "z": 0.1}}
    got = evaluate(qrels, run, "nDCG@10,RR@10")["measures"]
    dcg = 2 / math.log2(3) + 1 / math.log2(4)
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert got["nDCG@10"] == pytest.approx(dcg / idcg, abs=1e-12)
    assert got["RR@10"] == 0.5


def test_ap_at_k_divides_by_all_relevant_documents():
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    run = {"q": {"a": 3.0, "x": 2.0, "b": 1.0, "c": 0.5}}
    got = evaluate(qrels, run, "AP@2,AP,P@2,R@2")["measures"]
    assert got["AP@2"] == pytest.approx(1 / 3)
    assert got["AP"] == pytest.approx((1 + 2 / 3 + 3 / 4) / 3)
    assert got["P@2"] == 0.5 and got["R@2"] == pytest.approx(1 / 3)


def test_rr_at_k_cuts_after_trec_ordering():
    qrels = {"q": {"rel": 1}}
    # rank 1: "zz" (tie with "rel" at 0.5, larger id); rank 2: "rel"
    run = {"q": {"rel": 0.5, "zz": 0.5, "aa": 0.1}}
    got = evaluate(qrels, run, "RR@1,RR@2,RR")["measures"]
    assert got == {"RR@1": 0.0, "RR@2": 0.5, "RR": 0.5}


def test_missing_queries_omit_or_zero_and_unjudged_ignored():
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 0}}
    run = {"q1": {"d1": 1.0}, "q9": {"d1": 1.0}}
    omit = evaluate(qrels, run, "P@1")
    zero = evaluate(qrels, run, "P@1", missing="zero")
    assert omit["missing_queries"] == ["q2"] == zero["missing_queries"]  # q3 has no relevant doc
    assert omit["unjudged_queries"] == ["q9"]
    assert omit["measures"]["P@1"] == 1.0 and omit["n_queries"] == 1
    assert zero["measures"]["P@1"] == 0.5 and zero["n_queries"] == 2
    assert zero["per_query"]["q2"] == {"P@1": 0.0}
    with pytest.raises(ValueError):
        evaluate(qrels, run, "P@1", missing="drop")


def test_no_evaluated_query_is_undefined():
    result = evaluate({"q1": {"d": 1}}, {"q2": {"d": 1.0}}, "nDCG@10")
    assert result["measures"] == {"nDCG@10": None} and result["n_queries"] == 0


def _random_case(rng, n_queries=40, n_docs=60, tie_levels=7):
    qrels, run = {}, {}
    for i in range(n_queries):
        qid = f"q{i}"
        docs = [f"d{j}" for j in range(n_docs)]
        qrels[qid] = {d: rng.choice([0, 0, 1, 2]) for d in rng.sample(docs, 15)}
        if i % 9 == 0:
            continue  # a missing query
        # few score levels -> many ties, which trec_eval breaks by doc id
        run[qid] = {d: float(rng.randrange(tie_levels)) for d in rng.sample(docs, rng.randrange(1, n_docs))}
    run["unjudged"] = {"d1": 1.0}
    return qrels, run


@pytest.mark.parametrize("seed", range(5))
def test_equal_to_pytrec_eval_called_directly(seed):
    rng = random.Random(seed)
    qrels, run = _random_case(rng)
    measures = "nDCG@10,AP@1000,R@100,P@5,AP,nDCG,RR"
    got = evaluate(qrels, run, measures)
    direct = pytrec_eval.RelevanceEvaluator(
        qrels, {"ndcg_cut.10", "map_cut.1000", "recall.100", "P.5", "map", "ndcg", "recip_rank"}
    ).evaluate(run)
    keys = {"nDCG@10": "ndcg_cut_10", "AP@1000": "map_cut_1000", "R@100": "recall_100", "P@5": "P_5",
            "AP": "map", "nDCG": "ndcg", "RR": "recip_rank"}
    assert set(got["per_query"]) == set(direct)
    for name, key in keys.items():
        for qid in direct:
            assert got["per_query"][qid][name] == direct[qid][key]
        mean = sum(v[key] for v in direct.values()) / len(direct)
        assert got["measures"][name] == pytest.approx(mean, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_rr_at_k_is_recip_rank_of_the_truncated_run(seed):
    rng = random.Random(100 + seed)
    qrels, run = _random_case(rng)
    got = evaluate(qrels, run, "RR@3,RR@10")
    for k in (3, 10):
        # independent truncation: full sort in trec_eval order, keep k
        cut = {q: dict(sorted(d.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k]) for q, d in run.items()}
        direct = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut)
        for qid, values in direct.items():
            assert got["per_query"][qid][f"RR@{k}"] == values["recip_rank"]
            # and the definition: 1 / rank of the first relevant document within the top k
            order = [d for d, _ in sorted(run[qid].items(), key=lambda x: (x[1], x[0]), reverse=True)]
            first = next((i + 1 for i, d in enumerate(order[:k]) if qrels[qid].get(d, 0) >= 1), None)
            assert values["recip_rank"] == pytest.approx(0.0 if first is None else 1 / first)


def test_top_k_matches_a_full_sort():
    rng = random.Random(7)
    docs = {f"d{i}": float(rng.randrange(5)) for i in range(200)}
    for k in (1, 5, 37, 200, 500):
        expected = sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k]
        assert list(top_k(docs, k).items()) == expected
