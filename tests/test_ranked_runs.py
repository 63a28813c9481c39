"""Runs held as arrays (evaluation/runs.py): the mapping a dict-reader sees, the ranks, and p-MRR /
WISE / SICR on arrays equal, bit for bit, to a plain reference over dicts of dicts."""
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.infosearch import infosearch_metrics, sicr_indicator, undefined, wise_score
from evaluation.pmrr import changed_documents, p_mrr, pair_score
from evaluation.pmrr import undefined_reason as pmrr_undefined
from evaluation.retrievers.bm25 import BM25Retriever
from evaluation.retrievers.topk import top_k, top_k_arrays
from evaluation.runs import TIES, RankedRun, RunBuilder, as_dict
from evaluation.templates import get_template
from evaluation.undefined import Undefined


# -- the reference: ranks by sorting each query's dict, the formulas of docs/metrics.md, means in order
def ref_rank(docs: dict, d: str, ties: str) -> tuple[int, float]:
    if d not in docs:
        return len(docs) + 1, 0.0
    if ties == "docid":
        order = sorted(docs, key=lambda x: (docs[x], x), reverse=True)
    else:  # sorted() is stable with reverse=True: equal scores keep the run's order
        order = sorted(docs, key=lambda x: docs[x], reverse=True)
    return order.index(d) + 1, docs[d]


def ref_pmrr(qrels_og, qrels_changed, run_og, run_new, ties):
    per_query, missing, n_docs = {}, [], 0
    for qid, docs in changed_documents(qrels_og, qrels_changed).items():
        if qid not in run_og or qid not in run_new:
            missing.append(qid)
            continue
        values = [pair_score(ref_rank(run_og[qid], d, ties)[0], ref_rank(run_new[qid], d, ties)[0]) for d in docs]
        per_query[qid] = sum(values) / len(values)
        n_docs += len(values)
    n = len(per_query)
    return {"p-MRR": sum(per_query.values()) / n if n else Undefined(pmrr_undefined()), "n_queries": n, "per_query": per_query,
            "n_documents": n_docs, "missing_queries": sorted(missing), "ties": ties}


def ref_infosearch(qrels_ori, qrels_ins, run_ori, run_ins, run_rev, ties, k=20):
    per_query, missing, means = {}, [], {"ori": [], "ins": [], "rev": []}
    for qid, ori in qrels_ori.items():
        ins = qrels_ins.get(qid, {})
        pos = [d for d, r in ori.items() if r >= 1 and ins.get(d, 0) >= 1]
        neg = [d for d, r in ori.items() if r >= 1 and ins.get(d, 0) < 1]
        if not pos and not neg:
            continue
        if qid not in run_ori or qid not in run_ins or qid not in run_rev:
            missing.append(qid)
            continue
        row = {"WISE": None, "SICR": None, "p-MRR": None, "n_positives": len(pos), "n_negatives": len(neg)}
        o = {d: ref_rank(run_ori[qid], d, ties) for d in pos + neg}
        i = {d: ref_rank(run_ins[qid], d, ties) for d in pos + neg}
        r = {d: ref_rank(run_rev[qid], d, ties) for d in pos}
        if pos:
            n = len(pos) + len(neg)
            wise = [wise_score(o[d][0], i[d][0], r[d][0], n=n, k=k) for d in pos]
            sicr = [sicr_indicator(o[d][0], i[d][0], r[d][0], o[d][1], i[d][1], r[d][1]) for d in pos]
            row["WISE"], row["SICR"] = sum(wise) / len(wise), sum(sicr) / len(sicr)
            for mode, ranks in (("ori", o), ("ins", i), ("rev", r)):
                means[mode].append(sum(ranks[d][0] for d in pos) / len(pos))
        if neg:
            values = [pair_score(o[d][0], i[d][0]) for d in neg]
            row["p-MRR"] = sum(values) / len(values)
        per_query[qid] = row

    def mean(v):
        return sum(v) / len(v) if v else None

    defined = {m: [row[m] for row in per_query.values() if row[m] is not None] for m in ("WISE", "SICR", "p-MRR")}
    return {**{m: undefined(m) if mean(defined[m]) is None else mean(defined[m]) for m in ("WISE", "SICR", "p-MRR")},
            "n_queries": len(defined["WISE"]), "n_queries_pmrr": len(defined["p-MRR"]),
            "mean_rank": {m: mean(v) for m, v in means.items()}, "per_query": per_query,
            "missing_queries": sorted(missing), "ties": ties, "K": k}


# -- random cases: few score values (ties everywhere) or continuous ones, ids whose string order
# differs from their number order ("d10" < "d2"), queries absent from a run, judged documents absent
VOCAB = [f"d{j}" for j in range(14)]


