"""The signed-in user and role checks, done on the server on every run of every page; the sign-in
session behind them (:mod:`accounts.session_tokens`) and the cookie that finds it again after a
reload.

Every run re-reads the session's record in the database: a sign-out, a password change, a
disabled or deleted user, a changed role or the end of the session's lifetime signs the tab out at
its next run. The record is trusted only on the websocket connection that signed in, or on one
whose opening request carried the session's cookie: a Streamlit session id alone (a reconnect
without the cookie) does not restore a signed-in session.

The cookie ``ifjudge_session`` is HttpOnly: page scripts cannot read it. After a sign-in, the
page asks the server (``POST /_ifjudge/session``, served by :mod:`ui.server`) with a one-time
handoff code, and the server's answer sets the cookie; signing out asks ``POST /_ifjudge/sign-out``,
which deletes it.
"""
from __future__ import annotations

import os
import secrets
import threading
import time
import weakref

import streamlit as st
from streamlit import config, runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from accounts import session_tokens
from storage import users
from storage.db import connect, default_db_path

COOKIE = "ifjudge_session"
HANDOFF_PATH = "/_ifjudge/session"
SIGN_OUT_PATH = "/_ifjudge/sign-out"
HANDOFF_TTL_S = 120.0
DEFAULT_HOURS = 12.0

_handoffs: dict[str, tuple[str, int, float]] = {}  # one-time code -> (cookie value, max-age, valid until)
_handoffs_lock = threading.Lock()
_uploaders: dict[str, weakref.ref] = {}  # Streamlit session id of a signed-in lead -> its connection
_bound: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # websocket client -> session digest
_lock = threading.Lock()  # _uploaders and _bound are shared by every session's thread and the server


def session_hours() -> float:
    """How long a sign-in lasts (IFJUDGE_SESSION_HOURS, default 12): the session ends then, in the
    open tab too. ``0`` keeps no cookie (a reload asks to sign in again) and ends a tab's session
    after the default 12 hours."""
    try:
        return max(0.0, float(os.environ.get("IFJUDGE_SESSION_HOURS", str(DEFAULT_HOURS))))
    except ValueError:
        return DEFAULT_HOURS


def _key() -> bytes:
    return session_tokens.load_key(default_db_path())


def db():
    """A fresh connection for this run (never cached across sessions: sqlite objects are per thread)."""
    return connect()


def client_address() -> str:
    """The client's address ('' on localhost): the sign-in throttle's key beside the name."""
    try:
        address = st.context.ip_address
    except Exception:  # no browser (bare mode)
        return ""
    return address if isinstance(address, str) else ""


def _client():
    """This run's websocket connection (None without a browser)."""
    ctx = get_script_run_ctx()
    if ctx is None or not runtime.exists():
        return None
    return runtime.get_instance().get_client(ctx.session_id)


def _bind(digest: str) -> None:
    client = _client()
    if client is not None:
        try:
            with _lock:
                _bound[client] = digest
        except TypeError:  # a client object that takes no weak reference: the cookie is then needed
            pass


def _bound_digest() -> str | None:
    if config.get_option("global.appTest"):  # AppTest has no connection: its session state is the test's own
        return st.session_state.get("_session")
    client = _client()
    try:
        with _lock:
            return _bound.get(client) if client is not None else None
    except TypeError:
        return None


def _allow_upload(role: str | None) -> None:
    ctx, client = get_script_run_ctx(), _client()
    if ctx is None:
        return
    with _lock:
        if role == "lead" and client is not None:
            try:
                _uploaders[ctx.session_id] = weakref.ref(client)
            except TypeError:
                _uploaders.pop(ctx.session_id, None)
        else:
            _uploaders.pop(ctx.session_id, None)


