"""IFJudge: the router. Sign-in gate, then st.navigation over pages/ by role."""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from accounts import auth  # noqa: E402
from ui.errors import show_failure  # noqa: E402
from ui.session import client_address, current_user, db, forget_sign_in, sign_in_as, sync_cookie  # noqa: E402

st.set_page_config(page_title="IFJudge", layout="wide")
PAGE_DIR = Path(__file__).resolve().parent / "pages"  # absolute: the entry script may live elsewhere (ui/entry.py)

PAGES = {
    "annotator": [
        st.Page(PAGE_DIR / "annotate.py", title="Annotate", url_path="annotate", default=True),
    ],
    "expert": [  # the expert's work is editing narratives: they land there
        st.Page(PAGE_DIR / "narratives.py", title="Narratives", url_path="narratives", default=True),
        st.Page(PAGE_DIR / "annotate.py", title="Annotate", url_path="annotate"),
    ],
    "lead": [
        st.Page(PAGE_DIR / "home.py", title="Projects", url_path="projects", default=True),
        st.Page(PAGE_DIR / "study_setup.py", title="Set up a study", url_path="study-setup"),
        st.Page(PAGE_DIR / "monitor.py", title="Monitor", url_path="monitor"),
        st.Page(PAGE_DIR / "adjudicate.py", title="Adjudicate", url_path="adjudicate"),
        st.Page(PAGE_DIR / "export.py", title="Export", url_path="export"),
        st.Page(PAGE_DIR / "evaluate.py", title="Evaluate", url_path="evaluate"),
        st.Page(PAGE_DIR / "annotate.py", title="Annotate", url_path="annotate"),
        st.Page(PAGE_DIR / "narratives.py", title="Narratives", url_path="narratives"),
        st.Page(PAGE_DIR / "users.py", title="Users", url_path="users"),
    ],
}


def sign_in_page() -> None:
    st.title("IFJudge")
    st.caption("Human validation of instruction-following retrieval benchmarks")
    if st.session_state.get("_session_ended"):
        st.info("Your session ended (signed out elsewhere, a new password, a change to your account, or its "
                "time was up). Sign in again.")
    with st.form("sign_in"):
        # autocomplete lets password managers fill the form (not "new-password", which they skip)
        name = st.text_input("Username", key="sign_in_name", autocomplete="username")
        password = st.text_input("Password", type="password", key="sign_in_password", autocomplete="current-password")
        submitted = st.form_submit_button("Sign in")
    if submitted:
        try:
            user = auth.sign_in(db(), name, password, address=client_address())
        except auth.SignInFailed as exc:
            st.error(str(exc))
        else:
            sign_in_as(user)
            st.rerun()


def run() -> None:
    user = current_user()
    with st.sidebar:
        sync_cookie()  # set after a sign-in, deleted after a sign-out (a reload then needs no sign-in)
    if user is None:
        st.navigation([st.Page(sign_in_page, title="Sign in", url_path="sign-in")], position="hidden").run()
    else:
        with st.sidebar:
            st.text(f"Signed in as {user['name']} ({user['role']})")
            if st.button("Sign out", key="sign_out"):
                forget_sign_in()
                st.rerun()
        st.navigation(PAGES[user["role"]]).run()


try:
    run()
except Exception as exc:  # the page boundary: a message saying what to do; the details in the server log
    show_failure(exc)
