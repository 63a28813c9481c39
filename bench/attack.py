"""What a visitor who is not signed in can do to a running IFJudge server, measured.

    python bench/attack.py                       # starts `ifjudge serve` on a fresh demo database
    python bench/attack.py --db COPY.db          # ... on a copy of a real database (never the original)
    python bench/attack.py --url http://127.0.0.1:8501 --pid PID   # a server already running

Every request goes to 127.0.0.1 and every loop is bounded. It opens a Streamlit session as the
sign-in page does (``/_stcore/health`` hands out the XSRF cookie, the websocket gives a session
id), then:

* sends ``--upload-mb`` (default 200) of file uploads (``PUT /_stcore/upload_file/<session>/<id>``,
  50 MB each under new ids) and prints the Streamlit server's resident memory before and after,
  against the 20 MB the growth must stay under;
* reads ``/_stcore/metrics`` without a cookie;
* prints the anti-framing headers of the page.

The helpers (:func:`open_session`, :func:`put_upload`, :func:`rss_mb`) are used by
``tests/e2e/test_security_browser.py``.
"""
from __future__ import annotations

import argparse
import http.client
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CHUNK = 1 << 20


def _hostport(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("attack traffic goes to 127.0.0.1 only")
    return parts.hostname, parts.port or 80


def xsrf_cookie(url: str) -> str:
    """The XSRF cookie value ``/_stcore/health`` hands to anyone."""
    host, port = _hostport(url)
    conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.request("GET", "/_stcore/health")
    response = conn.getresponse()
    response.read()
    cookie = response.getheader("set-cookie") or ""
    conn.close()
    return cookie.split(";")[0].split("=", 1)[1] if "=" in cookie else ""


def open_session(url: str, *, cookies: dict | None = None, existing: str | None = None, rerun: bool = True,
                 timeout: float = 30):
    """A Streamlit session opened as a browser's first page load does: ``(websocket, session id,
    xsrf)``; the caller closes the websocket. ``existing`` reconnects to a session id; without
    ``rerun`` the page is not run (the connection only)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.sync.client import connect

    host, port = _hostport(url)
    xsrf = xsrf_cookie(url)
    jar = {"_streamlit_xsrf": xsrf, **(cookies or {})}
    protocols = ["streamlit", xsrf] + ([existing] if existing else [])
    ws = connect(f"ws://{host}:{port}/_stcore/stream", subprotocols=protocols, open_timeout=timeout, legacy=True,
                 proxy=None,  # straight to 127.0.0.1, whatever proxy the environment names
                 additional_headers={"Cookie": "; ".join(f"{k}={v}" for k, v in jar.items()),
                                     "Origin": f"http://{host}:{port}"}, max_size=None)
    if not rerun:
        return ws, existing, xsrf
    msg = BackMsg()
    msg.rerun_script.query_string = ""
    msg.rerun_script.page_script_hash = ""
    ws.send(msg.SerializeToString())
    deadline = time.time() + timeout
    while time.time() < deadline:
        fm = ForwardMsg()
        fm.ParseFromString(ws.recv(timeout=timeout))
        if fm.WhichOneof("type") == "new_session":
            return ws, fm.new_session.initialize.session_id, xsrf
    ws.close()
    raise TimeoutError("no session from the server")


def session_texts(ws, *, timeout: float = 30) -> list[str]:
    """The text of every element of the session's current run, until it finishes (an exception
    element as ``exception: <type> <message> <stack trace>``)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    texts, deadline = [], time.time() + timeout
    while time.time() < deadline:
        fm = ForwardMsg()
        fm.ParseFromString(ws.recv(timeout=timeout))
        kind = fm.WhichOneof("type")
        if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
            element = fm.delta.new_element
            inner = getattr(element, element.WhichOneof("type") or "", None)
            if element.WhichOneof("type") == "exception":
                texts.append(f"exception: {inner.type} {inner.message} {' '.join(inner.stack_trace)}")
            for field in ("body", "label"):
                if inner is not None and getattr(inner, field, ""):
                    texts.append(getattr(inner, field))
        if kind == "script_finished":
            return texts
    return texts


