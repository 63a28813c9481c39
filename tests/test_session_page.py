"""A tab's session is checked on the server at every run (app.py through AppTest): it ends when
its time is up and when the password changes (sign-out and a replayed cookie: in a real browser,
tests/e2e/test_security_browser.py)."""
from __future__ import annotations

import pytest

from accounts import auth
from storage.db import write
from tests.builders import app

pytestmark = pytest.mark.both_engines


def _signed_in(name: str, password: str):
    at = app("app.py").run()
    at.text_input(key="sign_in_name").input(name)
    at.text_input(key="sign_in_password").input(password)
    at.button[0].click().run()
    assert at.session_state["user"]["name"] == name
    return at


def _signed_out(at) -> bool:
    """Nothing of the user is left (AppTest then runs the page it had open, which refuses: the
    browser is sent to the sign-in form, tests/e2e/test_security_browser.py)."""
    shown = [t.value for t in at.text] + [e.value for e in at.error]
    return "user" not in at.session_state and not any("Signed in as" in t for t in shown)


def test_an_open_tab_is_signed_out_at_its_next_run_when_its_session_expires(env_db):
    db, _ = env_db
    at = _signed_in("ann1", "ann1-demo")
    digest = at.session_state["_session"]
    with write(db):
        db.execute("UPDATE sessions SET expires_at = 1 WHERE token_digest = ?", [digest])
    at.run()
    assert _signed_out(at) and at.session_state["_session_ended"]


def test_an_open_tab_is_signed_out_at_its_next_run_after_a_password_change(env_db):
    db, _ = env_db
    at = _signed_in("ann2", "ann2-demo")
    at.run()
    assert "user" in at.session_state  # runs go on while nothing changed
    auth.change_password(db, "ann2", "a new password")
    at.run()
    assert _signed_out(at)