def may_upload(session_id: str) -> bool:
    """True when the Streamlit session ``session_id`` belongs to a signed-in lead, on the very
    connection whose page run found the lead (a reconnect to the session with its id alone
    cannot upload)."""
    with _lock:
        ref = _uploaders.get(session_id)
    if ref is None or not runtime.exists():
        return False
    client = runtime.get_instance().get_client(session_id)
    return client is not None and ref() is client


def sign_in_as(user: dict) -> None:
    """After a right password: start a session on the server, bind it to this connection, and set
    the cookie on the next run (unless IFJUDGE_SESSION_HOURS is 0)."""
    hours = session_hours()
    value, digest = session_tokens.start_session(db(), user["id"], _key(), ttl_s=(hours or DEFAULT_HOURS) * 3600)
    for flag in ("_signed_out", "_cookie_cleared", "_session_ended"):
        st.session_state.pop(flag, None)
    st.session_state["user"], st.session_state["_session"] = user, digest
    _bind(digest)
    if hours > 0:
        code = secrets.token_urlsafe(24)
        with _handoffs_lock:
            now = time.time()
            for old in [c for c, (_, _, until) in _handoffs.items() if until < now]:
                del _handoffs[old]
            _handoffs[code] = (value, int(hours * 3600), now + HANDOFF_TTL_S)
        st.session_state["_cookie_handoff"] = code


def take_handoff(code: str) -> tuple[str, int] | None:
    """The cookie value and max-age a sign-in left under the one-time ``code`` (then forgotten)."""
    with _handoffs_lock:
        found = _handoffs.pop(code, None)
    if found is None or found[2] < time.time():
        return None
    return found[0], found[1]


def forget_sign_in() -> None:
    """Sign out: end the session on the server (its cookie is refused from now on, wherever it
    is replayed), clear this tab's state, and delete the cookie on the next run."""
    digest = st.session_state.get("_session")
    if digest:
        session_tokens.end_session(db(), digest, "signed out")
    st.session_state.clear()
    st.session_state["_signed_out"] = True
    _allow_upload(None)


def _script(body: str) -> None:
    st.html("<script>" + body + "</script>", unsafe_allow_javascript=True)


def sync_cookie() -> None:
    """Ask the server to set or delete the sign-in cookie when a sign-in or a sign-out asked for it
    (the handoff code is URL-safe base64 that we made: no user text goes into the script)."""
    code = st.session_state.pop("_cookie_handoff", None)
    if code:
        _script(f"fetch('{HANDOFF_PATH}', {{method: 'POST', credentials: 'same-origin', "
                f"headers: {{'X-IFJudge-Handoff': '{code}'}}}});")
    elif st.session_state.get("_signed_out") and not st.session_state.get("_cookie_cleared"):
        _script(f"fetch('{SIGN_OUT_PATH}', {{method: 'POST', credentials: 'same-origin'}});")
        st.session_state["_cookie_cleared"] = True


def _from_cookie(conn) -> dict | None:
    """The session named by the cookie this connection was opened with."""
    try:
        value = st.context.cookies.get(COOKIE)
    except Exception:  # no browser (bare mode): no cookie
        return None
    if not isinstance(value, str) or not value or session_hours() <= 0:
        return None
    return session_tokens.read_session(conn, value, _key())


def _ended() -> None:
    """The tab's session is no longer valid: forget everything it held."""
    if "_session" in st.session_state or "user" in st.session_state:
        st.session_state.clear()
        st.session_state["_session_ended"] = True
    _allow_upload(None)


def current_user() -> dict | None:
    """The signed-in user of this tab, checked against the server's session record on every run
    (None: not signed in, or the session ended)."""
    conn = db()
    digest = st.session_state.get("_session")
    if digest and digest == _bound_digest():
        found = session_tokens.check_session(conn, digest)
    elif "user" in st.session_state and not digest and config.get_option("global.appTest"):
        # Streamlit's AppTest has no browser and no cookie: the user its test put in session
        # state is signed in, as long as that user may sign in
        user = users.active_user_by_id(conn, st.session_state["user"]["id"])
        found = {"digest": None, "user": user} if user else None
    else:
        found = None if st.session_state.get("_signed_out") else _from_cookie(conn)
        if found is not None:
            _bind(found["digest"])
    if found is None:
        _ended()
        return None
    st.session_state["user"] = found["user"]
    if found["digest"]:
        st.session_state["_session"] = found["digest"]
    _allow_upload(found["user"]["role"])
    return found["user"]


