"""INSTFOL (IFIR): hand-computed cases, the special cases, the top-k cut and input errors."""
from pathlib import Path

import pytest

from evaluation.instfol import instfol, instfol_score, read_judge_scores
from storage.errors import ImportFailure

FIXTURES = Path(__file__).parent / "fixtures" / "eval"


def test_instfol_score_cases():
    assert instfol_score(1.5, 2.5, max_score=3) == pytest.approx(1 / 1.5)
    assert instfol_score(2.0, 2.0, max_score=3) == 0.0  # i = q
    assert instfol_score(3.0, 2.5, max_score=3) == -0.5  # q = max: i - q
    assert instfol_score(3.0, 3.0, max_score=3) == 0.0
    assert instfol_score(2.0, 4.0, max_score=5) == pytest.approx(2 / 3)


def test_hand_computed_fixture():
    rows = read_judge_scores(FIXTURES / "instfol_scores.csv")
    r = instfol(rows)
    # q1: q = 1.5, i = 2.5 -> 1/1.5; q2: q = 3 = max, i = 2.5 -> -0.5; q3: q = 2, i = 1 -> -1
    assert r["per_query"]["q1"] == pytest.approx({"q": 1.5, "i": 2.5, "INSTFOL": 2 / 3})
    assert r["INSTFOL"] == pytest.approx((2 / 3 - 0.5 - 1) / 3, abs=1e-12)
    assert r["n_queries"] == 3 and r["max"] == 3.0


def test_top_k_uses_ranks():
    rows = read_judge_scores(FIXTURES / "instfol_scores.csv")
    r = instfol(rows, k=1)
    # q1: q = 1, i = 3 -> 1; q2: q = 3, i = 2 -> -1; q3: q = 2, i = 2 -> 0
    assert r["INSTFOL"] == pytest.approx(0.0, abs=1e-12)
    assert r["per_query"]["q1"]["INSTFOL"] == 1.0


def test_query_lacking_a_mode_is_named():
    rows = [("q1", "query", 1, 1.0), ("q1", "instructed", 1, 2.0), ("q2", "query", 1, 1.0)]
    with pytest.raises(ValueError, match="'q2' has no 'instructed'"):
        instfol(rows)
    # after the cut-off too
    rows = [("q1", "query", 1, 1.0), ("q1", "instructed", 4, 2.0)]
    with pytest.raises(ValueError, match="rank <= 3"):
        instfol(rows, k=3)


def test_score_above_max_is_refused():
    with pytest.raises(ValueError, match="above the scale maximum"):
        instfol([("q1", "query", 1, 4.0), ("q1", "instructed", 1, 2.0)], max_score=3)
    assert instfol([("q1", "query", 1, 4.0), ("q1", "instructed", 1, 5.0)], max_score=5)["INSTFOL"] == 1.0


@pytest.mark.parametrize(
    "content, line, field",
    [
        ("query,mode,score\nq1,query,1\n", 1, "rank"),
        ("query,mode,rank,score\nq1,bare,1,2\n", 2, "mode"),
        ("query,mode,rank,score\nq1,query,1,2\nq1,query,first,2\n", 3, "rank"),
        ("query,mode,rank,score\nq1,query,1,good\n", 2, "score"),
        ("query,mode,rank,score\nq1,query,1,2\nq1,query,1,3\n", 3, "rank"),
        ("query,mode,rank,score\nq1,query,1\n", 2, "score"),  # the first field missing
        ("query,mode,rank,score\nq1,query,1,2,3\n", 2, None),
        ("query,mode,rank,score\n\n", 1, None),  # no score after the header
    ],
)
def test_reader_errors_name_file_line_field(tmp_path, content, line, field):
    path = tmp_path / "scores.csv"
    path.write_text(content)
    with pytest.raises(ImportFailure) as info:
        read_judge_scores(path)
    assert (info.value.file, info.value.line, info.value.field) == (str(path), line, field)
