"""Undefined is said once: the measures return Undefined(reason), the stored evaluation keeps null
with the reason beside it, the nested blocks read as Result records, and every screen, command and
report shows one word ("—") with the reason."""
from __future__ import annotations

import io
import json
import re
import shutil
import tokenize
from pathlib import Path

import pytest

from cli.output import eval_run_lines, fmt_value, infosearch_lines, table2_lines
from evaluation import results
from evaluation.instfol import instfol
from evaluation.robustness import robustness
from evaluation.subsets import over_subsets
from evaluation.undefined import UNDEFINED, Undefined, as_json, json_null, show, show_why

ROOT = Path(__file__).resolve().parent.parent
INFOSEARCH = ROOT / "tests" / "fixtures" / "importers" / "infosearch"
NO_POSITIVE = "no query has a document relevant under both instructions"
# the spellings undefined had before it had one: a bare word as a value, "undefined: why", "undefined (why)", "-".
# A reason may itself say "undefined with 5 queries" (stored text): that is not a value's spelling.
OTHER_SPELLING = re.compile(r"\bundefined\b(?! with)|(?:^|\t| )-(?:$|\t| \()", re.M)


def assert_one_word(text: str, *reasons: str) -> None:
    """TEXT says undefined only as "—", each reason in parentheses right after it."""
    assert not OTHER_SPELLING.search(text), OTHER_SPELLING.search(text)
    for reason in reasons:
        assert f"{UNDEFINED} ({reason})" in text, (reason, text)


# ---- the measures return Undefined with their reason ---------------------------------------------

def test_robustness_without_an_evaluated_group_is_undefined_with_its_reason():
    r = robustness({"a_1": {"d1": 1}, "b_1": {"d1": 1}}, {"c_1": {"d1": 1.0}}, k=10)
    assert r["Robustness@10"] == Undefined("no group has an instance in the run")
    assert r["nDCG@10"] == Undefined("no instance is in both the qrels and the run")
    assert r["n_groups"] == 0 and r["empty_groups"] == ["a", "b"]


def test_instfol_and_the_means_over_subsets_without_a_value_are_undefined_with_their_reason():
    empty = instfol([], max_score=3)
    assert empty["INSTFOL"] == Undefined("no query has scored passages in both modes") and empty["n_queries"] == 0
    assert json.loads(json.dumps(empty, default=json_null))["INSTFOL"] is None  # the CLI's JSON: null, as before
    means = over_subsets({"a": {"metrics": {"m": None, "n": 2}}, "b": {"metrics": {"m": None, "n": 3}}}, ["m", "n"],
                         summed=["n"])
    assert means == {"m": Undefined("no subset has a value"), "n": 5}


def test_json_keeps_null_with_the_reason_beside_it():
    out = as_json({"p-MRR": Undefined("0/0"), "n_queries": 0})
    assert out == {"p-MRR": None, "n_queries": 0, "undefined": {"p-MRR": "0/0"}}
    assert json.loads(json.dumps(out)) == out


# ---- through the CLI: one word and the reason, JSON null + reason --------------------------------

def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_eval_commands_say_undefined_once(run_cli, tmp_path):
    qrels = _write(tmp_path / "q.tsv", "q1 0 d1 1\nq1 0 d2 1\n")
    run = _write(tmp_path / "r.trec", "q1 Q0 d1 1 0.9 x\nq1 Q0 d2 2 0.5 x\n")
    code, out, err = run_cli("eval", "pmrr", "--qrels-og", qrels, "--qrels-changed", qrels, "--run-og", run,
                             "--run-changed", run)
    assert code == 0, err
    reason = "no query has a document of original whose label differs in changed"
    assert_one_word(out, reason)
    code, out, _ = run_cli("eval", "pmrr", "--qrels-og", qrels, "--qrels-changed", qrels, "--run-og", run,
                           "--run-changed", run, "--json")
    data = json.loads(out)
    assert data["p-MRR"] is None and data["undefined"] == {"p-MRR": reason}

    # every document relevant originally stays relevant: no negative, p-MRR undefined; WISE and SICR defined
    code, out, err = run_cli("eval", "infosearch", "--qrels-og", qrels, "--qrels-ins", qrels, "--run-ori", run,
                             "--run-ins", run, "--run-rev", run)
    assert code == 0, err
    assert_one_word(out, "no document is relevant originally and not under the instruction")

    other = _write(tmp_path / "other.trec", "z1 Q0 d1 1 0.9 x\n")
    code, out, err = run_cli("eval", "robustness", "--qrels", qrels, "--run", other)
    assert code == 0, err
    assert_one_word(out, "no group has an instance in the run", "no instance is in both the qrels and the run")
    code, out, _ = run_cli("eval", "robustness", "--qrels", qrels, "--run", other, "--json")
    assert json.loads(out)["undefined"]["Robustness@10"] == "no group has an instance in the run"


