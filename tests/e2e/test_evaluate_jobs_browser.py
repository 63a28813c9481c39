"""An evaluation started on the Evaluate page is a job run by the worker beside the server: the
lead navigates away while it runs, comes back, reloads; the jobs finish and their results show,
equal to the same evaluations run in the foreground (`run_eval`, as `ifjudge eval run`)."""
from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from annotation.demo import load_demo
from evaluation.runner import run_eval
from storage import projects
from storage import eval_runs, jobs
from storage.db import connect
from tests.e2e.conftest import choose, settle, sign_in, wait_for_jobs

pytestmark = pytest.mark.e2e


@pytest.fixture
def job_server(demo_db, tmp_path, monkeypatch):
    from tests.e2e.conftest import Server

    monkeypatch.setenv("IFJUDGE_CACHE_DIR", str(tmp_path / "embeddings"))
    s = Server(demo_db)
    s.start()
    yield s
    s.stop()


def test_evaluation_job_outlives_the_page_and_its_results_show(page, job_server, artifacts, tmp_path):
    db = connect(job_server.db_path)
    sign_in(page, job_server.url, "lead", "lead-demo")
    page.get_by_role("link", name="Evaluate").click()
    expect(page.get_by_role("button", name="Run", exact=True)).to_be_visible(timeout=20_000)
    expect(page.get_by_text("No evaluation yet: run one above", exact=False)).to_be_visible()
    choose(page, "Models", "minilm")
    page.keyboard.press("Escape")
    settle(page)
    page.get_by_role("button", name="Run", exact=True).click()
    # one job per model x qrels version (the demo has original and changed), shown with a progress bar
    expect(page.locator("[data-testid='stProgress']").first).to_be_visible(timeout=20_000)
    submitted = jobs.list_jobs(db)
    assert len(submitted) == 4 and {j["parameters"]["model"] for j in submitted} == {"bm25", "minilm"}
    page.screenshot(path=str(artifacts / "evaluate-jobs-progress.png"), full_page=True)

    # leave the page while the worker runs the jobs
    page.get_by_role("link", name="Projects").click()
    expect(page.get_by_role("button", name="Run", exact=True)).to_have_count(0, timeout=20_000)
    deadline = time.time() + 120
    while not any(j["state"] in ("running", "finished") for j in jobs.list_jobs(db)) and time.time() < deadline:
        time.sleep(0.1)
    assert any(j["state"] in ("running", "finished") for j in jobs.list_jobs(db)), "the worker took no job"

    # come back: the jobs are still there (running, or already done), then their results show by themselves
    page.get_by_role("link", name="Evaluate").click()
    expect(page.get_by_text("Run an evaluation", exact=True)).to_be_visible(timeout=20_000)
    ended = wait_for_jobs(job_server.db_path, expected=4)
    assert [j["state"] for j in ended] == ["finished"] * 4, [(j["state"], j["error"]) for j in ended]
    expect(page.get_by_text("Scores per system and qrels version")).to_be_visible(timeout=30_000)
    expect(page.locator("[data-testid='stProgress']")).to_have_count(0, timeout=20_000)
    expect(page.locator("[data-testid='stVegaLiteChart']")).to_have_count(2, timeout=20_000)

    # a reload (a new session: sign in again) shows the same results from the database
    page.reload()
    sign_in(page, job_server.url, "lead", "lead-demo")
    page.get_by_role("link", name="Evaluate").click()
    expect(page.get_by_text("Scores per system and qrels version")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("Did the ranking of models change? (Kendall tau)")).to_be_visible()
    page.screenshot(path=str(artifacts / "evaluate-jobs-done.png"), full_page=True)

    # each job's eval run equals the same evaluation in the foreground, on a fresh copy of the demo
    fresh = tmp_path / "foreground.db"
    fdb = connect(fresh)
    load_demo(fdb)
    for job in ended:
        p = job["parameters"]
        background = eval_runs.load_eval_run(db, job["result_ids"][0])
        rid = run_eval(fdb, projects.get_project(fdb, "demo"), model=p["model"], template=p["template"], qrels_version=p["qrels_version"],
                       k=p["k"], ties=p["ties"], cache_dir=str(tmp_path / "embeddings"))
        foreground = eval_runs.load_eval_run(fdb, rid)
        assert background["metrics"] == pytest.approx(foreground["metrics"], abs=1e-9), p
        assert background["per_query"].keys() == foreground["per_query"].keys()
        assert background["model"] == foreground["model"]
