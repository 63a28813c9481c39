import pytest

from annotation import auth
from storage.db import connect


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


def test_sign_in_is_throttled_after_repeated_failures(db_path):
    db = connect(db_path)
    auth.add_user(db, "bob", "lead", "right")
    for _ in range(auth.MAX_FAILURES):
        with pytest.raises(auth.SignInFailed):
            auth.sign_in(db, "bob", "wrong")
    with pytest.raises(auth.SignInFailed, match="too many failed sign-ins"):
        auth.sign_in(db, "bob", "right")  # even the right password is refused while throttled
