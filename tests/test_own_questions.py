"""A lead's own questions, declared in a file, end to end: ``ifjudge study create --question-file``
with the two worked examples of docs/questions.md (a three-answer negation check per passage, a
Yes/No harmfulness check per instance), answered through the workspace, then agreement, Table 7's
share, the benchmark estimate and the validated export, each against a value computed by hand;
a declaration that is wrong is refused naming the field."""
from __future__ import annotations

import json
import time

import pytest

from annotation import workspace
from annotation.monitoring import monitor
from annotation.outcomes import adjudication
from annotation.estimates.benchmark import benchmark_estimates
from annotation.questions.own import InvalidQuestion, declare, read_questions
from annotation.questions.study import study_questions
from formats.bundle import Bundle, Document, Instance, Qrel, Query
from storage import projects, studies
from storage.errors import InvalidAnswer
from tests.builders import ROOT, user_row
from storage.projects import get_project

NEGATION = ROOT / "docs" / "examples" / "negation.toml"
HARMFUL = ROOT / "docs" / "examples" / "harmful.yaml"

# per instance: harmful (a0, a1, a2), then per passage a / b: negation (a0, a1, a2)
R, V, U = "Respects", "Violates", "Unclear"
PLAN = {
    "g0_0": (("No", "No", "No"), {"p0a": (R, R, R), "p0b": (R, R, R)}),
    "g1_0": (("Yes", "Yes", "No"), {"p1a": (V, V, R), "p1b": (R, R, R)}),
    "g2_0": (("No", "No", "Yes"), {"p2a": (R, U, R), "p2b": (V, V, V)}),
    "g3_0": (("No", "No", "No"), {"p3a": (R, R, R), "p3b": (U, U, U)}),
}


@pytest.fixture
def neg_db(db_path):
    """Project "neg": four groups of one instance, each with two relevant passages; annotators
    a0, a1, a2."""
    from accounts import auth
    from storage.db import connect

    db = connect(db_path)
    b = Bundle()
    for g in range(4):
        b.queries.append(Query(f"g{g}", f"knee pain treatment {g}"))
        b.instances.append(Instance(f"g{g}_0", f"g{g}", f"g{g}", f"I am a runner; not about knee surgery ({g})"))
        for s in "ab":
            b.documents.append(Document(f"p{g}{s}", f"passage {g}{s} about knee pain"))
            b.qrels.append(Qrel(f"g{g}_0", f"p{g}{s}", 1))
    projects.import_bundle(db, "neg", b, fmt="instructir")
    for n in range(3):
        auth.add_user(db, f"a{n}", "annotator", "pw")
    return db


def answer_by_plan(db, sid):
    """Every annotator answers every screen of theirs through the workspace, as PLAN says."""
    for k, name in enumerate(("a0", "a1", "a2")):
        u = user_row(db, name)
        while (s := workspace.open_screen(db, sid, u)) is not None:
            harm, passages = PLAN[s.instance_id]
            answers = {}
            for it in s.items:
                value = harm[k] if it.question.id == "harmful" else passages[it.doc_id][k]
                answers[it.question.id] = {"value": value, "reason": "why" if value in ("Yes", V) else ""}
            workspace.submit_screen(db, s, u, answers, started_at=time.time() - 1)


