"""Passwords and the sign-in throttle: a failure recorded before the password is checked, in one
transaction; a backoff per name and client, per name and overall instead of a lock; the same
scrypt cost for unknown names."""
import threading
import time

import pytest

from accounts import auth
from storage import users
from storage.db import connect

pytestmark = pytest.mark.both_engines


def test_passwords_are_hashed_and_verified(db_path):
    db = connect(db_path)
    auth.add_user(db, "alice", "annotator", "s3cret")
    stored = db.execute("SELECT password_hash FROM users WHERE name = 'alice'").fetchone()[0]
    assert "s3cret" not in stored and stored.startswith("scrypt$")
    assert auth.sign_in(db, "alice", "s3cret") == {"id": 1, "name": "alice", "role": "annotator"}
    with pytest.raises(auth.SignInFailed, match="unknown user name or wrong password"):
        auth.sign_in(db, "alice", "wrong")
    with pytest.raises(auth.SignInFailed, match="unknown user name or wrong password"):
        auth.sign_in(db, "nobody", "s3cret")


def test_same_password_gets_different_salts():
    assert auth.hash_password("x") != auth.hash_password("x")


def _age_attempts(db, seconds):
    from storage.db import write

    with write(db):
        db.execute("UPDATE sign_in_attempts SET at = at - ?", [seconds])


def test_after_five_failures_the_name_backs_off_then_opens_again(db_path):
    db = connect(db_path)
    auth.add_user(db, "bob", "lead", "right")
    for _ in range(auth.MAX_FAILURES):
        with pytest.raises(auth.SignInFailed, match="wrong password"):
            auth.sign_in(db, "bob", "wrong")
    with pytest.raises(auth.SignInFailed, match=r"too many failed sign-ins; try again in 1[45] seconds"):
        auth.sign_in(db, "bob", "right")  # even the right password is not checked while backing off
    _age_attempts(db, auth.BACKOFF_S)  # the wait is over: one more try, then twice as long
    with pytest.raises(auth.SignInFailed, match="wrong password"):
        auth.sign_in(db, "bob", "wrong")
    with pytest.raises(auth.SignInFailed, match=r"try again in (29|30) seconds"):
        auth.sign_in(db, "bob", "right")
    _age_attempts(db, 2 * auth.BACKOFF_S)
    assert auth.sign_in(db, "bob", "right")["name"] == "bob"  # a backoff, not a lock
    _age_attempts(db, auth.WINDOW_S)  # failures older than the window are forgotten
    with pytest.raises(auth.SignInFailed, match="wrong password"):
        auth.sign_in(db, "bob", "wrong")


def test_one_address_guessing_does_not_keep_the_owner_of_the_name_out(db_path):
    db = connect(db_path)
    auth.add_user(db, "carol", "annotator", "right")
    for _ in range(auth.MAX_FAILURES):
        with pytest.raises(auth.SignInFailed):
            auth.sign_in(db, "carol", "guess", address="203.0.113.9")
    with pytest.raises(auth.SignInFailed, match="too many"):
        auth.sign_in(db, "carol", "guess", address="203.0.113.9")
    assert auth.sign_in(db, "carol", "right", address="198.51.100.4")["name"] == "carol"


def test_guesses_from_many_addresses_back_off_per_name_and_overall(db_path, monkeypatch):
    db = connect(db_path)
    auth.add_user(db, "dave", "annotator", "right")
    for k in range(auth.MAX_FAILURES_NAME):
        with pytest.raises(auth.SignInFailed, match="wrong password"):
            auth.sign_in(db, "dave", "guess", address=f"10.0.0.{k}")
    with pytest.raises(auth.SignInFailed, match="too many"):
        auth.sign_in(db, "dave", "right", address="10.0.1.1")
    monkeypatch.setattr(auth, "MAX_FAILURES_PER_MINUTE", 25)  # a spray over many names
    for k in range(5):
        with pytest.raises(auth.SignInFailed, match="wrong password"):
            auth.sign_in(db, f"name{k}", "guess", address="10.0.2.1")
    with pytest.raises(auth.SignInFailed, match=r"too many failed sign-ins; try again in"):
        auth.sign_in(db, "fresh-name", "guess", address="10.0.3.1")


