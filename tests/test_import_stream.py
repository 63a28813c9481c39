"""The line reader of every text importer reads a file once, in chunks: it must say exactly what
reading the whole file would (the same lines and numbers, the same refusal when a file has several
defects), whatever the chunk boundaries, CR / CRLF line ends, byte-order mark or bytes."""
from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import formats.text as text
from formats.errors import ImportFailure
from formats.text import read_jsonl, read_lines

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def whole_file_lines(data: bytes, path: str) -> list[tuple[int, str]]:
    """The reference: the whole file decoded, line ends normalised, split, then checked."""
    text_ = text.decode_utf8(data, path)
    if not text_ or text_.isspace():
        raise ImportFailure(path, None, None, "the file is empty; expected at least one record")
    lines = text_.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and (not lines[-1] or lines[-1].isspace()):
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if not line or line.isspace():
            raise ImportFailure(path, number, None, "blank line between records; expected one record per line "
                                                    "(blank lines only at the end)")
    return list(enumerate(lines, start=1))


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except ImportFailure as exc:
        return ("refused", str(exc))


# lines made of the pieces that matter: records, bad JSON, blanks, CR, CRLF, non-UTF-8 bytes, BOM
PIECES = [b'{"a": 1}', b'{"a": "\\ud800"}', b'{"a": "\\ud83d\\ude00"}', b"[1]", b"{bad", b"", b" ", b"\t",
          b"\r", b"\r\n", b"\n", b"\xff", b"\xe2\x82", "é".encode(), b"\xef\xbb\xbf", b'{"t": "x\\u00e9"}']


@SETTINGS
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.integers(1, 9))
def test_the_chunked_reader_says_what_the_whole_file_says(tmp_path_factory, pieces, chunk):
    data = b"".join(pieces)
    path = tmp_path_factory.mktemp("s") / "f.jsonl"
    path.write_bytes(data)
    old = text._CHUNK
    text._CHUNK = chunk  # tiny chunks: every boundary falls inside a line, a CRLF or a UTF-8 sequence
    try:
        sources: list = []
        assert outcome(read_lines, path, sources) == outcome(whole_file_lines, data, str(path))
        if sources:
            assert sources == [(str(path), hashlib.sha256(data).hexdigest())]
        got = outcome(read_jsonl, path, [])
    finally:
        text._CHUNK = old
    expected = outcome(whole_file_lines, data, str(path))
    if expected[0] == "ok":  # the first line json.loads (or the checks after it) refuses, if any
        for number, line in expected[1]:
            try:
                obj = json.loads(line)
            except ValueError:
                assert got[0] == "refused" and got[1].startswith(f"{path}, line {number}: malformed JSON")
                return
            if not isinstance(obj, dict) or "\\ud800\"" in line:
                assert got[0] == "refused" and got[1].startswith(f"{path}, line {number}:")
                return
        assert got == ("ok", [(n, json.loads(line)) for n, line in expected[1]])
    else:
        assert got == expected


def test_a_later_defect_of_the_file_is_said_before_a_bad_line(tmp_path):
    """Reading the whole file refused a byte that is not UTF-8 (or a blank line) before looking at
    any record: a malformed line 1 does not hide them."""
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'{"_id": \n{"_id": "2"}\n\n{"_id": "3"}\n')
    with pytest.raises(ImportFailure, match=r"line 3: blank line between records"):
        read_jsonl(path, [])
    path.write_bytes(b'{"_id": \n{"_id": "2"}\n\n{"_id": "\xff"}\n')
    with pytest.raises(ImportFailure, match=r"line 4: not UTF-8: byte 0xff at offset 32"):
        read_jsonl(path, [])
    path.write_bytes(b'{"_id": \n{"_id": "2"}\n\n\n')
    with pytest.raises(ImportFailure, match=r"line 1: malformed JSON"):
        read_jsonl(path, [])


def test_a_refused_file_left_unread_is_let_go_without_joining_a_thread(tmp_path):
    """A refused line leaves the reader unfinished; Python may finalize it in a garbage-collector
    pass inside another thread's start, while that thread holds threading's shutdown-locks lock.
    Joining the reader's hashing thread there deadlocked a whole test run (and would an import in
    the app). Here the reader is let go while that lock is held: it must return at once."""
    import threading

    lock = getattr(threading, "_shutdown_locks_lock", None)
    if lock is None:  # the CPython internals this test holds are not there
        pytest.skip("this Python has no threading._shutdown_locks_lock")
    path = tmp_path / "queries.jsonl"
    path.write_bytes(b'{"_id": "q1"}\n{"_id": \n' + b'{"_id": "q"}\n' * 10)
    with pytest.raises(ImportFailure) as refused:
        read_jsonl(path, [])
    assert refused.value.line == 2
    stream = text._LineStream(path, [])
    next(iter(stream))  # the hashing thread is started; the rest is left unread
    closed = threading.Event()

    def let_go():
        with lock:
            stream._lines.close()
        closed.set()

    threading.Thread(target=let_go, daemon=True).start()
    assert closed.wait(10), "letting an unread file go joined a thread under threading's lock (deadlock)"
