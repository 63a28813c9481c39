"""JSON Lines: one JSON object per line (the JSONL export's instances and provenance, and every
layout's corpus and queries files)."""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path


def write_jsonl(path: Path, records: Iterable[dict]) -> Path:
    """Write one JSON object per line (UTF-8, ``\\n`` line ends, non-ASCII kept); returns ``path``.

    >>> import tempfile
    >>> path = write_jsonl(Path(tempfile.mkdtemp()) / "x" / "a.jsonl", [{"id": "é"}, {"id": 2}])
    >>> path.read_text(encoding="utf-8")
    '{"id": "é"}\\n{"id": 2}\\n'
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path
