"""A small sampling profiler for page runs (AppTest runs the page in another thread, where
cProfile does not see it): every 10 ms, the stacks of all threads; prints the functions of
the repository that were on a stack most often (inclusive share of the samples).

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python bench/sample_profile.py robust04|instructir pages/monitor.py``
(the databases of ``bench/fixture_robust04.py``).
"""
from __future__ import annotations

import collections
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    from bench.bench_lead_loop import CACHE, preimport
    preimport()
    from streamlit.testing.v1 import AppTest

    fx, page = sys.argv[1], sys.argv[2]
    path = CACHE / f"{fx}.db"
    os.environ["IFJUDGE_DB"] = str(path)
    with sqlite3.connect(path) as c:
        uid, name, role = c.execute("SELECT id, name, role FROM users WHERE name = 'lead'").fetchone()
    at = AppTest.from_file(str(ROOT / page), default_timeout=600)
    at.session_state["user"] = {"id": uid, "name": name, "role": role}
    counts: collections.Counter = collections.Counter()
    samples = [0]
    done = threading.Event()
    me = threading.get_ident()

    def sample():
        while not done.is_set():
            for tid, frame in sys._current_frames().items():
                if tid == me or tid == threading.get_ident():
                    continue
                seen = set()
                while frame is not None:
                    f = frame.f_code.co_filename
                    if f.startswith(str(ROOT)) and "/.venv/" not in f:
                        seen.add(f"{Path(f).relative_to(ROOT)}:{frame.f_code.co_name}")
                    frame = frame.f_back
                if seen:
                    samples[0] += 1
                    counts.update(seen)
            time.sleep(0.01)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    start = time.perf_counter()
    at.run()
    wall = time.perf_counter() - start
    done.set()
    print(f"{page} on {fx}: {wall:.2f} s, {samples[0]} samples; exceptions: {[str(e.value)[:80] for e in at.exception]}")
    for fn, n in counts.most_common(25):
        print(f"  {100 * n / max(samples[0], 1):5.1f}%  {fn}")


if __name__ == "__main__":
    main()
