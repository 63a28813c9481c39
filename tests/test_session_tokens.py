"""Sign-in sessions: a record on the server checked on every use, a cookie signed with a key kept
outside the database; sign-out, a new password, a disabled, deleted or re-roled user end them."""
import os

import pytest

from accounts import auth
from accounts.session_tokens import (check_session, default_key_path, digest, end_session, load_key,
                                       read_session, secret_key, start_session)
from storage import sessions, users
from storage.db import connect
from storage.errors import IFJudgeError

pytestmark = pytest.mark.both_engines
KEY = b"s" * 32


@pytest.fixture
def one(db_path):
    db = connect(db_path)
    uid = auth.add_user(db, "ann", "annotator", "a-password")
    return db, uid


def test_a_session_reads_back_until_it_expires(one):
    db, uid = one
    cookie, d = start_session(db, uid, KEY, ttl_s=10, now=100.0)
    assert read_session(db, cookie, KEY, now=105.0)["user"] == {"id": uid, "name": "ann", "role": "annotator"}
    assert read_session(db, cookie, KEY, now=111.0) is None
    assert check_session(db, d, now=105.0)["digest"] == d


def test_forged_malformed_and_foreign_cookies_are_refused(one):
    db, uid = one
    cookie, _ = start_session(db, uid, KEY, ttl_s=60, now=100.0)
    token, mac = cookie.rsplit(".", 1)
    assert read_session(db, cookie, b"x" * 32, now=105.0) is None  # another key
    assert read_session(db, f"{token}.{'0' * len(mac)}", KEY, now=105.0) is None  # forged MAC
    for bad in (None, "", ".", "abc", token, f".{mac}", cookie + "x"):
        assert read_session(db, bad, KEY, now=105.0) is None


def test_the_database_holds_no_token_and_a_row_written_without_the_key_signs_nobody_in(one):
    db, uid = one
    cookie, _ = start_session(db, uid, KEY, ttl_s=60)
    token = cookie.rsplit(".", 1)[0]
    stored = " ".join(str(v) for row in db.execute("SELECT * FROM sessions").fetchall() for v in row)
    assert token not in stored  # only its digest: a copy of the database or a backup gives no cookie
    # someone who can write to the database plants a session for a token they chose
    sessions.start(db, digest("planted"), uid, expires_at=10**10)
    assert read_session(db, "planted.0123abcd", KEY) is None


def test_sign_out_ends_the_session_and_a_replayed_cookie_is_refused(one):
    db, uid = one
    cookie, d = start_session(db, uid, KEY, ttl_s=60)
    other, _ = start_session(db, uid, KEY, ttl_s=60)  # the same user on another device
    assert end_session(db, d, "signed out") and not end_session(db, d, "signed out")
    assert read_session(db, cookie, KEY) is None
    assert read_session(db, other, KEY) is not None  # sign-out ends this session only


@pytest.mark.parametrize("change", [
    lambda db: auth.change_password(db, "ann", "a new password"),
    lambda db: users.set_disabled(db, "ann", True),
    lambda db: users.delete_user(db, "ann"),
    lambda db: users.set_role(db, "ann", "lead"),
])
def test_a_new_password_disabling_deleting_or_a_new_role_end_every_session_of_the_user(one, change):
    db, uid = one
    cookies = [start_session(db, uid, KEY, ttl_s=60)[0] for _ in range(3)]
    lead = auth.add_user(db, "lead", "lead", "lead-password")
    kept, _ = start_session(db, lead, KEY, ttl_s=60)
    change(db)
    assert all(read_session(db, c, KEY) is None for c in cookies)
    assert read_session(db, kept, KEY) is not None  # another user's session is untouched


def test_the_key_comes_from_the_environment_or_an_owner_only_file(tmp_path, monkeypatch):
    assert load_key("x.db", {"IFJUDGE_SESSION_KEY": "k" * 32}) == b"k" * 32
    with pytest.raises(IFJudgeError, match="at least 32"):
        load_key("x.db", {"IFJUDGE_SESSION_KEY": "short"})
    named = tmp_path / "keys" / "session-key"
    first = load_key("x.db", {"IFJUDGE_SESSION_KEY_FILE": str(named)})
    assert len(first) == 32 and load_key("y.db", {"IFJUDGE_SESSION_KEY_FILE": str(named)}) == first
    assert oct(os.stat(named).st_mode & 0o777) == "0o600"
    # beside a SQLite database by default; for PostgreSQL in the user's configuration folder
    assert default_key_path(tmp_path / "ifjudge.db") == tmp_path / "ifjudge.db.session-key"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "conf"))
    assert default_key_path("postgresql://u@db/x") == tmp_path / "conf" / "ifjudge" / "session-key"


def test_a_key_file_others_may_read_is_refused(tmp_path):
    path = tmp_path / "db.session-key"
    secret_key(path)
    os.chmod(path, 0o644)
    with pytest.raises(IFJudgeError, match="chmod 600"):
        secret_key(path)


@pytest.mark.sqlite_only
def test_the_key_an_older_version_kept_in_the_database_is_removed_on_upgrade(db_path):
    import sqlite3

    from storage.db import MIGRATIONS, schema_statements

    raw = sqlite3.connect(db_path)
    raw.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)")
    for version, name, sql in MIGRATIONS:
        if version <= 6:
            for statement in schema_statements("sqlite", sql):
                raw.execute(statement)
            raw.execute("INSERT INTO schema_migrations VALUES (?, ?, '')", [version, name])
    raw.execute("INSERT INTO settings (key, value) VALUES ('session_key', 'ab' || hex(randomblob(31)))")
    raw.commit()
    raw.close()
    db = connect(db_path)  # applies the newer migrations
    assert db.execute("SELECT COUNT(*) FROM settings WHERE key = 'session_key'").fetchone()[0] == 0


def test_old_sessions_and_attempts_are_forgotten(one):
    import time

    db, uid = one
    start_session(db, uid, KEY, ttl_s=60, now=time.time() - 40 * 86400)  # expired 40 days ago
    live, _ = start_session(db, uid, KEY, ttl_s=600)
    auth.forget_old(db)
    assert db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 1 and read_session(db, live, KEY)
