"""Agreement statistics: published values, library equality, invariances, undefined cases."""
import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from annotation.agreement.report import agreement_report
from annotation.agreement.bootstrap import observed_statistics
from annotation.agreement.data import DuplicateLabel, UnknownLabel, encode_labels
from annotation.agreement.stats import (
    Undefined,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    interval_values,
    krippendorff_alpha,
    landis_koch_band,
    majority_vote,
    percent_agreement,
    randolph_kappa,
)
from storage.errors import IFJudgeError, InvalidAnswer

# Fleiss (1971), Table 1: 30 patients x 6 psychiatrists, 5 diagnoses (as in statsmodels' tests)
FLEISS_1971 = np.array([
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5], [2, 2, 2, 4, 4, 4],
    [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4], [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5],
    [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4], [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5],
    [3, 3, 3, 3, 3, 5], [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4], [1, 4, 4, 4, 4, 5],
    [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4], [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
])
FIVE = ["1", "2", "3", "4", "5"]

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", p. 8: 4 observers x 12 units
K2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def long_table(matrix, *, items=None, raters=None) -> pd.DataFrame:
    """rows = items, columns = raters (or the transposed K2011 layout via ``raters``)."""
    rows = []
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            if v is not None:
                rows.append((items[i] if items else f"i{i:02d}", raters[j] if raters else f"r{j}", str(v)))
    return pd.DataFrame(rows, columns=["item", "annotator", "label"])


def k2011_table() -> pd.DataFrame:
    return long_table([list(col) for col in zip(*K2011)], raters=["A", "B", "C", "D"])


def random_table(rng, n_items=60, n_raters=4, q=3, p_missing=0.0, cats=None):
    cats = cats or [f"c{k}" for k in range(q)]
    truth = rng.integers(0, q, n_items)
    rows = []
    for i in range(n_items):
        for r in range(n_raters):
            if rng.random() < p_missing:
                continue
            lab = truth[i] if rng.random() < 0.6 else rng.integers(0, q)
            rows.append((f"it{i}", f"ann{r}", cats[lab]))
    return pd.DataFrame(rows, columns=["item", "annotator", "label"]), cats


# --------------------------------------------------------------------------- published values

def test_fleiss_1971_published_kappa():
    r = agreement_report(long_table(FLEISS_1971), FIVE)
    assert round(r["fleiss_kappa"], 3) == 0.430  # Fleiss (1971): kappa = .430
    assert r["fleiss_kappa"] == pytest.approx(0.4302445, abs=1e-7)  # irr::kappam.fleiss
    assert r["n_items"] == 30 and r["n_items_pairable"] == 30


def test_krippendorff_2011_published_alphas():
    r = agreement_report(k2011_table(), FIVE, ordinal=True)
    assert round(r["krippendorff_alpha_nominal"], 3) == 0.743
    assert round(r["krippendorff_alpha_ordinal"], 3) == 0.815
    assert round(r["krippendorff_alpha_interval"], 3) == 0.849
    # unit 12 has a single value: not pairable
    assert r["n_items"] == 12 and r["n_items_pairable"] == 11


def test_randolph_equals_statsmodels_and_hand_formula():
    counts = encode_labels(long_table(FLEISS_1971), tuple(FIVE)).counts
    assert randolph_kappa(counts) == pytest.approx(sm_fleiss(counts, method="randolph"), abs=1e-12)
    po = ((counts * (counts - 1)).sum(1) / (6 * 5)).mean()
    assert randolph_kappa(counts) == pytest.approx((po - 1 / 5) / (1 - 1 / 5), abs=1e-12)


# --------------------------------------------------------------------------- hand-written vs library

