"""How much a file may grow when it is read: the guard against decompression bombs.

A file compresses ordinary benchmark data a few times (JSONL in a .zip 3-10x, parquet 2-20x); a
bomb compresses one repeated value thousands of times (a 2 MB .zip of 2 GB, a 1.7 MB parquet file
of 2.5 million dictionary-encoded rows). So an import refuses a file that would unpack, or be
held in memory, to more than :func:`budget` of its size on disk: ``MAX_EXPANSION`` (100) times
its size, and never less than ``FLOOR`` (64 MB) so that small files are never refused. The check
runs before anything large is made: on a .zip's declared sizes and again while it streams out
(headers can lie), on a parquet file's metadata and again on its values while still
dictionary-encoded.

A genuine file denser than that is imported from the command line with the ratio raised:
``IFJUDGE_MAX_EXPANSION=1000 ifjudge import ...``.

>>> budget(1_000_000, {})
100000000
>>> budget(10_000, {}) == FLOOR
True
"""
from __future__ import annotations

import os

MAX_EXPANSION = 100
FLOOR = 64 << 20
EXPANSION_ENV = "IFJUDGE_MAX_EXPANSION"
#: what a row and a value cost in memory once read into Python (a dict per row, a str per value)
ROW_BYTES = 200
VALUE_BYTES = 50
#: what an import says of JSON nested deeper than Python's parser recurses (records are flat)
TOO_DEEP = "JSON nested too deeply to read (more than about 1,000 levels of [ and {)"


def expansion(env=None) -> float:
    """The allowed ratio: ``IFJUDGE_MAX_EXPANSION`` if set (a number >= 1), else ``MAX_EXPANSION``."""
    env = os.environ if env is None else env
    try:
        return max(1.0, float(env.get(EXPANSION_ENV) or MAX_EXPANSION))
    except ValueError:
        return float(MAX_EXPANSION)


def budget(size_on_disk: int, env=None) -> int:
    """Bytes a file of ``size_on_disk`` bytes may become once read."""
    return max(FLOOR, int(expansion(env) * size_on_disk))


def too_large(what: str, size: int, on_disk: int) -> str:
    """The message of a refusal (``what``: what it would become)."""
    return (f"{what} would take about {size / 1e6:,.0f} MB, more than {expansion():g} times the "
            f"{on_disk / 1e6:,.1f} MB of the file (a decompression bomb?); nothing was imported. A genuine "
            f"file this dense: import it from the command line with {EXPANSION_ENV} set to a larger ratio")
