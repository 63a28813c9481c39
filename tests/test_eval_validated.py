"""Evaluation on validated qrels: p-MRR on published vs validated qrels computed by hand, the
comparison on the queries both versions judge, and the refusal of what cannot be evaluated."""
import json

import pytest

from evaluation.compare import compare_project
from evaluation.runner import run_eval
from formats.bundle import Bundle, Document, Instance, Qrel, Query
from storage import projects
from storage.db import connect
from storage.eval_runs import load_eval_run
from storage.errors import IFJudgeError
from storage.projects import import_bundle, replace_qrels

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL

# fixed scores per (variant, query): og ranks f1 f2 f3 (f4); changed ranks f1 f4 f3 f2
SCORES = {
    ("og", "101"): {"f1": 0.9, "f2": 0.8, "f3": 0.7, "f4": 0.1},
    ("changed", "101"): {"f1": 0.9, "f4": 0.8, "f3": 0.7, "f2": 0.6},
    ("og", "102"): {"f5": 0.9, "f6": 0.5},
    ("changed", "102"): {"f5": 0.9, "f6": 0.5},
}


class Fixed:
    """A stand-in retriever returning SCORES for each topic's variant (``shift`` makes a second system)."""

    def __init__(self, name="fixed", shift=0.0):
        self.name, self.shift = name, shift

    def settings(self):
        return {"shift": self.shift}

    def retrieve(self, topics, documents, *, template, k, candidates, progress):
        return {t["qid"]: {d: s + (self.shift if d == "f3" else 0.0) for d, s in SCORES[(t["variant"], t["qid"])].items()}
                for t in topics}


def bundle(with_documents=True) -> Bundle:
    docs = [Document(f"f{i}", f"text {i}") for i in range(1, 7)] if with_documents else []
    return Bundle(
        documents=docs,
        queries=[Query("101", "electric cars", "Language"), Query("102", "solar", "Format")],
        instances=[Instance(f"{q}-{v}", q, q, f"{q} {v} instruction", v) for q in ("101", "102") for v in ("og", "changed")],
        qrels=[Qrel("101", d, 1) for d in ("f1", "f2", "f3")] + [Qrel("102", d, 1) for d in ("f5", "f6")]
        + [Qrel("101", "f1", 1, "changed"), Qrel("101", "f2", 0, "changed"), Qrel("101", "f3", 1, "changed"),
           Qrel("102", "f5", 0, "changed"), Qrel("102", "f6", 1, "changed")],
    )


@pytest.fixture
def db(tmp_path):
    db = connect(tmp_path / "f.db")
    import_bundle(db, "fir", bundle(), fmt="followir")
    # the humans re-judged query 101 only, and also rejected f3
    replace_qrels(db, 1, "changed-validated", {"101": {"f1": 1, "f2": 0, "f3": 0}})
    return db


def test_p_mrr_on_published_and_validated_qrels_by_hand(db):
    rid = run_eval(db, projects.get_project(db, "fir"), model=Fixed(), qrels_version="changed-validated")
    r = load_eval_run(db, rid)
    # published (original vs changed): 101 changed docs {f2}: ranks 2 -> 4: 1 - 2/4 = 0.5;
    #   102 changed docs {f5}: ranks 1 -> 1: 0            -> p-MRR = (0.5 + 0) / 2 = 0.25
    # validated (original vs changed-validated): 101 changed docs {f2, f3}: 0.5 and 3 -> 3: 0 -> 0.25
    assert r["metrics"]["p-MRR(qrels='changed')"] == pytest.approx(0.25)
    assert r["metrics"]["p-MRR(qrels='changed-validated')"] == pytest.approx(0.25)
    assert r["metrics"]["p-MRR"] == pytest.approx(0.25)  # the evaluated version's
    ev = r["settings"]["evaluation"]["p-MRR"]
    assert ev["qrels"] == ["original", "changed-validated"] and ev["by_qrels"]["changed"]["n_queries"] == 2
    assert ev["per_query"]["changed"] == pytest.approx({"101": 0.5, "102": 0.0})
    assert ev["per_query"]["changed-validated"] == pytest.approx({"101": 0.25})
    rid2 = run_eval(db, projects.get_project(db, "fir"), model=Fixed(), qrels_version="changed")
    assert load_eval_run(db, rid2)["metrics"]["p-MRR"] == pytest.approx(0.25)
    out = compare_project(db, projects.get_project(db, "fir"), measure="nDCG@10")
    (pm,) = [p for p in out["p_mrr_published_vs_validated"] if p["qrels_version"] == "changed"]
    # on the common query 101: published 0.5, validated 0.25; 102 only in the published version
    assert (pm["n_common_queries"], pm["published_on_common"], pm["validated_on_common"]) == (1, 0.5, 0.25)
    assert pm["left_out_published"] == ["102"] and pm["left_out_validated"] == []


