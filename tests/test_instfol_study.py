"""Humans as INSTFOL's judge (issue 11, item 5; issue 19, item 9): a study of the top-k passages of a
bare-query run and an instructed run, the mean of the 0-3 labels per passage -> INSTFOL, and the LLM
judge's INSTFOL and agreement on the same passages."""
import json

import pytest

from accounts import auth
from annotation.instfol_study import create_instfol_study, instfol_from_study, run_rankings
from evaluation.instfol import judge_agreement
from formats.bundle import Bundle, Document, Instance, Qrel, Query
from storage import projects, studies
from storage.db import connect
from storage.errors import IFJudgeError
from storage.projects import get_project

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL

# bare run: q1 keyed by its bare-query instance q1_0, q2 by its query id
BARE_RUN = "q1_0 Q0 d1 1 3.0 bm25\nq1_0 Q0 d2 2 2.0 bm25\nq1_0 Q0 d3 3 1.0 bm25\nq2 Q0 d5 1 2.0 bm25\nq2 Q0 d6 2 1.0 bm25\n"
# instructed run: q2_1 ties d5/d6, broken by doc id descending -> d6 first
INSTRUCTED_RUN = ("q1_1 Q0 d3 1 5.0 bm25\nq1_1 Q0 d1 2 4.0 bm25\nq1_1 Q0 d4 3 1.0 bm25\n"
                  "q2_1 Q0 d5 1 1.0 bm25\nq2_1 Q0 d6 2 1.0 bm25\n")
# mean label: d1 -> 4/3, d2 -> 1/3, d3 -> 8/3, d5 -> 2, d6 (a three-way tie) -> 2
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
    instances = [{"instance_id": "q_0", "query_id": "q", "instruction": ""},
                 {"instance_id": "q_1", "query_id": "q", "instruction": "only recent ones"}]
    bare = {"q_0": {"d5": 1.0, "d6": 1.0, "d1": 0.5}}
    instructed = {"q_1": {"d1": 2.0, "d2": 0.5, "d3": 0.5}}
    rankings, notes = run_rankings(instances, bare, instructed, 2)
    assert rankings == {"q_1": {"query": ["d6", "d5"], "instructed": ["d1", "d3"]}} and notes == []


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
    r = create_instfol_study(db, project=get_project(db, "ifir"), bare_run=_read(tmp / "bare.run"),
                             instructed_run=_read(tmp / "instructed.run"), annotators=["a0", "a1", "a2"],
                             top_k_passages=2, settings=_all())
    _label(db, r["study_id"])
    code, out, err = run_cli("eval", "instfol", "--db", db_path, "--study", r["study_id"],
                             "--llm-scores", tmp / "llm.csv", "--json")
    assert code == 0, err
    res = json.loads(out)
    # q1_1: bare d1, d2: q = (4/3 + 1/3) / 2 = 5/6; instructed d3, d1: i = (8/3 + 4/3) / 2 = 2
    #       -> (2 - 5/6) / (3 - 5/6) = 7/13
    # q2_1: d6 is a tie (1, 2, 3) and is kept with its mean 2: q = (2 + 2) / 2 = 2, i = 2 -> 0
    assert res["per_query"]["q1_1"] == {"q": pytest.approx(5 / 6), "i": pytest.approx(2.0),
                                        "INSTFOL": pytest.approx(7 / 13)}
    assert res["per_query"]["q2_1"] == {"q": 2.0, "i": 2.0, "INSTFOL": 0.0}
    assert res["INSTFOL"] == pytest.approx(7 / 26)
    assert res["judge"] == "human mean" and res["max"] == 3.0 and res["left_out"] == []
    # 8 ranked passages (d1, d5, d6 in both lists); none dropped; d6 is a tie in both modes
    assert res["counts"] == {"passages": 8, "scored": 8, "unlabelled": 0, "ties": 2, "partial": 0, "adjudicated": 0}
    llm = res["llm"]
    # the LLM scored the same 8 passages: LLM q1_1 q = 0.8, i = 1.8 -> 1/2.2; q2_1 q = 1.5, i = 0.95 -> -0.55/1.5
    assert llm["passages"] == 8 and llm["only_human"] == llm["only_llm"] == 0 and llm["n_queries"] == 2
    assert llm["INSTFOL"] == pytest.approx((1 / 2.2 - 0.55 / 1.5) / 2)
    assert llm["human_INSTFOL"] == pytest.approx(7 / 26)  # the humans on the same passages: all of them here
    a = llm["agreement"]
    # pairs (human mean rounded, LLM rounded): (1,1) (0,0) (3,3) (1,1) (2,2) (2,1) (2,1) (2,1)
    # human marginals 0:1 1:2 2:4 3:1, LLM 0:1 1:5 2:1 3:1; linear: observed 3/8, expected 64/64
    assert a["n"] == 8 and a["exact"] == pytest.approx(5 / 8)
    assert a["cohen_kappa_linear"] == pytest.approx(1 - 3 / 8)
    assert a["mean_abs_diff"] == pytest.approx(3.7 / 8)
    assert 0 < a["krippendorff_alpha_ordinal"] < 1
    code, out, err = run_cli("eval", "instfol", "--db", db_path, "--study", r["study_id"])
    assert code == 0 and "INSTFOL  0.2692" in out and "0 unlabelled; 2 ties" in out


