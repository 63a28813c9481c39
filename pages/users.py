"""Users (lead): add a user; give one a new password, disable, enable, delete, or change a role.

The same library calls as ``ifjudge users``. A change that takes something away ends every session
of that user at once: their open tab is signed out at its next click.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from accounts import auth
from storage import sessions, users  # reads only: every change goes through accounts.auth
from storage.errors import IFJudgeError
from ui.markdown import md_escape
from ui.session import db, require_role

ACTIONS = {
    "Give a new password": "passwd",
    "Disable (no sign-in; labels stay)": "disable",
    "Enable again": "enable",
    "Change the role": "role",
    "Delete (the name stays taken; labels stay attributed to it)": "delete",
    "Sign out everywhere": "sign-out",
}

me = require_role("lead")
conn = db()
st.title("Users")

rows = sorted(users.list_users(conn, with_status=True), key=lambda r: r["status"] == "deleted")  # deleted last
st.dataframe(pd.DataFrame([{"User": r["name"], "Role": r["role"], "Status": r["status"],
                            "Open sessions": sessions.open_count(conn, r["id"])} for r in rows]),
             hide_index=True, key="users_table")

st.subheader("Add a user")
with st.form("users_add", clear_on_submit=True):
    name = st.text_input("User name", key="users_add_name")
    role = st.selectbox("Role", users.ROLES, key="users_add_role")
    first = st.text_input("Password", type="password", key="users_add_pw", autocomplete="new-password",
                          help=f"at least {auth.MIN_PASSWORD} characters; give it to the user privately")
    again = st.text_input("Password again", type="password", key="users_add_pw2", autocomplete="new-password")
    add = st.form_submit_button("Add the user")
if add:
    problem = "the two passwords differ" if first != again else auth.password_problem(first)
    try:
        if problem:
            raise IFJudgeError(problem)
        auth.add_user(conn, name.strip(), role, first)
    except IFJudgeError as exc:
        st.error(md_escape(str(exc)))
    else:
        st.success(f"Added {md_escape(name.strip())} as {role}.")

st.subheader("Change a user")
present = [r["name"] for r in rows if r["status"] != "deleted"]
with st.form("users_change"):
    who = st.selectbox("User", present, key="users_who")
    action = st.radio("What to do", list(ACTIONS), key="users_action")
    new_role = st.selectbox("New role (for a change of role)", users.ROLES, key="users_new_role")
    pw = st.text_input("New password (for a new password)", type="password", key="users_new_pw",
                       autocomplete="new-password")
    pw2 = st.text_input("New password again", type="password", key="users_new_pw2", autocomplete="new-password")
    sure = st.checkbox("Yes, do it", key="users_sure",
                       help="every action but enabling ends the user's sessions: their open tabs are signed out")
    go = st.form_submit_button("Apply")
if go and who:
    what = ACTIONS[action]
    try:
        if not sure:
            raise IFJudgeError("tick 'Yes, do it' to apply the change")
        if what == "passwd":
            if pw != pw2:
                raise IFJudgeError("the two passwords differ")
            ended = auth.change_password(conn, who, pw)
        elif what in ("disable", "enable"):
            ended = auth.set_disabled(conn, who, what == "disable")
        elif what == "role":
            ended = auth.set_role(conn, who, new_role)
        elif what == "delete":
            ended = auth.delete_user(conn, who)
        else:
            ended = auth.sign_out_everywhere(conn, who)
    except IFJudgeError as exc:
        st.error(md_escape(str(exc)))
    else:
        st.success(f"Done: {md_escape(action.split(' (')[0].lower())} for {md_escape(who)}"
                   + (f"; {ended} open session(s) ended." if ended else "."))
        if who == me["name"] and ended:
            st.info("Your own sessions ended: sign in again.")