def test_run_order_ties_are_selectable(db):
    SCORES[("changed", "101")]["f2"] = 0.9  # f2 ties f1 in the changed run (listed after it)
    try:
        a = load_eval_run(db, run_eval(db, projects.get_project(db, "fir"), model=Fixed("t"), qrels_version="changed", ties="docid"))
        b = load_eval_run(db, run_eval(db, projects.get_project(db, "fir"), model=Fixed("t"), qrels_version="changed", ties="run-order"))
    finally:
        SCORES[("changed", "101")]["f2"] = 0.6
    # docid (descending): f2 before f1 -> f2 moves 2 -> 1: 1/2 - 1 = -0.5; 102: 0 -> p-MRR -0.25
    # run order: f1 listed first -> f2 stays at 2: 0                    -> p-MRR 0
    assert a["metrics"]["p-MRR"] == pytest.approx(-0.25) and b["metrics"]["p-MRR(ties='run-order')"] == pytest.approx(0.0)
    assert "p-MRR" not in b["metrics"]  # the tie rule is part of the measure's name
    assert a["settings"]["evaluation"]["p-MRR"]["ties"] == "docid" and b["settings"]["evaluation"]["p-MRR"]["ties"] == "run-order"
    assert b["settings"]["reused_run"] is True  # the same retrieval, scored with the other tie rule
    with pytest.raises(IFJudgeError, match="unknown tie rule"):
        run_eval(db, projects.get_project(db, "fir"), model=Fixed(), qrels_version="changed", ties="random")


def test_versions_are_compared_on_the_queries_both_judge(db):
    for sys in (Fixed("a"), Fixed("b", shift=0.5)):
        for v in ("changed", "changed-validated"):
            run_eval(db, projects.get_project(db, "fir"), model=sys, qrels_version=v)
    out = compare_project(db, projects.get_project(db, "fir"), measure="nDCG@10", n_permutations=200)
    (pair,) = out["published_vs_validated"]
    assert (pair["published"], pair["validated"]) == ("changed", "changed-validated")
    for row in pair["systems"]:
        assert row["n_common_queries"] == 1 and row["left_out_published"] == ["102"] and row["left_out_validated"] == []
        (q,) = row["per_query"]
        assert q["qid"] == "101" and row["published"] == pytest.approx(q["published"])
        assert row["delta"] == pytest.approx(q["validated"] - q["published"])
    # f3 is relevant under changed, not under changed-validated: one judgment flipped on query 101
    assert pair["judgment_flips"] == 1
    assert pair["kendall_tau"]["n_systems"] == 2
    tau = next(t for t in out["kendall_tau"] if t["versions"] == ["changed", "changed-validated"])
    assert tau["n_common_queries"] == 1


def test_evaluation_without_documents_or_judged_queries_is_refused(tmp_path, run_cli):
    db = connect(tmp_path / "e.db")
    import_bundle(db, "nodocs", bundle(with_documents=False), fmt="followir")
    with pytest.raises(IFJudgeError, match="has no documents"):
        run_eval(db, projects.get_project(db, "nodocs"), model="bm25", qrels_version="original")
    code, out, err = run_cli("eval", "run", "--db", tmp_path / "e.db", "--project", "nodocs", "--model", "bm25")
    assert code == 2 and "has no documents" in err and len(err.strip().splitlines()) == 1 and not out
    import_bundle(db, "nojudged", bundle(), fmt="followir")
    replace_qrels(db, 2, "changed-validated", {"101": {"f1": 0, "f2": 0, "f3": 0}})
    with pytest.raises(IFJudgeError, match="no judged query with a relevant document"):
        run_eval(db, projects.get_project(db, "nojudged"), model="bm25", qrels_version="changed-validated")
    assert not db.execute("SELECT COUNT(*) FROM eval_runs").fetchone()[0]  # nothing stored, nothing all-zero


