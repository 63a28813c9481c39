"""The agreement of the re-judging rounds (annotation.narratives.rejudging.rounds_agreement): every round at
once from one count matrix, the values the full agreement report gives round by round."""
from __future__ import annotations

import random

import pandas as pd
import pytest

from annotation.agreement.report import agreement_report
from annotation.agreement.data import UnknownLabel
from annotation.questions.study import question
from annotation.narratives.rejudging import rejudge_summary, rounds_agreement
from tests.builders import published_rejudged_demo
from storage import projects

CATS = question("relevance", relevance="binary").categories  # the order the summary codes them in
R, N = "relevant", "not relevant"


def _labels(item, *values):
    return [{"item": item, "annotator": f"ann{k}", "value": v} for k, v in enumerate(values, start=1)]


def _report(labels):
    """What rejudge_summary gave before: one agreement report per round."""
    df = pd.DataFrame({"item": [str(r["item"]) for r in labels], "annotator": [r["annotator"] for r in labels],
                       "label": [r["value"] for r in labels]})
    rep = agreement_report(df, list(CATS))
    return (rep["percent_agreement_pairwise"], rep["randolph_kappa"], rep["fleiss_kappa"], rep["n_items_pairable"])


def _values(a):
    return (a["percent_agreement"], a["randolph_kappa"], a["fleiss_kappa"], a["n_items_pairable"])


def test_hand_computed_rounds_and_overall():
    rounds = [
        _labels(1, R, R, N) + _labels(2, R, R, R),  # P_o = (1/3 + 1) / 2 = 2/3
        _labels(3, N, N) + _labels(4, R),  # one pairable item, unanimous: P_o = 1
        _labels(5, R),  # no item with two labels
        [],
    ]
    per, total = rounds_agreement(rounds, CATS)
    assert per[0]["percent_agreement"] == pytest.approx(2 / 3)
    assert per[0]["randolph_kappa"] == pytest.approx((2 / 3 - 1 / 2) / (1 / 2))  # 1/3
    # Fleiss, equal counts (3 labels per item): p_R = 5/6, p_N = 1/6, P_e = 26/36; (2/3 - 26/36) / (10/36) = -1/5
    assert per[0]["fleiss_kappa"] == pytest.approx(-0.2)
    assert per[0]["n_items_pairable"] == 2 and per[0]["undefined_reason"] is None
    assert per[1]["percent_agreement"] == 1.0 and per[1]["randolph_kappa"] == 1.0 and per[1]["n_items_pairable"] == 1
    for empty in (per[2], per[3]):
        assert empty["percent_agreement"] is None and empty["n_items_pairable"] == 0
        assert empty["undefined_reason"] == "no item has two labels yet"
    # overall: items 1, 2, 3 pairable: (1/3 + 1 + 1) / 3 = 7/9
    assert total["percent_agreement"] == pytest.approx(7 / 9) and total["n_items_pairable"] == 3
    assert total["randolph_kappa"] == pytest.approx((7 / 9 - 1 / 2) / (1 / 2))


def test_every_label_in_one_category_leaves_fleiss_undefined_with_the_reason():
    per, _ = rounds_agreement([_labels(1, R, R) + _labels(2, R, R, R)], CATS)
    assert per[0]["percent_agreement"] == 1.0 and per[0]["randolph_kappa"] == 1.0
    assert per[0]["fleiss_kappa"] is None  # expected agreement 1: 0/0, never 0 or 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_one_agreement_report_per_round_on_a_seeded_study(seed):
    """60 rounds of 1-12 items with 1-4 labels each (equal and varying counts, one-category rounds):
    each round and the overall values equal the full report's, to the last bit."""
    rng = random.Random(seed)
    rounds, item = [], 0
    for _ in range(60):
        labels, n_labels = [], rng.choice([None, 3])  # None: a varying number of labels per item
        p = rng.choice([0.0, 0.2, 0.5, 0.9, 1.0])
        for _ in range(rng.randint(1, 12)):
            item += 1
            labels += _labels(item, *(R if rng.random() < p else N for _ in range(n_labels or rng.randint(1, 4))))
        rounds.append(labels)
    per, total = rounds_agreement(rounds, CATS)
    for labels, got in zip(rounds, per):
        if got["n_items_pairable"] == 0:
            assert all(n < 2 for n in pd.Series([r["item"] for r in labels]).value_counts())
            continue
        assert _values(got) == _report(labels)
    assert _values(total) == _report([r for labels in rounds for r in labels])


def test_a_label_outside_the_categories_is_refused_by_its_row():
    with pytest.raises(UnknownLabel, match=r"labels row 2: label 'maybe' is not one of the declared categories"):
        rounds_agreement([_labels(1, R, R), _labels(2, R, N, "maybe")], CATS)


@pytest.mark.both_engines
def test_rejudge_summary_agreement_equals_the_report_on_its_labels(demo):
    db, _ = demo
    published_rejudged_demo(db)
    summary = rejudge_summary(db, projects.get_project(db, "demo"), kind="published")
    labels = [{"item": d["item"], "annotator": a, "value": v} for d in summary["documents"] for a, v in d["labels"].items()]
    (query,) = summary["queries"]
    assert _values(query["agreement"]) == _report(labels) == _values(summary["overall"]["agreement"])
