"""JSON Lines: one JSON object per line (the JSONL export's instances and provenance, and every
layout's corpus and queries files)."""
from __future__ import annotations

import hashlib
import json
import math
from collections import deque
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from json.encoder import encode_basestring
from pathlib import Path

from formats.digests import remember


def _value(value: object) -> str:
    """``json.dumps(value, ensure_ascii=False)``, formatted directly for a str, an int or a finite float."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if kind is int or (kind is float and math.isfinite(value)):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def write_jsonl_rows(path: Path, keys: tuple[str, ...], rows: Iterable[tuple]) -> Path:
    """Write one JSON object per row of ``rows`` (tuples of the values of ``keys``), the same bytes
    as :func:`write_jsonl` of the dicts, without building a dict and calling ``json.dumps`` per
    row (the qrels and top_ranked files have one row per judgment or candidate). Returns ``path``.

    >>> import tempfile
    >>> rows = [("q\u00e9", 2.0), ('say "hi"', 1)]
    >>> path = write_jsonl_rows(Path(tempfile.mkdtemp()) / "a.jsonl", ("qid", "score"), rows)
    >>> path.read_text(encoding="utf-8").splitlines()[0]
    '{"qid": "qé", "score": 2.0}'
    >>> dicts = write_jsonl(path.with_name("b.jsonl"), [{"qid": q, "score": s} for q, s in rows])
    >>> path.read_bytes() == dicts.read_bytes()
    True
    """
    heads = [("{" if i == 0 else ", ") + encode_basestring(k) + ": " for i, k in enumerate(keys)]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as out:
        lines: list[str] = []
        for row in rows:
            lines.append("".join([h + _value(v) for h, v in zip(heads, row, strict=True)]) + "}\n")
            if len(lines) >= 10000:
                out.write("".join(lines))
                lines.clear()
        out.write("".join(lines))
    return path


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


# the bytes json.dumps escapes in a string (ensure_ascii=False): '"', '\\' and the control characters
# U+0000-U+001F; in UTF-8 they are single bytes and no byte of a multi-byte character is among them
_ESCAPED = bytes(range(0x20)) + b'"\\'


def write_corpus_jsonl(path: Path, chunks: Iterable[list[tuple[bytes, bytes, bytes]]]) -> Path:
    """Write a corpus as :func:`write_jsonl` writes ``{"_id", "title", "text"}`` records (the same
    bytes), from chunks of ``(doc_id, title, text)`` UTF-8 rows (:func:`formats.corpus.utf8_rows`),
    without a dict and a ``json.dumps`` per document: a row with nothing to escape is written as
    its bytes between the keys, any other row through ``json.dumps``. A second thread writes each
    chunk and hashes it (:mod:`formats.digests` keeps the SHA-256 for the manifest) while the
    next chunk is read and formatted; at most two formatted chunks wait. Returns ``path``.

    >>> import tempfile
    >>> rows = [(b"d1", b"", "caf\\u00e9".encode()), (b"d2", b"", b'say "hi"\\n')]
    >>> path = write_corpus_jsonl(Path(tempfile.mkdtemp()) / "corpus.jsonl", [rows])
    >>> path.read_bytes() == b"".join(json.dumps({"_id": d.decode(), "title": t.decode(), "text": x.decode()},
    ...                               ensure_ascii=False).encode() + b"\\n" for d, t, x in rows)
    True
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    digest, escaped = hashlib.sha256(), _ESCAPED

    def write(data: bytes) -> None:  # file writes and hashing release the GIL: they overlap the reading
        out.write(data)
        digest.update(data)

    with path.open("wb") as out, ThreadPoolExecutor(max_workers=1) as writer:
        pending: deque = deque()
        for rows in chunks:
            parts: list[bytes] = []
            for doc_id, title, text in rows:
                if (len(text.translate(None, escaped)) == len(text) and len(doc_id.translate(None, escaped)) == len(doc_id)
                        and len(title.translate(None, escaped)) == len(title)):  # nothing to escape (inline: 156,000 calls)
                    parts += (b'{"_id": "', doc_id, b'", "title": "', title, b'", "text": "', text, b'"}\n')
                else:
                    record = {"_id": doc_id.decode(), "title": title.decode(), "text": text.decode()}
                    parts.append(json.dumps(record, ensure_ascii=False).encode() + b"\n")
            pending.append(writer.submit(write, b"".join(parts)))
            if len(pending) > 2:
                pending.popleft().result()  # a failed write (disk full) is raised here
        for done in pending:
            done.result()
    remember(path, digest.hexdigest())
    return path