def test_cli_prints_pmrr_by_qrels_and_ties(db, tmp_path, run_cli):
    run_file = tmp_path / "og.run"
    code, out, err = run_cli("eval", "run", "--db", tmp_path / "f.db", "--project", "fir", "--model", "bm25",
                             "--qrels-version", "changed-validated", "--ties", "run-order", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data["p_mrr"]["by_qrels"]) == {"changed", "changed-validated"} and data["p_mrr"]["ties"] == "run-order"
    code, out, err = run_cli("eval", "run", "--db", tmp_path / "f.db", "--project", "fir", "--model", "bm25",
                             "--qrels-version", "changed-validated")
    assert "p-MRR on original vs changed" in out and "p-MRR on original vs changed-validated" in out
    code, out, err = run_cli("eval", "compare", "--db", tmp_path / "f.db", "--project", "fir", "--json")
    assert code == 0 and "published_vs_validated" in json.loads(out)
    assert not run_file.exists()


def test_evaluate_page_shows_published_vs_validated_pmrr(env_db, db_path, monkeypatch, tmp_path):
    """The demo's FollowIR query: its published changed instruction re-judged by three annotators;
    the Evaluate page gives p-MRR on published and validated qrels, equal to p_mrr on the stored
    runs; both are scored with the changed run under the published instruction (the one judged)."""
    from annotation.outcomes import qrels_builds
    from evaluation.pmrr import p_mrr
    from storage import projects
    from storage.eval_runs import list_eval_runs
    from tests.builders import published_rejudged_demo, signed_in_page

    monkeypatch.setenv("IFJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    db, _ = env_db
    published_rejudged_demo(db)
    qrels_builds.store_changed_qrels(db, projects.get_project(db, "demo"))
    at = signed_in_page(db, "pages/evaluate.py", "lead", timeout=60)
    assert at.multiselect(key="ev_versions").value == ["changed", "changed-validated", "original"]
    at.button[0].click().run(timeout=120)
    assert not at.exception and not at.error
    from evaluation.jobs import work  # the page queues jobs; a worker runs them (here in-process)

    assert work(db_path, once=True) >= 1
    at.run(timeout=120)
    assert not at.exception and not at.error
    newest = {r["qrels_version"]: load_eval_run(db, r["id"]) for r in list_eval_runs(db, 1)}
    validated_run = newest["changed-validated"]  # judged under the published changed instruction ...
    published_run = newest["changed"]  # ... so scored with the same changed run
    run_og = validated_run["settings"]["paired_run"]["run"]
    assert validated_run["settings"]["retrieval_key"] == published_run["settings"]["retrieval_key"]
    original = projects.qrels(db, 1, "original")
    published = p_mrr(original, projects.qrels(db, 1, "changed"), run_og, published_run["run"])["p-MRR"]
    validated = p_mrr(original, projects.qrels(db, 1, "changed-validated"), run_og, validated_run["run"])["p-MRR"]
    assert published != validated
    line = next(t.value for t in at.text if "with the validated ones" in t.value)
    assert f"(over all their queries: {published:+.4f} on 1, {validated:+.4f} on 1)" in line


def test_evaluate_page_refuses_a_project_without_documents(tmp_path, monkeypatch):
    from accounts import auth
    from tests.builders import signed_in_page

    monkeypatch.setenv("IFJUDGE_DB", str(tmp_path / "p.db"))
    db = connect(tmp_path / "p.db")
    auth.add_user(db, "lead", "lead", "lead-password-1")
    import_bundle(db, "nodocs", bundle(with_documents=False), fmt="followir")
    at = signed_in_page(db, "pages/evaluate.py", "lead", timeout=60)
    assert any("has no documents" in e.value for e in at.error)
    at.button[0].click().run()
    assert any("bm25 / query_instruction / original: project 'nodocs' has no documents" in e.value.replace("\\", "")
               for e in at.error)  # (the page shows it as escaped Markdown: the model name is data)
    assert not db.execute("SELECT COUNT(*) FROM eval_runs").fetchone()[0] and not at.dataframe
