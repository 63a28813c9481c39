"""The shared options and the one number/table formatter of the ``ifjudge`` commands."""
from __future__ import annotations

import doctest
import re
from pathlib import Path

import cli.output
from evaluation.results import infosearch_records
from cli.main import build_parser
from cli.options import DB_HELP, JSON_HELP
from cli.output import fmt_value, format_table, infosearch_lines

CLI = Path(__file__).resolve().parents[1] / "cli"


def _subparser(*names):
    p = build_parser()
    for name in names:
        action = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction")
        p = action.choices[name]
    return p


def test_shared_options_are_declared_only_in_cli_options():
    spelled = []
    for path in sorted(CLI.glob("*_cmd.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r'add_argument\(\s*"--(db|json|project)"', line):
                spelled.append(f"{path.name}:{n}")
    assert spelled == []


def test_commands_show_the_one_help_text():
    import_help = _subparser("import").format_help()
    compare_help = _subparser("eval", "compare").format_help()
    for text in (import_help, compare_help):
        flat = " ".join(text.split())
        assert DB_HELP in flat and JSON_HELP in flat
    for names in (("serve",), ("worker",)):  # the two shells that start processes name the database alike
        assert DB_HELP in " ".join(_subparser(*names).format_help().split())


def test_shared_options_parse_as_before(tmp_path):
    db = tmp_path / "x.db"
    db.write_bytes(b"")
    args = build_parser().parse_args(["eval", "compare", "--db", str(db), "--project", "p", "--json"])
    assert (args.db, args.project, args.json) == (str(db), "p", True)
    args = build_parser().parse_args(["jobs", "--db", "postgresql://u@h/d", "cancel", "3"])
    assert (args.db, args.json, args.job_id) == ("postgresql://u@h/d", False, 3)


def _refused(run_cli, capsys, *argv) -> str:
    """What argparse says when it refuses ``argv`` (it exits 2, as for any bad option)."""
    import pytest

    with pytest.raises(SystemExit) as stop:
        run_cli(*argv)
    assert stop.value.code == 2
    out = capsys.readouterr()
    assert out.out == ""
    return out.err


def test_a_db_path_that_does_not_exist_is_refused_unless_the_command_creates_one(run_cli, capsys, tmp_path):
    typo = tmp_path / "ifjduge.db"
    for argv in (["monitor", "--db", typo, "--study", "1"], ["report", "--db", typo, "--study", "1", "--json"],
                 ["export", "--db", typo, "--project", "p", "--format", "trec", "--out", tmp_path / "o"],
                 ["users", "list", "--db", typo]):
        err = _refused(run_cli, capsys, *argv)
        assert f"argument --db: no IFJudge database at {typo} (no such file)" in err, argv
        assert "only demo, import and serve create a database" in err
    assert not typo.exists()  # nothing was created
    assert "a folder, not a database file" in _refused(run_cli, capsys, "monitor", "--db", tmp_path, "--study", "1")
    assert run_cli("demo", "--db", typo)[0] == 0 and typo.exists()  # demo (like import and serve) creates it


def test_fmt_value_rounds_and_names_undefined():
    assert fmt_value(2 / 3) == "0.6667"
    assert fmt_value(2 / 3, digits=3) == "0.667"
    assert fmt_value(None) == "—" and fmt_value(float("nan")) == "—"  # the one word: evaluation.undefined.UNDEFINED
    assert fmt_value(7) == "7"


def test_format_table_aligns_columns():
    assert format_table([("a", "bb", ""), ("ccc", "d", "e")]) == ["a    bb", "ccc  d   e"]


def test_infosearch_lines_put_overall_last():
    row = {"WISE": 0.25, "SICR": 0.5, "p-MRR": None, "n_queries": 3}
    lines = infosearch_lines(infosearch_records({"by_dimension": {"format": row}, "overall": row}, qrels="changed"))
    assert lines == ["format           0.2500 / 0.5000 / —  (3)",
                     "overall          0.2500 / 0.5000 / —  (3)"]


def test_output_examples_run():
    result = doctest.testmod(cli.output)
    assert result.attempted > 0 and result.failed == 0
