"""Original-vs-corrected comparison: deltas, leaderboards, Kendall tau, paired tests with Holm."""
import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from evaluation.compare import compare_project, table_frame
from evaluation.significance import holm, kendall_tau, paired_permutation_test, paired_t_test
from evaluation.runner import run_eval
from evaluation.undefined import Undefined
from storage import projects
from storage.db import connect
from storage.errors import IFJudgeError
from storage.eval_runs import load_eval_run
from storage.projects import import_bundle, replace_qrels
from tests.builders import instructir_bundle


def test_holm_matches_statsmodels_and_skips_undefined():
    rng = np.random.default_rng(3)
    ps = rng.uniform(0, 0.2, size=7).tolist()
    assert holm(ps) == pytest.approx(multipletests(ps, method="holm")[1].tolist())
    assert holm([0.01, None, 0.04, 0.03]) == pytest.approx([0.03, None, 0.06, 0.06])
    assert holm([None]) == [None]
    why = Undefined("fewer than 2 common queries")
    assert holm([0.02, why, 0.01]) == [0.02, why, 0.02]  # an undefined test stays out of the family


def test_permutation_test_exact_matches_scipy_and_is_symmetric():
    a = [0.9, 0.7, 0.8, 0.4, 0.65, 0.3]
    b = [0.5, 0.6, 0.2, 0.45, 0.6, 0.1]
    ref = stats.permutation_test((np.array(a), np.array(b)), lambda x, y: np.mean(x - y),
                                 permutation_type="samples", n_resamples=np.inf, alternative="two-sided")
    assert paired_permutation_test(a, b) == pytest.approx(ref.pvalue)
    assert paired_permutation_test(b, a) == pytest.approx(ref.pvalue)
    assert paired_permutation_test(a, a) == Undefined("every per-query difference is 0")
    assert paired_permutation_test([1.0], [0.0]) == Undefined("fewer than 2 common queries")


def test_sampled_permutation_test_is_seeded_and_close_to_exact():
    rng = np.random.default_rng(0)
    a = rng.uniform(size=14)
    b = a - rng.normal(0.05, 0.1, size=14)
    exact = paired_permutation_test(a, b, n_permutations=2**14)
    sampled = paired_permutation_test(a, b, n_permutations=5000, seed=1)
    assert sampled == paired_permutation_test(a, b, n_permutations=5000, seed=1)
    assert sampled == pytest.approx(exact, abs=0.03)


def test_t_test_matches_scipy_and_names_undefined_cases():
    a, b = [0.9, 0.8, 0.7, 0.2], [0.1, 0.3, 0.2, 0.25]
    assert paired_t_test(a, b)["p_value"] == pytest.approx(stats.ttest_rel(a, b).pvalue)
    equal = paired_t_test([0.5, 0.6], [0.4, 0.5])
    assert isinstance(equal["t"], Undefined) and equal["p_value"].reason.startswith("every per-query difference")
    assert paired_t_test([0.5], [0.4])["p_value"] == Undefined("fewer than 2 common queries")


def test_kendall_tau_undefined_below_two_systems():
    one = kendall_tau([0.3], [0.4])
    assert isinstance(one["tau"], Undefined) and "needs at least 2" in one["tau"].reason
    assert kendall_tau([0.1, 0.2, 0.3], [0.3, 0.2, 0.1])["tau"] == pytest.approx(-1.0)
    assert kendall_tau([0.2, 0.2], [0.1, 0.3])["tau"] == Undefined("undefined: a leaderboard has all scores tied")


@pytest.fixture
def db(instructir_db):
    """The InstructIR-like project "demo" (tests/builders.py) with qrels "validated"."""
    return instructir_db


