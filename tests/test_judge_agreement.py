"""The judge measured against the humans (the Monitor's judge section): Cohen kappa on the items
both judged equals a hand value, the confusion table and shares, per domain; judge labels never
enter the human agreement figures, the human label export or an annotator's screen; they are
stored and exported on both engines."""
from __future__ import annotations

import csv
import json

import pytest
from sklearn.metrics import cohen_kappa_score

from annotation.monitoring import monitor
from annotation.judges.labels import read_judge_labels
from annotation.judges.agreement import judge_report
from evaluation.judges.stored import estimate_answers
from storage import judge_labels, projects, studies
from tests.builders import app, item_shown, user_row
from storage.projects import get_project

pytestmark = pytest.mark.both_engines
MARK = "JUDGE-REPLY-7f3a"  # the judge's raw reply: never on an annotator's screen


def store_judge(db, answers: dict[str, str], *, question="validity", key="k1", scores=None):
    """A judge run of the demo project answering ``question`` for each instance of ``answers``."""
    run, _ = judge_labels.find_or_create_run(
        db, project_id=1, question=question, judge="chat", model="judge-7b", base_url="http://127.0.0.1:9/v1",
        prompt_version="instructir-fig9a-q1", prompt_hash="abc", prompt={}, parameters={"scale": "yesno"},
        config_key=key, created_by="test")
    judge_labels.add_items(db, run["id"], [{"instance_id": i, "question": question} for i in answers])
    judge_labels.store_labels(db, run["id"], [
        {"instance_id": i, "question": question, "value": v, "raw": f'{{"answer": "{v}"}} {MARK}',
         "score": (scores or {}).get(i)} for i, v in answers.items()])
    return run["id"]


def outcomes(db, sid):
    """instance -> the humans' validity outcome of the labelled demo study (PLAN: one No)."""
    from annotation.outcomes.table import outcome_table

    t = outcome_table(db, sid)
    return {i: v for i, q, v in zip(t.instance, t.question, t.value) if q == "validity"}


def test_kappa_confusion_and_shares_equal_the_hand_values(labelled):
    db, sid, order = labelled
    human = outcomes(db, sid)
    assert sorted(human.values()) == ["No"] + ["Yes"] * 7
    no_item = next(i for i, v in human.items() if v == "No")
    wrong = next(i for i, v in human.items() if v == "Yes")
    judge = {i: ("No" if i in (no_item, wrong) else "Yes") for i in human}
    unsampled = [i["instance_id"] for i in projects.instances(db, 1) if i["instance_id"] not in human][:3]
    judge.update(dict.fromkeys(unsampled, "No"))  # the judge covers the whole benchmark
    rep = judge_report(db, sid, store_judge(db, judge), n_boot=200)
    o = rep["overall"]
    # hand value: po = 7/8, pe = 7/8 * 6/8 + 1/8 * 2/8 = 44/64, kappa = (56 - 44) / (64 - 44) = 0.6
    assert o["kappa"] == pytest.approx(0.6)
    assert o["kappa"] == pytest.approx(cohen_kappa_score([human[i] for i in human], [judge[i] for i in human]))
    assert o["n_items"] == 8 and o["confusion"] == [[6, 1], [0, 1]] and o["agreement"] == pytest.approx(7 / 8)
    assert o["human_share"] == {"Yes": 7 / 8, "No": 1 / 8} and o["judge_share"] == {"Yes": 6 / 8, "No": 2 / 8}
    assert o["judge_items"] == 11 and o["judge_share_all"]["No"] == pytest.approx(5 / 11)
    assert o["kappa_low"] <= 0.6 <= o["kappa_high"] and o["band"] == "moderate"
    assert [(d["instance_id"], d["human"], d["judge"]) for d in rep["disagreements"]] == [(wrong, "Yes", "No")]


