"""The signed-in user and role checks, done on the server on every run of every page."""
from __future__ import annotations

import streamlit as st

from storage import users
from storage.db import connect
from storage.errors import NotFound


def db():
    """A fresh connection for this run (never cached across sessions: sqlite objects are per thread)."""
    return connect()


def current_user() -> dict | None:
    u = st.session_state.get("user")
    if not u:
        return None
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


def pick_project(conn, key: str, empty: str = "No project yet.") -> dict:
    """A 'Project' select box over every project; stops the page with ``empty`` when there is none."""
    from storage import projects

    plist = projects.list_projects(conn)
    if not plist:
        st.info(empty)
        st.stop()
    by_name = {p["name"]: p for p in plist}
    return by_name[st.selectbox("Project", list(by_name), key=key)]


def pick_study(conn, key: str) -> dict:
    """A 'Study' select box (newest first chosen) naming each study's project; stops the page
    when there is no study."""
    from storage import projects, studies

    all_studies = studies.list_studies(conn)
    if not all_studies:
        st.info("No study yet.")
        st.stop()
    names = {p["id"]: p["name"] for p in projects.list_projects(conn)}
    by_id = {s["id"]: s for s in all_studies}
    return by_id[st.selectbox("Study", list(by_id), index=len(by_id) - 1, key=key,
                              format_func=lambda i: f"{i}: {by_id[i]['name']} ({names.get(by_id[i]['project_id'], '?')})")]
