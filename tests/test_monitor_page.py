"""The Monitor page (AppTest): the kappa heatmap prints its value in each cell ("—" with the reason
on hover when kappa is undefined), and the question's agreement report is a table, not JSON."""
import json

import pyarrow as pa
import pytest

from tests.builders import MONITOR_TABS, app, label_demo, open_tab, user_row
from storage.projects import get_project


def _heatmap(at):
    chart = next(c for c in at.get("vega_lite_chart") if "Pairwise Cohen kappa" in c.proto.spec)
    spec = json.loads(chart.proto.spec)
    rows = [r for d in chart.proto.datasets for r in pa.ipc.open_stream(d.data.data).read_all().to_pylist()]
    return spec, rows


def test_heatmap_cells_show_their_value_or_a_dash_with_the_reason(env_db):
    db, r = env_db
    label_demo(db, r["study_id"])  # validity: ann1 and ann2 all Yes (kappa 0/0), ann3 all No
    at = app("pages/monitor.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    assert not at.exception and not at.json
    spec, data = _heatmap(at)
    mark = lambda layer: layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]  # noqa: E731
    text_layer = next(layer for layer in spec["layer"] if mark(layer) == "text")  # the numbers in the cells
    assert text_layer["encoding"]["text"]["field"] == "text"
    assert "Why undefined" in {t["title"] for t in text_layer["encoding"]["tooltip"]}
    cells = {(c["a"], c["b"]): c for c in data}
    assert cells[("ann1", "ann2")]["text"] == "—" and "0/0" in cells[("ann1", "ann2")]["why"]
    assert cells[("ann1", "ann3")]["text"] == "0.000" and cells[("ann3", "ann1")]["why"] == ""
    report = next(d.value for d in at.dataframe if "Report" in d.value.columns)
    assert list(report.columns) == ["Statistic", "Value", "Band", "Report"]  # no undefined row: no "Why" column
    fleiss = report[report["Statistic"] == "Fleiss kappa"].iloc[0]
    assert fleiss["Value"] == "-0.500" and fleiss["Report"] == "comparison"
    randolph = report[report["Statistic"] == "Randolph free-marginal kappa"].iloc[0]
    assert randolph["Report"] == "Report (InstructIR Table 7)"
    assert at.selectbox(key="mon_question").format_func("validity") == "Valid instruction"


def _no_none(at) -> None:
    """No ``None`` (or NaN) reaches the lead: not in a table cell, not in a heading, caption or alert
    (the texts of the data, shown literally, may say "None of these recipes...")."""
    import re
    for kind in ("title", "subheader", "caption", "markdown", "info", "warning", "error", "success"):
        for e in getattr(at, kind):
            assert not re.search(r"\bNone\b|\bnan\b", e.value), e.value
    for d in at.dataframe:
        cells = {str(v) for v in d.value.astype(str).to_numpy().ravel()}
        assert not cells & {"None", "nan", "NaN", "<NA>", "NaT"}, list(d.value.columns)


def _frame(at, column):
    """The table that has ``column``."""
    return next(d for d in at.dataframe if column in d.value.columns)


def _monitor(db, study_id=None, tab=None):
    """The Monitor page signed in as the lead, on study ``study_id`` and with ``tab`` open if given."""
    at = app("pages/monitor.py")
    at.session_state["user"] = user_row(db, "lead")
    if tab:
        at.session_state["mon_tab"] = tab
    at.run()
    if study_id is not None:
        at.selectbox(key="mon_study").set_value(study_id).run()
    assert not at.exception
    return at


def test_disagreements_read_as_words_with_the_texts(env_db):
    db, r = env_db
    label_demo(db, r["study_id"])  # validity: ann1, ann2 Yes; ann3 No
    at = _monitor(db, tab="Disagreements")
    dis = _frame(at, "Votes").value
    assert list(dis.columns) == ["Question", "Votes", "Disagreement", "Decision", "Instruction"]
    valid = dis[dis["Question"] == "Valid instruction"]
    assert set(valid["Votes"]) == {"Yes 2 · No 1"} and set(valid["Decision"]) == {"Yes (majority)"}
    assert set(valid["Disagreement"]) == {0.33}  # 1 - 2/3
    assert not any("{" in v for v in dis["Votes"])  # no JSON
    from storage import projects
    inst = projects.get_instance(db, 1, "q-kohl_2")
    assert inst["instruction"][:40] in " ".join(dis["Instruction"])  # the instruction's text, not its id
    # a 1-1-1 tie on the best passage: no decision, said with its reason
    tie = dis[dis["Votes"] == "d-kohl-1 1 · d-kohl-2 1 · d-kohl-3 1"].iloc[0]
    assert tie["Decision"] == "— tie: no majority, for a lead to decide" and tie["Disagreement"] == 0.67
    help_ = json.loads(_frame(at, "Votes").proto.columns)["Disagreement"]["help"]
    assert "most common answer" in help_
    _no_none(at)


