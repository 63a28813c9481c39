"""Page logic through Streamlit's AppTest: sign-in, role checks on every page, the annotate page."""
import json

import pytest

from storage.db import write
from tests.builders import app, item_shown, label_demo, make_project, open_tab, passage_id, send, signed_in_page, user_row
from storage.projects import get_project

pytestmark = pytest.mark.both_engines  # each test runs on SQLite and on PostgreSQL
# ``env_db``: the fixture of tests/conftest.py

LEAD_PAGES = ["pages/home.py", "pages/study_setup.py", "pages/monitor.py", "pages/adjudicate.py",
              "pages/export.py", "pages/evaluate.py", "pages/users.py"]
EXPERT_PAGES = ["pages/narratives.py"]


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


@pytest.mark.parametrize("page_path", LEAD_PAGES + EXPERT_PAGES)
def test_lead_pages_refuse_annotators(env_db, page_path):
    db, _ = env_db
    at = app(page_path)
    at.session_state["user"] = user_row(db, "ann1")
    at.run()
    assert [e.value for e in at.error] == ["You do not have access to this page."]
    assert not at.dataframe and not at.title


@pytest.mark.parametrize("page_path", LEAD_PAGES + EXPERT_PAGES + ["pages/annotate.py"])
def test_pages_refuse_anonymous(env_db, page_path):
    at = app(page_path).run()
    assert [e.value for e in at.error] == ["You do not have access to this page."]