def test_compare_project_deltas_tau_tests_and_changes(db, tmp_path):
    for model, template in (("bm25", "instruction_query"), ("bm25", "query"), ("minilm", "instruction_query")):
        for version in ("original", "validated"):
            run_eval(db, projects.get_project(db, "demo"), model=model, template=template, qrels_version=version, cache_dir=tmp_path / "emb")
    out = compare_project(db, projects.get_project(db, "demo"), n_permutations=2000)
    assert out["versions"] == ["original", "validated"]
    assert len(out["systems"]) == 3 and len(out["table"]) == 6

    for row in out["table"]:
        base = next(r for r in out["table"] if r["system"] == row["system"] and r["qrels_version"] == "original")
        for m, v in row["metrics"].items():
            assert row["delta_vs_original"][m] == pytest.approx(v - base["metrics"][m])

    for version, board in out["leaderboards"].items():
        values = [r["value"] for r in board]
        assert values == sorted(values, reverse=True) and len(board) == 3

    (tau,) = out["kendall_tau"]
    orig = {r["system"]: r["value"] for r in out["leaderboards"]["original"]}
    val = {r["system"]: r["value"] for r in out["leaderboards"]["validated"]}
    names = sorted(orig)
    ref = stats.kendalltau([orig[n] for n in names], [val[n] for n in names])
    if np.isnan(ref.statistic):
        assert tau["tau"] is None
    else:
        assert tau["tau"] == pytest.approx(ref.statistic) and tau["n_systems"] == 3

    for version, entries in out["paired_tests"].items():
        assert len(entries) == 3  # 3 pairs of systems
        raw = [e["t_p"] for e in entries if e["t_p"] is not None]
        adj = [e["t_p_holm"] for e in entries if e["t_p"] is not None]
        if raw:
            assert adj == pytest.approx(multipletests(raw, method="holm")[1].tolist())
        for e in entries:
            assert e["n_queries"] == 4

    # The biggest per-query changes: q2_1's target moved from d4 to d3.
    changes = out["biggest_changes"]
    assert changes, "validated qrels change q2_1"
    assert {c["qid"] for c in changes} == {"q2_1"}
    run_ids = {(r["system"], r["qrels_version"]): r["eval_run_id"] for r in out["table"]}
    for c in changes:
        before = load_eval_run(db, run_ids[(c["system"], "original")])["per_query"][c["qid"]]["nDCG@10"]
        after = load_eval_run(db, run_ids[(c["system"], "validated")])["per_query"][c["qid"]]["nDCG@10"]
        assert (c["original"], c["value"]) == pytest.approx((before, after))
        assert c["delta"] == pytest.approx(after - before) and c["delta"] != 0

    frame = table_frame(out)
    assert list(frame["system"]) == out["systems"]
    assert "validated Δ nDCG@10" in frame.columns


def test_compare_without_runs_is_a_clear_error(db):
    with pytest.raises(IFJudgeError, match="no eval runs"):
        compare_project(db, projects.get_project(db, "demo"))


# ----------------------------------------------------------------------------- issue 19, item 7
# An InstructIR-like validated build: the study checked q1_1, q1_2 and q2_1 and rejected q2_1; q2_2
# was not checked and is kept as published. Every kept instance keeps its published qrels, so on
# the common queries the delta is 0 by construction; on the checked instances and on the full set
# the validated mean moves.
RUN = ("q1_1 Q0 d2 1 3.0 fixed\n"                                              # nDCG@10 = 1
       "q1_2 Q0 d3 1 3.0 fixed\nq1_2 Q0 d1 2 2.0 fixed\n"                      # 1 / log2(3)
       "q2_1 Q0 d3 1 3.0 fixed\nq2_1 Q0 d5 2 2.0 fixed\n"                      # target d4 absent: 0
       "q2_2 Q0 d5 1 3.0 fixed\nq2_2 Q0 d6 2 2.0 fixed\nq2_2 Q0 d3 3 1.0 fixed\n")  # 1 / log2(4) = 0.5
ORIGINAL = {"q1_1": {"d2": 1}, "q1_2": {"d1": 1}, "q2_1": {"d4": 1}, "q2_2": {"d3": 1}}


def _build_validated(db, *, with_provenance=True):
    from storage.projects import store_qrels_build

    kept = {q: d for q, d in ORIGINAL.items() if q != "q2_1"}
    if not with_provenance:
        replace_qrels(db, 1, "validated", kept)
        return
    prov = [{"qid": "q1_1", "doc_id": "d2", "published": 1, "relevance": 1, "provenance": "unanimous"},
            {"qid": "q1_2", "doc_id": "d1", "published": 1, "relevance": 1, "provenance": "majority"},
            {"qid": "q2_1", "doc_id": "d4", "published": 1, "relevance": None, "provenance": "majority",
             "reason": "invalid"},
            {"qid": "q2_2", "doc_id": "d3", "published": 1, "relevance": 1, "provenance": "not checked"}]
    store_qrels_build(db, 1, "validated", kept, base_version="original", studies=[], settings={}, counts={},
                      provenance=prov)


@pytest.fixture
def checked_db(tmp_path):
    db = connect(tmp_path / "c.db")
    import_bundle(db, "demo", instructir_bundle(), fmt="instructir")
    (tmp_path / "fixed.run").write_text(RUN)
    return db, tmp_path / "fixed.run"


