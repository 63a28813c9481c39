"""Local judges on sentence-transformers, offline on the bundled all-MiniLM-L6-v2: bi-encoder
similarity for the re-judging of FollowIR's changed narrative, the threshold chosen on the humans'
re-judgments, and the best passage picked among the candidates."""
from __future__ import annotations

import numpy as np
import pytest

from annotation.judges.agreement import judge_report
from annotation.judges.runs import fit_threshold, prepare_run
from evaluation.judges.local import choose_threshold
from evaluation.judges.runs import JudgeSpec, run_judge
from storage import judge_labels
from storage.errors import IFJudgeError
from tests.builders import published_rejudged_demo
from storage.projects import get_project


def test_choose_threshold_maximises_kappa_and_takes_the_middle_of_ties():
    fit = choose_threshold([0.1, 0.2, 0.3, 0.8, 0.9], [0, 0, 1, 1, 1])
    assert fit == {"threshold": 0.25, "kappa": 1.0, "n": 5}
    assert choose_threshold([0.4, 0.5], [1, 1])["threshold"] is None  # one human answer: no cut is better
    rng = np.random.default_rng(0)
    s, h = rng.random(60), rng.integers(0, 2, 60)
    from sklearn.metrics import cohen_kappa_score

    best = choose_threshold(s, h)
    assert best["kappa"] == pytest.approx(cohen_kappa_score(h, (s >= best["threshold"]).astype(int)))
    assert all(cohen_kappa_score(h, (s >= t).astype(int)) <= best["kappa"] + 1e-12 for t in np.unique(s))


def test_a_biencoder_rejudges_and_its_threshold_comes_from_the_humans(demo):
    db, _ = demo
    study = published_rejudged_demo(db)["study_id"]
    prepared = prepare_run(db, get_project(db, "demo"), JudgeSpec("relevance", judge="biencoder", model="minilm"), created_by="t")
    run_id = prepared["run"]["id"]
    assert prepared["estimate"]["prompt_tokens"] == 0 and prepared["estimate"]["requests"] == 5
    run_judge(db, run_id)
    labels = judge_labels.labels(db, run_id)
    assert len(labels) == 5 and all(-1 <= lab["score"] <= 1 and lab["value"] is None for lab in labels)
    fit = fit_threshold(db, run_id, study)
    assert fit["values"] == 5 and fit["categories"] == ["relevant", "not relevant"]
    after = judge_labels.labels(db, run_id)
    assert {lab["value"] for lab in after} <= {"relevant", "not relevant"}
    assert all((lab["value"] == "relevant") == (lab["score"] >= fit["threshold"]) for lab in after)
    rep = judge_report(db, study, run_id, n_boot=0)
    assert rep["run"]["threshold"] == fit["threshold"] and any("in-sample" in n for n in rep["notes"])
    assert rep["overall"]["n_items"] == 5


def test_a_biencoder_picks_the_best_passage_among_the_candidates(demo):
    db, _ = demo
    prepared = prepare_run(db, get_project(db, "demo"), JudgeSpec("best_passage", judge="biencoder"), created_by="t")
    run_judge(db, prepared["run"]["id"])
    for lab in judge_labels.labels(db, prepared["run"]["id"]):
        scores = lab["payload"]["scores"]
        assert lab["value"] == max(scores, key=scores.get) and set(scores) == set(lab["payload"]["candidates"])


def test_a_local_judge_refuses_a_question_it_cannot_answer(demo):
    db, _ = demo
    with pytest.raises(IFJudgeError, match="relevance-type"):
        prepare_run(db, get_project(db, "demo"), JudgeSpec("validity", judge="biencoder"), created_by="t")


def test_a_crossencoder_scores_every_item(demo):
    """The class runs offline on any local sequence-classification folder; the bundled MiniLM is a
    bi-encoder (its classification head is new), so only the mechanics are checked here."""
    from evaluation.retrievers.dense import bundled_minilm_path

    db, _ = demo
    prepared = prepare_run(db, get_project(db, "demo"), JudgeSpec("relevance", judge="crossencoder", model=str(bundled_minilm_path())),
                           created_by="t")
    assert run_judge(db, prepared["run"]["id"])["judged"] == 5
    assert all(0 < lab["score"] < 1 for lab in judge_labels.labels(db, prepared["run"]["id"]))