def test_lead_sees_project_counts(env_db):
    db, _ = env_db
    at = app("pages/home.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    df = at.dataframe[1].value  # after the studies overview
    row = df[df["Project"] == "demo"].iloc[0]
    assert row["Instances"] == 14 and row["Groups"] == 5 and row["Documents"] == 18


def test_lead_lands_on_an_overview_of_studies_with_progress(env_db):
    db, r = env_db
    label_demo(db, r["study_id"])  # every annotator finished every screen
    at = app("pages/home.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    assert not at.exception
    row = at.dataframe[0].value.iloc[0]  # the overview comes first
    assert row["Study"] == "1: demo: InstructIR validation" and row["Project"] == "demo"
    assert row["Questions"] == "Valid, Natural, Passage"  # short: every column in view at 1280 px
    assert (row["Answers"], row["Done"]) == ("72 of 72", 100.0)
    # progress comes right after the study's name: in view on a 1280 px screen
    assert list(at.dataframe[0].value.columns)[:5] == ["Study", "Done", "Answers", "Awaiting labels", "Ties"]
    assert any(c.value.startswith("Next step for a finished study") for c in at.caption)
    from annotation.outcomes.items import item_outcomes

    # each picks the first passage *shown to them* (orders differ): some best_passage items tie; every item
    # has its three labels, so nothing awaits labels and every unresolved item is a tie
    assert row["Awaiting labels"] == 0
    assert row["Ties"] == sum(o.provenance == "unresolved" for o in item_outcomes(db, r["study_id"])) > 0


def test_expert_lands_on_narratives(env_db):
    db, r = env_db
    at = app("app.py")
    at.session_state["user"] = user_row(db, "expert")
    at.run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Narratives"]


def test_annotate_page_shows_untrusted_text_literally(env_db):
    db, r = env_db
    db.execute("UPDATE instances SET instruction = ?", ["<b>bold</b> *star* # $x$"])
    at = app("pages/annotate.py")
    at.session_state["user"] = user_row(db, "ann1")
    at.run()
    # handed to the item component as text (it sets it with textContent), not as Markdown or HTML
    assert item_shown(at)["item"]["texts"]["instruction"] == "<b>bold</b> *star* # $x$"
    assert all("<b>" not in m.value for m in at.markdown)


def test_annotate_page_refuses_no_without_reason_then_saves(env_db):
    db, r = env_db
    sid = r["study_id"]
    at = signed_in_page(db, "pages/annotate.py", "ann2")
    screen = at.session_state[f"ann_screen:{sid}"]
    answers = {"validity": "Yes", "naturalness": "No", "best_passage": passage_id(at, 2)}
    send(at, "submit", answers)  # one message: every answer of the item
    shown = item_shown(at)
    assert shown["result"]["status"] == "refused" and shown["item"]["screen"] == screen
    assert shown["result"]["problems"] == {
        "naturalness": "Q2 “Is the instruction natural for the given query?”: a reason is required when the answer is No"}
    assert any("Not saved: 1 question to fix" in t.proto.body for t in at.toast)
    send(at, "submit", {**answers, "naturalness": ("No", "too generic")})
    from storage import studies

    labels = studies.current_labels(db, r["study_id"])
    assert {(x["question"], x["value"] if x["question"] != "best_passage" else "*", x["reason"]) for x in labels} == {
        ("validity", "Yes", ""), ("naturalness", "No", "too generic"), ("best_passage", "*", "")}
    assert at.session_state[f"ann_screen:{sid}"] != screen
    shown = item_shown(at)  # the reply is the next item, its answers empty
    assert shown["result"]["status"] == "saved" and shown["item"]["screen"] == at.session_state[f"ann_screen:{sid}"]
    assert shown["item"]["answers"] == {} and shown["ack"] == 2


def test_monitor_shows_table7_charts_and_reasons(env_db):
    db, r = env_db
    label_demo(db, r["study_id"])
    at = app("pages/monitor.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    assert not at.exception
    t7 = at.dataframe[0].value  # the Table 7 view comes first
    assert list(t7["Statistic"])[:2] == ["kappa coefficient (Randolph, 2005)", "Proportion of Yes response"]
    assert t7.iloc[1]["Value"] == "1.000"  # every validity majority is Yes
    # the kappa heatmap and the label distribution under the agreement table
    assert [t.label for t in at.tabs][0] == "Agreement"
    assert sorted(json.loads(c.proto.spec)["title"] for c in at.get("vega_lite_chart")) == [
        "Label distribution", "Pairwise Cohen kappa"]
    # agreement over time (with the others' majority, with each other) in the annotators' tab
    open_tab(at, "Annotators")
    assert not at.exception
    assert len(at.get("vega_lite_chart")) == 2
    open_tab(at, "Reasons")
    reasons = next(d.value for d in at.dataframe if "Reason" in d.value.columns)  # the reasons list
    assert set(reasons["Reason"]) == {"<b>not</b> a *user*"}


def test_adjudicate_records_a_decision_and_moves_on(env_db):
    db, r = env_db
    sid = r["study_id"]
    label_demo(db, sid)  # validity 2 Yes / 1 No: decided by majority, so not in the default queue
    from annotation.outcomes import adjudication
    from storage import studies

    at = app("pages/adjudicate.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    assert not at.exception
    unresolved = [q["item"] for q in adjudication.queue(db, sid)]
    assert at.selectbox(key=f"adj_item:{sid}:unresolved").options == [
        at.selectbox(key=f"adj_item:{sid}:unresolved").format_func(i) for i in unresolved]
    assert {q["question"] for q in adjudication.queue(db, sid)} <= {"best_passage"}  # ties only
    # the majority items are one filter away
    at.session_state[f"adj_show:{sid}"] = "majority"
    at.run()
    validity = [q["item"] for q in adjudication.queue(db, sid, show="majority") if q["question"] == "validity"]
    box = at.selectbox(key=f"adj_item:{sid}:majority")
    box.set_value(validity[0]).run()
    votes = at.dataframe[0].value
    assert list(votes.columns) == ["Annotator", "Answer", "Reason"]  # a table, never a dict
    assert len(votes) == 3 and set(votes["Reason"]) == {"<b>not</b> a *user*"}  # shown literally
    at.button(key=f"adj_opt:{sid}:{validity[0]}:2").click().run()  # option 2: No
    at.text_area(key=f"adj_note:{sid}:{validity[0]}").input("ann3 is right")
    at.button(key=f"adj_record:{sid}:{validity[0]}").click().run()
    assert not at.exception
    assert at.success[0].value.startswith(f"Recorded No for item {validity[0]}. Next: item ")
    adj = studies.adjudications(db, sid)
    assert [(i, a["value"], a["lead"], a["note"]) for i, a in adj.items()] == [(validity[0], "No", "lead", "ann3 is right")]
    assert at.selectbox(key=f"adj_item:{sid}:majority").value != validity[0]  # moved on
    at.run()  # the next run (a key pressed elsewhere): the decision just saved is still in words
    assert any(f"Last decision: item {validity[0]}" in c.value and "→ No" in c.value for c in at.caption)
    # recording without a value is refused in words, nothing written
    nxt = at.selectbox(key=f"adj_item:{sid}:majority").value
    at.button(key=f"adj_record:{sid}:{nxt}").click().run()
    assert [e.value for e in at.error] == ["Choose the final value first (press its key, or click it)."]
    assert len(studies.adjudications(db, sid)) == 1


def test_evaluate_page_runs_bm25_on_two_qrels_versions_and_compares(env_db, db_path, tmp_path, monkeypatch):
    monkeypatch.setenv("IFJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    db, r = env_db
    label_demo(db, r["study_id"])
    from annotation.outcomes.qrels_builds import store_validated_qrels

    store_validated_qrels(db, r["study_id"])
    at = app("pages/evaluate.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    at.multiselect(key="ev_versions").set_value(["original", "validated"])
    at.multiselect(key="ev_templates").set_value(["instruction_query", "query"])
    at.button[0].click().run(timeout=120)
    assert not at.exception and not at.error
    # the page queued one job per template x version; a worker runs them (here in-process)
    queued = [p for p in at.get("progress") if ": queued" in p.proto.text]
    assert len(queued) == 4
    from evaluation.jobs import work

    assert work(db_path, once=True) == 4
    at.run(timeout=120)
    assert not at.exception and not at.error and not at.get("progress")
    # the verdict first, then the views that can move: the checked queries, then every query
    assert at.subheader[0].value == "Verdict" and at.dataframe[0].value.columns[1].startswith("Checked:")
    table = next(d.value for d in at.dataframe if "Qrels version" in d.value.columns)  # (system, version) x measure
    assert len(table) == 4 and set(table["Qrels version"]) == {"original", "validated"} and "nDCG@10" in table.columns
    delta = next(d.value for d in at.dataframe if "Δ nDCG@10" in d.value.columns)
    assert len(delta) == 2 and "Δ nDCG@10" in delta.columns and (delta["Compared queries"] > 0).all()
    # Kendall tau of 2 systems is not shown: the page says why, with n
    assert not [d for d in at.dataframe if "Kendall tau" in d.value.columns]
    assert any("Kendall tau needs at least 3 systems" in c.value and "2 system(s)" in c.value for c in at.caption)
    # published original vs validated, on the queries both judge
    pv = next(d.value for d in at.dataframe if "nDCG@10, validated qrels" in d.value.columns)
    assert len(pv) == 2 and (pv["Compared queries"] > 0).all()
    assert any("built" in c.value and "72/72 labels" in c.value for c in at.caption)
    assert len(at.get("vega_lite_chart")) == 2




def test_annotate_page_keys_never_mean_two_things_and_every_passage_shows(tmp_path, monkeypatch):
    """Likert naturalness beside validity (1/2) and four passages: validity keeps 1/2, the
    passages 5/6/7, the 1-5 scale and the fourth passage are answered by click only."""
    from annotation.studies import StudySettings, create_study
    from storage.db import connect

    path = tmp_path / "keys.db"
    monkeypatch.setenv("IFJUDGE_DB", str(path))
    db = connect(path)
    make_project(db)
    sid = create_study(db, project=get_project(db, "p"), questions=["validity", "naturalness", "best_passage"], annotators=["a0", "a1", "a2"],
                       settings=StudySettings(group_fraction=0.2, overlap=3, passages=4, naturalness="likert"))["study_id"]
    at = app("pages/annotate.py")
    at.session_state["user"] = user_row(db, "a0")
    at.run()
    assert not at.exception
    # each option's label and key, as the item component draws them
    labels = {(q["id"], o["label"]): o["key"] for q in item_shown(at)["item"]["questions"] for o in q["options"]}
    assert labels == {
        ("validity", "Yes"): "1", ("validity", "No"): "2",
        **{("naturalness", v): None for v in "12345"},
        ("best_passage", "Passage 1"): "5", ("best_passage", "Passage 2"): "6", ("best_passage", "Passage 3"): "7",
        ("best_passage", "Passage 4"): None,
    }
    send(at, "submit", {"validity": "Yes", "naturalness": "4", "best_passage": passage_id(at, 4)})
    from storage import studies

    rows = {x["question"]: x for x in studies.current_labels(db, sid)}
    assert rows["validity"]["value"] == "Yes" and rows["naturalness"]["value"] == "4"
    shown = rows["best_passage"]["shown_order"]
    shown = json.loads(shown) if isinstance(shown, str) else shown
    assert len(shown) == 4 and rows["best_passage"]["value"] == shown[3]  # the fourth passage shown


def open_item_as(db, sid: int, name: str):
    """The annotate page of ``name`` run once, and the screen it opened."""
    at = app("pages/annotate.py")
    at.session_state["user"] = user_row(db, name)
    at.run()
    return at, at.session_state[f"ann_screen:{sid}"]


def test_annotate_page_says_so_when_an_expired_claim_was_handed_over(env_db):
    db, r = env_db
    sid = r["study_id"]
    at, screen = open_item_as(db, sid, "ann1")
    answers = {"validity": "Yes", "naturalness": "Yes", "best_passage": passage_id(at, 1)}
    # meanwhile the claim expired and the screen went to someone else
    uid = user_row(db, "ann1")["id"]
    with write(db):
        db.execute("DELETE FROM assignments WHERE user_id = ? AND item_id IN"
                   " (SELECT id FROM items WHERE study_id = ? AND screen = ?)", [uid, sid, screen])
    send(at, "submit", answers)
    assert not at.exception
    result = item_shown(at)["result"]
    assert result["status"] == "notice" and "handed to another annotator" in result["message"] and "not stored" in result["message"]
    from storage import studies

    assert [x for x in studies.current_labels(db, sid) if x["annotator"] == "ann1"] == []
    assert at.session_state[f"ann_screen:{sid}"] not in (None, screen)  # the next item is open
    assert item_shown(at)["item"]["screen"] == at.session_state[f"ann_screen:{sid}"]


def test_annotate_page_shows_a_refused_submit_literally_and_keeps_the_answers(env_db, monkeypatch):
    # e.g. PostgreSQL out of connections: the message quotes a URL whose password is ``***``
    db, r = env_db
    sid = r["study_id"]
    at, screen = open_item_as(db, sid, "ann1")
    from annotation import workspace
    from storage import studies
    from storage.errors import IFJudgeError

    message = "cannot connect to postgresql://ifjudge:***@db/x: *too many* clients [see](docs)"

    def refuse(*args, **kwargs):
        raise IFJudgeError(message)

    monkeypatch.setattr(workspace, "submit_screen", refuse)
    token = item_shown(at)["token"]
    send(at, "submit", {"validity": "Yes"})
    assert not at.exception
    shown = item_shown(at)
    # the message as it is (the component shows it as text), on the same item
    assert shown["result"] == {**shown["result"], "status": "error", "message": message}
    # the same item, drawn as it was (the same token): the browser keeps the answers chosen on it
    assert at.session_state[f"ann_screen:{sid}"] == screen and shown["item"]["screen"] == screen
    assert shown["token"] == token
    assert [x for x in studies.current_labels(db, sid) if x["annotator"] == "ann1"] == []


def test_study_setup_page_creates_a_study_with_edited_guidelines_and_reports_errors(env_db):
    db, _ = env_db
    at = app("pages/study_setup.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    at.button(key="FormSubmitter:study_form-Create study").click().run()  # no annotator chosen
    assert at.error and "annotator" in at.error[0].value.lower()
    at.text_input(key="study_name").input("pilot <b>2</b>")
    at.multiselect(key="study_annotators").set_value(["ann1", "ann2", "ann3"])
    at.number_input(key="study_fraction").set_value(1.0)
    at.text_area(key="study_guideline_validity").input("Say No when the instruction contradicts the query.")
    at.checkbox(key="study_remaining").check()  # the demo study asks 8 of the instances already
    at.button(key="FormSubmitter:study_form-Create study").click().run()
    assert not at.exception and not at.error and not at.json
    # the success names the study and says what it holds, in words (the name shown literally)
    said = at.success[0].value.replace("\\", "")
    assert said.startswith("Study 2 “pilot <b>2</b>” created: ") and "Valid instruction" in said and "ann1" in said
    # the form is emptied: a second click creates no duplicate (no annotator is chosen any more)
    assert at.text_input(key="study_name").value == "" and at.multiselect(key="study_annotators").value == []
    at.button(key="FormSubmitter:study_form-Create study").click().run()
    assert at.error and "annotator" in at.error[0].value.lower() and not at.success
    from storage import studies

    assert len(studies.list_studies(db)) == 2

    s = studies.get_study(db, 2)
    assert s["name"] == "pilot <b>2</b>" and s["settings"]["group_fraction"] == 1.0 and s["settings"]["skip_covered"]
    first = {it["instance_id"] for it in studies.items_of_study(db, 1)}
    assert first and not first & {it["instance_id"] for it in studies.items_of_study(db, 2)}  # nothing asked twice
    assert s["settings"]["guidelines"]["validity"] == "Say No when the instruction contradicts the query."
    assert sorted(s["annotators"]) == ["ann1", "ann2", "ann3"]


def test_study_setup_warns_when_a_question_got_no_item(env_db):
    db, _ = env_db
    at = app("pages/study_setup.py")
    at.session_state["user"] = user_row(db, "lead")
    at.run()
    at.text_input(key="study_name").input("too many passages")
    at.multiselect(key="study_annotators").set_value(["ann1", "ann2", "ann3"])
    at.number_input(key="study_passages").set_value(10)  # more than any group holds: no best-passage item
    at.button(key="FormSubmitter:study_form-Create study").click().run()
    assert [w.value for w in at.warning][0].startswith("This sample would ask again about")  # the demo study's
    at.button(key="study_create_anyway").click().run()
    assert not at.exception and not at.error
    assert not at.success  # a warning, not a green success
    said = [w.value.replace("\\", "") for w in at.warning]
    assert said[0].startswith("Study 2 “too many passages” created: ") and "Most natural passage 0" in said[0]
    assert any(w.startswith("Most natural passage got 0 items") for w in said)
    notes = next(e for e in at.expander if e.label.startswith("Notes from the sampler ("))
    assert "no best_passage item" in notes.text[0].value
