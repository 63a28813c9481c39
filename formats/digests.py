"""SHA-256 digests of the files a writer wrote, for the export manifest: a writer that hashes its
bytes while writing them (the corpus, the largest file of an export) records the digest with
:func:`remember`, and :func:`sha256` returns it without reading the file again, as long as the
file's size and modification time are those it had when the digest was recorded; any other file is
read and hashed.

>>> import tempfile
>>> from pathlib import Path
>>> path = Path(tempfile.mkdtemp()) / "a.txt"
>>> _ = path.write_bytes(b"abc")
>>> sha256(path)[:16]
'ba7816bf8f01cfea'
>>> remember(path, "recorded while writing")
>>> sha256(path)
'recorded while writing'
>>> _ = path.write_bytes(b"abcd")  # the file changed: hashed anew
>>> sha256(path)[:16]
'88d4266fd4e6338d'
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

_recorded: dict[str, tuple[int, int, str]] = {}  # absolute path -> (size, mtime_ns, hex digest)


def _key(path: Path) -> tuple[str, os.stat_result]:
    path = Path(path).absolute()
    return str(path), path.stat()


def remember(path: Path, digest: str) -> None:
    """Record ``digest`` as the SHA-256 of ``path`` as it is now."""
    key, st = _key(path)
    _recorded[key] = (st.st_size, st.st_mtime_ns, digest)


def sha256(path: Path) -> str:
    """The hex SHA-256 of the file: the digest recorded while it was written if the file is
    unchanged since (size and modification time), else read from the file in 1 MB blocks."""
    key, st = _key(path)
    known = _recorded.get(key)
    if known is not None and known[:2] == (st.st_size, st.st_mtime_ns):
        return known[2]
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
