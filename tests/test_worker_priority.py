"""The evaluation worker yields to the web app beside it: a lower CPU priority and one torch/BLAS
thread fewer than the machine has cores (issue 20: keys lost while a job ran)."""
import os
import subprocess
import sys
from pathlib import Path

from cli.worker_cmd import worker_threads
from storage.db import connect

ROOT = Path(__file__).resolve().parents[1]
PROBE = ("import os; from cli.worker_cmd import yield_to_app; env = {'MKL_NUM_THREADS': '3'};"
         " t = yield_to_app(5, env); print(os.nice(0), t, env['OMP_NUM_THREADS'], env['MKL_NUM_THREADS'])")


def test_yield_to_app_lowers_the_priority_and_caps_threads_keeping_a_set_variable():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT))).stdout.split()
    expected = max(1, (os.cpu_count() or 1) - 1)
    assert out == [str(min(19, os.nice(0) + 5)), str(expected), str(expected), "3"]


def test_the_worker_command_runs_niced(tmp_path):
    connect(tmp_path / "w.db")  # the worker serves an existing database (only demo, import and serve create one)
    run = subprocess.run([sys.executable, "-m", "cli", "worker", "--db", str(tmp_path / "w.db"), "--once"],
                         cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert run.returncode == 0, run.stderr
    assert f"(nice +10, {worker_threads(os.cpu_count())} torch/BLAS thread(s))" in run.stderr