def require_role(*roles: str) -> dict:
    """Stop the page unless the signed-in user has one of ``roles``."""
    u = current_user()
    if u is None and st.session_state.get("_session_ended") and not st.session_state.get("_ended_rerun"):
        # the session ended (sign-out elsewhere, a new password, a disabled account) during a run
        # of part of the page (the annotate page's fragment): run the whole app once, whose gate
        # shows the sign-in page and says why (_ended clears the state, so each end reruns once)
        st.session_state["_ended_rerun"] = True
        st.rerun(scope="app")
    if u is None or u["role"] not in roles:
        st.error("You do not have access to this page.")
        st.stop()
    return u


def _remembered(conn, what: str) -> int | None:
    from storage import settings

    user = st.session_state.get("user")
    return settings.remembered(conn, user["id"], what) if user else None


def _remember(conn, what: str, value_id: int) -> None:
    from storage import settings

    user = st.session_state.get("user")
    if user:
        settings.remember(conn, user["id"], what, value_id)


def open_on_last_project(conn, key: str, names_by_id: dict[int, str]) -> None:
    """Before a page's own project select box ``key`` is drawn: open it on the project the lead
    last used (when it is one of ``names_by_id``), unless the box already holds a choice."""
    last = _remembered(conn, "project")
    if key not in st.session_state and last in names_by_id:
        st.session_state[key] = names_by_id[last]


def remember_project(conn, project_id: int) -> None:
    """The project a page's own select box chose: the one every lead page opens on next."""
    _remember(conn, "project", project_id)


def pick_project(conn, key: str, empty: str = "No project yet.") -> dict:
    """A 'Project' select box over every project, opened on the project the lead last used on
    any page (kept in the database per user); stops the page with ``empty`` when there is none."""
    from storage import projects

    plist = projects.list_projects(conn)
    if not plist:
        st.info(empty)
        st.stop()
    by_name = {p["name"]: p for p in plist}
    last = _remembered(conn, "project")
    if st.session_state.get(key) not in by_name:
        st.session_state[key] = next((p["name"] for p in plist if p["id"] == last), plist[0]["name"])
    chosen = by_name[st.selectbox("Project", list(by_name), key=key)]
    _remember(conn, "project", chosen["id"])
    return chosen


def pick_study(conn, key: str) -> dict:
    """A 'Study' select box naming each study's project, opened on the study the lead last used
    (else the newest study of the last used project, else the newest study); stops the page when
    there is no study. Choosing a study makes its project the last used one."""
    from storage import projects, studies

    all_studies = studies.list_studies(conn)
    if not all_studies:
        st.info("No study yet.")
        st.stop()
    names = {p["id"]: p["name"] for p in projects.list_projects(conn)}
    by_id = {s["id"]: s for s in all_studies}
    if st.session_state.get(key) not in by_id:
        last, project = _remembered(conn, "study"), _remembered(conn, "project")
        of_project = [i for i, s in by_id.items() if s["project_id"] == project]
        if last in by_id and (project is None or by_id[last]["project_id"] == project):
            st.session_state[key] = last
        else:
            st.session_state[key] = of_project[-1] if of_project else list(by_id)[-1]
    chosen = by_id[st.selectbox("Study", list(by_id), key=key,
                                format_func=lambda i: f"{i}: {by_id[i]['name']} ({names.get(by_id[i]['project_id'], '?')})")]
    _remember(conn, "study", chosen["id"])
    _remember(conn, "project", chosen["project_id"])
    return chosen
