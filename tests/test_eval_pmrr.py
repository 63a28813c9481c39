"""p-MRR (FollowIR): hand-computed cases, both tie options, absent documents and queries."""
import random
from pathlib import Path

import pytest

from formats import trec_io
from evaluation.undefined import Undefined
from evaluation.pmrr import changed_documents, doc_ranks, p_mrr, pair_score

FIXTURES = Path(__file__).parent / "fixtures" / "eval"


def fixture_case():
    return (
        trec_io.read_qrels(FIXTURES / "pmrr_qrels_og.txt"),
        trec_io.read_qrels(FIXTURES / "pmrr_qrels_changed.tsv"),
        trec_io.read_run(FIXTURES / "pmrr_run_og.trec"),
        trec_io.read_run(FIXTURES / "pmrr_run_changed.trec"),
    )


def test_pair_score_follows_followir_equation():
    assert pair_score(10, 5) == -0.5  # moved up: R_new / R_og - 1
    assert pair_score(5, 10) == 0.5  # moved down: 1 - R_og / R_new
    assert pair_score(4, 4) == 0.0
    assert pair_score(1, 1000) == pytest.approx(0.999)


def test_changed_documents_are_those_of_the_original_qrels_whose_label_changed():
    og, changed, _, _ = fixture_case()
    # MTEB's rule: q1: a 1->0, c 1->(absent = 0); b unchanged. q2: x 1->0. q3 unchanged.
    # q4's w is judged only in the changed qrels: not a changed document
    assert changed_documents(og, changed) == {"q1": ["a", "c"], "q2": ["x"]}


def test_hand_computed_ties_by_docid():
    result = p_mrr(*fixture_case())
    # q1 og ranks: a1, c2, b3 (b/c tie at 0.5 -> c first); changed: d1, c2, a3 (a/c tie -> c first)
    #   a: 1 -> 3: 1 - 1/3;  c: 2 -> 2: 0        -> q1 = 1/3
    # q2: x absent from og (2 docs -> rank 3), rank 1 in changed: 1/3 - 1 -> q2 = -2/3
    assert result["per_query"] == pytest.approx({"q1": 1 / 3, "q2": -2 / 3}, abs=1e-12)
    assert result["p-MRR"] == pytest.approx(-1 / 6, abs=1e-12)
    assert result["n_queries"] == 2 and result["n_documents"] == 3
    assert result["missing_queries"] == []  # q4 has no document of the original qrels that changed


def test_hand_computed_ties_by_run_order():
    result = p_mrr(*fixture_case(), ties="run-order")
    # og in file order: a1, b2, c3; changed in file order: d1, a2, c3
    #   a: 1 -> 2: 1 - 1/2;  c: 3 -> 3: 0  -> q1 = 1/4; q2 as before
    assert result["per_query"]["q1"] == pytest.approx(0.25, abs=1e-12)
    assert result["p-MRR"] == pytest.approx((0.25 - 2 / 3) / 2, abs=1e-12)


def test_no_changed_document_is_undefined():
    qrels = {"q": {"a": 1}}
    result = p_mrr(qrels, qrels, {"q": {"a": 1.0}}, {"q": {"a": 1.0}})
    assert result["p-MRR"] == Undefined("no query has a document of original whose label differs in changed")
    assert result["n_queries"] == 0
    # the reason names the qrels compared; a query with a changed document but absent from a run is 0/0 too
    named = p_mrr(qrels, {"q": {"a": 0}}, {"q": {"a": 1.0}}, {}, qrels_names=("original", "changed-validated"))
    assert named["p-MRR"] == Undefined("no query has a document of original whose label differs in changed-validated")
    assert named["missing_queries"] == ["q"]


def test_bad_ties_option():
    with pytest.raises(ValueError, match="ties"):
        p_mrr({}, {}, {}, {}, ties="random")


def _reference_rank(docs, doc, ties):
    """Rank by sorting the whole query run (the reference code's way)."""
    if ties == "run-order":
        order = sorted(docs.items(), key=lambda x: x[1], reverse=True)  # stable
    else:
        order = sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)
    for i, (d, _) in enumerate(order):
        if d == doc:
            return i + 1
    return len(order) + 1


@pytest.mark.parametrize("ties", ["docid", "run-order"])
@pytest.mark.parametrize("seed", range(4))
def test_doc_ranks_equal_a_full_sort_with_many_ties(ties, seed):
    rng = random.Random(seed)
    for _ in range(30):
        ids = [f"d{i}" for i in range(rng.randrange(1, 40))]
        rng.shuffle(ids)
        docs = {d: float(rng.randrange(4)) for d in ids}
        targets = rng.sample(ids, min(5, len(ids))) + ["absent"]
        got = doc_ranks(docs, targets, ties=ties)
        for t in targets:
            assert got[t][0] == _reference_rank(docs, t, ties)
            assert got[t][1] == docs.get(t, 0.0)