def test_per_domain_rows_and_undefined_kappa(labelled):
    db, sid, _ = labelled
    human = outcomes(db, sid)
    insts = {i["instance_id"]: i for i in projects.instances(db, 1)}
    first_query = insts[sorted(human)[-1]]["query_id"]  # its two items: Yes by all
    db.execute("UPDATE queries SET subset = CASE WHEN query_id = ? THEN 'legal' ELSE 'finance' END", [first_query])
    rep = judge_report(db, sid, store_judge(db, dict.fromkeys(human, "Yes")), n_boot=0)
    assert [d["domain"] for d in rep["domains"]] == ["finance", "legal"]
    assert sum(d["n_items"] for d in rep["domains"]) == rep["overall"]["n_items"] == 8
    legal = rep["domains"][1]
    assert legal["kappa"] is None and "0/0" in legal["undefined"]  # one answer on both sides there


def test_judge_labels_never_enter_the_human_figures(labelled, run_cli, db_path):
    db, sid, _ = labelled
    before = (monitor.table7(db, sid, n_boot=50, seed=0), studies.current_labels(db, sid))
    code, labels_csv, _ = run_cli("labels", "--db", db_path, "--study", sid)
    store_judge(db, dict.fromkeys(outcomes(db, sid), "No"))
    assert (monitor.table7(db, sid, n_boot=50, seed=0), studies.current_labels(db, sid)) == before
    assert run_cli("labels", "--db", db_path, "--study", sid)[1] == labels_csv
    assert MARK not in labels_csv


def test_an_annotator_never_sees_the_judge(demo, monkeypatch, db_path):
    db, r = demo
    sid = r["study_id"]
    store_judge(db, {it["instance_id"]: "No" for it in studies.items_of_study(db, sid, "validity")})
    ann1 = user_row(db, "ann1")
    studies.acknowledge_guidelines(db, sid, ann1["id"])
    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    at = app("pages/annotate.py")
    at.session_state["user"] = ann1
    at.run()
    # everything on the page: its elements and the data handed to the item component
    shown = " ".join(str(getattr(e, "value", "")) + str(getattr(e, "body", "")) + str(getattr(e, "label", ""))
                     for e in at.main) + " " + json.dumps(item_shown(at), ensure_ascii=False)
    claimed = [i["instruction"] for i in projects.instances(db, 1) if i["instruction"] and i["instruction"] in shown]
    assert claimed, "the annotator's item screen is shown"
    assert MARK not in shown and "judge-7b" not in shown and "judge" not in shown.lower()


