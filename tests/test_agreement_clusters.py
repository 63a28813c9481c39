"""Agreement intervals under the sampling design: the bootstrap resamples query groups within
domains (Rao & Wu's rescaling bootstrap), the item bootstrap stays as a named comparison; the
Table 7 share of Yes gets its interval."""
import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from annotation.agreement.report import agreement_report
from annotation.agreement.bootstrap import cluster_draws


def _labels(groups: dict[str, list[list[str]]]) -> tuple[pd.DataFrame, dict]:
    """groups -> items -> the three annotators' labels."""
    rows, clusters = [], {}
    for g, items in groups.items():
        for k, labels in enumerate(items):
            item = f"{g}_{k}"
            clusters[item] = g
            rows += [(item, f"a{j}", lab) for j, lab in enumerate(labels)]
    return pd.DataFrame(rows, columns=["item", "annotator", "label"]), clusters


def test_rao_wu_draws_by_hand():
    # stratum 0: groups 0, 1, 2 (2 draws each weighing 3/2); stratum 1: group 3 alone (kept, weight 1);
    # each group holds one item of its own signature
    group_sig = sparse.csr_matrix(np.eye(4))
    drawn = cluster_draws(group_sig, np.array([0, 0, 0, 1]), 5, np.random.default_rng(0))
    picks = np.random.default_rng(0).integers(0, 3, size=(5, 2))
    expected = np.zeros((5, 4))
    for b, (i, j) in enumerate(picks):
        expected[b, i] += 1.5
        expected[b, j] += 1.5
    expected[:, 3] = 1.0
    assert drawn == pytest.approx(expected)


def test_two_groups_give_the_two_groups_own_values():
    # one stratum of 2 groups: every replicate draws one group (weight 2), so every replicate's share of
    # Yes is one group's own share: 1 (group g) or 1/4 (group h)
    frame, clusters = _labels({"g": [["Yes"] * 3] * 4, "h": [["Yes"] * 3] + [["No"] * 3] * 3})
    r = agreement_report(frame, ["Yes", "No"], n_boot=200, seed=1, clusters=clusters)
    iv = r["intervals"]["majority_share_Yes"]
    assert (iv["low"], iv["high"]) == (0.25, 1.0)
    assert r["intervals_resampled"].startswith("query groups resampled within domains")
    items = agreement_report(frame, ["Yes", "No"], n_boot=200, seed=1, clusters=clusters, resample="items")
    assert items["intervals_resampled"].startswith("items resampled")


def test_groups_answered_alike_widen_the_interval():
    rng = np.random.default_rng(3)
    groups = {}
    for g in range(30):  # 4 items per group, all alike: the group's answer with a little noise
        yes = rng.random() < 0.7
        groups[f"q{g}"] = [["Yes" if (yes ^ (rng.random() < 0.1)) else "No" for _ in range(3)] for _ in range(4)]
    frame, clusters = _labels(groups)
    by_group = agreement_report(frame, ["Yes", "No"], n_boot=400, seed=0, clusters=clusters)
    by_item = agreement_report(frame, ["Yes", "No"], n_boot=400, seed=0)
    width = {name: r["intervals"][k]["high"] - r["intervals"][k]["low"]
             for name, r in (("groups", by_group), ("items", by_item)) for k in ["majority_share_Yes"]}
    assert width["groups"] > 1.4 * width["items"]
    assert by_group["randolph_kappa"] == by_item["randolph_kappa"]  # the point estimates do not change
    strata = {item: ("d1" if int(clusters[item][1:]) < 15 else "d2") for item in clusters}
    within = agreement_report(frame, ["Yes", "No"], n_boot=400, seed=0, clusters=clusters, strata=strata)
    assert within["intervals"]["randolph_kappa"]["low"] is not None


def test_an_item_without_a_group_is_named():
    frame, clusters = _labels({"g": [["Yes"] * 3] * 2, "h": [["No"] * 3] * 2})
    del clusters["h_1"]
    with pytest.raises(Exception, match="item 'h_1' has no query group"):
        agreement_report(frame, ["Yes", "No"], n_boot=10, clusters=clusters)


def test_questions_sharing_their_groups_share_their_replicates(monkeypatch):
    """A study's questions are asked of the same query groups: their bootstraps draw the same Rao-Wu
    replicates, drawn once and kept (a function of the groups' strata, the sizes and the seed); the
    intervals are those of replicates drawn anew, and another seed draws others."""
    from annotation.agreement import bootstrap

    rng = np.random.default_rng(5)
    groups = {f"q{g}": [[("Yes" if rng.random() < 0.8 else "No") for _ in range(3)] for _ in range(3)] for g in range(40)}
    frame, clusters = _labels(groups)
    other = frame.assign(label=np.where(frame["label"] == "Yes", "No", "Yes"))  # a second question, same items
    drawn = []
    real = bootstrap.rao_wu_weights
    monkeypatch.setattr(bootstrap, "rao_wu_weights", lambda *a: (drawn.append(a[1]), real(*a))[1])
    monkeypatch.setattr(bootstrap, "_weights", bootstrap.OrderedDict())
    first = agreement_report(frame, ["Yes", "No"], n_boot=300, seed=7, clusters=clusters)
    assert len(drawn) == 1  # one batch of 300 replicates
    second = agreement_report(other, ["Yes", "No"], n_boot=300, seed=7, clusters=clusters)
    again = agreement_report(frame, ["Yes", "No"], n_boot=300, seed=7, clusters=clusters)
    assert len(drawn) == 1  # the second question and the repeat drew nothing
    assert again == first
    bootstrap._weights.clear()
    assert agreement_report(other, ["Yes", "No"], n_boot=300, seed=7, clusters=clusters) == second  # drawn anew: equal
    assert len(drawn) == 2
    reseeded = agreement_report(frame, ["Yes", "No"], n_boot=300, seed=8, clusters=clusters)
    assert len(drawn) == 3 and reseeded["intervals"] != first["intervals"]
