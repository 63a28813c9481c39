"""Measures: the registry of names (standard and instruction-following), trec_eval semantics,
equality with pytrec_eval called directly."""
import math
import random
from pathlib import Path

import pytest
import pytrec_eval

from evaluation import measure_registry as registry
from evaluation.measure_registry import IFMeasure, UnknownMeasure, parse
from evaluation.measures import Measure, evaluate, parse_measure, parse_measures
from evaluation.retrievers.topk import top_k_ranking as top_k
from storage import projects


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


def test_one_trec_order_for_dicts_arrays_and_written_runs():
    """The dict cut (measures, INSTFOL study), the retrievers' array cut and the TREC run writer
    rank alike: score descending, ties by doc id descending."""
    import numpy as np

    from evaluation.retrievers.topk import top_k as top_k_array
    from formats.trec_io import trec_order

    docs = {"d1": 0.5, "d3": 0.9, "d2": 0.5, "d10": 0.5, "d4": 0.1}
    expected = [("d3", 0.9), ("d2", 0.5), ("d10", 0.5), ("d1", 0.5), ("d4", 0.1)]  # "d2" > "d10" > "d1" as strings
    assert trec_order(docs) == expected
    for k in (1, 3, 5):
        assert list(top_k(docs, k).items()) == expected[:k]
        assert list(top_k_array(np.array(list(docs.values())), list(docs), k).items()) == expected[:k]


# --- the registry: the whole trec_eval vocabulary, instruction-following measures, one default list


def test_trec_eval_and_ir_measures_spellings_give_ir_measures_canonical_names():
    cases = {
        "Rprec": "Rprec", "rprec": "Rprec", "bpref": "Bpref", "BPref": "Bpref", "Success@10": "Success@10",
        "success_10": "Success@10", "Judged@10": "Judged@10", "P_30": "P@30", "P.30": "P@30",
        "map": "AP", "map_cut_100": "AP@100", "ndcg": "nDCG", "ndcg_cut_10": "nDCG@10",
        "recip_rank": "RR", "recall_1000": "R@1000", "num_ret": "NumRet", "NumRelRet": "NumRet(rel=1)",
        "num_q": "NumQ", "infAP": "infAP", "iprec_at_recall_0.10": "IPrec@0.1", "set_F": "SetF",
        "P(rel=2)@5": "P(rel=2)@5", "nDCG(judged_only=True)@10": "nDCG(judged_only=True)@10",
        " ndcg @ 10 ": "nDCG@10",
    }
    assert {text: str(parse_measure(text)) for text in cases} == cases
    # a parsed name parses back to itself: results keyed by it can be asked for again
    for name in cases.values():
        assert str(parse_measure(name)) == name


def test_instruction_following_measures_parse_with_their_parameters():
    assert [str(parse(t)) for t in ("robustness@10", "Robustness", "Robustness@5", "pmrr", "P-MRR", "wise",
                                    "WISE(K=30)", "SICR", "INSTFOL", "INSTFOL(max=5)@10")] == [
        "Robustness@10", "Robustness@10", "Robustness@5", "p-MRR", "p-MRR", "WISE",
        "WISE(K=30)", "SICR", "INSTFOL", "INSTFOL(max=5)@10"]
    wise = parse("WISE(K=30,ties='run-order')")
    assert isinstance(wise, IFMeasure) and wise.params == {"K": 30, "qrels": None, "ties": "run-order", "version": "paper"}
    assert parse("wise(K=20)") == parse("WISE")  # defaults are not part of the name
    with pytest.raises(UnknownMeasure, match="custom gains"):
        parse_measure("nDCG(gains={0:0,1:1,2:3})@10")
    for bad in ("WISE(K=0)", "WISE(depth=3)", "p-MRR(ties=random)", "SICR@10", "Robustness@x"):
        with pytest.raises(UnknownMeasure):
            parse(bad)


