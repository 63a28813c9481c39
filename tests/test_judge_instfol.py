"""INSTFOL by the tool (IFIR-EVAL, App. A.2): a chat judge served on loopback scores the top-k
passages of the bare-query and the instructed runs with IFIR's prompt (0-3, JSON with score and
reason, top_p 0.7, top-10 log-probabilities), each passage's score weighted by the probabilities of
the score token; `ifjudge eval instfol --judge-run` computes INSTFOL from them, with an INSTFOL
study of humans on the same runs as its check."""
from __future__ import annotations

import json
import re

import pytest

from accounts import auth
from annotation.instfol_study import create_instfol_study
from annotation.studies import StudySettings
from formats.bundle import Bundle, Document, Instance, Qrel, Query
from formats.trec_io import read_run
from storage import projects, studies
from storage.db import connect
from tests.fake_openai import FakeOpenAI
from storage.projects import get_project

BARE_RUN = "q1_0 Q0 d1 1 3.0 bm25\nq1_0 Q0 d2 2 2.0 bm25\nq1_0 Q0 d3 3 1.0 bm25\nq2 Q0 d5 1 2.0 bm25\nq2 Q0 d6 2 1.0 bm25\n"
INSTRUCTED_RUN = ("q1_1 Q0 d3 1 5.0 bm25\nq1_1 Q0 d1 2 4.0 bm25\nq1_1 Q0 d4 3 1.0 bm25\n"
                  "q2_1 Q0 d5 1 1.0 bm25\nq2_1 Q0 d6 2 1.0 bm25\n")
# the judge's answer per passage and the probabilities of the score token's alternatives
JUDGE = {"1": ("1", {"1": 1.0}), "2": ("0", {"0": 0.5, "1": 0.5}), "3": ("3", {"3": 1.0}), "4": ("2", {"2": 1.0}),
         "5": ("2", {"2": 1.0}), "6": ("1", {"1": 1.0})}
LABELS = {("q1_1", "d1"): "112", ("q1_1", "d2"): "001", ("q1_1", "d3"): "332",
          ("q2_1", "d5"): "222", ("q2_1", "d6"): "123"}


def ifir_judge(body):
    doc = re.search(r"and a passage: passage (\d+),", body["messages"][-1]["content"]).group(1)
    score, alternatives = JUDGE[doc]
    return json.dumps({"score": int(score), "reason": "matches the topic"}), alternatives


@pytest.fixture
def ifir(tmp_path):
    db = connect(tmp_path / "i.db")
    b = Bundle()
    for q in ("q1", "q2"):
        b.queries.append(Query(q, f"query {q}", subset="fiqa"))
        b.instances += [Instance(f"{q}_0", q, q, "", "og"), Instance(f"{q}_1", q, q, f"instruction of {q}", "level1")]
    b.documents += [Document(f"d{d}", f"passage {d}") for d in range(1, 7)]
    b.qrels += [Qrel("q1_1", "d3", 1), Qrel("q2_1", "d5", 1)]
    projects.import_bundle(db, "ifir", b, fmt="ifir")
    for n in range(3):
        auth.add_user(db, f"a{n}", "annotator", "pw")
    (tmp_path / "bare.run").write_text(BARE_RUN)
    (tmp_path / "instructed.run").write_text(INSTRUCTED_RUN)
    return db, tmp_path


def human_study(db, tmp) -> int:
    r = create_instfol_study(db, project=get_project(db, "ifir"), bare_run=read_run(tmp / "bare.run"),
                             instructed_run=read_run(tmp / "instructed.run"), annotators=["a0", "a1", "a2"],
                             top_k_passages=2, settings=StudySettings(group_fraction=1.0, per_group=2))
    users = [db.execute("SELECT id FROM users WHERE name = ?", [f"a{n}"]).fetchone()[0] for n in range(3)]
    for it in studies.items_of_study(db, r["study_id"]):
        for uid, v in zip(users, LABELS.get((it["instance_id"], it["doc_id"]), "")):
            db.execute("INSERT INTO labels (item_id, user_id, value, submitted_at) VALUES (?, ?, ?, 0)", [it["id"], uid, v])
    return r["study_id"]


def test_instfol_with_the_judge_and_the_human_study_as_its_check(ifir, run_cli):
    db, tmp = ifir
    path = tmp / "i.db"
    with FakeOpenAI(ifir_judge) as server:
        code, out, err = run_cli("judge", "run", "--db", path, "--project", "ifir", "--question", "instfol_match",
                                 "--bare-run", tmp / "bare.run", "--instructed-run", tmp / "instructed.run",
                                 "--top-k", "2", "--judge-url", server.base_url, "--judge-model", "gpt-3.5-0125",
                                 "--foreground", "--json")
        assert code == 0, err
    body = server.bodies[0]
    assert body["top_p"] == 0.7 and body["top_logprobs"] == 10 and body["temperature"] == 0.0
    assert body["response_format"]["json_schema"]["schema"]["properties"]["score"] == {"type": "integer",
                                                                                       "enum": [0, 1, 2, 3]}
    assert "Please give a score between 0 and 3." in body["messages"][-1]["content"]
    assert server.requests == 5  # q1_1: d1, d2, d3; q2_1: d5, d6 -- a passage in both top-k lists is judged once
    sid = human_study(db, tmp)
    code, out, err = run_cli("eval", "instfol", "--db", path, "--judge-run", "1", "--check-study", sid, "--json")
    assert code == 0, err
    res = json.loads(out)
    # q1_1: bare d1 (1.0), d2 (0.5): q = 0.75; instructed d3 (3.0), d1 (1.0): i = 2 -> 1.25 / 2.25 = 5/9
    # q2_1: bare d5 (2), d6 (1): q = 1.5; instructed d6, d5 (ties by doc id descending): i = 1.5 -> 0
    assert res["per_query"]["q1_1"]["INSTFOL"] == pytest.approx(5 / 9)
    assert res["INSTFOL"] == pytest.approx(5 / 18) and res["scores"].startswith("probability-weighted")
    check = res["check"]
    assert check["human_INSTFOL"] == pytest.approx(7 / 26)  # the human study's own figure
    same = check["same_passages"]
    assert same["passages"] == 8 and same["INSTFOL"] == pytest.approx(5 / 18)
    assert same["human_INSTFOL"] == pytest.approx(7 / 26) and same["agreement"]["n"] == 8
    code, out, _ = run_cli("eval", "instfol", "--db", path, "--judge", "1")
    assert code == 0 and "INSTFOL  0.2778" in out
