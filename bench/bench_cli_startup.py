"""``ifjudge --help`` and ``ifjudge <command> [<sub-command>] --help`` beside ``sqlite-utils --help``.

Both are console scripts of the same virtual environment: the whole process is timed (interpreter
start, imports, building the parser, printing the help), as a lead types the command. For each
help screen the two processes run one after the other, ``--repeats`` times (pairs alternated, so
that a busy moment of the shared machine slows both), and the medians are printed with their
ratio. Target: every ratio <= 1.2 (issue 28). The help screens are every parser of ``ifjudge``:
the whole command list, each command, each sub-command group and each of its sub-commands.

Which libraries a help screen may load is a test (tests/test_cli_startup.py), not a timing: this
bench is the figure beside it. The load average (1 min) is printed before and after.

Run: ``.venv/bin/python bench/bench_cli_startup.py [--repeats 7] [--only eval,users]``
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.2


def script(name: str) -> list[str]:
    """The console script ``name`` beside this interpreter (the venv's), else on PATH."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        raise SystemExit(f"no {name} script beside {sys.executable} or on PATH")
    return [found]


def help_screens() -> list[list[str]]:
    """Every parser of ``ifjudge`` as the arguments before ``--help``: [], [command], [command, sub]."""
    sys.path.insert(0, str(ROOT))
    from cli.main import COMMANDS, build_parser

    def groups(parser) -> list:
        return [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]

    screens = [[]]
    for command in COMMANDS:
        screens.append([command])
        for group in groups(groups(build_parser(command))[0].choices[command]):
            screens += [[command, sub] for sub in group.choices]
    return screens


def wall(cmd: list[str], env: dict) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7, help="pairs per help screen (default 7; the median is printed)")
    ap.add_argument("--only", help="comma-separated commands (the first word after ifjudge); '-' is `ifjudge --help`")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's code, whatever the venv's install points at
    ifjudge, reference = script("ifjudge"), script("sqlite-utils") + ["--help"]
    wanted = set(args.only.split(",")) if args.only else None
    screens = [s for s in help_screens() if wanted is None or (s[0] if s else "-") in wanted]
    wall(reference, env), wall(ifjudge + ["--help"], env)  # warm the file cache for both
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}; {args.repeats} alternated pairs per screen, medians")
    print(f"{'help screen':<44} {'ifjudge':>8} {'sqlite-utils':>13} {'ratio':>6} {'<= 1.2':>6}")
    ratios = []
    for screen in screens:
        ours, theirs = [], []
        for _ in range(args.repeats):
            ours.append(wall(ifjudge + screen + ["--help"], env))
            theirs.append(wall(reference, env))
        a, b = statistics.median(ours), statistics.median(theirs)
        ratios.append(a / b)
        name = " ".join(["ifjudge", *screen, "--help"])
        print(f"{name:<44} {a:>7.3f}s {b:>12.3f}s {a / b:>6.2f} {'yes' if a / b <= TARGET else 'NO':>6}", flush=True)
    print(f"{len(ratios)} help screens: ratio median {statistics.median(ratios):.2f}, max {max(ratios):.2f} "
          f"(target <= {TARGET}); load average (1 min) now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
