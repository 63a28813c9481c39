"""The Users page (leads): add a user, give a new password, disable, change a role, delete; the
same library calls as ``ifjudge users``."""
from __future__ import annotations

import pytest

from accounts import auth
from accounts.session_tokens import read_session, start_session
from storage import users
from tests.builders import signed_in_page

pytestmark = pytest.mark.both_engines
KEY = b"k" * 32


def _apply(at, who, action, **fields):
    at.selectbox(key="users_who").select(who)
    at.radio(key="users_action").set_value(action)
    for key, value in fields.items():
        widget = at.selectbox(key=key) if key == "users_new_role" else at.text_input(key=key)
        widget.select(value) if key == "users_new_role" else widget.input(value)
    at.checkbox(key="users_sure").check()
    at.button(key="FormSubmitter:users_change-Apply").click()
    return at.run()


def test_a_lead_adds_a_user_who_can_then_sign_in(env_db):
    db, _ = env_db
    at = signed_in_page(db, "pages/users.py", "lead")
    table = at.dataframe[0].value
    assert set(table["User"]) == {"lead", "expert", "ann1", "ann2", "ann3"} and set(table["Status"]) == {"active"}
    at.text_input(key="users_add_name").input("dora")
    at.selectbox(key="users_add_role").select("annotator")
    at.text_input(key="users_add_pw").input("dora-password")
    at.text_input(key="users_add_pw2").input("dora-password")
    at.button(key="FormSubmitter:users_add-Add the user").click()
    at.run()
    assert not at.exception and any("Added dora as annotator" in s.value for s in at.success)
    assert auth.sign_in(db, "dora", "dora-password")["role"] == "annotator"


def test_a_new_password_from_the_page_ends_the_users_sessions(env_db):
    db, _ = env_db
    cookie, _ = start_session(db, users.get_user(db, "ann1")["id"], KEY, ttl_s=600)
    at = _apply(signed_in_page(db, "pages/users.py", "lead"), "ann1", "Give a new password",
                users_new_pw="fresh-password", users_new_pw2="fresh-password")
    assert not at.exception and any("1 open session(s) ended" in s.value for s in at.success)
    assert read_session(db, cookie, KEY) is None
    assert auth.sign_in(db, "ann1", "fresh-password")["name"] == "ann1"


def test_disable_role_and_delete_from_the_page(env_db):
    db, _ = env_db
    at = signed_in_page(db, "pages/users.py", "lead")
    at = _apply(at, "ann2", "Disable (no sign-in; labels stay)")
    assert users.get_user(db, "ann2")["disabled_at"]
    at = _apply(at, "ann3", "Change the role", users_new_role="expert")
    assert users.get_user(db, "ann3")["role"] == "expert"
    at = _apply(at, "ann3", "Delete (the name stays taken; labels stay attributed to it)")
    assert users.get_user(db, "ann3")["deleted_at"] and not at.exception
    at = _apply(at, "lead", "Disable (no sign-in; labels stay)")  # the only lead: refused, said why
    assert any("the only lead who can sign in" in e.value for e in at.error)
    assert not users.get_user(db, "lead")["disabled_at"]


def test_an_open_tab_of_a_disabled_user_is_signed_out_at_its_next_run(env_db):
    db, _ = env_db
    at = signed_in_page(db, "pages/annotate.py", "ann1")
    assert not at.error
    auth.set_disabled(db, "ann1", True)
    at.run()
    assert [e.value for e in at.error] == ["You do not have access to this page."]
