"""The server as a visitor who is not signed in, and a signed-in browser, meet it (issue 31): uploads
and metrics refused, anti-framing headers, an HttpOnly cookie whose session ends on sign-out and
on a password change, a Streamlit session id that restores nothing, no traceback on a failure.
Every request goes to 127.0.0.1."""
from __future__ import annotations

import sqlite3
import time

import pytest
from playwright.sync_api import expect

from accounts import auth
from bench.attack import get, malformed_rerun, open_session, put_upload, rss_mb, session_texts
from storage.db import connect
from tests.e2e.conftest import settle, sign_in

pytestmark = pytest.mark.e2e


def _session_cookie(page) -> dict:
    return next(c for c in page.context.cookies() if c["name"] == "ifjudge_session")


def test_visitors_can_neither_upload_nor_read_metrics_and_every_page_refuses_framing(server):
    ws, sid, xsrf = open_session(server.url)  # the sign-in page's own session
    try:
        before = rss_mb(server.proc.pid)
        statuses = {put_upload(server.url, sid, xsrf, 50 << 20, file_id=f"f{k}") for k in range(4)}  # 200 MB
        time.sleep(1)
        grown = rss_mb(server.proc.pid) - before
    finally:
        ws.close()
    assert statuses <= {403, 0} and grown < 20, (statuses, grown)
    assert get(server.url, "/_stcore/metrics")[0] == 403
    status, headers, _ = get(server.url, "/")
    assert status == 200 and headers["x-frame-options"] == "SAMEORIGIN"
    assert headers["content-security-policy"] == "frame-ancestors 'self'"
    assert headers["x-content-type-options"] == "nosniff"


def test_the_cookie_is_httponly_and_a_replay_after_sign_out_is_refused(page, server, browser):
    sign_in(page, server.url, "lead", "lead-demo")
    deadline = time.time() + 10
    while not any(c["name"] == "ifjudge_session" for c in page.context.cookies()) and time.time() < deadline:
        page.wait_for_timeout(200)
    cookie = _session_cookie(page)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert "ifjudge_session" not in page.evaluate("document.cookie")  # no page script can read it
    header = {"Cookie": f"ifjudge_session={cookie['value']}"}
    assert get(server.url, "/_stcore/metrics", header)[0] == 200  # a lead may read the metrics
    page.reload()
    page.get_by_text("Signed in as lead").wait_for(timeout=20_000)  # a reload keeps the sign-in
    settle(page)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("Username")).to_be_visible(timeout=20_000)
    assert get(server.url, "/_stcore/metrics", header)[0] == 403
    replay = browser.new_context()
    replay.add_cookies([{k: cookie[k] for k in ("name", "value", "domain", "path")}])
    other = replay.new_page()
    other.goto(server.url)
    expect(other.get_by_label("Username")).to_be_visible(timeout=20_000)
    expect(other.get_by_text("Signed in as lead")).to_have_count(0)
    replay.close()


def test_an_open_tab_is_signed_out_at_its_next_run_after_a_password_change(page, server):
    sign_in(page, server.url, "ann1", "ann1-demo")
    settle(page)
    auth.change_password(connect(server.db_path), "ann1", "a new password")
    # the tab is still open on its screen: any click in it runs the page again
    page.get_by_role("button", name="I have read the guidelines").click()
    expect(page.get_by_label("Username")).to_be_visible(timeout=20_000)
    expect(page.get_by_text("Your session ended")).to_be_visible()


def test_a_streamlit_session_id_alone_does_not_restore_a_signed_in_session(page, server):
    ids = []

    def on_socket(ws):
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        def frame(payload):
            if isinstance(payload, bytes):
                msg = ForwardMsg()
                msg.ParseFromString(payload)
                if msg.WhichOneof("type") == "new_session":
                    ids.append(msg.new_session.initialize.session_id)
        ws.on("framereceived", frame)

    page.on("websocket", on_socket)
    sign_in(page, server.url, "lead", "lead-demo")
    settle(page)
    session_id = ids[-1]
    page.goto("about:blank")  # the tab goes away; its server-side session waits for a reconnect
    ws, _, xsrf = open_session(server.url, existing=session_id, rerun=False)  # the lead's id, no cookie, no run
    try:
        assert put_upload(server.url, session_id, xsrf, 1 << 20) in (403, 0)  # not the lead's connection
    finally:
        ws.close()
    ws, reconnected, _ = open_session(server.url, existing=session_id)  # the id, without the cookie
    try:
        texts = session_texts(ws)
    finally:
        ws.close()
    assert reconnected == session_id
    assert any("Username" in t for t in texts) and not any("Signed in as" in t for t in texts), texts


def test_a_database_failure_shows_what_to_do_and_no_traceback(page, server):
    raw = sqlite3.connect(server.db_path)
    raw.execute("DROP TABLE sign_in_attempts")  # every sign-in now fails inside the database
    raw.commit()
    raw.close()
    page.goto(server.url)
    page.get_by_label("Username").fill("ann1")
    page.get_by_label("Password", exact=True).fill("ann1-demo")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text("The database cannot store or read anything right now")).to_be_visible(timeout=20_000)
    shown = page.locator("body").inner_text()
    for leak in ("Traceback", "sqlite3", "OperationalError", "sign_in_attempts", str(server.db_path.parent)):
        assert leak not in shown


def test_a_malformed_widget_message_shows_what_to_do_and_no_traceback(server):
    ws, _, _ = open_session(server.url)
    try:
        session_texts(ws)  # the sign-in page's first run
        malformed_rerun(ws)
        texts = session_texts(ws)
    finally:
        ws.close()
    assert any("Something went wrong on the server (reference" in t for t in texts), texts
    assert not any(t.startswith("exception:") or "Traceback" in t or "KeyError" in t for t in texts), texts
