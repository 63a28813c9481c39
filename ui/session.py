"""The signed-in user and role checks, done on the server on every run of every page; and the
sign-in cookie that lets a session survive a reload (annotation.session_tokens)."""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from annotation import session_tokens
from storage import users
from storage.settings import shared_secret
from storage.db import connect, default_db_path, is_url
from storage.errors import NotFound

COOKIE = "ifjudge_session"


def session_hours() -> float:
    """How long a sign-in lasts across reloads and browser restarts (IFJUDGE_SESSION_HOURS, default 12)."""
    try:
        return max(0.0, float(os.environ.get("IFJUDGE_SESSION_HOURS", "12")))
    except ValueError:
        return 12.0


def _secret() -> bytes:
    """IFJUDGE_SESSION_KEY_FILE if set; else a file beside a SQLite database, or, on PostgreSQL,
    a key kept in the database that every app server shares."""
    path = os.environ.get("IFJUDGE_SESSION_KEY_FILE")
    if not path and is_url(default_db_path()):
        return shared_secret(db())
    return session_tokens.secret_key(Path(path or str(default_db_path()) + ".session-key"))


def _password_hash(uid: int) -> str | None:
    conn = db()
    try:
        name = users.get_user_by_id(conn, uid)["name"]
    except NotFound:
        return None
    u = users.get_user(conn, name)
    return u["password_hash"] if u else None


def remember_sign_in(user: dict) -> None:
    """After a sign-in: the cookie to set on the next run (a token signed for this user)."""
    if session_hours() > 0:
        st.session_state["_set_cookie"] = session_tokens.make_token(
            user["id"], _password_hash(user["id"]) or "", _secret(), ttl_s=session_hours() * 3600)


def forget_sign_in() -> None:
    """Sign out: clear this session, and delete the cookie on the next run."""
    st.session_state.clear()
    st.session_state["_signed_out"] = True


def _cookie_script(value: str, max_age: int) -> str:
    # value is a token we made (digits, dots, hex) or empty: no user text goes into the script
    return ("<script>document.cookie = '" + COOKIE + "=" + value + "; Max-Age=" + str(max_age)
            + "; Path=/; SameSite=Strict' + (location.protocol === 'https:' ? '; Secure' : '');</script>")


def sync_cookie() -> None:
    """Write or delete the sign-in cookie in the browser when a sign-in or a sign-out asked for it."""
    token = st.session_state.pop("_set_cookie", None)
    if token:
        st.html(_cookie_script(token, int(session_hours() * 3600)), unsafe_allow_javascript=True)
    elif st.session_state.get("_signed_out") and not st.session_state.get("_cookie_cleared"):
        st.html(_cookie_script("", 0), unsafe_allow_javascript=True)
        st.session_state["_cookie_cleared"] = True


def _from_cookie() -> dict | None:
    """The user of a valid sign-in cookie sent with this session's first request, unless this
    session signed out (the browser's copy is then deleted, but the request still carried it)."""
    if st.session_state.get("_signed_out") or session_hours() <= 0:
        return None
    try:
        token = st.context.cookies.get(COOKIE)
    except Exception:  # no browser (AppTest, bare mode): no cookie
        return None
    if not token:
        return None
    uid = session_tokens.read_token(token, _secret(), _password_hash)
    if uid is None:
        return None
    try:
        return users.get_user_by_id(db(), uid)
    except NotFound:
        return None


def db():
    """A fresh connection for this run (never cached across sessions: sqlite objects are per thread)."""
    return connect()


def current_user() -> dict | None:
    u = st.session_state.get("user")
    if not u:
        u = _from_cookie()
        if u is None:
            return None
        st.session_state["user"] = u
    try:
        fresh = users.get_user_by_id(db(), u["id"])
    except NotFound:
        st.session_state.pop("user", None)
        return None
    st.session_state["user"] = fresh
    return fresh


def require_role(*roles: str) -> dict:
    """Stop the page unless the signed-in user has one of ``roles``."""
    u = current_user()
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
