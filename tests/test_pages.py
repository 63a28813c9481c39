"""Page logic through Streamlit's AppTest: sign-in, role checks on every page, the annotate page."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


def app(path):
    return AppTest.from_file(str(ROOT / path), default_timeout=30)

LEAD_PAGES = ["pages/home.py", "pages/study_setup.py"]


@pytest.fixture
def env_db(demo, monkeypatch, db_path):
    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    return demo


def user_row(db, name):
    row = db.execute("SELECT id, name, role FROM users WHERE name = ?", [name]).fetchone()
    return dict(zip(("id", "name", "role"), row))


def test_sign_in_form_and_wrong_password(env_db):
    at = app("app.py").run()
    at.text_input(key="sign_in_name").input("ann1")
    at.text_input(key="sign_in_password").input("nope")
    at.button[0].click().run()
    assert any("unknown user name or wrong password" in e.value for e in at.error)
    at.text_input(key="sign_in_password").input("ann1-demo")
    at.button[0].click().run()
    assert at.session_state["user"]["name"] == "ann1"
    assert any("0 of 8" in str(p.value) or "0 of 8" in str(getattr(p, "text", "")) for p in at.get("progress"))


@pytest.mark.parametrize("page", LEAD_PAGES)
def test_lead_pages_refuse_annotators(env_db, page):
    db, _ = env_db
    at = app(page)
    at.session_state["user"] = user_row(db, "ann1")
    at.run()
    assert [e.value for e in at.error] == ["You do not have access to this page."]
    assert not at.dataframe and not at.title


@pytest.mark.parametrize("page", LEAD_PAGES + ["pages/annotate.py"])
def test_pages_refuse_anonymous(env_db, page):
    at = app(page).run()
    assert [e.value for e in at.error] == ["You do not have access to this page."]


def test_lead_sees_project_counts(env_db):
    db, _ = env_db
    at = app("pages/home.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    df = at.dataframe[0].value
    row = df[df["project"] == "demo"].iloc[0]
    assert row["instances"] == 14 and row["groups"] == 5 and row["documents"] == 18


def test_annotate_page_shows_untrusted_text_literally(env_db):
    db, r = env_db
    db.execute("UPDATE instances SET instruction = ? WHERE 1", ["<b>bold</b> *star* # $x$"])
    at = app("pages/annotate.py")
    at.session_state["user"] = user_row(db, "ann1")
    at.run()
    assert "<b>bold</b> *star* # $x$" in [t.value for t in at.text]
    assert all("<b>" not in m.value for m in at.markdown)


def test_annotate_page_refuses_no_without_reason_then_saves(env_db):
    db, r = env_db
    at = app("pages/annotate.py")
    at.session_state["user"] = user_row(db, "ann2")
    at.run()
    screen = at.session_state[f"ann_screen:{r['study_id']}"]
    at.button(key=f"val:{r['study_id']}:{screen}:validity:Yes").click().run()
    at.button(key=f"val:{r['study_id']}:{screen}:naturalness:No").click().run()
    at.button(key=f"pick:{r['study_id']}:{screen}:2").click().run()
    at.button(key=f"submit:{r['study_id']}:{screen}").click().run()
    assert any("a reason is required" in e.value for e in at.error)
    at.text_area(key=f"ans:{r['study_id']}:{screen}:naturalness:reason").input("too generic").run()
    at.button(key=f"submit:{r['study_id']}:{screen}").click().run()
    from storage import studies

    labels = studies.current_labels(db, r["study_id"])
    assert {(x["question"], x["value"] if x["question"] != "best_passage" else "*", x["reason"]) for x in labels} == {
        ("validity", "Yes", ""), ("naturalness", "No", "too generic"), ("best_passage", "*", "")}
    assert at.session_state[f"ann_screen:{r['study_id']}"] != screen