def test_stored_answers_have_the_shape_of_the_judge_file(labelled, tmp_path, run_cli, db_path):
    db, sid, _ = labelled
    human = outcomes(db, sid)
    run_id = store_judge(db, {i: ("No" if n % 3 == 0 else "Yes") for n, i in enumerate(sorted(human))})
    answers = estimate_answers(db, [run_id])
    out = tmp_path / "judge.csv"
    assert run_cli("judge", "export", "--db", db_path, "--run", run_id, "--out", out)[0] == 0
    assert read_judge_labels(out) == answers and len(answers) == 8
    row = next(csv.DictReader(out.open(encoding="utf-8")))
    assert row["model"] == "judge-7b" and row["prompt_hash"] == "abc" and row["run_id"] == str(run_id)
    jl = tmp_path / "judge.jsonl"
    assert run_cli("judge", "export", "--db", db_path, "--run", run_id, "--out", jl)[0] == 0
    lines = [json.loads(x) for x in jl.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["judge_run"]["prompt_version"] == "instructir-fig9a-q1" and MARK in lines[1]["raw"]
    # ifjudge report: --judge-run goes the way of --judge FILE.csv
    by_file = json.loads(run_cli("report", "--db", db_path, "--study", sid, "--judge", out, "--json",
                                 "--bootstrap", "20")[1])
    by_run = json.loads(run_cli("report", "--db", db_path, "--study", sid, "--judge-run", run_id, "--json",
                                "--bootstrap", "20")[1])
    assert by_run.pop("judge_runs")[0]["model"] == "judge-7b"
    assert by_run == by_file


def test_the_cli_agreement_matches_the_library(labelled, run_cli, db_path):
    db, sid, _ = labelled
    human = outcomes(db, sid)
    run_id = store_judge(db, {i: "Yes" for i in human})
    code, out, err = run_cli("judge", "agreement", "--db", db_path, "--study", sid, "--json", "--bootstrap", "0")
    assert code == 0, err
    rep = json.loads(out)[0]
    assert rep["run"]["id"] == run_id and rep["overall"]["kappa"] == pytest.approx(0.0)


def test_the_monitor_shows_the_judge_section_with_the_hand_kappa(labelled, monkeypatch, db_path):
    db, sid, _ = labelled
    human = outcomes(db, sid)
    no_item = next(i for i, v in human.items() if v == "No")
    wrong = next(i for i, v in human.items() if v == "Yes")
    store_judge(db, {i: ("No" if i in (no_item, wrong) else "Yes") for i in human})
    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    at = app("pages/monitor.py")
    at.session_state["user"] = user_row(db, "lead")
    at.session_state["mon_tab"] = "Judge"
    at.run()
    assert not at.exception and "Automatic judge vs the humans" in [h.value for h in at.subheader]
    table = next(d.value for d in at.dataframe if "Band" in d.value.columns and "Items" in d.value.columns)
    assert table.iloc[0]["Cohen kappa"] == "0.600" and table.iloc[0]["Items"] == 8
    dis = next(d.value for d in at.dataframe if "Judge's reply" in d.value.columns)
    assert list(dis["Instance"]) == [wrong] and MARK in dis.iloc[0]["Judge's reply"]
    assert at.selectbox(key="mon_judge_run_validity").value == 1


def test_a_chat_run_stores_its_answers_on_both_engines(demo):
    from annotation.judges.runs import prepare_run
    from evaluation.judges.chat import ChatConfig
    from evaluation.judges.runs import JudgeSpec, run_judge
    from tests.fake_openai import FakeOpenAI, json_answer

    db, r = demo
    with FakeOpenAI(lambda body: json_answer("No", {"No": 0.75, "Yes": 0.25}),
                    inject=lambda n, body: 429 if n == 3 else None) as server:
        prepared = prepare_run(db, get_project(db, "demo"), JudgeSpec("validity", chat=ChatConfig(server.base_url, "m", concurrency=3)),
                               created_by="t")
        assert run_judge(db, prepared["run"]["id"])["judged"] == 14
        again = prepare_run(db, get_project(db, "demo"), JudgeSpec("validity", chat=ChatConfig(server.base_url, "m")), created_by="t")
    assert again["run"]["id"] == prepared["run"]["id"] and again["estimate"]["requests"] == 0
    labels = judge_labels.labels(db, prepared["run"]["id"])
    assert {(lab["value"], lab["score"]) for lab in labels} == {("No", 0.25)}
    assert judge_labels.token_totals(db, prepared["run"]["id"])["counted_tokens"] == prepared["estimate"]["prompt_tokens"]
    rep = judge_report(db, r["study_id"], prepared["run"]["id"], n_boot=0)
    assert rep["overall"]["n_items"] == 0 and rep["undecided"] == 8  # nobody has labelled yet


def test_the_report_names_the_judge_and_its_measured_agreement(labelled, run_cli, db_path):
    db, sid, _ = labelled
    human = outcomes(db, sid)
    no_item = next(i for i, v in human.items() if v == "No")
    wrong = next(i for i, v in human.items() if v == "Yes")
    run_id = store_judge(db, {i: ("No" if i in (no_item, wrong) else "Yes") for i in human})  # kappa 0.6 (hand value)
    args = ("report", "--db", db_path, "--study", sid, "--judge-run", run_id, "--bootstrap", "50")
    report = json.loads(run_cli(*args, "--json")[1])
    (run,) = report["judge_runs"]
    assert run["model"] == "judge-7b" and run["prompt_version"] == "instructir-fig9a-q1" and run["question"] == "validity"
    (a,) = run["agreement"]
    assert a["study"] == sid and a["n_items"] == 8 and a["kappa"] == pytest.approx(0.6)
    assert a["kappa_low"] <= 0.6 <= a["kappa_high"]
    assert any("ppi_design" in e for e in report["studies"][0]["estimates"])  # the estimate beside it
    code, md, _ = run_cli(*args, "--md")
    assert code == 0 and "### The judge" in md and "Prediction-powered" in md
    line = next(x for x in md.splitlines() if x.startswith(f"| {run_id} | validity | chat judge-7b |"))
    assert "instructir-fig9a-q1 (abc)" in line and f"study {sid}" in line and "0.600 [" in line
