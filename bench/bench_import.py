"""Import speed: ``ifjudge import --format auto`` into a fresh database, end to end (a new process,
as a user runs it), beside the targets of issue 21 on this 2-core machine:

* the shipped InstructIR release (``datasets/instructir``: 9,906 instructions, 1,267 queries, 9,906
  qrels): < 1 s;
* the Robust04-sized FollowIR set of ``bench/fixture_robust04.py`` (52,000 TREC-length documents,
  390 MB of JSONL), when its cache exists (``IFJUDGE_BENCH_CACHE``, default ``.cache/bench_robust04``):
  < 5 s.

Prints the median wall time over ``--repeats`` runs, the largest peak memory (RSS) of the child
processes and the 1-minute load average before and after (the machine is shared: compare figures
taken in the same minutes). Run: ``HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_import.py [--repeats 3]``
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("IFJUDGE_BENCH_CACHE", ROOT / ".cache" / "bench_robust04"))
SETS = (("InstructIR release", ROOT / "datasets" / "instructir", "ir", 1.0),
        ("Robust04-sized FollowIR", CACHE / "robust04", "robust04", 5.0))


def time_import(data: Path, project: str, repeats: int) -> tuple[list[float], dict]:
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-m", "cli", "import", "--db", f"{tmp}/b.db", "--project", project, "--format",
                 "auto", str(data), "--json"],
                cwd=ROOT, capture_output=True, text=True, check=True,
            )
            times.append(time.perf_counter() - t)
    return times, json.loads(out.stdout)


def main(repeats: int = 3) -> None:
    for name, data, project, target in SETS:
        if not data.is_dir():
            print(f"{name}: {data} not found (build it with bench/fixture_robust04.py); skipped")
            continue
        load = os.getloadavg()[0]
        times, counts = time_import(data, project, repeats)
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        median = statistics.median(times)
        print(f"{name}: stored {counts['documents']} documents, {counts['instances']} instances, "
              f"{sum(v for k, v in counts.items() if k.startswith('qrels_'))} qrels")
        print(f"  ifjudge import (new process, fresh db): median {median:.2f} s over {repeats} runs "
              f"(min {min(times):.2f} s), peak RSS {rss:.0f} MB, vs target {target:.0f} s -> "
              f"{'met' if median < target else 'NOT met'}; load {load:.2f} -> {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    main(parser.parse_args().repeats)
