"""Pages speak of their own controls, never of command-line options: no page shows a ``--flag``
(or an ``ifjudge`` command line), and library messages are translated to the box that sets the
same thing (annotation.glossary.page_message)."""
from __future__ import annotations

import re

import pytest

from annotation.glossary import page_message
from formats.readers import resolve_format
from storage.errors import IFJudgeError
from tests.builders import MONITOR_TABS, app, open_tab, second_study, user_row

FLAG = re.compile(r"(?<![\w-])--[a-z]|\bifjudge [a-z]")
KINDS = ("title", "subheader", "caption", "markdown", "text", "info", "warning", "error", "success", "code")


def _said(at) -> list[str]:
    out = []
    for kind in KINDS:
        out += [str(e.value) for e in getattr(at, kind)]
    for d in at.dataframe:
        out += [str(v) for v in d.value.astype(str).to_numpy().ravel()]
    return out


def test_a_wrong_file_names_the_format_box(tmp_path):
    (tmp_path / "notes.txt").write_text("not a benchmark")
    with pytest.raises(IFJudgeError) as exc:
        resolve_format("auto", [tmp_path])
    shown = page_message(str(exc.value))
    assert shown.endswith("name the format with the “Format” box") and "--" not in shown


def test_no_lead_page_names_a_command_line_option(env_db, labelled, monkeypatch):
    db, sid, _ = labelled
    second_study(db)  # unfinished: the Export page asks for a confirmation, then for the unresolved policy
    runs = []
    for path, widgets in (("pages/home.py", {}), ("pages/study_setup.py", {}), ("pages/monitor.py", {}),
                          ("pages/adjudicate.py", {}), ("pages/evaluate.py", {}), ("pages/narratives.py", {}),
                          ("pages/export.py", {"exp_studies": [1, 2], "exp_allow_incomplete": True})):
        at = app(path, timeout=60)
        at.session_state["user"] = user_row(db, "lead")
        at.run()
        for key, value in widgets.items():
            (at.checkbox(key=key).check() if isinstance(value, bool) else at.multiselect(key=key).set_value(value)).run()
        if path == "pages/export.py":
            at.button(key="exp_build").click().run()
            assert any("Unresolved judgments" in e.value for e in at.error)  # blocked, in the page's words
        assert not at.exception, path
        runs.append((path, [s for s in _said(at) if FLAG.search(s)]))
        for tab in MONITOR_TABS[1:] if path == "pages/monitor.py" else ():  # the Monitor's other tabs too
            open_tab(at, tab)
            assert not at.exception, tab
            runs.append((f"{path} {tab}", [s for s in _said(at) if FLAG.search(s)]))
    assert [r for r in runs if r[1]] == []
