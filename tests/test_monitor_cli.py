"""``ifjudge monitor --study ID --json`` prints what the monitor page shows, from the same functions."""
from __future__ import annotations

import json

from annotation.monitoring import monitor
from annotation.outcomes.qrels_builds import study_completeness
from tests.builders import label_demo


def test_monitor_json_matches_the_page_functions(demo, db_path, run_cli):
    db, r = demo
    sid = r["study_id"]
    label_demo(db, sid)
    code, out, err = run_cli("monitor", "--db", db_path, "--study", sid, "--json", "--bootstrap", "50")
    assert code == 0, err
    m = json.loads(out)
    assert m["study"]["questions"] == ["validity", "naturalness", "best_passage"]
    done = study_completeness(db, sid)
    assert m["completeness"] == {"labelled": done["labelled"], "planned": done["planned"], "complete": done["complete"]}
    assert m["completeness"]["labelled"] == m["completeness"]["planned"] == 72
    # the Table 7 view, with the same bootstrap replicates and seed as the page
    assert m["table7"] == json.loads(json.dumps(monitor.table7(db, sid, n_boot=50, seed=0)))
    q1 = {row["statistic"]: row for row in m["table7"] if row["question"].startswith("Q1.")}
    assert q1["Proportion of Yes response"]["value"] == 1.0  # every validity majority is Yes (ann1, ann2)
    # Yes, Yes, No on every screen: P_o = 1/3, Randolph (P_o - 1/2) / (1/2) = -1/3
    assert abs(q1["kappa coefficient (Randolph, 2005)"]["value"] + 1 / 3) < 1e-12
    assert m["annotators"] == json.loads(json.dumps(monitor.annotator_table(db, sid)))
    assert {a["annotator"]: a["done"] for a in m["annotators"]} == {"ann1": 8, "ann2": 8, "ann3": 8}
    validity = m["questions"]["validity"]
    assert validity["label_shares"] == monitor.question_report(db, sid, "validity")["label_shares"]
    assert m["disagreements"] == json.loads(json.dumps(monitor.disagreements(db, sid)))
    assert sum(row["question"] == "validity" for row in m["disagreements"]) == 8  # ann3 says No on every screen
    assert {row["reason"] for row in m["reasons"]} == {"<b>not</b> a *user*"}  # untrusted text kept as typed


def test_monitor_text_and_errors(demo, db_path, run_cli):
    db, r = demo
    code, out, _ = run_cli("monitor", "--db", db_path, "--study", r["study_id"], "--bootstrap", "0")
    assert code == 0
    assert "completeness: 0 of 72 planned labels (unfinished)" in out
    assert "kappa coefficient (Randolph, 2005)\t— (no labels yet)" in out
    code, _, err = run_cli("monitor", "--db", db_path, "--study", 99, "--json")
    assert code == 2 and err.startswith("ifjudge: error:") and "99" in err and len(err.strip().splitlines()) == 1


def test_monitor_text_labels_the_extrapolation_as_naive(demo, db_path, run_cli):
    db, r = demo
    label_demo(db, r["study_id"])  # every validity majority is Yes: 0 of 8 invalid
    code, out, err = run_cli("monitor", "--db", db_path, "--study", r["study_id"], "--bootstrap", "0")
    assert code == 0, err
    line = next(x for x in out.splitlines() if " invalid: " in x)
    assert line.startswith("naive extrapolation (independent, Wilson; `ifjudge report` gives the design-aware estimate)")
    assert line.endswith("(0 of 8)")