def test_unknown_names_are_refused_with_the_known_ones():
    with pytest.raises(UnknownMeasure) as info:
        parse_measure("gm_map")
    message = str(info.value)
    assert "\n" not in message and "'gm_map'" in message
    for known in ("nDCG[@k]", "Rprec", "Bpref", "Success@k", "Judged[@k]", "Robustness@k", "p-MRR", "WISE",
                  "SICR", "INSTFOL"):
        assert known in message
    # a measure ir-measures names but no installed provider computes is refused, saying why
    with pytest.raises(UnknownMeasure, match="alpha_nDCG@10.*none of its installed providers"):
        parse_measure("alpha_nDCG@10")
    # an instruction-following name is not a standard measure: it says which command computes it
    with pytest.raises(UnknownMeasure, match="ifjudge eval pmrr"):
        parse_measure("p-MRR")
    assert isinstance(UnknownMeasure("x"), ValueError)


def test_one_default_list_for_cli_runner_and_page():
    from cli.main import build_parser

    assert registry.GENERIC_MEASURES == ("nDCG@10", "AP@100", "RR@10", "R@100", "P@5",
                                         "Robustness@10", "p-MRR", "WISE", "SICR")
    assert registry.DEFAULT_STANDARD == registry.GENERIC_MEASURES[:5]
    # `ifjudge eval metrics` scores the standard part of the generic list by default
    args = build_parser().parse_args(["eval", "metrics", "--qrels", "q", "--run", "r"])
    assert [str(m) for m in args.measures] == list(registry.DEFAULT_STANDARD)
    page = (Path(__file__).resolve().parents[1] / "pages" / "evaluate.py").read_text()
    assert 'st.selectbox("Measure", list(GENERIC_MEASURES)' in page
    # every default is written canonically
    assert [str(parse(n)) for n in registry.GENERIC_MEASURES] == list(registry.GENERIC_MEASURES)


@pytest.mark.parametrize("seed", range(3))
def test_trec_eval_vocabulary_equals_pytrec_eval_called_directly(seed):
    rng = random.Random(200 + seed)
    qrels, run = _random_case(rng)
    got = evaluate(qrels, run, "Rprec,Bpref,Success@10,P@30,infAP,SetP,SetF,IPrec@0.2,NumRet,NumRel,NumRet(rel=1),NumQ")
    direct = pytrec_eval.RelevanceEvaluator(
        qrels, {"Rprec", "bpref", "success.10", "P.30", "infAP", "set_P", "set_F", "iprec_at_recall",
                "num_ret", "num_rel", "num_rel_ret", "num_q"}).evaluate(run)
    keys = {"Rprec": "Rprec", "Bpref": "bpref", "Success@10": "success_10", "P@30": "P_30", "infAP": "infAP",
            "SetP": "set_P", "SetF": "set_F", "IPrec@0.2": "iprec_at_recall_0.20"}
    totals = {"NumRet": "num_ret", "NumRel": "num_rel", "NumRet(rel=1)": "num_rel_ret", "NumQ": "num_q"}
    assert set(got["per_query"]) == set(direct)
    for name, key in {**keys, **totals}.items():
        for qid in direct:
            assert got["per_query"][qid][name] == direct[qid][key]
    for name, key in keys.items():  # means
        assert got["measures"][name] == pytest.approx(sum(v[key] for v in direct.values()) / len(direct), abs=1e-12)
    for name, key in totals.items():  # totals, as trec_eval prints them
        assert got["measures"][name] == sum(v[key] for v in direct.values())
    assert got["measures"]["NumQ"] == len(direct)


