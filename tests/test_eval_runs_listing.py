"""The eval-run listing reads what a listing needs: the paired runs stay out of it, every other
setting stays, in its order (on SQLite and PostgreSQL)."""
import pytest

from storage.eval_runs import list_eval_runs, load_eval_run, store_eval_run

pytestmark = pytest.mark.both_engines


def _store(db, pid, version):
    settings = {
        "k": 10, "variant": "og", "ties": "docid",
        "evaluation": {"by_qrels": {"changed": 1, "edited-validated": 2, "changed-validated": 3}},
        "paired_run": {"variant": "changed", "retrieval_key": "abc", "run": {"q1": {"d2": 0.5, "d1": 0.5}},
                       "reused": False,
                       "reversed": {"retrieval_key": "rev", "run": {"q1": {"d1": 0.25}}, "reused": True}},
    }
    return store_eval_run(db, pid, model="bm25", template="query", settings=settings, qrels_version=version,
                          metrics={"nDCG@10": 0.5}, per_query={"q1": {"nDCG@10": 0.5}}, run={"q1": {"d1": 1.0}})


def test_listing_leaves_the_paired_runs_out_and_keeps_the_rest_in_order(demo):
    db, _ = demo
    pid = db.execute("SELECT id FROM projects WHERE name = 'demo'").fetchone()[0]
    rid = _store(db, pid, "original")
    listed = [r for r in list_eval_runs(db, pid, with_per_query=True) if r["id"] == rid][0]
    s = listed["settings"]
    assert list(s) == ["k", "variant", "ties", "evaluation", "paired_run"]
    assert list(s["evaluation"]["by_qrels"]) == ["changed", "edited-validated", "changed-validated"]
    assert s["paired_run"] == {"variant": "changed", "retrieval_key": "abc", "reused": False,
                               "reversed": {"retrieval_key": "rev", "reused": True}}
    assert listed["metrics"] == {"nDCG@10": 0.5} and listed["per_query"] == {"q1": {"nDCG@10": 0.5}}
    full = load_eval_run(db, rid)["settings"]["paired_run"]
    assert list(full["run"]["q1"]) == ["d2", "d1"] and full["reversed"]["run"] == {"q1": {"d1": 0.25}}