def test_monitor_command_says_undefined_once(demo, db_path, run_cli):
    _, r = demo
    code, out, err = run_cli("monitor", "--db", db_path, "--study", r["study_id"], "--bootstrap", "0")
    assert code == 0, err
    assert_one_word(out, "no labels yet")


# ---- a stored InfoSearch evaluation with undefined values ---------------------------------------

@pytest.fixture
def no_positive_run(tmp_path):
    """An InfoSearch project whose instructed qrels keep no document relevant: WISE and SICR are
    undefined, p-MRR is not; evaluated once with BM25 (og variant)."""
    from evaluation.runner import run_eval
    from formats.readers import parse
    from storage.db import connect
    from storage.projects import get_project, import_bundle

    src = tmp_path / "infosearch"
    shutil.copytree(INFOSEARCH, src)
    changed = src / "qrels_changed" / "test.tsv"
    lines = changed.read_text().splitlines()
    changed.write_text("\n".join([lines[0], *(line.rsplit("\t", 1)[0] + "\t0" for line in lines[1:])]) + "\n")
    db = connect(tmp_path / "is.db")
    import_bundle(db, "is", parse("infosearch", [src]), fmt="infosearch")
    rid = run_eval(db, get_project(db, "is"), model="bm25", template="instruction_query", qrels_version="original")
    return results.load_run(db, rid)


def test_stored_run_keeps_null_with_the_measures_reason(no_positive_run):
    run = no_positive_run
    why = run["settings"]["evaluation"]["undefined"]
    for name in ("WISE", "SICR", "WISE(qrels='changed')", "SICR(qrels='changed')"):
        assert run["metrics"][name] is None and why[name] == NO_POSITIVE
    assert run["metrics"]["p-MRR"] is not None and "p-MRR" not in why
    # the records say the same
    records = {r.measure: r for r in results.run_results(run)}
    assert records["WISE"].undefined == Undefined(NO_POSITIVE) and records["p-MRR"].undefined is None


def test_nested_blocks_are_result_records(no_positive_run):
    run = no_positive_run
    nested = results.nested_results(run)
    info = run["settings"]["evaluation"]["infosearch"]["by_qrels"]["changed"]
    overall = {r.measure: r for r in nested if r.query_set == results.ALL and r.measure.startswith(("WISE", "SICR"))}
    assert overall["WISE(qrels='changed')"].value is None
    assert overall["WISE(qrels='changed')"].undefined == Undefined(NO_POSITIVE)
    pm = next(r for r in nested if r.measure == "p-MRR(qrels='changed')" and r.query_set == results.ALL
              and r.n_queries == info["overall"]["n_queries_pmrr"])
    assert pm.value == pytest.approx(info["overall"]["p-MRR"])
    # per dimension: each dimension of the stored block is a query set of the records, with its counts
    for dim, row in info["by_dimension"].items():
        recs = {results.base_name(r.measure): r for r in nested
                if r.query_set == dim and r.measure.endswith("(qrels='changed')")}
        assert recs["SICR"].undefined == Undefined(NO_POSITIVE) and recs["SICR"].n_queries == row["n_queries"]
        assert recs["p-MRR"].value == pytest.approx(row["p-MRR"])
    # FollowIR's p-MRR block: one record per changed-side version, with the stored value
    follow = run["settings"]["evaluation"]["p-MRR"]["by_qrels"]["changed"]
    assert results.pmrr_records(run["settings"]["evaluation"]["p-MRR"])[0].value == follow["p-MRR"]
    # and the text of `eval run` prints them with the one word and the reason
    text = "\n".join(eval_run_lines(results.run_summary(run)))
    assert_one_word(text, NO_POSITIVE)


def test_pmrr_records_of_an_undefined_version_carry_its_reason():
    block = {"qrels": ["original", "changed"], "ties": "run-order", "per_query": {"changed": {"q1": 0.5}},
             "by_qrels": {"changed": {"p-MRR": 0.5, "n_queries": 1, "n_documents": 1},
                          "changed-validated": {"p-MRR": None, "n_queries": 0, "n_documents": 0}}}
    recs = results.pmrr_records(block, per_query=True)
    assert [(r.measure, r.query_set, r.value) for r in recs] == [
        ("p-MRR(qrels='changed',ties='run-order')", "all", 0.5), ("p-MRR(qrels='changed',ties='run-order')", "q1", 0.5),
        ("p-MRR(qrels='changed-validated',ties='run-order')", "all", None)]
    assert recs[2].undefined.reason == "no query has a document of original whose label differs in changed-validated"


