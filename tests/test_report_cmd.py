"""``ifjudge report``: the benchmark-wide estimates and the leaderboard change, as JSON and as
Markdown with the design, the methods and the counts; bad input is refused with a clear message."""
from __future__ import annotations

import json

import pytest

from storage import eval_runs, projects
from tests.builders import label_demo


def _runs(db):
    pid = projects.get_project(db, "demo")["id"]
    for version in ("original", "validated"):
        for k, model in enumerate(("bm25", "dense", "tiny|odd")):
            pq = {f"q{i:02d}": {"nDCG@10": (i % 5) / 10 + 0.3 * k} for i in range(12) if version == "original" or i}
            eval_runs.store_eval_run(db, pid, model=model, template="query", settings={}, qrels_version=version,
                                     metrics={"nDCG@10": 0.5}, per_query=pq, run={})


def test_report_json_and_markdown(demo, db_path, run_cli):
    db, r = demo
    label_demo(db, r["study_id"])  # validity: 2 Yes, 1 No on every item -> all valid
    _runs(db)
    code, out, err = run_cli("report", "--db", db_path, "--study", r["study_id"], "--json", "--bootstrap", "100")
    assert code == 0, err
    rep = json.loads(out)
    valid = next(e for e in rep["studies"][0]["estimates"] if e["question"] == "validity")
    assert valid["share"] == 1.0 and valid["n_items"] == 8
    (c,) = rep["leaderboards"][0]["comparisons"]
    assert c["n_queries_published"] == 12 and c["n_queries_validated"] == 11 and c["n_systems"] == 3
    assert rep["methods"]["bootstrap_replicates"] == 100
    code, md, err = run_cli("report", "--db", db_path, "--study", r["study_id"], "--md", "--bootstrap", "100")
    assert code == 0, err
    assert "Design: " in md and "linearised (Taylor) variance" in md and "studentized (bootstrap-t) intervals over queries" in md
    assert "one-sided bootstrap level" in md and "Holm" in md
    assert "| valid instruction | 1.000 |" in md
    assert "original (12 queries) vs validated (11 queries), 3 systems" in md
    assert "tiny\\|odd \\[query\\]" in md  # a system name is data: its pipe cannot break the table
    assert "Kendall tau (published vs validated): 1.000" in md


def test_report_refuses_bad_input(demo, db_path, run_cli, tmp_path):
    db, r = demo
    bad = tmp_path / "judge.csv"
    bad.write_text("instance_id,question\nq-run_1,validity\n")
    code, out, err = run_cli("report", "--db", db_path, "--study", r["study_id"], "--judge", bad, "--md")
    assert code == 2 and out == ""
    assert "judge.csv" in err and "line 1" in err and "value" in err
    code, out, err = run_cli("report", "--db", db_path, "--study", 99, "--json")
    assert code == 2 and "no study with id 99" in err


def test_report_with_a_judge(demo, db_path, run_cli, tmp_path, capsys):
    db, r = demo
    label_demo(db, r["study_id"])
    judge = tmp_path / "judge.csv"
    every = ["f-robot-changed", "f-robot-og"] + [f"q-{g}_{k}" for g in ("endo", "kohl", "run", "sol") for k in (1, 2, 3)]
    judge.write_text("instance_id,question,value\n" + "".join(f"{i},validity,Yes\n" for i in every))
    code, md, err = run_cli("report", "--db", db_path, "--study", r["study_id"], "--judge", judge, "--md")
    assert code == 0, err
    assert "weight lam = 0.5 fixed before the data" in md and "this is the interval to cite" in md
    code, tuned, err = run_cli("report", "--db", db_path, "--study", r["study_id"], "--judge", judge, "--md",
                               "--judge-weight", "tuned")
    assert code == 0, err
    assert "cross-fitted over 5 folds of query groups" in tuned and "lam = 0.5" not in tuned
    with pytest.raises(SystemExit) as stop:
        run_cli("report", "--db", db_path, "--study", r["study_id"], "--judge", judge, "--md", "--judge-weight", "2")
    assert stop.value.code == 2
    assert "--judge-weight: a number from 0 to 1, or 'tuned'; got '2'" in capsys.readouterr().err
    def row(text):
        return next(line for line in text.splitlines() if line.startswith("| valid instruction | ") and line.endswith("| 14 |"))

    # the judge says Yes to all 14 items of the population and agrees with all 8 human decisions (Cohen
    # kappa 0/0: every answer Yes). At lam = 1/2 the share is (A + J + D) / 2 = (1 + 1 + 0) / 2 and the
    # interval narrower than the humans' own; tuned, its answers never vary, every fold's weight is 0
    # and the interval is the humans' own
    assert "| 1.000 | [0.797, 1.000] | [0.629, 1.000] | 0.500 | 1.000 | 1.000 | — | 14 |" in row(md)
    assert "| 0.000 | 1.000 | 1.000 | — | 14 |" in row(tuned)
    cells = row(tuned).split(" | ")
    assert cells[2] == cells[3]  # prediction-powered CI = design CI of the humans alone