def random_case(seed: int, tied: bool):
    rng = np.random.default_rng(seed)
    qids = [f"q{i}" for i in range(6)]
    qrels_og, qrels_changed = {}, {}
    for q in qids:
        judged = rng.choice(VOCAB, size=int(rng.integers(1, 8)), replace=False).tolist()
        qrels_og[q] = {d: int(rng.integers(0, 3)) for d in judged}
        qrels_changed[q] = {d: int(rng.integers(0, 3)) for d in judged if rng.random() < 0.8}
    runs = []
    for _ in range(3):
        run = {}
        for q in qids:
            if rng.random() < 0.1:
                continue  # the query is absent from this run
            docs = rng.choice(VOCAB, size=int(rng.integers(0, 11)), replace=False).tolist()
            values = rng.integers(1, 4, size=len(docs)) / 4 if tied else rng.random(len(docs))
            run[q] = dict(zip(docs, values.tolist()))
        runs.append(run)
    return qrels_og, qrels_changed, runs


def as_retriever_would(run: dict) -> RankedRun:
    """The run as BM25 / dense hand it over: trec_eval's order, coded against the corpus ids."""
    code = {d: i for i, d in enumerate(VOCAB)}
    builder = RunBuilder(VOCAB)
    for q, docs in run.items():
        ranked = top_k(np.array(list(docs.values()), dtype=np.float64), list(docs), len(docs))
        builder.add(q, [code[d] for d in ranked], list(ranked.values()))
    return builder.build()


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), tied=st.booleans(), ties=st.sampled_from(TIES), form=st.sampled_from(
    ["dict", "converted", "retriever", "ranked arrays"]), k=st.sampled_from([20, 3]))
def test_measures_on_arrays_equal_the_reference_bit_for_bit(seed, tied, ties, form, k):
    # k = 3: WISE's R_ori > K branch (0.01) too, with runs of at most 10 documents
    check_against_reference(seed, tied, ties, form, k)


def check_against_reference(seed, tied, ties, form, k):
    qrels_og, qrels_changed, runs = random_case(seed, tied)
    if form in ("retriever", "ranked arrays"):  # a retriever's run lists ties by doc id: both tie rules rank so
        runs = [as_retriever_would(r) for r in runs]
        if form == "ranked arrays":  # the same arrays, given without RunBuilder's order by code
            runs = [RankedRun(r.qids, r.offsets, r.codes, r.scores, r.doc_ids, ranked=True) for r in runs]
        dicts = [r.to_dict() for r in runs]
    else:
        dicts = runs
        if form == "converted":
            runs = [RankedRun.from_dict(r) for r in runs]
    assert p_mrr(qrels_og, qrels_changed, runs[0], runs[1], ties=ties) == ref_pmrr(
        qrels_og, qrels_changed, dicts[0], dicts[1], ties)
    assert infosearch_metrics(qrels_og, qrels_changed, *runs, ties=ties, k=k) == ref_infosearch(
        qrels_og, qrels_changed, *dicts, ties, k=k)


def test_the_random_cases_hold_ties_absent_queries_and_absent_documents():
    """The property above covers what it claims: in the cases it draws, tied scores, a query absent
    from a run and a judged document absent from its query's run all occur."""
    ties = absent_query = absent_doc = 0
    for seed in range(50):
        qrels_og, _, runs = random_case(seed, True)
        for run in runs:
            absent_query += len(set(qrels_og) - set(run))
            for q, docs in run.items():
                ties += len(docs) - len(set(docs.values()))
                absent_doc += len(set(qrels_og[q]) - set(docs))
    assert ties > 0 and absent_query > 0 and absent_doc > 0


def test_ranks_hand_computed_on_a_converted_and_a_retriever_run():
    listed = {"q": {"a": 0.5, "b": 0.9, "d10": 0.5, "d2": 0.5}}
    run = RankedRun.from_dict(listed)
    # b first; a, d10, d2 tied at 0.5: doc id descending d2 > d10 > a; absent z: 4 documents + 1
    assert run.ranks([("q", ["a", "d10", "d2", "z"])]) == ([4, 3, 2, 5], [0.5, 0.5, 0.5, 0.0])
    # run order: a, d10, d2 as listed
    assert run.ranks([("q", ["a", "d10", "d2"])], ties="run-order") == ([2, 3, 4], [0.5, 0.5, 0.5])
    # a query the run does not rank: every document at rank 0 + 1
    assert run.ranks([("r", ["a"]), ("q", ["b"])]) == ([1, 1], [0.0, 0.9])
    builder = RunBuilder(["a", "b", "c", "d10", "d2"])
    builder.add("q", [1, 4, 3, 0], [0.9, 0.5, 0.5, 0.5])
    ranked = builder.build()
    assert ranked == listed and ranked.ranked
    empty = RunBuilder(["a"])
    empty.add("q", [], [])
    assert empty.build().ranks([("q", ["a"]), ("r", ["a"])]) == ([1, 1], [0.0, 0.0])
    for ties in TIES:  # listed by doc id: the position is the rank under both rules
        assert ranked.ranks([("q", ["a", "d10", "d2", "c", "b"])], ties=ties) == (
            [4, 3, 2, 5, 1], [0.5, 0.5, 0.5, 0.0, 0.9])


