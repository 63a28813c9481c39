"""``ifjudge users``: the accounts a lab runs, from the command line (passwords from stdin)."""
import io
import json

import pytest

from accounts import auth
from accounts.session_tokens import read_session, start_session
from storage import users
from storage.db import connect

pytestmark = pytest.mark.both_engines
KEY = b"k" * 32


@pytest.fixture
def team(db_path):
    db = connect(db_path)
    for name, role in (("boss", "lead"), ("ann", "annotator")):
        auth.add_user(db, name, role, f"{name}-password")
    return db


def _stdin(monkeypatch, text):
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def test_passwd_from_stdin_replaces_the_password_and_signs_every_browser_out(run_cli, db_path, team, monkeypatch):
    cookie, _ = start_session(team, users.get_user(team, "ann")["id"], KEY, ttl_s=600)
    _stdin(monkeypatch, "a brand new one\n")
    code, out, _ = run_cli("users", "passwd", "--db", db_path, "ann", "--password-stdin")
    assert code == 0 and "password of ann changed; 1 open session(s) ended" in out
    assert read_session(team, cookie, KEY) is None
    assert auth.sign_in(team, "ann", "a brand new one")["name"] == "ann"
    _stdin(monkeypatch, "short\n")
    code, _, err = run_cli("users", "passwd", "--db", db_path, "ann", "--password-stdin")
    assert code == 2 and "at least 8 characters" in err


def test_disable_enable_delete_and_role_from_the_command_line(run_cli, db_path, team):
    assert run_cli("users", "disable", "--db", db_path, "ann")[0] == 0
    with pytest.raises(auth.SignInFailed, match="disabled"):
        auth.sign_in(team, "ann", "ann-password")
    assert run_cli("users", "enable", "--db", db_path, "ann")[0] == 0
    assert auth.sign_in(team, "ann", "ann-password")["role"] == "annotator"
    code, out, _ = run_cli("users", "role", "--db", db_path, "ann", "expert")
    assert code == 0 and "ann is now expert" in out
    code, out, _ = run_cli("users", "delete", "--db", db_path, "ann")
    assert code == 0 and "labels stay attributed to ann" in out
    code, out, _ = run_cli("users", "list", "--db", db_path, "--json")
    assert {r["name"]: (r["role"], r["status"]) for r in json.loads(out)} == {
        "boss": ("lead", "active"), "ann": ("expert", "deleted")}
    code, _, err = run_cli("users", "disable", "--db", db_path, "nobody")
    assert code == 2 and "no user named 'nobody'" in err


def test_the_last_lead_who_can_sign_in_cannot_be_taken_away(run_cli, db_path, team):
    for argv in (("disable", "boss"), ("delete", "boss"), ("role", "boss", "annotator")):
        code, _, err = run_cli("users", argv[0], "--db", db_path, *argv[1:])
        assert code == 2 and "the only lead who can sign in" in err
    assert auth.sign_in(team, "boss", "boss-password")["role"] == "lead"


def test_sign_out_ends_every_session_of_a_user(run_cli, db_path, team):
    uid = users.get_user(team, "ann")["id"]
    cookies = [start_session(team, uid, KEY, ttl_s=600)[0] for _ in range(2)]
    code, out, _ = run_cli("users", "sign-out", "--db", db_path, "ann")
    assert code == 0 and out.startswith("2 session(s) of ann ended")
    assert all(read_session(team, c, KEY) is None for c in cookies)
