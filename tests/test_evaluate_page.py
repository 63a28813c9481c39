"""The Evaluate page's figures a lead can explain (AppTest): every measure's definition, range and
sign on hover, the compared queries by id, Kendall tau only from 3 systems and paired tests only
from 10 queries (with n and the reason otherwise), and a *-validated version preselected once built."""
import json

import pytest

from annotation.outcomes.qrels_builds import store_validated_qrels
from evaluation.runner import run_eval
from tests.builders import app, label_demo, user_row
from ui.markdown import md_escape
from storage import projects

pytestmark = pytest.mark.both_engines


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("IFJUDGE_CACHE_DIR", str(tmp_path / "cache"))


def _page(db):
    at = app("pages/evaluate.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run(timeout=120)
    assert not at.exception
    return at


def _frame(at, column):
    return next(d for d in at.dataframe if column in d.value.columns)


def test_validated_version_is_preselected_once_built(env_db):
    db, r = env_db
    at = _page(db)
    assert sorted(at.multiselect(key="ev_versions").value) == ["changed", "original"]
    at.multiselect(key="ev_versions").set_value(["original"])  # the lead narrows the choice and runs
    at.button(key="FormSubmitter:ev_form-Run").click().run()
    label_demo(db, r["study_id"])
    store_validated_qrels(db, r["study_id"])  # built meanwhile (on the Export page or the CLI)
    at.run()
    assert at.multiselect(key="ev_versions").value == ["original", "validated"]  # added; "changed" stays off


def test_measures_have_their_meaning_on_hover_and_compared_queries_are_listed(env_db, cache):
    db, r = env_db
    label_demo(db, r["study_id"])
    store_validated_qrels(db, r["study_id"])
    for template in ("query", "instruction_query"):
        for version in ("original", "changed", "validated"):
            run_eval(db, projects.get_project(db, "demo"), model="bm25", template=template, qrels_version=version)
    at = _page(db)
    scores = _frame(at, "Qrels version")
    config = json.loads(scores.proto.columns)
    assert "Range -1 to +1" in config["p-MRR"]["help"] and "positive: the model follows" in config["p-MRR"]["help"]
    assert "the lowest nDCG@k over its instructions" in config["Robustness@10"]["help"]
    assert "Range 0 to 1" in config["nDCG@10"]["help"]
    assert "p-MRR(qrels='changed')" not in scores.value.columns  # the same value as p-MRR: one column
    assert not [c for c in scores.value.columns if "_" in c]  # headers are words
    # changed judges one query, without instruction groups: Robustness is "—", said why; never None
    changed = scores.value[scores.value["Qrels version"] == "changed"]
    assert set(changed["Robustness@10"]) == {"—"} and any("— : not computed" in c.value for c in at.caption)
    assert not {"None", "nan"} & {str(v) for d in at.dataframe for v in d.value.astype(str).to_numpy().ravel()}
    # the changed qrels judge 1 query of the 13: its comparison names it, and the left-out ids
    ids = "\n".join(t.value for t in at.text)
    assert "bm25 [query] / changed vs original: 1 compared queries: f-robot" in ids
    assert "left out, judged only by original: q-endo_1" in ids


def test_tau_and_paired_tests_only_where_the_sample_sizes_make_sense(env_db, cache):
    db, r = env_db
    for template in ("query", "instruction_query"):  # 2 systems
        for version in ("original", "changed"):
            run_eval(db, projects.get_project(db, "demo"), model="bm25", template=template, qrels_version=version)
    at = _page(db)
    assert not [d for d in at.dataframe if "Kendall tau" in d.value.columns]
    assert any("2 system(s)" in c.value and "needs at least 3 systems" in c.value for c in at.caption)
    # original judges 13 queries: tested; changed judges 1: not tested, n said
    tests = _frame(at, "System A").value
    assert list(tests["Compared queries"]) == [13]
    assert any(c.value.startswith(f"changed: {md_escape('bm25 [query]')} vs {md_escape('bm25 [instruction_query]')}: "
                                  "not tested, n = 1 ") for c in at.caption)  # system names shown as typed
    run_eval(db, projects.get_project(db, "demo"), model="bm25", template="sep", qrels_version="original")  # a 3rd system
    run_eval(db, projects.get_project(db, "demo"), model="bm25", template="sep", qrels_version="changed")
    at = _page(db)
    tau = _frame(at, "Kendall tau")
    assert list(tau.value["Systems"]) == [3] and list(tau.value["Qrels versions"]) == ["original vs changed"]
    assert "-1: the order reversed" in json.loads(tau.proto.columns)["Kendall tau"]["help"]