@pytest.mark.parametrize("seed", range(6))
def test_gwet_generalisation_equals_statsmodels_when_counts_are_equal(seed):
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(5, rng.dirichlet(np.ones(4)), size=40)
    one_short = np.vstack([counts, [[0, 0, 0, 0]]])  # an empty row is ignored
    from annotation.agreement.kernels import kappa_from_sums, summed_features
    S, cols = summed_features(counts)
    hand = kappa_from_sums(S, cols, 4)
    assert hand["fleiss_kappa"][0] == pytest.approx(sm_fleiss(counts, method="fleiss"), abs=1e-12)
    assert hand["randolph_kappa"][0] == pytest.approx(sm_fleiss(counts, method="randolph"), abs=1e-12)
    assert fleiss_kappa(one_short) == pytest.approx(sm_fleiss(counts), abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_bootstrap_formulas_equal_library_point_estimates(seed):
    """The vectorised formulas used for every bootstrap replicate, applied to the observed data,
    give the statsmodels / scikit-learn / krippendorff values of the report."""
    rng = np.random.default_rng(seed)
    df, cats = random_table(rng, n_items=50, n_raters=5, q=4, p_missing=0.25)
    gold = {f"it{i}": cats[rng.integers(0, 4)] for i in range(50)}
    rep = agreement_report(df, cats, gold=gold, ordinal=True)
    enc = encode_labels(df, tuple(cats), gold=gold)
    obs = observed_statistics(enc, ordinal=True, values=interval_values(cats))
    for key in ("percent_agreement_pairwise", "percent_agreement_unanimous", "randolph_kappa", "fleiss_kappa",
                "gwet_ac1", "krippendorff_alpha_nominal", "krippendorff_alpha_ordinal",
                "krippendorff_alpha_interval", "cohen_kappa_mean_pairwise", "cohen_kappa_linear",
                "cohen_kappa_quadratic", "top1_accuracy_ties_count_as_wrong", "top1_accuracy_excluding_ties",
                "cohen_kappa_majority_vs_gold_excluding_ties"):
        assert obs[key][0] == pytest.approx(rep[key], abs=1e-12), key
    for p, name in enumerate(enc.pair_names):
        assert obs["cohen_kappa_pairwise"][0, p] == pytest.approx(rep["cohen_kappa"][name], abs=1e-12)
        assert obs["cohen_kappa_quadratic_pairwise"][0, p] == pytest.approx(
            rep["cohen_kappa_quadratic_pairwise"][name], abs=1e-12)


def test_cohen_per_pair_is_sklearn_on_items_both_labelled():
    rng = np.random.default_rng(3)
    df, cats = random_table(rng, n_items=80, n_raters=3, q=3, p_missing=0.3)
    rep = agreement_report(df, cats, ordinal=True)
    wide = df.pivot(index="item", columns="annotator", values="label")
    for a, b in [("ann0", "ann1"), ("ann0", "ann2"), ("ann1", "ann2")]:
        both = wide[[a, b]].dropna()
        assert rep["cohen_kappa_n_items"][f"{a}|{b}"] == len(both)
        for w, key in [(None, "cohen_kappa"), ("linear", "cohen_kappa_linear_pairwise"),
                       ("quadratic", "cohen_kappa_quadratic_pairwise")]:
            ref = cohen_kappa_score(both[a], both[b], labels=cats, weights=w)
            assert rep[key][f"{a}|{b}"] == pytest.approx(ref, abs=1e-12)
    assert rep["cohen_kappa_mean_pairwise"] == pytest.approx(np.mean(list(rep["cohen_kappa"].values())), abs=1e-12)


def test_gwet_ac1_two_raters_matches_two_rater_formula():
    # Gwet (2008) two-rater AC1: pi_k = (p_k. + p_.k) / 2, P_e = sum pi_k (1 - pi_k) / (q - 1)
    a = ["x", "x", "y", "z", "x", "y", "y", "z", "x", "x"]
    b = ["x", "y", "y", "z", "x", "y", "x", "z", "z", "x"]
    df = pd.DataFrame({"item": list(range(10)) * 2, "annotator": ["a"] * 10 + ["b"] * 10, "label": a + b})
    pa = np.mean(np.array(a) == np.array(b))
    pi = np.array([(a.count(k) + b.count(k)) / 20 for k in "xyz"])
    pe = (pi * (1 - pi)).sum() / 2
    r = agreement_report(df, ["x", "y", "z"])
    assert r["gwet_ac1"] == pytest.approx((pa - pe) / (1 - pe), abs=1e-12)
    assert gwet_ac1(encode_labels(df, ("x", "y", "z")).counts) == r["gwet_ac1"]
    # 2 raters: Fleiss' P_o is Cohen's p_o; Fleiss' P_e uses pooled shares (Scott's pi)
    pe_scott = (pi ** 2).sum()
    assert r["fleiss_kappa"] == pytest.approx((pa - pe_scott) / (1 - pe_scott), abs=1e-12)
    assert r["percent_agreement_pairwise"] == pytest.approx(pa)
    assert r["cohen_kappa"]["a|b"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


# --------------------------------------------------------------------------- varying label counts

def test_missing_labels_use_gwet_generalisation():
    # items: [Y,Y,N], [Y,Y], [N] (single label: not pairable), [N,N,N]
    df = pd.DataFrame({"item": list("aaabbcddd"), "annotator": list("xyzxyzxyz"),
                       "label": ["Y", "Y", "N", "Y", "Y", "N", "N", "N", "N"]})
    r = agreement_report(df, ["Y", "N"])
    assert r["n_items"] == 4 and r["n_items_pairable"] == 3
    po = (1 / 3 + 1 + 1) / 3
    pi_y = (2 / 3 + 1 + 0 + 0) / 4  # shares averaged over the 4 items with >= 1 label
    pe = pi_y ** 2 + (1 - pi_y) ** 2
    assert r["percent_agreement_pairwise"] == pytest.approx(po)
    assert r["fleiss_kappa"] == pytest.approx((po - pe) / (1 - pe), abs=1e-12)
    assert r["randolph_kappa"] == pytest.approx((po - 0.5) / 0.5, abs=1e-12)
    assert r["percent_agreement_unanimous"] == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- invariances

def test_invariant_to_category_order_item_order_and_annotator_names():
    rng = np.random.default_rng(7)
    df, cats = random_table(rng, n_items=40, n_raters=4, q=3, p_missing=0.2)
    base = agreement_report(df, cats)
    shuffled = df.sample(frac=1, random_state=1).reset_index(drop=True)
    renamed = shuffled.assign(annotator=shuffled["annotator"].map({"ann0": "zoe", "ann1": "yan", "ann2": "xia", "ann3": "wu"}))
    for other in (agreement_report(shuffled, cats), agreement_report(df, cats[::-1]), agreement_report(renamed, cats)):
        for key in ("percent_agreement_pairwise", "randolph_kappa", "fleiss_kappa", "gwet_ac1",
                    "krippendorff_alpha_nominal", "cohen_kappa_mean_pairwise"):
            assert other[key] == pytest.approx(base[key], abs=1e-12), key
    again = agreement_report(renamed, cats)
    assert again["cohen_kappa"]["wu|yan"] == pytest.approx(base["cohen_kappa"]["ann1|ann3"], abs=1e-12)
    assert all(k.split("|")[0] < k.split("|")[1] for k in again["cohen_kappa"])


def test_ordinal_reversed_scale_gives_same_alphas_and_weighted_kappas():
    r1 = agreement_report(k2011_table(), FIVE, ordinal=True)
    r2 = agreement_report(k2011_table(), FIVE[::-1], ordinal=True)
    for key in ("krippendorff_alpha_ordinal", "krippendorff_alpha_interval", "cohen_kappa_linear", "cohen_kappa_quadratic"):
        assert r2[key] == pytest.approx(r1[key], abs=1e-12)


def test_interval_uses_numbers_when_categories_are_numeric_else_index():
    assert interval_values(["1", "2", "10"]).tolist() == [1.0, 2.0, 10.0]
    assert interval_values(["low", "mid", "high"]).tolist() == [0.0, 1.0, 2.0]
    df = pd.DataFrame({"item": list("aabbcc"), "annotator": list("xyxyxy"), "label": list("112210")})
    df["label"] = df["label"].replace({"0": "10"})
    counts = encode_labels(df, ("1", "2", "10")).counts
    num = krippendorff_alpha(counts, level="interval", values=[1, 2, 10])
    idx = krippendorff_alpha(counts, level="interval")
    assert agreement_report(df, ["1", "2", "10"], ordinal=True)["krippendorff_alpha_interval"] == pytest.approx(num)
    assert num != pytest.approx(idx)


# --------------------------------------------------------------------------- undefined values

def test_everyone_uses_one_category_fleiss_and_cohen_undefined_randolph_defined():
    df = long_table([["Yes"] * 3] * 4, raters=["a", "b", "c"])
    r = agreement_report(df, ["Yes", "No"], ordinal=True)
    assert r["randolph_kappa"] == 1.0 and r["percent_agreement_pairwise"] == 1.0
    assert r["gwet_ac1"] == 1.0
    for key in ("fleiss_kappa", "krippendorff_alpha_nominal", "krippendorff_alpha_ordinal", "cohen_kappa_mean_pairwise",
                "cohen_kappa_linear"):
        assert r[key] is None, key
        assert r["undefined_reasons"][key]
    assert "'Yes'" in r["undefined_reasons"]["fleiss_kappa"] and "0/0" in r["undefined_reasons"]["fleiss_kappa"]
    assert r["cohen_kappa"] == {"a|b": None, "a|c": None, "b|c": None}
    assert "0/0" in r["undefined_reasons"]["cohen_kappa"]["a|b"]
    assert r["bands"]["fleiss_kappa"] is None
    assert isinstance(fleiss_kappa([[3, 0], [3, 0]]), Undefined)
    assert isinstance(cohen_kappa(["Yes", "Yes"], ["Yes", "Yes"], labels=["Yes", "No"]), Undefined)


def test_one_pairable_item_is_defined_as_the_libraries_compute_it():
    """docs/statistics.md: undefined only for 0/0. One item labelled Y, Y, N is not 0/0: the values are
    statsmodels', krippendorff's and scikit-learn's."""
    one = pd.DataFrame({"item": ["a", "a", "a"], "annotator": ["x", "y", "z"], "label": ["Y", "Y", "N"]})
    r = agreement_report(one, ["Y", "N"])
    assert r["n_items_pairable"] == 1
    assert r["percent_agreement_pairwise"] == pytest.approx(1 / 3)
    assert r["fleiss_kappa"] == pytest.approx(sm_fleiss(np.array([[2, 1]]), method="fleiss"), abs=1e-12)
    assert r["randolph_kappa"] == pytest.approx(sm_fleiss(np.array([[2, 1]]), method="randolph"), abs=1e-12)
    alpha = krippendorff.alpha(reliability_data=np.array([[0], [0], [1]], float), level_of_measurement="nominal")
    assert r["krippendorff_alpha_nominal"] == pytest.approx(alpha, abs=1e-12)
    assert r["gwet_ac1"] == pytest.approx(-0.2, abs=1e-12)  # pa = 1/3, pe = 2 * (2/3)(1/3) = 4/9: (1/3 - 4/9) / (5/9)
    assert r["cohen_kappa"]["x|z"] == pytest.approx(cohen_kappa_score(["Y"], ["N"], labels=["Y", "N"]), abs=1e-12)
    assert r["cohen_kappa"]["x|y"] is None and "x|y" in r["undefined_reasons"]["cohen_kappa"]  # Y/Y: 0/0
    # a second item with one label adds to Gwet's P_e only: shares (5/6, 1/6), P_e = 26/36
    two = pd.concat([one, pd.DataFrame({"item": ["b"], "annotator": ["x"], "label": ["Y"]})])
    assert agreement_report(two, ["Y", "N"])["fleiss_kappa"] == pytest.approx((1 / 3 - 26 / 36) / (10 / 36), abs=1e-12)
    none = pd.DataFrame({"item": ["a", "b"], "annotator": ["x", "x"], "label": ["Y", "N"]})
    r = agreement_report(none, ["Y", "N"])
    assert r["percent_agreement_pairwise"] is None
    assert r["undefined_reasons"]["randolph_kappa"] == "no item has 2 or more labels"
    assert r["cohen_kappa"] == {} and r["cohen_kappa_mean_pairwise"] is None
    assert isinstance(percent_agreement([[1, 0]]), Undefined)


def test_unanimous_items():
    df = long_table([["A", "A", "A"], ["B", "B", "B"], ["A", "B", "B"]])
    r = agreement_report(df, ["A", "B"])
    assert r["percent_agreement_unanimous"] == pytest.approx(2 / 3)
    assert r["percent_agreement_pairwise"] == pytest.approx((1 + 1 + 1 / 3) / 3)


def test_mean_pairwise_skips_undefined_pairs_and_says_so():
    # a and b both say Yes always (undefined); c varies
    df = long_table([["Y", "Y", "Y"], ["Y", "Y", "N"], ["Y", "Y", "N"]], raters=["a", "b", "c"])
    r = agreement_report(df, ["Y", "N"])
    assert r["cohen_kappa"]["a|b"] is None
    assert r["cohen_kappa_mean_pairwise"] == pytest.approx(np.mean([r["cohen_kappa"]["a|c"], r["cohen_kappa"]["b|c"]]))
    assert any("2 of 3" in n for n in r["notes"])


# --------------------------------------------------------------------------- input errors

def test_label_outside_declared_categories_is_an_error_naming_both():
    df = pd.DataFrame({"item": ["a", "a"], "annotator": ["x", "y"], "label": ["Yes", "Maybe"]})
    with pytest.raises(UnknownLabel, match=r"'Maybe'.*Yes, No") as exc:
        agreement_report(df, ["Yes", "No"])
    assert exc.value.row == 1 and isinstance(exc.value, InvalidAnswer)
    with pytest.raises(InvalidAnswer, match="'maybe'"):
        cohen_kappa(["Yes"], ["maybe"], labels=["Yes", "No"])


def test_duplicate_item_annotator_is_refused():
    df = pd.DataFrame({"item": ["a", "a", "b", "a"], "annotator": ["x", "y", "x", "x"], "label": ["Y", "N", "Y", "N"]})
    with pytest.raises(DuplicateLabel, match="item 'a', annotator 'x'") as exc:
        agreement_report(df, ["Y", "N"])
    assert exc.value.rows == (0, 3)


def test_declared_categories_are_checked():
    df = pd.DataFrame({"item": ["a"], "annotator": ["x"], "label": ["Y"]})
    with pytest.raises(IFJudgeError, match="at least 2"):
        agreement_report(df, ["Y"])
    with pytest.raises(IFJudgeError, match="twice"):
        agreement_report(df, ["Y", "N", "Y"])


# --------------------------------------------------------------------------- majority and gold

def test_majority_vote_strict_plurality():
    # one label is no majority yet (annotation.agreement.majority)
    assert majority_vote([[2, 1, 0], [1, 1, 0], [0, 0, 1], [1, 1, 1], [0, 0, 0], [0, 0, 2]]).tolist() == [0, -1, -1, -1, -1, 2]


def test_top1_accuracy_ties_and_cohen_majority_vs_gold():
    # majority: j1 p1 (gold p1 ok), j2 p2 (gold p2 ok), j3 p3 (gold p1 wrong), j4 tie, j5 p1 (gold p1 ok)
    labels = long_table([["p1", "p1", "p2"], ["p2", "p2", "p2"], ["p3", "p1", "p3"], ["p1", "p2", "p3"],
                         ["p1", "p1", "p1"]], items=["j1", "j2", "j3", "j4", "j5"])
    gold = pd.DataFrame({"item": ["j1", "j2", "j3", "j4", "j5", "extra"], "label": ["p1", "p2", "p1", "p1", "p1", "p2"]})
    r = agreement_report(labels, ["p1", "p2", "p3"], gold=gold)
    assert r["n_majority_ties"] == 1
    assert r["top1_accuracy_ties_count_as_wrong"] == pytest.approx(3 / 5)
    assert r["top1_accuracy_excluding_ties"] == pytest.approx(3 / 4)
    ref = cohen_kappa_score(["p1", "p2", "p3", "p1"], ["p1", "p2", "p1", "p1"], labels=["p1", "p2", "p3"])
    assert r["cohen_kappa_majority_vs_gold_excluding_ties"] == pytest.approx(ref, abs=1e-12)
    assert r["n_gold_items_without_labels"] == 1 and r["n_items_with_gold"] == 5


def test_gold_errors():
    labels = long_table([["p1", "p1"], ["p2", "p2"]], items=["j1", "j2"])
    with pytest.raises(UnknownLabel, match="'p9'"):
        agreement_report(labels, ["p1", "p2"], gold={"j1": "p9"})
    with pytest.raises(DuplicateLabel, match="gold for item 'j1'") as exc:
        agreement_report(labels, ["p1", "p2"], gold=pd.DataFrame({"item": ["j1", "j2", "j1"], "label": ["p1"] * 3}))
    assert exc.value.rows == (0, 2)


def test_instructir_table7_shape():
    """A small InstructIR-like Table 7 (Oh et al. 2024, App. B), values computed by hand.

    Q2 naturalness, Yes/No, 3 annotators x 5 instances:
      n1 YYY, n2 YYN, n3 YYY, n4 NNY, n5 YYY
      agreeing pairs per item: 3/3, 1/3, 3/3, 1/3, 3/3 -> P_o = (1 + 1/3 + 1 + 1/3 + 1) / 5 = 11/15
      Randolph kappa = (11/15 - 1/2) / (1 - 1/2) = 7/15 = 0.4667 (moderate)
      majority: Y, Y, Y, N, Y -> proportion of Yes = 4/5 = 80%
    Q3 best passage, 3 passages, 3 annotators x 5 instances, gold = dataset target:
      t1 [p1 p1 p2] gold p1 -> majority p1 correct
      t2 [p2 p2 p2] gold p2 -> p2 correct
      t3 [p3 p3 p1] gold p1 -> p3 wrong
      t4 [p1 p2 p3] gold p3 -> tie (wrong, excluded from kappa)
      t5 [p2 p2 p1] gold p2 -> p2 correct
      top-1 = 3/5 = 60% (ties wrong), 3/4 = 75% excluding ties, 1 tie
      Cohen on t1,t2,t3,t5: majority (p1,p2,p3,p2) vs gold (p1,p2,p1,p2)
        p_o = 3/4; marginals majority p1 1/4, p2 2/4, p3 1/4; gold p1 2/4, p2 2/4, p3 0
        p_e = 1/4*2/4 + 2/4*2/4 + 0 = 3/8; kappa = (3/4 - 3/8) / (1 - 3/8) = 3/5 = 0.6 (moderate)
    """
    q2 = long_table([list("YYY"), list("YYN"), list("YYY"), list("NNY"), list("YYY")],
                    items=["n1", "n2", "n3", "n4", "n5"])
    r2 = agreement_report(q2, ["Y", "N"])
    assert r2["randolph_kappa"] == pytest.approx(7 / 15, abs=1e-12)
    assert r2["bands"]["randolph_kappa"] == "moderate"
    assert r2["majority_shares"]["Y"] == pytest.approx(0.8)
    q3 = long_table([["p1", "p1", "p2"], ["p2", "p2", "p2"], ["p3", "p3", "p1"], ["p1", "p2", "p3"], ["p2", "p2", "p1"]],
                    items=["t1", "t2", "t3", "t4", "t5"])
    gold = {"t1": "p1", "t2": "p2", "t3": "p1", "t4": "p3", "t5": "p2"}
    r3 = agreement_report(q3, ["p1", "p2", "p3"], gold=gold)
    assert r3["cohen_kappa_majority_vs_gold_excluding_ties"] == pytest.approx(0.6, abs=1e-12)
    assert r3["bands"]["cohen_kappa_majority_vs_gold_excluding_ties"] == "moderate"
    assert r3["top1_accuracy_ties_count_as_wrong"] == pytest.approx(0.6)
    assert r3["top1_accuracy_excluding_ties"] == pytest.approx(0.75)
    assert r3["n_majority_ties"] == 1


# --------------------------------------------------------------------------- Landis & Koch

@pytest.mark.parametrize("value, band", [
    (-0.0001, "poor"), (0.0, "slight"), (0.2, "slight"), (0.2000000000001, "slight"), (0.21, "fair"),
    (0.4, "fair"), (0.6, "moderate"), (0.6000000001, "substantial"), (0.8, "substantial"),
    (0.81, "almost perfect"), (1.0, "almost perfect"), (-0.00000000001, "slight"),
])
def test_landis_koch_bands(value, band):
    assert landis_koch_band(value) == band


def test_landis_koch_undefined_has_no_band():
    assert landis_koch_band(None) is None and landis_koch_band(Undefined("0/0")) is None


# --------------------------------------------------------------------------- bootstrap

def test_bootstrap_intervals_are_seeded_and_cover_the_estimate():
    rng = np.random.default_rng(11)
    df, cats = random_table(rng, n_items=120, n_raters=3, q=3, p_missing=0.1)
    a = agreement_report(df, cats, n_boot=300, seed=5)
    b = agreement_report(df, cats, n_boot=300, seed=5)
    c = agreement_report(df, cats, n_boot=300, seed=6)
    assert a["intervals"] == b["intervals"]
    assert a["intervals"]["fleiss_kappa"] != c["intervals"]["fleiss_kappa"]
    for key in ("randolph_kappa", "fleiss_kappa", "gwet_ac1", "krippendorff_alpha_nominal", "cohen_kappa_mean_pairwise"):
        iv = a["intervals"][key]
        assert iv["n_boot"] == 300 and iv["low"] < a[key] < iv["high"], key
    for pair, iv in a["intervals"]["cohen_kappa"].items():
        assert iv["low"] < a["cohen_kappa"][pair] < iv["high"]


def test_bootstrap_replicates_resample_items():
    """Mean of replicate Randolph kappas is close to the estimate, and the spread matches the
    textbook item-resampling standard error of a mean of per-item agreements."""
    from annotation.agreement.bootstrap import bootstrap_statistics
    rng = np.random.default_rng(2)
    df, cats = random_table(rng, n_items=200, n_raters=3, q=2)
    enc = encode_labels(df, tuple(cats))
    reps = bootstrap_statistics(enc, ordinal=False, values=np.arange(2.0), n_boot=2000, seed=0)
    counts = enc.counts
    per_item = (counts * (counts - 1)).sum(1) / 6
    se = per_item.std(ddof=0) / np.sqrt(len(per_item)) * 2  # Randolph (q=2) = 2 P_o - 1
    assert reps["randolph_kappa"].std() == pytest.approx(se, rel=0.08)
    assert reps["randolph_kappa"].mean() == pytest.approx(2 * per_item.mean() - 1, abs=0.01)


def test_undefined_estimate_has_no_interval():
    df = long_table([["Yes"] * 3] * 4)
    r = agreement_report(df, ["Yes", "No"], n_boot=20)
    assert r["intervals"]["fleiss_kappa"] is None
    assert r["intervals"]["randolph_kappa"]["low"] == 1.0


def test_many_annotators_only_pairs_sharing_items_are_reported():
    # 10 annotators, each item labelled by 3 consecutive ones: pairs (k, k+1), (k, k+2) only
    rows = []
    for i in range(30):
        for d in range(3):
            a = (i + d) % 10
            rows.append((f"i{i}", f"a{a}", "Y" if (i + d) % 3 else "N"))
    r = agreement_report(pd.DataFrame(rows, columns=["item", "annotator", "label"]), ["Y", "N"], n_boot=50)
    assert set(r["cohen_kappa"]) == {"|".join(sorted((f"a{k}", f"a{(k + d) % 10}"))) for k in range(10) for d in (1, 2)}
    assert set(r["intervals"]["cohen_kappa"]) == set(r["cohen_kappa"])


def test_docstring_examples():
    import doctest

    import annotation.agreement.report
    import annotation.agreement.kernels
    import annotation.agreement.stats
    for mod in (annotation.agreement.report, annotation.agreement.stats, annotation.agreement.kernels):
        result = doctest.testmod(mod)
        assert result.attempted > 0 and result.failed == 0, mod.__name__