def test_statistics_carry_their_meaning_and_an_empty_study_shows_dashes_with_the_reason(env_db):
    db, r = env_db
    from annotation.studies import StudySettings, create_study
    empty = create_study(db, project=get_project(db, "demo"), questions=["validity"], annotators=["ann1", "ann2", "ann3"],
                         name="empty", settings=StudySettings(group_fraction=1.0, per_group=1, seed=5))
    at = _monitor(db, empty["study_id"])
    t7 = _frame(at, "95% interval")
    rows = t7.value
    assert list(rows["Value"]) == ["—", "—"] and set(rows["Why undefined"]) == {"no labels yet"}
    help_ = json.loads(t7.proto.columns)["Statistic"]["help"]
    assert "Randolph's free-marginal kappa" in help_ and "Range -1 to 1" in help_
    open_tab(at, "Annotators")
    annotators = _frame(at, "Done").value
    assert set(annotators["Median s"]) == {"— none yet"}
    assert set(annotators["Agreement"]) == {"— none yet"}
    _no_none(at)


def test_heading_names_the_benchmarks_own_table(env_db):
    db, _ = env_db
    from annotation.demo import demo_bundle, demo_data
    from annotation.studies import StudySettings, create_study
    from storage import projects
    projects.import_bundle(db, "ifir-demo", demo_bundle(demo_data()), fmt="demo", kind="ifir")
    s = create_study(db, project=get_project(db, "ifir-demo"), questions=["passage_match", "naturalness"],
                     annotators=["ann1", "ann2", "ann3"], settings=StudySettings(group_fraction=1.0, naturalness="likert"))
    at = _monitor(db, s["study_id"])
    heads = [h.value for h in at.subheader]
    assert "Agreement (IFIR Table 2 questions)" in heads and not any("InstructIR" in h for h in heads)
    assert "Human verification (InstructIR Table 7)" in [h.value for h in _monitor(db, 1).subheader]


def test_the_design_aware_estimate_replaces_the_extrapolation(env_db):
    """THE benchmark-wide estimate is the design-aware one, shown where the Wilson-only extrapolation
    table was (after the agreement table); the naive interval is only a labelled comparison column."""
    from annotation.estimates.benchmark import benchmark_estimates
    db, r = env_db
    label_demo(db, r["study_id"])  # validity: 2 Yes, 1 No on each of the 8 items -> 8 of 8 valid
    at = _monitor(db)
    assert not at.exception
    # its tab comes right after the Table 7 view's, and opens on it
    assert [t.label for t in at.tabs][:2] == ["Agreement", "Benchmark estimate"]
    open_tab(at, "Benchmark estimate")
    assert not at.exception
    heads = [h.value for h in at.subheader]
    assert not any("Extrapolation" in h or "Wilson" in h for h in heads)
    assert heads.index("Benchmark-wide estimates (design-aware 95%)") == 0
    table = _frame(at, "95% CI (design)").value
    assert "Naive CI (independent, Wilson; comparison only)" in table.columns
    valid = table[table["Estimate"] == "valid instruction"].iloc[0]
    e = next(e for e in benchmark_estimates(db, r["study_id"])["estimates"] if e["question"] == "validity")
    assert valid["Share"] == "1.000" and valid["95% CI (design)"] == f"[{e['low']:.3f}, {e['high']:.3f}]"
    n = e["naive_independent"]
    assert valid["Naive CI (independent, Wilson; comparison only)"] == f"[{n['low']:.3f}, {n['high']:.3f}]"
    # Wilson for 8 of 8 by hand: [n / (n + z^2), 1] = [8 / 11.84, 1]
    assert n["low"] == pytest.approx(8 / (8 + 1.959963984540054 ** 2))


