"""Files uploaded in the browser, laid out on disk as the importers expect them.

A browser upload loses folders: FollowIR's ``qrels_og/test.tsv`` and ``qrels_changed/test.tsv``
arrive as two files named ``test.tsv``. So an upload is either one ``.zip`` of the benchmark
folder (its folders kept), or loose files, with the ``.tsv`` qrels files put into one folder
the user names (``qrels`` for BEIR).
"""
from __future__ import annotations

import shutil
import zipfile
import zlib
from io import BytesIO
from pathlib import Path, PurePosixPath

from formats.errors import ImportFailure
from formats.limits import budget, too_large

MAX_UNZIPPED = 2 << 30  # 2 GiB: a zip that would unpack to more is refused, whatever its own size
MAX_MEMBERS = 10_000  # a benchmark folder holds tens of files
CHUNK = 1 << 20
QRELS_FIELD = "Folder of loose .tsv qrels files"


def materialize(files: list[tuple[str, bytes]], root: Path, *, qrels_dir: str = "qrels") -> Path:
    """Write the uploaded ``(name, content)`` files under ``root``; return the folder to import.

    One ``.zip``: its members are extracted (a member with an absolute path or ``..`` is refused,
    as is a zip that unpacks to more than :func:`formats.limits.budget` of its size or 2 GiB,
    counted as it streams out); when everything sits in one top-level folder, that folder is
    returned. Loose files: written by name, ``.tsv`` files into ``root/qrels_dir``, a plain folder
    name (no ``/``, ``\\``, ``..`` or absolute path: nothing is written outside ``root``). Two loose
    files with the same name are refused (zip the folder instead).
    """
    root = Path(root)
    qrels_dir = plain_folder(qrels_dir)
    if len(files) == 1 and files[0][0].lower().endswith(".zip"):
        return _unzip(files[0][0], files[0][1], root)
    seen: set[str] = set()
    for name, data in files:
        base = PurePosixPath(name.replace("\\", "/")).name
        if not base or base in (".", ".."):
            raise ImportFailure(name, None, None, "not a file name")
        if base.lower().endswith(".zip"):
            raise ImportFailure(name, None, None, "upload a .zip alone, not beside other files")
        if base in seen:
            raise ImportFailure(name, None, None, "two uploaded files have this name; zip the benchmark folder "
                                "(for example qrels_og/test.tsv and qrels_changed/test.tsv) and upload the .zip")
        seen.add(base)
        folder = root / qrels_dir if base.lower().endswith(".tsv") and qrels_dir else root
        folder.mkdir(parents=True, exist_ok=True)
        (folder / base).write_bytes(data)
    return root


def plain_folder(name: str) -> str:
    """The qrels folder's name as typed ('' for none), refused unless it is a plain name.

    >>> plain_folder(" qrels "), plain_folder("")
    ('qrels', '')
    >>> plain_folder("../../etc")
    Traceback (most recent call last):
    ...
    formats.errors.ImportFailure: Folder of loose .tsv qrels files: received '../../etc'; expected a plain folder name such as qrels (no /, \\ or ..), created inside the import's own folder
    """
    name = name.strip()
    if name and (name in (".", "..") or any(c in name for c in "/\\\0:") or not name.isprintable()):
        raise ImportFailure(QRELS_FIELD, None, None, f"received {name!r}; expected a plain folder name such as "
                            "qrels (no /, \\ or ..), created inside the import's own folder")
    return name


def _unzip(name: str, data: bytes, root: Path) -> Path:
    try:
        archive = zipfile.ZipFile(BytesIO(data))
    except zipfile.BadZipFile:
        raise ImportFailure(name, None, None, "not a readable .zip file") from None
    allowed = min(MAX_UNZIPPED, budget(len(data)))
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if not members:
            raise ImportFailure(name, None, None, "the .zip holds no file")
        if len(members) > MAX_MEMBERS:
            raise ImportFailure(name, None, None, f"the .zip holds {len(members):,} files; expected a benchmark "
                                f"folder of at most {MAX_MEMBERS:,}")
        declared = sum(m.file_size for m in members)
        if declared > allowed:
            raise ImportFailure(name, None, None, too_large("unpacked, the .zip", declared, len(data)))
        for m in members:
            path = PurePosixPath(m.filename.replace("\\", "/"))
            if path.is_absolute() or ".." in path.parts:
                raise ImportFailure(name, None, None, f"member {m.filename!r} points outside the archive")
        written = 0
        try:
            for m in members:
                path = PurePosixPath(m.filename.replace("\\", "/"))
                if path.parts[0] == "__MACOSX" or path.name.startswith("._"):
                    continue  # macOS resource forks, not data
                target = root.joinpath(*path.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(m) as src, target.open("wb") as out:
                    while chunk := src.read(CHUNK):  # counted as it streams: declared sizes can lie
                        written += len(chunk)
                        if written > allowed:
                            raise ImportFailure(name, None, None, too_large("unpacked, the .zip", written, len(data)))
                        out.write(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
            _empty(root)
            raise ImportFailure(name, None, None, f"a damaged .zip ({exc})") from None
        except ImportFailure:
            _empty(root)
            raise
    entries = [p for p in root.iterdir() if p.name != "__MACOSX"]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else root


def _empty(root: Path) -> None:
    """Remove what a refused .zip left under ``root`` (the caller's folder itself stays)."""
    for entry in root.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