def test_an_unknown_name_costs_one_scrypt_as_a_known_one_does(db_path, monkeypatch):
    db = connect(db_path)
    auth.add_user(db, "erin", "annotator", "right")
    auth._decoy_hash()
    checked = []
    real = auth.verify_password
    monkeypatch.setattr(auth, "verify_password", lambda pw, stored: checked.append(stored) or real(pw, stored))
    for name in ("erin", "no-such-name"):
        with pytest.raises(auth.SignInFailed, match="unknown user name or wrong password"):
            auth.sign_in(db, name, "wrong")
    assert len(checked) == 2 and all(h.startswith(f"scrypt${auth.SCRYPT_N}$") for h in checked)


def test_parallel_sign_ins_check_at_most_the_allowed_number_of_passwords(db_path, monkeypatch):
    connect(db_path)
    auth.add_user(connect(db_path), "frank", "lead", "right")
    checked, lock = [], threading.Lock()
    real = auth.verify_password

    def counting(pw, stored):
        with lock:
            checked.append(pw)
        time.sleep(0.05)  # a slow check widens the window a racy throttle would leave
        return real(pw, stored)

    monkeypatch.setattr(auth, "verify_password", counting)
    outcomes, start = [], threading.Barrier(24)

    def attempt(k):
        db = connect(db_path)
        start.wait()
        try:
            outcomes.append(auth.sign_in(db, "frank", "right" if k == 23 else f"guess{k}")["name"])
        except auth.SignInFailed as exc:
            outcomes.append(str(exc))

    threads = [threading.Thread(target=attempt, args=(k,)) for k in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(outcomes) == 24 and len(checked) <= auth.MAX_FAILURES
    assert sum("too many" in o for o in outcomes) == 24 - len(checked)


def test_a_right_password_in_a_burst_does_not_open_it_for_more_guesses(db_path, monkeypatch):
    connect(db_path)
    auth.add_user(connect(db_path), "ivy", "lead", "right")
    checked = []
    real = auth.verify_password
    monkeypatch.setattr(auth, "verify_password", lambda pw, stored: checked.append(pw) or real(pw, stored))
    db = connect(db_path)
    assert auth.sign_in(db, "ivy", "right")["name"] == "ivy"  # the burst's right password comes first
    for k in range(12):
        with pytest.raises(auth.SignInFailed):
            auth.sign_in(db, "ivy", f"guess{k}")
    assert len(checked) == auth.MAX_FAILURES


def test_a_disabled_user_cannot_sign_in_and_a_deleted_one_is_unknown(db_path):
    db = connect(db_path)
    auth.add_user(db, "gina", "annotator", "right-password")
    users.set_disabled(db, "gina", True)
    with pytest.raises(auth.SignInFailed, match="disabled"):
        auth.sign_in(db, "gina", "right-password")
    users.set_disabled(db, "gina", False)
    assert auth.sign_in(db, "gina", "right-password")["name"] == "gina"
    users.delete_user(db, "gina")
    with pytest.raises(auth.SignInFailed, match="unknown user name or wrong password"):
        auth.sign_in(db, "gina", "right-password")


def test_a_new_password_must_be_long_enough_and_replaces_the_old_one(db_path):
    db = connect(db_path)
    auth.add_user(db, "hal", "annotator", "old-password")
    with pytest.raises(Exception, match="at least 8 characters"):
        auth.change_password(db, "hal", "short")
    auth.change_password(db, "hal", "new-password")
    with pytest.raises(auth.SignInFailed):
        auth.sign_in(db, "hal", "old-password")
    assert auth.sign_in(db, "hal", "new-password")["name"] == "hal"
