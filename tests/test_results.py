"""One result record: stored evaluations read under canonical measure names, old databases too."""
import json

from evaluation.compare import compare_project
from evaluation.leaderboard import per_query_scores
from evaluation.measure_registry import parse
from evaluation.results import ALL, canonical_name, load_runs, run_results
from evaluation.runner import run_eval
from evaluation.undefined import Undefined
from storage import projects
from storage.db import write
from storage.eval_runs import load_eval_run


def _old_key(name: str) -> str:
    """How IFJudge spelled a canonical paired name before names were canonical."""
    m = parse(name) if name.split("(")[0] in ("p-MRR", "WISE", "SICR") else None
    if m is None:
        return name
    return m.name + (f"[{m.params['qrels']}]" if m.params.get("qrels") else "")


def _as_old_database(db) -> None:
    """Rewrite every stored eval run with the keys an older IFJudge stored."""
    with write(db):
        for rid, metrics, settings in db.execute("SELECT id, metrics, settings FROM eval_runs").fetchall():
            s = json.loads(settings)
            s["evaluation"]["undefined"] = {_old_key(k): v for k, v in s["evaluation"]["undefined"].items()}
            db.execute("UPDATE eval_runs SET metrics = ?, settings = ? WHERE id = ?",
                       [json.dumps({_old_key(k): v for k, v in json.loads(metrics).items()}), json.dumps(s), rid])


def test_paired_measures_are_stored_under_names_the_registry_parses(demo):
    db, _ = demo
    rid = run_eval(db, projects.get_project(db, "demo"), model="bm25", template="query", qrels_version="changed", ties="run-order",
                   measures=["nDCG@10", "p-MRR"])
    metrics = load_eval_run(db, rid)["metrics"]
    assert list(metrics) == ["nDCG@10", "p-MRR(qrels='changed',ties='run-order')", "p-MRR(ties='run-order')"]
    assert all(str(parse(k)) == k for k in metrics)
    # the evaluated version is changed: the two p-MRR are one value
    assert metrics["p-MRR(ties='run-order')"] == metrics["p-MRR(qrels='changed',ties='run-order')"]


def test_old_keys_are_read_as_canonical_and_every_number_stays(demo, tmp_path):
    db, _ = demo
    for version in ("original", "changed"):
        run_eval(db, projects.get_project(db, "demo"), model="bm25", template="query", qrels_version=version)
    new = compare_project(db, projects.get_project(db, "demo"), measure="nDCG@10", n_permutations=200)
    new_scores = per_query_scores(db, projects.get_project(db, "demo"), "nDCG@10")
    stored = db.execute("SELECT metrics FROM eval_runs ORDER BY id").fetchall()
    assert "p-MRR(qrels='changed')" in json.loads(stored[-1][0])
    _as_old_database(db)
    assert "p-MRR[changed]" in json.loads(db.execute("SELECT metrics FROM eval_runs ORDER BY id").fetchall()[-1][0])
    assert compare_project(db, projects.get_project(db, "demo"), measure="nDCG@10", n_permutations=200) == new
    assert per_query_scores(db, projects.get_project(db, "demo"), "nDCG@10") == new_scores
    assert [list(r["metrics"]) for r in load_runs(db, 1)] == [list(json.loads(m)) for (m,) in stored]


def test_old_run_order_key_carries_its_tie_rule():
    assert canonical_name("p-MRR", ties="run-order") == "p-MRR(ties='run-order')"
    assert canonical_name("WISE[changed]", ties="docid") == "WISE(qrels='changed')"
    assert canonical_name("p-MRR[changed-validated]", ties=None) == "p-MRR(qrels='changed-validated')"
    assert canonical_name("Robustness@10", ties="run-order") == "Robustness@10"


def test_run_results_one_record_per_measure_and_query():
    run = {"id": 7, "model": "bm25", "qrels_version": "changed",
           "settings": {"ties": "docid", "evaluation": {"undefined": {"p-MRR[changed]": "no changed document"}}},
           "metrics": {"nDCG@10": 0.25, "p-MRR[changed]": None},
           "per_query": {"q1": {"nDCG@10": 0.5}, "q2": {"nDCG@10": 0.0}}}
    records = run_results(run, system="BM25 [query]", per_query=True)
    assert [(r.system, r.qrels_version, r.query_set, r.measure, r.value, r.undefined, r.eval_run_id) for r in records] == [
        ("BM25 [query]", "changed", ALL, "nDCG@10", 0.25, None, 7),
        ("BM25 [query]", "changed", ALL, "p-MRR(qrels='changed')", None, Undefined("no changed document"), 7),
        ("BM25 [query]", "changed", "q1", "nDCG@10", 0.5, None, 7),
        ("BM25 [query]", "changed", "q2", "nDCG@10", 0.0, None, 7),
    ]


def test_a_stored_paired_name_is_a_measure_compare_reads(demo):
    db, _ = demo
    for version in ("original", "changed"):
        run_eval(db, projects.get_project(db, "demo"), model="bm25", template="query", qrels_version=version)
    out = compare_project(db, projects.get_project(db, "demo"), measure="p-mrr(qrels=changed)", n_permutations=200)
    assert out["measure"] == "p-MRR(qrels='changed')"
    stored = [json.loads(m) for (m,) in db.execute("SELECT metrics FROM eval_runs ORDER BY id").fetchall()]
    assert [r["metrics"]["p-MRR(qrels='changed')"] for r in out["table"]] == [m["p-MRR(qrels='changed')"] for m in stored]
    assert [b["value"] for b in out["leaderboards"]["original"]] == [stored[0]["p-MRR(qrels='changed')"]]
