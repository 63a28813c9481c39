"""Every lead page opens on the project last used (kept per user in the database, so also after a
reload): choosing a project or a study on one page is what the next page opens on."""
from __future__ import annotations

import pytest

from annotation.demo import demo_bundle
from storage import projects
from tests.builders import app, second_study, user_row

pytestmark = pytest.mark.both_engines  # the last project is kept in the settings table of either engine


def _open(db, path, name="lead"):
    at = app(path, timeout=60)
    at.session_state["user"] = user_row(db, name)
    return at.run()


def test_pages_open_on_the_project_and_study_last_used(env_db):
    db, _ = env_db
    projects.import_bundle(db, "other", demo_bundle(), fmt="demo", kind="generic")
    at = _open(db, "pages/export.py")
    assert at.selectbox(key="exp_project").value == "demo"  # the first, before any choice
    at.selectbox(key="exp_project").set_value("other").run()
    for path, key in (("pages/evaluate.py", "ev_project"), ("pages/study_setup.py", "study_project"),
                      ("pages/narratives.py", "nar_project"), ("pages/export.py", "exp_project")):
        assert _open(db, path).selectbox(key=key).value == "other", path  # a new session: from the database
    sid = second_study(db)  # a study of demo: choosing it makes demo the last used project again
    monitor = _open(db, "pages/monitor.py")
    monitor.selectbox(key="mon_study").set_value(sid).run()
    assert _open(db, "pages/adjudicate.py").selectbox(key="adj_study").value == sid
    assert _open(db, "pages/evaluate.py").selectbox(key="ev_project").value == "demo"
