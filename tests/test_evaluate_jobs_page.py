"""The Evaluate page submits evaluation jobs and shows them from the database: queued, running
with done/total and ETA, cancel, failed with the reason, finished with the comparison."""
from __future__ import annotations

import re
import time

from evaluation import jobs as eval_jobs
from storage import projects
from storage import jobs
from tests.builders import app, user_row


def _page(db, name="lead"):
    at = app("pages/evaluate.py")
    at.session_state["user"] = user_row(db, name)
    return at.run()


def _bars(at):
    """(value, label as read): the page escapes the Markdown of progress labels."""
    return [(p.proto.value, re.sub(r"\\(.)", r"\1", p.proto.text)) for p in at.get("progress")]


def test_submit_then_progress_eta_and_cancel_survive_a_new_session(env_db, db_path, monkeypatch, tmp_path):
    monkeypatch.setenv("IFJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    db, _ = env_db
    at = _page(db)
    at.multiselect(key="ev_versions").set_value(["original"])
    at.button[0].click().run()
    assert not at.exception and not at.error
    [job] = jobs.list_jobs(db)
    assert job["state"] == "queued" and job["created_by"] == "lead"
    assert job["parameters"]["model"] == "bm25" and job["parameters"]["qrels_version"] == "original"
    assert _bars(at) == [(0, f"job {job['id']}: bm25 / query_instruction / original (k=1000, mteb protocol): queued")]

    # a second lead starting the same evaluation gets the same job
    other = _page(db, "lead")
    other.multiselect(key="ev_versions").set_value(["original"])
    other.button[0].click().run()
    assert [i.value for i in other.info if i.value.startswith("bm25")] == [
        f"bm25 / query_instruction / original: job {job['id']} already runs this evaluation (queued)."]
    assert len(jobs.list_jobs(db)) == 1

    # a worker takes it and reports progress; a page opened afresh (reload) shows it
    jobs.claim(db, "w1")
    start = time.time()
    jobs.progress(db, job["id"], "w1", 0, 40, "retrieving (BM25)", now=start - 20)
    jobs.progress(db, job["id"], "w1", 10, 40, "retrieving (BM25)", now=start)
    fresh = _page(db)
    [(value, text)] = _bars(fresh)
    assert value == 25 and "retrieving (BM25) 10/40" in text
    eta = int(text.split("ETA ")[1].split(" min")[0])  # 20 s for 10 of 40: about 60 s left
    assert eta == 1 and "min" in text

    fresh.button(key=f"ev_cancel_{job['id']}").click().run()
    assert jobs.get_job(db, job["id"])["cancel_requested"]
    assert "(cancelling)" in _bars(fresh.run())[0][1]
    assert not [b for b in fresh.button if b.key == f"ev_cancel_{job['id']}"]


def test_failed_job_reason_shown_literally_and_finished_job_shows_results(env_db, db_path, monkeypatch, tmp_path):
    monkeypatch.setenv("IFJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    db, _ = env_db
    bad, _ = eval_jobs.submit_eval(db, projects.get_project(db, "demo"), created_by="lead", model="bm25", k=10)
    jobs.claim(db, "w1")
    jobs.fail(db, bad["id"], "w1", "model <b>x</b> refused: **bold**")
    at = _page(db)
    assert not at.exception
    texts = [t.value for t in at.text]
    assert f"job {bad['id']} failed: bm25 / query_instruction / original (k=10, mteb protocol)\nmodel <b>x</b> refused: **bold**" in texts
    assert [i.value for i in at.info if i.value.startswith("No evaluation yet: run one above")]

    # a model name with Markdown in it reads literally in its progress label
    odd, _ = eval_jobs.submit_eval(db, projects.get_project(db, "demo"), created_by="lead", model="my_**model**")
    at.run()
    [raw] = [p.proto.text for p in at.get("progress")]
    assert raw.startswith(f"job {odd['id']}: my\\_\\*\\*model\\*\\* / query\\_instruction")
    eval_jobs.cancel(db, odd["id"], by="lead")

    good, _ = eval_jobs.submit_eval(db, projects.get_project(db, "demo"), created_by="lead", model="bm25", template="query")
    assert eval_jobs.work(db_path, once=True) == 1
    at.run()
    assert not at.exception and not at.error and not _bars(at)
    table = at.dataframe[0].value
    assert list(table["System"]) == ["bm25 [query]"] and float(table.iloc[0]["nDCG@10"]) > 0
    assert table.iloc[0]["Qrels version"] == "original"
    assert jobs.get_job(db, good["id"])["state"] == "finished"


def test_the_protocol_chosen_is_queued_and_named_beside_each_result(env_db, db_path, monkeypatch, tmp_path):
    """The Protocol control: ``paper`` goes into the job (template and tie rule left to the
    protocol, resolved in the job), and the scores table names each system's protocol."""
    monkeypatch.setenv("IFJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    db, _ = env_db
    at = _page(db)
    at.selectbox(key="ev_protocol").set_value("paper")
    at.multiselect(key="ev_versions").set_value(["original"])
    at.button[0].click().run()
    assert not at.exception and not at.error
    [job] = jobs.list_jobs(db)
    p = job["parameters"]
    assert (p["protocol"], p["template"], p["ties"], p["wise_version"]) == ("paper", "query_instruction", "docid", "paper")
    assert eval_jobs.work(db_path, once=True) == 1
    eval_jobs.submit_eval(db, projects.get_project(db, "demo"), created_by="lead", model="bm25")  # the same under MTEB's protocol
    assert eval_jobs.work(db_path, once=True) == 1
    at.run()
    table = at.dataframe[0].value
    assert sorted(zip(table["System"], table["Protocol"])) == [
        ("bm25 [query_instruction]", "mteb"), ("bm25 [query_instruction] (paper protocol)", "paper")]
