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
