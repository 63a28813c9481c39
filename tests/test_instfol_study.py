"""Humans as INSTFOL's judge (issue 11, item 5): a study of the top-k passages of a bare-query run
and an instructed run, 0-3 majority labels -> INSTFOL, agreement with an LLM judge."""
import json

import pytest

from annotation import auth
from annotation.instfol_study import create_instfol_study, instfol_from_study, top_k
from evaluation.instfol import judge_agreement
from formats.bundle import Bundle, Document, Instance, Qrel, Query
from storage import projects, studies
from storage.db import connect
from storage.errors import IFJudgeError

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL

# bare run: q1 keyed by its bare-query instance q1_0, q2 by its query id
BARE_RUN = "q1_0 Q0 d1 1 3.0 bm25\nq1_0 Q0 d2 2 2.0 bm25\nq1_0 Q0 d3 3 1.0 bm25\nq2 Q0 d5 1 2.0 bm25\nq2 Q0 d6 2 1.0 bm25\n"
# instructed run: q2_1 ties d5/d6, broken by doc id descending -> d6 first
INSTRUCTED_RUN = ("q1_1 Q0 d3 1 5.0 bm25\nq1_1 Q0 d1 2 4.0 bm25\nq1_1 Q0 d4 3 1.0 bm25\n"
                  "q2_1 Q0 d5 1 1.0 bm25\nq2_1 Q0 d6 2 1.0 bm25\n")
# majority: d1 -> 1, d2 -> 0, d3 -> 3, d5 -> 2, d6 tie -> no majority
LABELS = {("q1_1", "d1"): "112", ("q1_1", "d2"): "001", ("q1_1", "d3"): "332",
          ("q2_1", "d5"): "222", ("q2_1", "d6"): "123"}
LLM = ("query,mode,rank,score\nq1_1,query,1,1.2\nq1_1,query,2,0.4\nq1_1,instructed,1,2.6\nq1_1,instructed,2,1\n"
       "q2_1,query,1,2\nq2_1,query,2,1\nq2_1,instructed,1,1\nq2_1,instructed,2,0.9\n")


@pytest.fixture
def files(db_path, tmp_path):
    db = connect(db_path)
    b = Bundle()
    for q in ("q1", "q2"):
        b.queries.append(Query(q, f"query {q}", subset="fiqa"))
        b.instances += [Instance(f"{q}_0", q, q, "", "og"), Instance(f"{q}_1", q, q, f"instruction of {q}", "level1")]
    for d in range(1, 7):
        b.documents.append(Document(f"d{d}", f"passage {d}"))
    b.qrels += [Qrel("q1_1", "d3", 1), Qrel("q2_1", "d5", 1)]
    projects.import_bundle(db, "ifir", b, fmt="ifir")
    for n in range(3):
        auth.add_user(db, f"a{n}", "annotator", "pw")
    (tmp_path / "bare.run").write_text(BARE_RUN)
    (tmp_path / "instructed.run").write_text(INSTRUCTED_RUN)
    (tmp_path / "llm.csv").write_text(LLM)
    return db, tmp_path


def _label(db, study_id, labels=LABELS):
    users = [db.execute("SELECT id FROM users WHERE name = ?", [f"a{n}"]).fetchone()[0] for n in range(3)]
    for it in studies.items_of_study(db, study_id):
        for uid, v in zip(users, labels.get((it["instance_id"], it["doc_id"]), "")):
            db.execute("INSERT INTO labels (item_id, user_id, value, submitted_at) VALUES (?, ?, ?, 0)", [it["id"], uid, v])


def test_top_k_breaks_ties_by_doc_id_descending():
    assert top_k({"d5": 1.0, "d6": 1.0, "d1": 0.5}, 2) == ["d6", "d5"]