def test_llm_and_humans_are_compared_on_the_same_passages(files):
    db, tmp = files
    r = create_instfol_study(db, project=get_project(db, "ifir"), bare_run=_read(tmp / "bare.run"),
                             instructed_run=_read(tmp / "instructed.run"), annotators=["a0", "a1", "a2"],
                             top_k_passages=2, settings=_all())
    # d2 (q1_1, bare rank 2) is not labelled yet: the humans have no score for it
    _label(db, r["study_id"], {key: v for key, v in LABELS.items() if key != ("q1_1", "d2")})
    # the LLM did not score q1_1's instructed rank 2 (d1), and scored a rank-3 passage nobody ranked in top 2
    llm_rows = [row for row in _llm_rows() if row[:3] != ("q1_1", "instructed", 2)] + [("q1_1", "query", 3, 3.0)]
    res = instfol_from_study(db, r["study_id"], llm_scores=llm_rows, k=3)
    assert res["counts"]["unlabelled"] == 1 and res["counts"]["scored"] == 7
    # humans on their own passages: q1_1 q = 4/3 (d1 only), i = (8/3 + 4/3) / 2 = 2 -> (2/3) / (5/3) = 0.4
    assert res["per_query"]["q1_1"]["INSTFOL"] == pytest.approx(0.4)
    llm = res["llm"]
    # same passages: q1_1 query 1 (d1), instructed 1 (d3); q2_1 all four
    assert llm["passages"] == 6 and llm["only_human"] == 1 and llm["only_llm"] == 2
    # humans there: q1_1 q = 4/3, i = 8/3 -> (4/3) / (5/3) = 0.8; q2_1 0
    assert llm["human_per_query"]["q1_1"]["INSTFOL"] == pytest.approx(0.8)
    assert llm["human_INSTFOL"] == pytest.approx(0.4)
    # LLM there: q1_1 q = 1.2, i = 2.6 -> 1.4 / 1.8; q2_1 q = 1.5, i = 0.95 -> -0.55 / 1.5
    assert llm["INSTFOL"] == pytest.approx((1.4 / 1.8 - 0.55 / 1.5) / 2)
    assert llm["agreement"]["n"] == 6


def _llm_rows():
    lines = LLM.strip().splitlines()[1:]
    return [(q, m, int(r), float(s)) for q, m, r, s in (line.split(",") for line in lines)]


def test_passage_score_is_the_mean_or_the_adjudication():
    from annotation.instfol_study import passage_score

    assert passage_score(["1", "2"]) == 1.5  # a tie keeps its mean
    assert passage_score(["0", "3", "3"]) == 2.0
    assert passage_score(["0", "1"], adjudication="3") == 3.0
    assert passage_score([]) is None


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
        create_instfol_study(db, project=get_project(db, "ifir"), bare_run={"x": {"d1": 1.0}}, instructed_run={"q1_1": {"d1": 1.0}},
                             annotators=["a0"], settings=_all(overlap=1))
    from annotation.studies import create_study

    with pytest.raises(IFJudgeError, match="instfol_match items are the passages two runs retrieved"):
        create_study(db, project=get_project(db, "ifir"), questions=["instfol_match"], annotators=["a0"], settings=_all(overlap=1))
    code, _, err = run_cli("eval", "instfol", "--db", db_path, "--study", "99")
    assert code == 2 and "no study with id 99" in err


def _read(path):
    from formats.trec_io import read_run

    return read_run(path)


def _all(**kw):
    from annotation.studies import StudySettings

    return StudySettings(group_fraction=1.0, per_group=2, **kw)


def test_study_setup_page_creates_an_instfol_study_from_stored_runs_and_monitor_reports_it(files, db_path, monkeypatch):
    from accounts import auth as _auth
    from annotation.monitoring.monitor import table7
    from storage import eval_runs
    from tests.builders import signed_in_page

    db, tmp = files
    pid = projects.get_project(db, "ifir")["id"]
    common = dict(template="plain", settings={}, qrels_version="original", metrics={}, per_query={})
    bare_id = eval_runs.store_eval_run(db, pid, model="bm25-bare", run=_read(tmp / "bare.run"), **common)
    inst_id = eval_runs.store_eval_run(db, pid, model="bm25-instructed", run=_read(tmp / "instructed.run"), **common)
    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    _auth.add_user(db, "lead", "lead", "pw")
    at = signed_in_page(db, "pages/study_setup.py", "lead")
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
    assert instfol_from_study(db, s["id"])["INSTFOL"] == pytest.approx(7 / 26)
    rows = {r["statistic"]: r for r in table7(db, s["id"], n_boot=0)}
    # labels per item: (1,1,2) (0,0,1) (3,3,2) (2,2,2) (1,2,3): 15 labels, mean 25/15
    assert rows["Mean score"]["value"] == pytest.approx(25 / 15)
    assert rows["Krippendorff alpha (ordinal)"]["value"] is not None