def test_a_ranked_run_reads_as_the_dict_it_holds():
    run = RankedRun.from_dict({"q2": {"x": 2.0, "y": 3.0}, "q1": {}})
    assert list(run) == ["q2", "q1"] and len(run) == 2 and "q1" in run and "q3" not in run
    assert list(run["q2"].items()) == [("x", 2.0), ("y", 3.0)]  # the listing order is kept
    assert run.get("q3") is None
    with pytest.raises(KeyError):
        run["q3"]
    assert json.loads(json.dumps(as_dict(run))) == {"q2": {"x": 2.0, "y": 3.0}, "q1": {}}
    assert run.n_documents("q2") == 2 and run.n_documents("q3") == 0
    assert RankedRun.from_dict(run) is run  # converted once


def test_inconsistent_arrays_are_refused_with_what_was_given():
    with pytest.raises(ValueError, match=r"a run of 2 queries needs 3 offsets.*got 2 offsets \(last 1\), 1 codes "
                                         r"and 2 scores"):
        RankedRun(["a", "b"], np.array([0, 1]), np.array([0]), np.array([0.1, 0.2]), ["d"], ranked=True)
    with pytest.raises(ValueError, match="a ranked run needs the codes"):
        RankedRun(["a"], np.array([0, 1]), None, np.array([0.1]), ["d"], ranked=True)
    with pytest.raises(ValueError, match="ties must be one of"):
        RankedRun.from_dict({"q": {"a": 1.0}}).ranks([("q", ["a"])], ties="first")


def test_bm25_hands_the_measures_arrays_in_trec_order():
    docs = {"d1": {"text": "red apple pie"}, "d2": {"text": "red apple"}, "d3": {"text": "green pear"},
            "d4": {"text": "red apple"}}
    topics = [{"qid": "q", "query": "red apple", "instruction": ""}]
    run = BM25Retriever().retrieve(topics, docs, template=get_template("query"), k=10)
    assert isinstance(run, RankedRun) and run.ranked
    # d2 and d4 tie (same text): d4 before d2 (doc id descending); d3 shares no term: not retrieved
    assert list(run["q"]) == ["d4", "d2", "d1"]
    assert run.ranks([("q", ["d2", "d3"])]) == ([2, 4], [run["q"]["d2"], 0.0])


def test_a_converted_run_names_each_entry_by_its_doc_id():
    run = RankedRun.from_dict({"q1": {"a": 1.0, "b": 2.0}, "q2": {}, "q3": {"c": 0.5}})
    assert list(run.doc_ids) == ["a", "b", "c"] and run.doc_ids[-1] == "c" and run.doc_ids[1:] == ["b", "c"]
    with pytest.raises(IndexError):
        run.doc_ids[3]


def test_the_runner_hands_bm25_arrays_to_p_mrr_and_converts_a_reused_run_once(demo, monkeypatch):
    from evaluation import runs as runs_module
    from evaluation.runner import run_eval
    from storage import projects
    from storage.eval_runs import load_eval_run

    db, _ = demo
    converted = []
    from_dict = runs_module.RankedRun.from_dict.__func__

    def counting(cls, run):
        if not isinstance(run, RankedRun):
            converted.append(run)
        return from_dict(cls, run)

    monkeypatch.setattr(runs_module.RankedRun, "from_dict", classmethod(counting))
    fresh = load_eval_run(db, run_eval(db, projects.get_project(db, "demo"), model="bm25", qrels_version="changed", reuse=False))
    assert converted == []  # the og and changed runs reach p-MRR as BM25's arrays
    reused = load_eval_run(db, run_eval(db, projects.get_project(db, "demo"), model="bm25", qrels_version="changed"))
    assert reused["settings"]["reused_run"] and len(converted) == 2  # the stored og and changed runs, once each
    assert fresh["metrics"]["p-MRR"] is not None
    assert reused["metrics"] == fresh["metrics"] and reused["per_query"] == fresh["per_query"]
    assert reused["settings"]["evaluation"]["p-MRR"] == fresh["settings"]["evaluation"]["p-MRR"]


@settings(max_examples=300, deadline=None)
@given(scores=st.lists(st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.5, 3.0]) | st.floats(-5, 5), max_size=40),
       k=st.integers(1, 45), drop_zero=st.booleans())
def test_top_k_order_is_score_then_doc_id_descending(scores, k, drop_zero):
    ids = [f"d{j}" for j in range(len(scores))]  # "d10" < "d2": string order
    kept = [(s, d) for s, d in zip(scores, ids) if not (drop_zero and s == 0)]
    expected = sorted(kept, reverse=True)[:k]
    positions, best = top_k_arrays(np.array(scores, dtype=np.float64), ids, k, drop_zero=drop_zero)
    assert [(s, ids[p]) for s, p in zip(best.tolist(), positions.tolist())] == expected