def test_study_items_are_the_top_k_of_both_runs(files, run_cli, db_path):
    db, tmp = files
    code, out, err = run_cli("study", "create", "--db", db_path, "--project", "ifir", "--questions", "instfol_match",
                             "--annotators", "a0,a1,a2", "--group-fraction", "1", "--bare-run", tmp / "bare.run",
                             "--instructed-run", tmp / "instructed.run", "--top-k", "2", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["instances"] == 2 and r["items"] == 5 and r["assignments"] == 15
    got = {(it["instance_id"], it["doc_id"]): it["payload"]["ranks"] for it in studies.items_of_study(db, r["study_id"])}
    assert got == {
        ("q1_1", "d1"): {"query": 1, "instructed": 2}, ("q1_1", "d2"): {"query": 2}, ("q1_1", "d3"): {"instructed": 1},
        ("q2_1", "d5"): {"query": 1, "instructed": 2}, ("q2_1", "d6"): {"query": 2, "instructed": 1},
    }
    s = studies.get_study(db, r["study_id"])
    assert s["questions"] == ["instfol_match"] and s["settings"]["top_k"] == 2
    assert s["settings"]["runs"]["query"].endswith("bare.run")


def test_instfol_from_human_labels_equals_the_formula_by_hand(files, run_cli, db_path):
    db, tmp = files
    r = create_instfol_study(db, project="ifir", bare_run=_read(tmp / "bare.run"),
                             instructed_run=_read(tmp / "instructed.run"), annotators=["a0", "a1", "a2"],
                             top_k_passages=2, settings=_all())
    _label(db, r["study_id"])
    code, out, err = run_cli("eval", "instfol", "--db", db_path, "--study", r["study_id"],
                             "--llm-scores", tmp / "llm.csv", "--json")
    assert code == 0, err
    res = json.loads(out)
    # q1_1: q = (1 + 0) / 2 = 0.5, i = (3 + 1) / 2 = 2.0 -> (2 - 0.5) / (3 - 0.5) = 0.6
    # q2_1: d6 has no majority; q = 2 (d5), i = 2 (d5) -> 0
    assert res["per_query"]["q1_1"] == {"q": 0.5, "i": 2.0, "INSTFOL": pytest.approx(0.6)}
    assert res["per_query"]["q2_1"]["INSTFOL"] == 0.0
    assert res["INSTFOL"] == pytest.approx((0.6 + 0.0) / 2)
    assert res["counts"]["no_majority"] == 2 and res["counts"]["scored"] == 6 and res["max"] == 3.0
    llm = res["llm"]
    # LLM: q1_1 q = 0.8, i = 1.8 -> 1/2.2; q2_1 q = 1.5, i = 0.95 -> -0.55/1.5
    assert llm["INSTFOL"] == pytest.approx((1 / 2.2 - 0.55 / 1.5) / 2)
    a = llm["agreement"]
    # pairs (human, LLM rounded): (1,1) (0,0) (3,3) (1,1) (2,2) (2,1); linear kappa 1 - (1/18)/(19/54) = 16/19
    assert a["n"] == 6 and a["exact"] == pytest.approx(5 / 6)
    assert a["cohen_kappa_linear"] == pytest.approx(16 / 19)
    assert a["cohen_kappa_quadratic"] == pytest.approx(10 / 11)
    assert 0 < a["krippendorff_alpha_ordinal"] < 1
    code, out, err = run_cli("eval", "instfol", "--db", db_path, "--study", r["study_id"])
    assert code == 0 and "INSTFOL  0.3000" in out and "2 without a majority" in out


def test_agreement_undefined_and_perfect():
    same = judge_agreement([2, 2], [2.2, 1.9])
    assert same["cohen_kappa_linear"] is None and "0/0" in same["undefined_reasons"]["cohen_kappa_linear"]
    assert same["krippendorff_alpha_ordinal"] is None and same["exact"] == 1.0
    perfect = judge_agreement([0, 1, 3], [0, 1, 3])
    assert perfect["cohen_kappa_linear"] == perfect["cohen_kappa_quadratic"] == perfect["krippendorff_alpha_ordinal"] == 1.0


def test_refusals(files, run_cli, db_path):
    db, tmp = files
    code, _, err = run_cli("study", "create", "--db", db_path, "--project", "ifir", "--questions", "instfol_match",
                           "--annotators", "a0", "--overlap", "1", "--bare-run", tmp / "bare.run")
    assert code == 2 and "needs the instructed run" in err
    code, _, err = run_cli("study", "create", "--db", db_path, "--project", "ifir",
                           "--questions", "instfol_match,naturalness", "--annotators", "a0", "--overlap", "1",
                           "--bare-run", tmp / "bare.run", "--instructed-run", tmp / "instructed.run")
    assert code == 2 and "study of its own" in err
    with pytest.raises(IFJudgeError, match="no instance of project 'ifir' has a ranking in both runs"):
        create_instfol_study(db, project="ifir", bare_run={"x": {"d1": 1.0}}, instructed_run={"q1_1": {"d1": 1.0}},
                             annotators=["a0"], settings=_all(overlap=1))
    from annotation.studies import create_study

    with pytest.raises(IFJudgeError, match="instfol_match items are the passages two runs retrieved"):
        create_study(db, project="ifir", questions=["instfol_match"], annotators=["a0"], settings=_all(overlap=1))
    code, _, err = run_cli("eval", "instfol", "--db", db_path, "--study", "99")
    assert code == 2 and "no study with id 99" in err


def _read(path):
    from formats.trec_io import read_run

    return read_run(path)


def _all(**kw):
    from annotation.studies import StudySettings

    return StudySettings(group_fraction=1.0, per_group=2, **kw)


def test_study_setup_page_creates_an_instfol_study_from_stored_runs_and_monitor_reports_it(files, db_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from annotation import auth as _auth
    from annotation.monitor import table7
    from storage import eval_runs
    from tests.test_pages import ROOT

    db, tmp = files
    pid = projects.get_project(db, "ifir")["id"]
    common = dict(template="plain", settings={}, qrels_version="original", metrics={}, per_query={})
    bare_id = eval_runs.store_eval_run(db, pid, model="bm25-bare", run=_read(tmp / "bare.run"), **common)
    inst_id = eval_runs.store_eval_run(db, pid, model="bm25-instructed", run=_read(tmp / "instructed.run"), **common)
    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    _auth.add_user(db, "lead", "lead", "pw")
    at = AppTest.from_file(str(ROOT / "pages/study_setup.py"), default_timeout=30)
    at.session_state["user"] = {"id": db.execute("SELECT id FROM users WHERE name='lead'").fetchone()[0],
                                "name": "lead", "role": "lead"}
    at.run()
    at.selectbox(key="instfol_bare").set_value(bare_id)
    at.selectbox(key="instfol_instructed").set_value(inst_id)
    at.number_input(key="instfol_top_k").set_value(2)
    at.multiselect(key="instfol_annotators").set_value(["a0", "a1", "a2"])
    at.button(key="instfol_create").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    s = studies.list_studies(db)[-1]
    assert s["questions"] == ["instfol_match"] and s["settings"]["runs"] == {
        "query": f"eval run {bare_id}", "instructed": f"eval run {inst_id}"}
    assert studies.item_counts(db, s["id"])["items_instfol_match"] == 5
    _label(db, s["id"])
    assert instfol_from_study(db, s["id"])["INSTFOL"] == pytest.approx(0.3)
    rows = {r["statistic"]: r for r in table7(db, s["id"], n_boot=0)}
    # labels per item: (1,1,2) (0,0,1) (3,3,2) (2,2,2) (1,2,3): 15 labels, mean 25/15
    assert rows["Mean score"]["value"] == pytest.approx(25 / 15)
    assert rows["Krippendorff alpha (ordinal)"]["value"] is not None
