"""A lead evaluates BM25 and the bundled MiniLM on the demo project's original and validated
qrels in the browser, sees the comparison table, Kendall tau and charts, and downloads a run."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.outcomes.qrels_builds import store_validated_qrels
from formats.trec_io import read_run
from storage.db import connect
from tests.e2e.conftest import Server, choose, settle, sign_in, wait_for_jobs
from tests.builders import label_demo

pytestmark = pytest.mark.e2e


@pytest.fixture
def validated_server(demo_db, tmp_path, monkeypatch):
    monkeypatch.setenv("IFJUDGE_CACHE_DIR", str(tmp_path / "embeddings"))
    db = connect(demo_db)
    label_demo(db, 1)
    assert store_validated_qrels(db, 1) > 0
    s = Server(demo_db)
    s.start()
    yield s
    s.stop()


def test_lead_runs_bm25_and_minilm_and_compares_versions(page, validated_server, artifacts, tmp_path):
    sign_in(page, validated_server.url, "lead", "lead-demo")
    page.get_by_role("link", name="Evaluate").click()
    expect(page.get_by_role("button", name="Run", exact=True)).to_be_visible(timeout=20_000)
    choose(page, "Models", "minilm")
    page.keyboard.press("Escape")  # a multiselect keeps its list open for more choices
    settle(page)
    page.get_by_role("button", name="Run", exact=True).click()
    # the page queued one job per model x version; the worker beside the server runs them
    ended = wait_for_jobs(validated_server.db_path, expected=6)
    assert [j["state"] for j in ended] == ["finished"] * 6, [(j["state"], j["error"]) for j in ended]
    expect(page.get_by_text("Scores per system and qrels version")).to_be_visible(timeout=180_000)
    expect(page.locator("[data-testid='stProgress']")).to_have_count(0, timeout=20_000)
    expect(page.get_by_text("Did the ranking of models change? (Kendall tau)")).to_be_visible()
    # two systems: no tau, the caveat with n instead
    expect(page.get_by_text("Not computed: 2 system(s) are evaluated", exact=False)).to_be_visible()
    settle(page)
    # metric per model per version, and rank changes between versions
    expect(page.locator("[data-testid='stVegaLiteChart']")).to_have_count(2, timeout=20_000)
    page.screenshot(path=str(artifacts / "evaluate-page.png"), full_page=True)

    db = connect(validated_server.db_path)
    runs = list(db.query("select model, template, qrels_version from eval_runs order by id"))
    # every qrels version is chosen by default: the demo's original and FollowIR-changed, and the
    # validated one stored from the study
    assert sorted((r["model"], r["qrels_version"]) for r in runs) == [
        (m, v) for m in ("bm25", "minilm") for v in ("changed", "original", "validated")
    ]

    settle(page)  # a click during a rerun (the charts arriving) can be lost on a busy machine
    with page.expect_download(timeout=60_000) as dl:
        page.get_by_role("button", name="Download TREC run").click()
    path = tmp_path / "run.trec"
    dl.value.save_as(path)
    run = read_run(path)
    assert run and all(len(docs) >= 1 for docs in run.values())