def test_published_vs_validated_on_checked_instances_and_full_set(checked_db, run_cli, tmp_path):
    db, run = checked_db
    _build_validated(db)
    for version in ("original", "validated"):
        run_eval(db, projects.get_project(db, "demo"), model=str(run), qrels_version=version)
    out = compare_project(db, projects.get_project(db, "demo"), n_permutations=100)
    (pair,) = out["published_vs_validated"]
    assert pair["n_checked_queries"] == 3 and pair["checked_build_id"] is not None
    (row,) = pair["systems"]
    third, half = 1 / np.log2(3), 0.5
    # the common queries q1_1, q1_2, q2_2: identical qrels, delta 0 (what the user saw)
    assert row["n_common_queries"] == 3 and row["delta"] == 0 and row["queries_changed"] == 0
    # checked: published over q1_1, q1_2, q2_1 (3 queries); validated over the kept q1_1, q1_2 (2)
    assert row["checked_n_published"] == 3 and row["checked_n_validated"] == 2
    assert row["checked_published"] == pytest.approx((1 + third + 0) / 3)
    assert row["checked_validated"] == pytest.approx((1 + third) / 2)
    assert row["checked_delta"] == pytest.approx((1 + third) / 2 - (1 + third) / 3)
    # full set: published over the 4 queries, validated over its 3
    assert row["full_n_published"] == 4 and row["full_n_validated"] == 3
    assert row["full_published"] == pytest.approx((1 + third + 0 + half) / 4)
    assert row["full_validated"] == pytest.approx((1 + third + half) / 3)
    assert row["full_delta"] == pytest.approx((1 + third + half) / 3 - (1 + third + half) / 4)
    # the full-set means are the stored aggregates of the two runs
    by_version = {r["qrels_version"]: r["metrics"]["nDCG@10"] for r in out["table"]}
    assert (row["full_published"], row["full_validated"]) == pytest.approx((by_version["original"],
                                                                           by_version["validated"]))
    code, text, err = run_cli("eval", "compare", "--db", tmp_path / "c.db", "--project", "demo", "--permutations", "100")
    assert code == 0, err
    assert (f"checked instances: {(1 + third) / 3:.4f} (3 queries) -> {(1 + third) / 2:.4f} (2 queries), "
            f"delta {(1 + third) / 6:.4f}") in text
    assert "full set: 0.5327 (4 queries) -> 0.7103 (3 queries), delta 0.1776" in text


def test_checked_view_is_unknown_without_a_recorded_build(checked_db):
    db, run = checked_db
    _build_validated(db, with_provenance=False)
    for version in ("original", "validated"):
        run_eval(db, projects.get_project(db, "demo"), model=str(run), qrels_version=version)
    (pair,) = compare_project(db, projects.get_project(db, "demo"), n_permutations=100)["published_vs_validated"]
    assert pair["n_checked_queries"] is None
    (row,) = pair["systems"]
    assert row["checked_published"] is None and row["checked_n_published"] is None
    assert row["full_n_published"] == 4 and row["full_n_validated"] == 3


def test_paired_test_entry_is_json_with_the_reason_beside_null():
    from evaluation.compare import paired_test_entry

    tied = paired_test_entry([0.5, 0.6], [0.5, 0.6])
    assert tied == {"n_queries": 2, "mean_diff": 0.0, "t": None, "t_p": None, "permutation_p": None,
                    "undefined": "every per-query difference is equal (zero variance)"}
    # d = 0.8, 0.6, 0.4, 0.2: t = mean / (sd / sqrt 4) = 0.5 / (sqrt(0.2 / 3) / 2) = sqrt(15); exact: 2 of 16 signs
    e = paired_test_entry([0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3, 0.4])
    assert e["t"] == pytest.approx(15 ** 0.5) and e["permutation_p"] == 0.125 and e["undefined"] is None


def test_judgment_flips_count_relevance_changes_on_the_given_queries_only():
    from evaluation.compare import judgment_flips

    pub = {"q1": {"a": 1, "b": 0, "c": 2}, "q2": {"a": 1}}
    val = {"q1": {"a": 0, "b": 0, "d": 1}, "q2": {"a": 0}}
    # q1: a 1 -> 0, c 2 -> missing, d missing -> 1 (b stays not relevant); q2 is not asked for
    assert judgment_flips(pub, val, ["q1"]) == 3
    assert judgment_flips(pub, val, ["q1", "q2"]) == 4


def test_compare_prints_each_delta_beside_the_means_it_comes_from(run_cli, db_path):
    """A validated version that drops a query: its own mean is over its own queries, and the delta
    is printed with the two means on the queries both versions judge and the query left out --
    never a full-set mean beside a common-query delta."""
    from storage import projects

    db = connect(db_path)
    import_bundle(db, "p", instructir_bundle(), fmt="instructir")
    original = load_eval_run(db, run_eval(db, projects.get_project(db, "p"), model="bm25", template="query", qrels_version="original"))
    per_query = {q: row["nDCG@10"] for q, row in original["per_query"].items()}
    dropped = max(per_query, key=lambda q: (per_query[q], q))  # the validation drops the best query
    kept = [q for q in per_query if q != dropped]
    replace_qrels(db, 1, "validated", {q: d for q, d in projects.qrels(db, 1, "original").items() if q in kept})
    run_eval(db, projects.get_project(db, "p"), model="bm25", template="query", qrels_version="validated")
    code, out, err = run_cli("eval", "compare", "--db", db_path, "--project", "p")
    assert code == 0, err
    n, mean_all = len(per_query), original["metrics"]["nDCG@10"]
    mean_common = float(np.mean([per_query[q] for q in kept]))
    assert f"{mean_all:.4f}" != f"{mean_common:.4f}"  # the full-set mean is not what the delta compares
    line = next(x for x in out.splitlines() if " validated " in x)
    assert f"original   {mean_all:.4f} over {n} queries" in out
    assert f"over {n - 1} queries; vs original on the {n - 1} queries both judge: {mean_common:.4f} -> {mean_common:.4f}" in line
    assert f"(delta +0.0000; left out: {dropped} judged by original only)" in line