def test_relevance_level_and_judged_only_reach_trec_eval():
    qrels = {"q": {"a": 1, "b": 2, "c": 0}}
    run = {"q": {"a": 0.9, "x": 0.8, "b": 0.7, "c": 0.6}}
    got = evaluate(qrels, run, "P@2,P(rel=2)@2,RR@10,RR(rel=2)@10,RR(rel=2),P(judged_only=True)@2")["measures"]
    assert got["P@2"] == 0.5 and got["P(rel=2)@2"] == 0.0
    assert got["RR@10"] == 1.0 and got["RR(rel=2)@10"] == pytest.approx(1 / 3) == got["RR(rel=2)"]
    # trec_eval -J: the unjudged x is dropped, the top 2 are a and b
    assert got["P(judged_only=True)@2"] == 1.0
    # a parameter of one measure does not leak into another asked beside it
    alone = evaluate(qrels, run, "NumRet,nDCG@10")["measures"]
    beside = evaluate(qrels, run, "P(judged_only=True)@2,P(rel=2)@2,NumRet,nDCG@10")["measures"]
    assert alone == {"NumRet": 4, "nDCG@10": beside["nDCG@10"]} and beside["NumRet"] == 4


def test_measures_from_other_providers_see_trec_evals_tie_order():
    # Judged@1 (ir-measures' own provider): a and z tie; trec_eval's order puts z (larger id) first
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "z": 1.0}}
    got = evaluate(qrels, run, "Judged@1,Judged@2,P@1")["measures"]
    assert got == {"Judged@1": 0.0, "Judged@2": 0.5, "P@1": 0.0}
    # an empty ranking keeps the measure's default instead of failing
    assert evaluate({"q": {"a": 1}}, {"q": {}}, "Judged@5")["per_query"] == {"q": {"Judged@5": 0.0}}


def test_totals_count_missing_queries_as_zero():
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}}
    run = {"q1": {"d1": 1.0, "d9": 0.5}}
    omit = evaluate(qrels, run, "NumRet,P@1")["measures"]
    zero = evaluate(qrels, run, "NumRet,P@1", missing="zero")["measures"]
    assert omit == {"NumRet": 2, "P@1": 1.0} and zero == {"NumRet": 2, "P@1": 0.5}


def test_cli_refuses_an_unknown_measure_in_one_line_listing_the_known_ones(run_cli):
    fixtures = Path(__file__).parent / "fixtures" / "trec_eval"
    with pytest.raises(SystemExit) as info:
        run_cli("eval", "metrics", "--qrels", fixtures / "qrels.test", "--run", fixtures / "results.test",
                "--measures", "nDCG@10,Sucess@10")
    assert info.value.code == 2


def test_cli_error_line_names_the_measure(capsys):
    from cli.main import main

    fixtures = Path(__file__).parent / "fixtures" / "trec_eval"
    with pytest.raises(SystemExit):
        main(["eval", "metrics", "--qrels", str(fixtures / "qrels.test"), "--run", str(fixtures / "results.test"),
              "--measures", "Sucess@10"])
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "error:" in x]
    assert "unknown measure 'Sucess@10'" in line and "Success@k" in line and "p-MRR" in line


def test_compare_project_parses_its_measure(tmp_path):
    from evaluation.compare import compare_project
    from evaluation.runner import run_eval
    from storage.db import connect
    from storage.projects import import_bundle
    from storage.projects import replace_qrels
    from tests.builders import VALIDATED, instructir_bundle

    db = connect(tmp_path / "t.db")
    import_bundle(db, "demo", instructir_bundle(), fmt="instructir")
    replace_qrels(db, 1, "validated", VALIDATED)  # a human outcome is stored, never imported
    for version in ("original", "validated"):
        run_eval(db, projects.get_project(db, "demo"), model="bm25", template="query", qrels_version=version, cache_dir=tmp_path / "emb")
    lower = compare_project(db, projects.get_project(db, "demo"), measure="ndcg@10", n_permutations=100)
    canonical = compare_project(db, projects.get_project(db, "demo"), measure="nDCG@10", n_permutations=100)
    assert lower["measure"] == "nDCG@10" and lower == canonical
    assert all(len(board) == 1 for board in lower["leaderboards"].values())
    with pytest.raises(UnknownMeasure, match="unknown measure 'ndgc@10'.*known measures"):
        compare_project(db, projects.get_project(db, "demo"), measure="ndgc@10")