def test_a_long_disagreement_or_reason_table_shows_one_page_and_says_how_many(env_db, monkeypatch):
    # a study of 100,000 labels has tens of thousands of disagreements: the page draws PAGE_ROWS of
    # them (here 3: the demo's 8 validity disagreements make 3 pages, its 8 x 3 = 24 reasons 8 pages)
    from annotation.monitoring import view as monitor_view
    db, r = env_db
    label_demo(db, r["study_id"])  # validity: ann1, ann2 Yes, ann3 No, each with a reason, on each of 8 screens
    monkeypatch.setattr(monitor_view, "PAGE_ROWS", 3)
    at = _monitor(db, tab="Disagreements")
    at.multiselect(key="mon_dis_filter").set_value(["Valid instruction"]).run()
    assert len(_frame(at, "Votes").value) == 3
    assert "Rows 1-3 of 8 disagreements (page 1 of 3)" in " ".join(c.value for c in at.caption)
    open_tab(at, "Reasons")
    reasons = _frame(at, "Reason").value
    assert len(reasons) == 3 and set(reasons["Reason"]) == {"<b>not</b> a *user*"}  # literal, not HTML
    assert "Rows 1-3 of 24 reasons (page 1 of 8)" in " ".join(c.value for c in at.caption)
    open_tab(at, "Disagreements")  # the filter chosen before is kept while the tab was closed
    assert at.multiselect(key="mon_dis_filter").value == ["Valid instruction"]
    assert "Rows 1-3 of 8 disagreements (page 1 of 3)" in " ".join(c.value for c in at.caption)
    at.number_input(key="mon_dis_page").set_value(3).run()
    assert not at.exception
    assert len(_frame(at, "Votes").value) == 2  # rows 7 and 8
    assert "Rows 7-8 of 8 disagreements (page 3 of 3)" in " ".join(c.value for c in at.caption)
    open_tab(at, "Reasons")
    at.text_input(key="mon_reason_filter").set_value("no match").run()
    assert not at.exception
    assert any(c.value.startswith("No reason contains") and "no match" in c.value for c in at.caption)
    _no_none(at)


def test_every_header_of_the_monitor_says_what_it_means(env_db):
    """Every column of every table of the Monitor has its definition on hover (one glossary), the
    bootstrap control is folded away, and a straight-lining annotator is flagged in words."""
    db, r = env_db
    label_demo(db, r["study_id"])  # ann1 and ann2 answer validity Yes to everything, ann3 No
    at = _monitor(db)
    missing, tables = [], 0
    for tab in MONITOR_TABS:  # every tab's tables
        open_tab(at, tab)
        assert not at.exception
        for d in at.dataframe:
            tables += 1
            config = json.loads(d.proto.columns) if d.proto.columns else {}
            for c in list(d.proto.column_order) or d.value.columns:  # the columns shown
                if not (config.get(c) or {}).get("help"):
                    missing.append((tab, c))
    assert missing == [] and tables >= 6
    open_tab(at, "Agreement")
    assert [e.label for e in at.expander if "bootstrap" in e.label.lower() or "precision" in e.label.lower()]
    band = json.loads(_frame(at, "Band").proto.columns)["Band"]["help"]
    assert "Landis & Koch" in band and "0.41 to 0.60 moderate" in band


def test_a_straight_lining_annotator_is_flagged_on_the_monitor(env_db):
    import time

    from annotation import workspace
    from annotation.studies import StudySettings, create_study
    from storage import projects

    db, _ = env_db
    groups = sorted({i["group_id"] for i in projects.instances(db, 1) if "_" in i["instance_id"]})
    sid = create_study(db, project=get_project(db, "demo"), questions=["validity", "naturalness"], annotators=["ann1", "ann2", "ann3"],
                       name="twelve", groups=groups, settings=StudySettings(group_fraction=1.0, per_group=3, seed=2))[
        "study_id"]
    for name in ("ann1", "ann2", "ann3"):
        u = user_row(db, name)
        k = 0
        while (s := workspace.open_screen(db, sid, u)) is not None:
            v = "Yes" if name == "ann1" or k % 3 else "No"  # ann1 says Yes to everything; the others not always
            k += 1
            workspace.submit_screen(db, s, u, {"validity": {"value": v, "reason": "r"},
                                               "naturalness": {"value": v, "reason": "r"}}, started_at=time.time() - 1)
    at = _monitor(db, sid, tab="Annotators")
    flagged = [w.value.replace("\\", "") for w in at.warning if "Straight" in w.value]  # escaped Markdown
    assert len(flagged) == 1 and flagged[0].startswith("**ann1**")
    assert "Straight-lining on Valid instruction: “Yes” to all 12 items" in flagged[0]
    table = _frame(at, "Flag").value
    assert dict(zip(table["Annotator"], table["Flag"])) == {"ann1": "⚑ straight-lining", "ann2": "", "ann3": ""}
    assert dict(zip(table["Annotator"], table["Valid"]))["ann1"] == "Yes 100%"