# ---- every formatter: the screens', the commands', the report's ----------------------------------

def test_every_formatter_shows_one_word():
    from annotation.glossary import cell, undefined
    from exports.benchmark_report import md_cell
    from ui.estimates_view import estimate_rows
    from ui.judge_view import agreement_rows

    for shown in (fmt_value(None), fmt_value(Undefined("0/0")), show(float("nan")), cell(None), undefined(None)[0],
                  md_cell(None)):
        assert shown == UNDEFINED
    assert show_why(Undefined("0/0")) == str(Undefined("0/0")) == f"{UNDEFINED} (0/0)"
    row = {"WISE": 0.5, "SICR": None, "p-MRR": None, "n_queries": 2}
    lines = infosearch_lines(results.infosearch_records({"by_dimension": {"a": row}, "overall": row}, qrels="changed"))
    assert_one_word("\n".join(lines))
    table = {"qrels": {"original": "original", "instructed": "changed"}, "averaging": "mean over 1 dimension",
             "dimensions": {"a": {"n_queries": 1, "nDCG@10": {"original": 0.5}, "Robustness@10": {},
                                  "p-MRR": None, "WISE": 0.1, "SICR": None}}}
    table["mean"] = table["dimensions"]["a"]
    assert_one_word("\n".join(table2_lines(table)))
    judge = {"domain": "(all)", "n_items": 0, "kappa": None, "kappa_low": None, "kappa_high": None, "band": None,
             "undefined": "no item both judged", "agreement": None, "human_share": {"Yes": None},
             "judge_share": {"Yes": None}, "judge_share_all": {"Yes": None}, "judge_items": 0}
    shown = agreement_rows({"overall": judge, "domains": [], "categories": ["Yes"]})[0]
    assert shown["Cohen kappa"] == f"{UNDEFINED} (no item both judged)" and shown["Band"] == UNDEFINED
    est = estimate_rows({"estimates": [{"estimand": "x", "share": None, "low": None, "high": None, "undefined": "0/0",
                                        "naive_independent": None, "deff": None, "n_effective": None, "n_items": 0,
                                        "n_groups": 0, "to_halve": {"further_labels": None}}]})[0]
    assert_one_word(" ".join(str(v) for v in est.values()), "0/0")
    summary = {"eval_run_id": 1, "model": "m", "template": "t", "qrels_version": "changed", "protocol": "mteb",
               "n_queries": 0, "metrics": {"WISE": None, "nDCG@10": 0.5}, "undefined": {"WISE": NO_POSITIVE},
               "missing_queries": []}
    assert_one_word("\n".join(eval_run_lines(summary)), NO_POSITIVE)


def test_no_second_spelling_in_the_code_that_shows_values():
    """A literal "—" is written once (evaluation/undefined.py: UNDEFINED), and no formatter spells
    "undefined: {why}" or "undefined ({why})" by hand."""
    found = []
    for package in ("annotation", "evaluation", "exports", "ui", "cli", "pages", "accounts"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "evaluation" / "undefined.py":
                continue
            for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
                if tok.type != tokenize.STRING:
                    continue
                body = re.sub(r"^[rbfuRBFU]*(\"\"\"|'''|\"|')", "", tok.string)
                if body[:-1] == UNDEFINED or re.match(r"undefined ?[:(] ?\{", body):
                    found.append(f"{path.relative_to(ROOT)}:{tok.start[0]}: {tok.string}")
    assert not found, "say undefined with evaluation.undefined (UNDEFINED, show, show_why):\n" + "\n".join(found)


def test_agreement_command_says_undefined_once(run_cli, tmp_path):
    labels = _write(tmp_path / "same.csv", "item,annotator,label\n1,x,Yes\n1,y,Yes\n2,x,Yes\n2,y,Yes\n")
    code, out, err = run_cli("agreement", "--labels", labels, "--categories", "Yes,No")
    assert code == 0, err
    fleiss = next(line for line in out.splitlines() if line.startswith("fleiss_kappa "))
    assert fleiss.split()[1] == UNDEFINED and fleiss.endswith("so the coefficient is 0/0")
    assert not any(line.startswith("undefined") for line in out.splitlines())
