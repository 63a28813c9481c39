"""The web server ``ifjudge serve`` starts: Streamlit's ASGI app (``st.App``) running
``ui/entry.py`` (which runs ``app.py``), with what a deployment facing annotators needs around it.

* **Uploads only for leads.** Streamlit accepts a file upload (``PUT /_stcore/upload_file/
  <session>/<file>``) from any open session and keeps it in memory. Here an upload is refused
  (403, before its body is read) unless the session belongs to a signed-in lead
  (:func:`ui.session.may_upload`); a lead's upload is bounded by ``server.maxUploadSize``.
* **Metrics only for leads.** ``/_stcore/metrics`` answers only a request carrying a lead's
  valid sign-in cookie.
* **No framing by other sites, no sniffing.** Every response carries ``X-Frame-Options:
  SAMEORIGIN``, ``Content-Security-Policy: frame-ancestors 'self'``,
  ``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: same-origin``.
* **An HttpOnly sign-in cookie.** ``POST /_ifjudge/session`` exchanges a sign-in's one-time
  handoff code for the ``Set-Cookie`` of the session cookie (HttpOnly, SameSite=Strict, Secure
  behind HTTPS); ``POST /_ifjudge/sign-out`` ends the cookie's session and deletes the cookie.
* **No tracebacks.** A failure in a widget callback is shown as :func:`ui.errors.show_failure`
  shows a page's failure; the details go to the server's log.

Run it as ``streamlit run ui/server.py`` (what :func:`cli.serve_cmd.app_command` builds).
"""
from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

import streamlit as st
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from accounts import session_tokens  # noqa: E402
from storage.db import connect, default_db_path  # noqa: E402
from ui import preload, session  # noqa: E402
from ui.errors import show_failure  # noqa: E402

LOG = logging.getLogger("ifjudge")
SECURITY_HEADERS = [
    (b"x-frame-options", b"SAMEORIGIN"),
    (b"content-security-policy", b"frame-ancestors 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]
UPLOAD = re.compile(r"/_stcore/upload_file/([^/]+)/[^/]+/?$")
METRICS = re.compile(r"/_stcore/metrics/?$")


def _cookie_value(headers: list[tuple[bytes, bytes]]) -> str | None:
    from http.cookies import SimpleCookie

    for name, value in headers:
        if name == b"cookie":
            jar = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except Exception:
                return None
            if session.COOKIE in jar:
                return jar[session.COOKIE].value
    return None


def _lead_session(value: str | None) -> bool:
    if not value:
        return False
    conn = connect()
    try:
        found = session_tokens.read_session(conn, value, session_tokens.load_key(default_db_path()))
    finally:
        conn.close()
    return found is not None and found["user"]["role"] == "lead"


class Guard:
    """Pure ASGI middleware: the refusals and headers of the module docstring."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        refusal = None
        upload = UPLOAD.search(path)
        if upload and scope["method"] in ("PUT", "POST", "DELETE") and not session.may_upload(upload.group(1)):
            refusal = "Uploads need a signed-in project lead."
        elif METRICS.search(path) and not await run_in_threadpool(_lead_session, _cookie_value(scope["headers"])):
            refusal = "Metrics need a signed-in project lead."

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        if refusal:
            await PlainTextResponse(refusal, status_code=403, headers={"Connection": "close"})(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)


def _secure(request: Request) -> bool:
    return request.url.scheme == "https" or request.headers.get("x-forwarded-proto", "").lower() == "https"


async def set_cookie(request: Request) -> Response:
    """The sign-in cookie for the one-time code a sign-in left (``X-IFJudge-Handoff``)."""
    found = session.take_handoff(request.headers.get("x-ifjudge-handoff", ""))
    if found is None:
        return PlainTextResponse("No such sign-in.", status_code=403)
    value, max_age = found
    response = Response(status_code=204)
    response.set_cookie(session.COOKIE, value, max_age=max_age, path="/", secure=_secure(request),
                        httponly=True, samesite="strict")
    return response


async def sign_out(request: Request) -> Response:
    """End the session the cookie names (if any) and delete the cookie."""
    digest = session_tokens.cookie_digest(request.cookies.get(session.COOKIE))
    if digest:
        def end():
            conn = connect()
            try:
                session_tokens.end_session(conn, digest, "signed out")
            finally:
                conn.close()
        await run_in_threadpool(end)
    response = Response(status_code=204)
    response.delete_cookie(session.COOKIE, path="/", secure=_secure(request), httponly=True, samesite="strict")
    return response


def on_script_error(exc: Exception) -> bool:
    show_failure(exc)
    return True  # Streamlit shows nothing more


if not LOG.handlers:
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    LOG.addHandler(_handler)
    LOG.setLevel(logging.INFO)
    LOG.propagate = False

# the pages' imports before the first connection: the server's memory is all there when it answers
preload.load_now()
# the open studies' labels and items, so that a lead's first Monitor run computes only (ui/preload.py)
preload.read_ahead_studies()
app = st.App(
    ROOT / "ui" / "entry.py",
    middleware=[Middleware(Guard)],
    routes=[Route(session.HANDOFF_PATH, set_cookie, methods=["POST"]),
            Route(session.SIGN_OUT_PATH, sign_out, methods=["POST"])],
    on_script_error=on_script_error,
)