def test_the_estimates_offer_the_finished_judge_runs_and_name_the_judge(env_db):
    """The estimates section offers the project's finished judge runs (not one still judging) and,
    with one picked, shows the prediction-powered estimate from its stored labels beside the judge's
    model, prompt version and measured kappa -- no file to produce."""
    from annotation.estimates.benchmark import benchmark_estimates
    from evaluation.judges.stored import estimate_answers
    from storage import judge_labels, projects

    db, r = env_db
    sid = r["study_id"]
    label_demo(db, sid)
    every = [i["instance_id"] for i in projects.instances(db, 1) if i["instruction"].strip()]
    runs = []
    for key, answered in (("done", every), ("running", every[:3])):
        run, _ = judge_labels.find_or_create_run(
            db, project_id=1, question="validity", judge="chat", model=f"judge-{key}", base_url="",
            prompt_version="instructir-fig9a-q1", prompt_hash="abc", prompt={}, parameters={}, config_key=key,
            created_by="test")
        judge_labels.add_items(db, run["id"], [{"instance_id": i, "question": "validity"} for i in every])
        judge_labels.store_labels(db, run["id"], [{"instance_id": i, "question": "validity", "value": "Yes",
                                                   "raw": "Yes", "score": None} for i in answered])
        runs.append(run["id"])
    at = _monitor(db, tab="Benchmark estimate")
    picker = at.multiselect(key="mon_estimates_judge")
    assert picker.options == [f"run {runs[0]}: validity, chat judge-done, prompt instructir-fig9a-q1 ({len(every)} answers)"]
    picker.set_value([runs[0]]).run()
    assert not at.exception
    row = _frame(at, "Prediction-powered share").value.iloc[0]
    e = next(e for e in benchmark_estimates(db, sid, judge=estimate_answers(db, [runs[0]]))["estimates"]
             if e["question"] == "validity")["ppi_design"]
    assert row["Estimate"] == "valid instruction" and row["Prediction-powered share"] == f"{e['share']:.3f}"
    assert row["95% CI (prediction-powered)"] == f"[{e['low']:.3f}, {e['high']:.3f}]"
    assert row["Judge"] == f"run {runs[0]}: judge-done, prompt instructir-fig9a-q1"
    assert row["Cohen kappa [95% CI]"].startswith("—")  # every human and the judge say Yes: kappa undefined
    _no_none(at)


def test_only_the_open_tab_is_computed_and_each_tab_keeps_its_choices(env_db, monkeypatch):
    """On a 100,000-label study each section costs tenths of a second: the page computes only the
    section of the tab the lead has open (the others' functions are not called), opens the tab the
    address names (a reload or a shared link), and keeps a closed tab's choices."""
    from annotation.monitoring import habits, monitor, scales, view
    from ui import estimates_view, judge_view

    db, r = env_db
    label_demo(db, r["study_id"])
    calls: list[str] = []

    def counted(module, name):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, **k: calls.append(name) or real(*a, **k))

    sections = {"Agreement": "table7", "Benchmark estimate": "render_estimates", "Annotators": "annotator_habits",
                "Disagreements": "disagreement_questions", "Reasons": "reason_page", "Judge": "render_judge_section"}
    for module, name in ((monitor, "table7"), (estimates_view, "render_estimates"), (scales, "scale_summary"),
                         (habits, "annotator_habits"), (view, "disagreement_questions"), (view, "reason_page"),
                         (judge_view, "render_judge_section")):
        counted(module, name)
    at = _monitor(db)
    assert at.session_state["mon_tab"] == "Agreement" and "mon_tab" not in at.query_params  # the first tab
    assert calls == ["table7"] and [t.label for t in at.tabs] == list(MONITOR_TABS)
    at.selectbox(key="mon_question").set_value("naturalness").run()
    for tab, name in sections.items():
        calls.clear()
        open_tab(at, tab)
        assert not at.exception, tab
        expected = [name, "scale_summary"] if tab == "Benchmark estimate" else [name]
        assert calls == expected, tab
        assert at.subheader, tab  # the section is drawn
        # above and below every tab: the bootstrap control, closing or deleting the study
        assert {"Advanced: precision of the intervals", "Close or delete this study"} <= {e.label for e in at.expander}, tab
    # back on the first tab: the question chosen before the trip through the other tabs
    open_tab(at, "Agreement")
    assert at.selectbox(key="mon_question").value == "naturalness"
    assert any(c.get("title") == "Label distribution" for c in map(lambda c: json.loads(c.proto.spec), at.get("vega_lite_chart")))
    open_tab(at, "Reasons")  # the study closed from a tab other than the first
    at.button(key=f"mon_close:{r['study_id']}").click().run()
    assert not at.exception and at.session_state["mon_tab"] == "Reasons"
    from storage import studies
    assert studies.get_study(db, r["study_id"])["closed_at"]
    # an address naming a tab opens it, in a new session
    calls.clear()
    linked = app("pages/monitor.py")
    linked.session_state["user"] = user_row(db, "lead")
    linked.query_params["mon_tab"] = "Annotators"
    linked.run()
    assert not linked.exception and linked.session_state["mon_tab"] == "Annotators"
    assert calls == ["annotator_habits"] and "Annotators" in [h.value for h in linked.subheader]
    _no_none(linked)
