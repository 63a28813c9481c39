"""The coverage bench runs end to end (a smoke run: studies drawn by create_study, answered through
the storage path of the annotate screen, estimated with a judge): its intervals are never of width
0, cover most of the time and the informative judge narrows them. The full run is for the docs
(docs/statistics.md); this only checks that the bench can fail."""
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_coverage_bench_smoke_run(capsys, monkeypatch):
    spec = importlib.util.spec_from_file_location("bench_estimate_coverage", ROOT / "bench" / "bench_estimate_coverage.py")
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench)  # its dataclasses look their module up
    spec.loader.exec_module(bench)
    out = bench.main(["--quick", "--section", "estimates"])
    (row,) = out["estimates"]
    assert row["key"] == "75-biased" and row["reps"] == 20
    for method in ("design", "ppi"):
        assert row[method]["zero_width"] == 0
        assert row[method]["coverage"] >= 0.8  # nominal 0.95; 20 studies only
    assert row["ppi"]["width"] < row["design"]["width"]  # the judge is informative here
    printed = capsys.readouterr().out
    assert "| 75% share, judge off by 10 points on one domain |" in printed and "target 0.925-0.975" in printed