def malformed_rerun(ws) -> None:
    """Ask for a run with widget states no page has: a widget id Streamlit does not know."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    msg = BackMsg()
    msg.rerun_script.query_string = ""
    widget = msg.rerun_script.widget_states.widgets.add()
    widget.id = "$$WIDGET_ID-0123456789abcdef-None"
    widget.string_trigger_value.data = "x"
    ws.send(msg.SerializeToString())


def put_upload(url: str, session_id: str, xsrf: str, nbytes: int, *, file_id: str = "f") -> int:
    """Send one upload of ``nbytes`` (streamed, 1 MB at a time); the HTTP status (0: the server
    closed the connection before the whole body was sent and gave no answer)."""
    host, port = _hostport(url)
    boundary = "ifjudgeattack"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_id}.bin\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    conn = http.client.HTTPConnection(host, port, timeout=60)
    try:
        conn.putrequest("PUT", f"/_stcore/upload_file/{session_id}/{file_id}")
        conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        conn.putheader("Content-Length", str(len(head) + nbytes + len(tail)))
        conn.putheader("X-Xsrftoken", xsrf)
        conn.putheader("Cookie", f"_streamlit_xsrf={xsrf}")
        conn.endheaders()
        conn.send(head)
        chunk, left = b"x" * CHUNK, nbytes
        while left > 0:
            conn.send(chunk[:min(CHUNK, left)])
            left -= CHUNK
        conn.send(tail)
    except (BrokenPipeError, ConnectionResetError):
        pass
    try:
        response = conn.getresponse()
        response.read()
        return response.status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


def get(url: str, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    host, port = _hostport(url)
    conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def rss_mb(pid: int) -> float:
    """Resident memory of the process ``pid`` in MB (``VmRSS`` of /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for {pid}")


def streamlit_pid(parent: int) -> int | None:
    """The Streamlit server among the children of ``ifjudge serve``."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == parent and b"streamlit" in cmdline:
            return int(stat.parent.name)
    return None


def upload_attack(url: str, pid: int, total_mb: int, *, each_mb: int = 50) -> dict:
    ws, sid, xsrf = open_session(url)
    try:
        before = rss_mb(pid)
        statuses = [put_upload(url, sid, xsrf, min(each_mb, total_mb - k) << 20, file_id=f"f{k}")
                    for k in range(0, total_mb, each_mb)]
        time.sleep(1)
        after = rss_mb(pid)
    finally:
        ws.close()
    return {"sent_mb": total_mb, "statuses": statuses, "rss_before_mb": before, "rss_after_mb": after,
            "growth_mb": after - before}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url")
    p.add_argument("--pid", type=int, help="the Streamlit server's process id (with --url)")
    p.add_argument("--db", help="a COPY of a database to serve (default: a fresh demo database)")
    p.add_argument("--upload-mb", type=int, default=200)
    args = p.parse_args()
    serve = None
    work = Path(tempfile.mkdtemp(prefix="ifjudge-attack-"))
    try:
        if args.url:
            url, pid = args.url, args.pid
        else:
            db = work / "ifjudge.db"
            if args.db:
                shutil.copy(args.db, db)
            import socket

            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            url = f"http://127.0.0.1:{port}"
            env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
            serve = subprocess.Popen([sys.executable, "-m", "cli", "serve", "--db", str(db), "--port", str(port),
                                      "--address", "127.0.0.1", "--no-worker", *([] if args.db else ["--demo"])],
                                     cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 90
            while time.time() < deadline:
                try:
                    if get(url, "/_stcore/health")[0] == 200:
                        break
                except OSError:
                    time.sleep(0.5)
            pid = streamlit_pid(serve.pid)
        print(f"load: {os.getloadavg()[0]:.1f}")
        up = upload_attack(url, pid, args.upload_mb)
        print(f"uploads without signing in: {up['sent_mb']} MB sent, answers {sorted(set(up['statuses']))}; "
              f"server memory {up['rss_before_mb']:.0f} -> {up['rss_after_mb']:.0f} MB "
              f"(growth {up['growth_mb']:+.1f} MB; must stay under 20 MB; before the guard: 546 -> 749 MB for 200 MB)")
        status, headers, _ = get(url, "/_stcore/metrics")
        print(f"/_stcore/metrics without signing in: HTTP {status} (readable before the guard: 200)")
        _, headers, _ = get(url, "/")
        for name in ("x-frame-options", "content-security-policy", "x-content-type-options"):
            print(f"{name}: {headers.get(name, 'MISSING')}")
    finally:
        if serve is not None:
            serve.terminate()
            serve.wait(20)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
