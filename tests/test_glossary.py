"""The glossary matches what the code produces: every statistic the Monitor's question report
shows, every key of the naive extrapolation and every column of the benchmark-wide estimates has a
readable label, and no label names a key that no result carries."""
from __future__ import annotations

import pytest

from annotation.monitoring import monitor
from annotation.estimates.benchmark import benchmark_estimates
from annotation.glossary import ESTIMATES, EXTRAPOLATION, STATISTICS, label
from storage import studies
from annotation.questions.own import declare
from annotation.studies import StudySettings, create_study
from tests.builders import label_items, labelled_ifir_study
from ui.estimates_view import estimate_rows
from storage.projects import get_project


@pytest.fixture
def reports(labelled, db_path):
    """The demo's question reports (Yes/No and best passage with a target, labelled by builders.PLAN)
    those of an IFIR passage-match study (ordinal 1-5, split votes) and of a lead's own Yes/No
    question: (db, study id, reports)."""
    db, sid, _ = labelled
    out = {q: monitor.question_report(db, sid, q) for q in studies.get_study(db, sid)["questions"]}
    ifir = labelled_ifir_study(db)
    out["passage_match"] = monitor.question_report(db, ifir, "passage_match")
    harm = declare({"id": "harmful", "wording": "Is the instruction harmful?", "categories": "yes-no"})
    own = create_study(db, project=get_project(db, "demo"), questions=[], own_questions=[harm], annotators=["ann1", "ann2", "ann3"],
                       name="own", settings=StudySettings(group_fraction=1.0, per_group=1, seed=2))["study_id"]
    label_items(db, own, lambda it, name: "No" if name != "ann3" else "Yes")
    out["harmful"] = monitor.question_report(db, own, "harmful")
    return db, sid, out


def test_every_statistic_the_monitor_shows_has_a_label(reports):
    _, _, reps = reports
    for question, rep in reps.items():
        shown = {r["Statistic"] for r in monitor.report_rows(rep)}
        assert shown <= set(STATISTICS.values()), (question, shown - set(STATISTICS.values()))
    assert "Items decided by a lead" in {r["Statistic"] for r in monitor.report_rows(reps["validity"])}
    assert "Items awaiting labels" in {r["Statistic"] for r in monitor.report_rows(reps["best_passage"])}


def test_no_statistic_label_is_orphaned(reports):
    _, _, reps = reports
    produced = {k for rep in reps.values() for k in rep}
    assert set(STATISTICS) - produced == set()


def test_extrapolation_keys_and_labels_match(reports):
    db, sid, _ = reports
    assert set(monitor.extrapolation(db, sid)) == set(EXTRAPOLATION)
    assert label("majority_differs_from_target") == "Majority differs from the dataset's target"


def test_every_column_of_the_estimates_table_is_a_labelled_key(reports):
    db, sid, _ = reports
    result = benchmark_estimates(db, sid)
    entry = result["estimates"][0]
    assert set(ESTIMATES) <= set(entry)  # no orphan: each label names a key an estimate carries
    assert list(estimate_rows(result)[0]) == list(ESTIMATES.values())
