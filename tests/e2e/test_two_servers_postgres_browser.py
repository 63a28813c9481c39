"""Two app servers on one PostgreSQL database, as behind a load balancer: an annotator signs in
on one, answers a screen, is sent to the other (same host, the sign-in cookie goes along) and is
still signed in, sees their progress and goes on; the database holds every answer once."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.demo import load_demo
from storage import studies
from storage.db import connect
from tests.e2e.conftest import Server, answer_by_keyboard, settle, sign_in, wait_progress

pytestmark = pytest.mark.e2e


@pytest.fixture
def two_servers(pg_database):
    load_demo(connect(pg_database))
    servers = [Server(pg_database), Server(pg_database)]
    try:
        for s in servers:
            s.start()
        yield servers
    finally:
        for s in servers:
            s.stop()


def test_an_annotator_moves_between_two_app_servers(page, two_servers):
    a, b = two_servers
    sign_in(page, a.url, "ann1", "ann1-demo")
    wait_progress(page, "0 of 8")
    page.get_by_role("button", name="I have read the guidelines").click()
    settle(page)
    answer_by_keyboard(page, ["1", "3", "5"])
    page.keyboard.press("Control+Enter")
    wait_progress(page, "1 of 8")

    page.goto(b.url)  # the load balancer sends the next request to the other server
    expect(page.get_by_text("Signed in as ann1")).to_be_visible(timeout=20_000)
    wait_progress(page, "1 of 8")
    answer_by_keyboard(page, ["1", "3", "5"])
    page.keyboard.press("Control+Enter")
    wait_progress(page, "2 of 8")

    labels = [r for r in studies.current_labels(connect(a.db_path), 1) if r["annotator"] == "ann1"]
    assert len(labels) == 6 and len({r["item"] for r in labels}) == 6
