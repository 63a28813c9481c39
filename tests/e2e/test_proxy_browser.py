"""The nginx configuration of docs/deployment.md in front of a running server: a browser signs in
through it (websocket, a Secure cookie), a burst of requests gets 429, an upload over the limit
413, the metrics 403. Skipped without an nginx binary (scripts/nginx.sh unpacks Debian's)."""
from __future__ import annotations

import http.client
import socket
import ssl
import subprocess
import time

import pytest

from tests.builders import nginx_binary, nginx_files
from tests.e2e.conftest import sign_in

pytestmark = pytest.mark.e2e


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def proxy(server, tmp_path):
    nginx = nginx_binary()
    if nginx is None:
        pytest.skip("no nginx (scripts/nginx.sh unpacks Debian's into .cache/nginx)")
    http_port, https_port = _free_port(), _free_port()
    main = nginx_files(tmp_path / "nginx", app_port=server.port, http_port=http_port, https_port=https_port)
    proc = subprocess.Popen([nginx, "-p", str(tmp_path / "nginx"), "-c", str(main), "-e", "stderr", "-g", "daemon off;"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", https_port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    yield https_port
    proc.terminate()
    proc.wait(10)


def _request(port: int, method: str, path: str, headers: dict | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=ssl._create_unverified_context())
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def test_the_documented_proxy_limits_a_running_server(proxy):
    status, headers = _request(proxy, "GET", "/")
    assert status == 200 and "max-age" in headers["strict-transport-security"]
    assert headers["x-frame-options"] == "SAMEORIGIN"  # the app's own headers come through
    assert _request(proxy, "GET", "/_stcore/metrics")[0] == 403
    oversized = {"Content-Length": str(202 << 20), "Content-Type": "multipart/form-data; boundary=x"}
    assert _request(proxy, "PUT", "/_stcore/upload_file/s/f", oversized)[0] == 413
    statuses = [_request(proxy, "GET", "/_stcore/health")[0] for _ in range(80)]
    assert 429 in statuses and statuses[:20].count(200) == 20


def test_a_browser_signs_in_through_the_proxy_and_gets_a_secure_cookie(proxy, browser):
    context = browser.new_context(ignore_https_errors=True)
    page = context.new_page()
    sign_in(page, f"https://127.0.0.1:{proxy}", "ann1", "ann1-demo")  # the websocket goes through nginx
    deadline = time.time() + 10
    while not any(c["name"] == "ifjudge_session" for c in context.cookies()) and time.time() < deadline:
        page.wait_for_timeout(200)
    cookie = next(c for c in context.cookies() if c["name"] == "ifjudge_session")
    assert cookie["secure"] and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    context.close()
