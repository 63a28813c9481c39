"""An export folder as one zip download (the Export page's "Download ... (zip)")."""
from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path


def zip_folder(folder: str | Path, *, keep: Callable[[str], bool] = lambda name: False) -> tuple[bytes, dict[str, bytes]]:
    """Every file under ``folder`` (the manifest among them) in one deflated zip, by path order,
    each file read once and written before the next is read (a corpus is never held twice), and
    the bytes of the files whose relative path ``keep`` accepts (what a page shows or offers alone).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "report.md").write_text("# R")
    ...     (Path(tmp) / "qrels").mkdir()
    ...     _ = (Path(tmp) / "qrels" / "test.tsv").write_text("q\\td\\t1")
    ...     data, kept = zip_folder(tmp, keep=lambda name: name.endswith(".md"))
    >>> zipfile.ZipFile(io.BytesIO(data)).namelist(), kept
    (['qrels/test.tsv', 'report.md'], {'report.md': b'# R'})
    """
    buf, kept = io.BytesIO(), {}
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted(Path(folder).rglob("*")):
            if p.is_file():
                name, data = p.relative_to(folder).as_posix(), p.read_bytes()
                z.writestr(name, data)
                if keep(name):
                    kept[name] = data
    return buf.getvalue(), kept