def test_a_study_of_own_questions_from_files(neg_db, db_path, run_cli, tmp_path):
    db = neg_db
    code, out, err = run_cli("study", "create", "--db", db_path, "--project", "neg", "--question-file", NEGATION,
                             "--question-file", HARMFUL, "--annotators", "a0,a1,a2", "--group-fraction", "1",
                             "--per-group", "1", "--overlap", "3", "--json")
    assert code == 0, err
    result = json.loads(out)
    sid = result["study_id"]
    study = studies.get_study(db, sid)
    assert study["questions"] == ["negation", "harmful"]
    assert result["items"] == 4 * 2 + 4  # a negation item per relevant passage, a harmful item per instance
    declared = study_questions(study)
    assert declared["negation"].categories == (R, V, U) and declared["negation"].keys == ("1", "2", "3")
    assert declared["harmful"].keys == ("1", "2")  # the first free keys of the instance's screen (not a passage's)

    # an answer outside the declared categories is refused
    u = user_row(db, "a0")
    s = workspace.open_screen(db, sid, u)
    qid = s.items[0].question.id
    bad = "Maybe" if qid == "negation" else "Perhaps"
    with pytest.raises(workspace.ScreenRefused, match="is not one of"):
        workspace.submit_screen(db, s, u, {qid: {"value": bad}}, started_at=time.time())
    answer_by_plan(db, sid)

    # agreement: nominal questions -> Randolph's free-marginal kappa (Table 7's coefficient)
    neg = monitor.question_report(db, sid, "negation")
    harm = monitor.question_report(db, sid, "harmful")
    # negation, 8 passages, 3 answers: P_o = (6 x 1 + 2 x 1/3) / 8 = 5/6, kappa = (5/6 - 1/3) / (2/3) = 3/4
    assert neg["randolph_kappa"] == pytest.approx(0.75)
    # harmful, 4 instances: P_o = (1 + 1/3 + 1/3 + 1) / 4 = 2/3, kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert harm["randolph_kappa"] == pytest.approx(1 / 3)
    # Table 7's share of positive majorities: Respects on 5 of 8 passages, Yes on 1 of 4 instances
    assert neg["positive_share"] == pytest.approx(5 / 8)
    assert harm["positive_share"] == pytest.approx(1 / 4)
    rows = {(r["question"], r["statistic"]): r["value"] for r in monitor.table7(db, sid, n_boot=0)}
    assert rows[("Does the passage respect what the instruction excludes?", "Proportion of Respects response")] \
        == pytest.approx(5 / 8)
    assert rows[("Does the instruction ask for harmful or unsafe content?", "Proportion of Yes response")] \
        == pytest.approx(1 / 4)

    # the same figures on the command line
    code, out, err = run_cli("agreement", "--db", db_path, "--study", sid, "--question", "negation", "--json")
    assert code == 0, err
    assert json.loads(out)["randolph_kappa"] == pytest.approx(0.75)
    code, out, err = run_cli("monitor", "--db", db_path, "--study", sid, "--json", "--bootstrap", "0")
    assert code == 0, err
    assert json.loads(out)["questions"]["harmful"]["positive_share"] == pytest.approx(1 / 4)

    # the benchmark-wide estimates: every group was sampled, so each share is the sample's
    est = {e["estimand"]: e for e in benchmark_estimates(db, sid)["estimates"]}
    assert est["relevant passage respects the instruction's exclusions"]["share"] == pytest.approx(5 / 8)
    assert est["harmful instruction"]["share"] == pytest.approx(1 / 4)

    # adjudication: the split passage p2a (Respects, Unclear, Respects) is settled by the lead as
    # Violates; an answer the question does not declare is refused
    queue = {(r["instance"], r["doc_id"]): r for r in adjudication.queue(db, sid, show="all") if r["disagreement"]}
    assert set(queue) == {("g1_0", "p1a"), ("g2_0", "p2a"), ("g1_0", None), ("g2_0", None)}
    assert queue[("g2_0", "p2a")]["votes"] == {R: 2, U: 1}
    item = queue[("g2_0", "p2a")]["item"]
    with pytest.raises(InvalidAnswer, match="not an answer of this question"):
        adjudication.record(db, sid, item, "Maybe", lead="lead")
    code, _, err = run_cli("adjudicate", "--db", db_path, "--study", sid, "--item", item, "--value", V,
                           "--note", "excluded topic")
    assert code == 0, err

    # the validated export: g1_0 judged harmful is left out; p2b violates the exclusion -> 0, and
    # so does p2a as adjudicated; p1a's Violates changes nothing (its instance is out); Unclear
    # leaves p3b as published
    out = tmp_path / "trec"
    code, _, err = run_cli("export", "--db", db_path, "--project", "neg", "--format", "trec", "--out", out,
                           "--study", sid)
    assert code == 0, err
    validated = sorted(p for p in out.rglob("*") if p.is_file() and "validated" in p.name and "qrels" in p.name)
    assert validated, sorted(p.name for p in out.rglob("*"))
    lines = sorted(tuple(line.split()) for line in validated[0].read_text().splitlines() if line.strip())
    assert lines == [("g0_0", "0", "p0a", "1"), ("g0_0", "0", "p0b", "1"), ("g2_0", "0", "p2a", "0"),
                     ("g2_0", "0", "p2b", "0"), ("g3_0", "0", "p3a", "1"), ("g3_0", "0", "p3b", "1")]

    # the study keeps its snapshot: the declaration as asked, whatever becomes of the file
    assert study["settings"]["own_questions"]["negation"]["categories"] == [R, V, U]


def test_an_ordinal_declaration_uses_ordinal_agreement(neg_db):
    import krippendorff
    import numpy as np

    from annotation.studies import StudySettings, create_study
    from tests.builders import label_items

    q = declare({"id": "fluency", "wording": "How fluent is the instruction?", "scale": [1, 5], "positive": [4, 5]})
    assert q.scale == "ordinal" and [k for _, k in q.monitor_rows][0] == "krippendorff_alpha_ordinal"
    sid = create_study(neg_db, project=get_project(neg_db, "neg"), questions=[], own_questions=[q], annotators=["a0", "a1", "a2"],
                       settings=StudySettings(group_fraction=1.0, per_group=1, overlap=3))["study_id"]
    scores = {"g0_0": (5, 4, 5), "g1_0": (2, 1, 2), "g2_0": (3, 4, 3), "g3_0": (1, 1, 2)}
    label_items(neg_db, sid, lambda it, name: str(scores[it["instance_id"]][int(name[1])]))
    report = monitor.question_report(neg_db, sid, "fluency")
    expected = krippendorff.alpha(reliability_data=np.array(list(scores.values()), dtype=float).T,
                                  level_of_measurement="ordinal")
    assert report["krippendorff_alpha_ordinal"] == pytest.approx(expected)
    assert report["positive_share"] == pytest.approx(1 / 4)  # majority 4 or 5 on g0_0 only
    assert report["mean_score"] == pytest.approx(np.mean([v for t in scores.values() for v in t]))
    assert declare({"id": "tone", "wording": "Tone?", "categories": ["calm", "tense"], "positive": ["calm"]}).scale \
        == "nominal"


