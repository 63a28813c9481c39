"""Python's cyclic garbage collector paused while a screen builds a large study's tables.

The monitor of a 100,000-label study builds several hundred thousand small objects (label rows,
per-item rows, per-disagreement dicts), none of them in a reference cycle: reference counting
frees them. With the collector running, their creation triggers full collections that walk
every object of the process (an app server's modules included) several times: 40% of the
Monitor's time on the 100,000-label bench fixture. :func:`paused_gc` defers collection to the
end of the block (one pass at most, when the thresholds ask for it).

>>> import gc
>>> with paused_gc():
...     gc.isenabled()
False
>>> gc.isenabled()
True
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """The block runs with the cyclic collector off; it is switched back on afterwards if it was
    on before (a nested or concurrent block leaves it to the outermost one that paused it)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
