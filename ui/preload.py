"""What a lead's first visit to a page would otherwise wait for, paid once by the app server before
it accepts its first connection (``ui/server.py`` calls :func:`load_now`), or in a background
thread when its first session starts where the app runs without that server (``ui/entry.py``
calls :func:`start`: ``streamlit run ui/entry.py``).

Streamlit runs a page's script, and so imports what the page imports, on the page's first visit:
the Monitor page's first run in a new server process paid pandas, statsmodels, scipy, krippendorff
and altair, then scikit-learn, which the agreement statistics import only when they compute Cohen's
kappa, and the first Altair chart's schema. :func:`preload` imports every module the pages import
(read from their import statements), the libraries imported on first use (:data:`ON_FIRST_USE`),
and draws one small chart, so a lead's first visit computes and nothing else. The server then reads
the newest open studies' labels and items into the process (:func:`read_ahead_studies`): on a
100,008-label study the Monitor's first run had read them itself (about a third of that run).

Paid before the server listens, the imports' memory is all there when ``/_stcore/health`` first
answers: what the server holds does not grow under its first visitors (the upload guard's check
measures growth from then on). The background thread instead shares the interpreter with the first
session's run (the sign-in page): that run is slower while it lasts (a second or two on a 2-core
machine), every later run is not.
"""
from __future__ import annotations

import ast
import gc
import importlib
import logging
import threading
import time
from pathlib import Path

PAGES = Path(__file__).resolve().parents[1] / "pages"
#: imported by the library only when first used (annotation.agreement.stats: Cohen's and Fleiss' kappa)
ON_FIRST_USE = ("sklearn.metrics", "statsmodels.stats.inter_rater")
_lock = threading.Lock()
_thread: threading.Thread | None = None
timings: dict[str, float] = {}  # step -> seconds, filled by preload()


def page_modules(pages: Path = PAGES) -> list[str]:
    """The modules the pages import, in first-seen order (from their import statements).

    >>> {"annotation.monitoring.monitor", "annotation.monitoring.view", "altair", "streamlit"} <= set(page_modules())
    True
    """
    root = pages.parent
    out: dict[str, None] = {}
    for path in sorted(pages.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out.update(dict.fromkeys(a.name for a in node.names))
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module != "__future__":
                out[node.module] = None
                # ``from annotation import monitor``: the module of the package, not only the package
                out.update(dict.fromkeys(f"{node.module}.{a.name}" for a in node.names
                                         if (root / node.module.replace(".", "/") / f"{a.name}.py").exists()))
    return list(out)


def preload() -> dict[str, float]:
    """Import the pages' modules and :data:`ON_FIRST_USE`, draw a small Altair chart; returns the
    seconds of each step (also kept in :data:`timings`). A module that fails to import is skipped:
    its page reports the error when it runs."""
    for name in [*page_modules(), *ON_FIRST_USE]:
        start = time.perf_counter()
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 (the page itself will say what is wrong)
            continue
        timings[name] = time.perf_counter() - start
    start = time.perf_counter()
    import altair as alt
    import pandas as pd

    alt.Chart(pd.DataFrame({"x": ["a"], "y": [1]})).mark_bar().encode(x="x:N", y="y:Q").to_dict()
    timings["first chart"] = time.perf_counter() - start
    return timings


def load_now() -> dict[str, float]:
    """Run :func:`preload` in this thread, once per process; a later :func:`start` then starts
    nothing. Then what it loaded is moved out of the cyclic garbage collector's sight
    (:func:`gc.freeze`, after a collection): the modules, classes and functions of the libraries
    are never garbage, and a full collection walked all of them (about 230,000 objects: 0.1-0.2 s
    on the project's machine, paid by whichever page run triggered it, the Monitor's most often);
    reference counting still frees whatever of them is dropped."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.current_thread()
            out = preload()
            start = time.perf_counter()
            gc.collect()
            gc.freeze()
            timings["gc.freeze"] = time.perf_counter() - start
            return out
        return timings


def read_ahead_studies(target=None) -> list[int]:
    """Read the newest open studies' rows of the database at ``target`` (default: the app's) into
    the process (:func:`annotation.monitoring.read_ahead.read_ahead`): the server calls it after
    :func:`load_now`, before it listens. Returns the studies read; a database that cannot be read
    is left to the pages, which say what is wrong (logged here, the server still starts)."""
    from annotation.monitoring.read_ahead import read_ahead
    from storage.db import connect

    start = time.perf_counter()
    logging.getLogger("ifjudge").info("reading the newest open studies ahead")
    try:
        conn = connect(target)
        try:
            ids = read_ahead(conn)
        finally:
            conn.close()
    except Exception:  # noqa: BLE001 (a page shows the database's error to whoever opens it)
        logging.getLogger("ifjudge").exception("reading the open studies ahead failed")
        return []
    timings["read ahead"] = time.perf_counter() - start
    logging.getLogger("ifjudge").info("read %d open studies ahead in %.2f s: %s", len(ids), timings["read ahead"],
                                      ", ".join(map(str, ids)) or "none")
    return ids


def start() -> threading.Thread:
    """Start :func:`preload`, then :func:`read_ahead_studies`, in a daemon thread, once per process
    (later calls, and calls after :func:`load_now`, return that thread)."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=lambda: (preload(), read_ahead_studies()), name="ifjudge-preload",
                                       daemon=True)
            _thread.start()
        return _thread