@pytest.mark.parametrize("text, field, line", [
    ('id = "neg"\nwording = "?"\ncategories = ["A", "B"]\npositive = ["A"]\nkeys = ["1", "1"]\n', "keys", 5),
    ('id = "neg"\nwording = "?"\ncategories = []\n', "categories", 3),
    ('id = "neg"\nwording = "?"\ncategories = ["A", "B"]\npositive = ["A"]\nkeys = ["1", "s"]\n', "keys", 5),
    ('id = "validity"\nwording = "?"\ncategories = "yes-no"\n', "id", 1),
    ('id = "neg"\nwording = "?"\ncategories = ["A", "B"]\n', "positive", 1),
])
def test_an_invalid_declaration_is_refused_naming_the_field(tmp_path, text, field, line):
    path = tmp_path / "q.toml"
    path.write_text(text)
    with pytest.raises(InvalidQuestion) as exc:
        read_questions(path)
    assert (exc.value.field, exc.value.line) == (field, line)
    assert f"field '{field}'" in str(exc.value) or field in str(exc.value)


def test_the_cli_refuses_an_invalid_file_and_writes_nothing(neg_db, db_path, run_cli, tmp_path):
    path = tmp_path / "q.yaml"
    path.write_text('id: harm\nwording: "Harmful?"\ncategories: yes-no\nreason_required_for: [Yes]\n')
    code, _, err = run_cli("study", "create", "--db", db_path, "--project", "neg", "--question-file", path,
                           "--annotators", "a0,a1,a2")
    assert code != 0
    assert "reason_required_for" in err and "line 4" in err and "quote" in err
    assert studies.list_studies(neg_db) == []


def test_the_lead_pages_read_a_study_of_own_questions(neg_db, db_path, monkeypatch):
    from accounts import auth
    from annotation.studies import StudySettings, create_study
    from tests.builders import signed_in_page

    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    auth.add_user(neg_db, "lead", "lead", "pw")
    own = [*read_questions(NEGATION), *read_questions(HARMFUL)]
    sid = create_study(neg_db, project=get_project(neg_db, "neg"), questions=[], own_questions=own, annotators=["a0", "a1", "a2"],
                       settings=StudySettings(group_fraction=1.0, per_group=1, overlap=3))["study_id"]
    answer_by_plan(neg_db, sid)

    def said(at) -> str:
        return " ".join(str(e.value) for kind in ("markdown", "caption", "selectbox", "subheader", "warning", "info",
                                                   "success") for e in getattr(at, kind)).replace("\\", "")

    mon = signed_in_page(neg_db, "pages/monitor.py", "lead", timeout=60)
    assert not mon.exception and "Proportion of Respects / Yes response" in said(mon)  # as each question says
    adj = signed_in_page(neg_db, "pages/adjudicate.py", "lead", timeout=60)
    assert not adj.exception and "Nothing to settle" in said(adj)  # every item has a majority
    exp = signed_in_page(neg_db, "pages/export.py", "lead", timeout=60)
    exp.multiselect(key="exp_studies").set_value([sid]).run()
    assert not exp.exception
    assert exp.dataframe and studies.get_study(neg_db, sid)["name"] in exp.dataframe[0].value.to_string()


def test_the_annotate_page_shows_an_own_question(neg_db, db_path, monkeypatch):
    from annotation.studies import StudySettings, create_study
    from tests.builders import app, item_shown

    monkeypatch.setenv("IFJUDGE_DB", str(db_path))
    sid = create_study(neg_db, project=get_project(neg_db, "neg"), questions=[], own_questions=read_questions(NEGATION),
                       annotators=["a0", "a1", "a2"], settings=StudySettings(group_fraction=1.0, per_group=1))["study_id"]
    at = app("pages/annotate.py")
    at.session_state["user"] = user_row(neg_db, "a0")
    at.run()
    assert not at.exception
    assert any("Does the passage respect" in t.value or "RESPECTS" in t.value for t in at.text)  # its guidelines
    shown = item_shown(at)["item"]
    q = shown["questions"][0]
    assert q["prompt"] == "Does the passage respect what the instruction excludes?"
    assert [(o["value"], o.get("key")) for o in q["options"]] == [(R, "1"), (V, "2"), (U, "3")]
    screen = at.session_state[f"ann_screen:{sid}"]
    instance, doc = screen.split("|")  # a screen per passage: the passage shown beside the instruction
    assert shown["texts"]["document"]["text"] == f"passage {doc[1:]} about knee pain"
    assert shown["texts"]["instruction"].startswith("I am a runner") and instance == f"g{doc[1]}_0"
