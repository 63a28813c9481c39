"""A real HTTP server on a loopback port that speaks the OpenAI chat-completions protocol, for the
judge tests and benches: deterministic answers from a function of the request, top
log-probabilities of the answer's first token, usage, and injected failures (429 / 500 with a
short ``retry-after-ms``, slow answers). It counts every request it receives, per item key.

Nothing here leaves the machine: the server binds 127.0.0.1 only.
"""
from __future__ import annotations

import json
import math
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

TOKEN = re.compile(r'\{"|answer|score|":\s*"?|[^"{}:,\s]+|"?\s*[,}]\s*"?|.', re.S)


def tokens_of(content: str) -> list[str]:
    """The reply cut into tokens that spell it exactly (the answer value is a token of its own)."""
    out = TOKEN.findall(content)
    assert "".join(out) == content, (out, content)
    return out


class FakeOpenAI:
    """``answer(body) -> (content, {alternative: probability})`` decides each reply: the content and
    the probabilities of the answer token's alternatives (empty: no log-probabilities returned).
    ``key(body)`` names the item a request is about (counted in :attr:`per_key`). ``inject(n, body)``
    may return an HTTP status to answer instead (429, 500, ...) for the n-th request (1-based), or
    ``("slow", seconds)``."""

    def __init__(self, answer: Callable, *, key: Callable = lambda body: body["messages"][-1]["content"],
                 inject: Callable | None = None, usage: bool = True, api_key: str | None = None):
        self.answer, self.key, self.inject, self.usage, self.api_key = answer, key, inject, usage, api_key
        self.lock = threading.Lock()
        self.requests = 0
        self.per_key: Counter = Counter()
        self.answered: Counter = Counter()  # 200 answers per key
        self.bodies: list[dict] = []
        self.idempotency_keys: list[str | None] = []  # the header of each request, in order
        self.failures: Counter = Counter()
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def respond(self, body: dict, headers) -> tuple[int, dict, dict]:
        with self.lock:
            self.requests += 1
            n = self.requests
            key = self.key(body)
            self.per_key[key] += 1
            self.bodies.append(body)
            self.idempotency_keys.append(headers.get("Idempotency-Key"))
        if self.api_key is not None and headers.get("Authorization") != f"Bearer {self.api_key}":
            return 401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}}, {}
        injected = self.inject(n, body) if self.inject else None
        if isinstance(injected, tuple) and injected[0] == "slow":
            time.sleep(injected[1])
        elif injected:
            with self.lock:
                self.failures[injected] += 1
            return injected, {"error": {"message": f"injected {injected}", "type": "server_error"}}, \
                {"retry-after-ms": "5"}
        content, alternatives = self.answer(body)
        with self.lock:
            self.answered[key] += 1
        return 200, completion(body, content, alternatives, usage=self.usage), {}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 -- http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    status, payload, extra = 404, {"error": {"message": "no such route"}}, {}
                else:
                    status, payload, extra = fake.respond(body, self.headers)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in extra.items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client died (a killed worker)
                    pass

            def log_message(self, *args):
                pass

        return Handler


def completion(body: dict, content: str, alternatives: dict[str, float], *, usage: bool = True) -> dict:
    """A chat completion answering ``content``; with ``alternatives`` and ``logprobs`` asked, the
    token that begins the answer value carries them as top log-probabilities."""
    out = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
           "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop",
                        "logprobs": None}]}
    if body.get("logprobs") and alternatives:
        toks = tokens_of(content)
        entries = []
        for t in toks:
            top = ([{"token": a, "logprob": math.log(p), "bytes": None} for a, p in alternatives.items()]
                   if t in alternatives else [{"token": t, "logprob": 0.0, "bytes": None}])
            entries.append({"token": t, "logprob": math.log(alternatives[t]) if t in alternatives else 0.0,
                            "bytes": None, "top_logprobs": top[: body.get("top_logprobs") or 1]})
        out["choices"][0]["logprobs"] = {"content": entries}
    if usage:
        prompt = sum(len(m["content"].split()) for m in body["messages"])
        out["usage"] = {"prompt_tokens": prompt, "completion_tokens": len(content.split()),
                        "total_tokens": prompt + len(content.split())}
    return out


def json_answer(value: str, probabilities: dict[str, float] | None = None, key: str = "answer") -> tuple[str, dict]:
    """A JSON reply ``{"answer": "<value>"}`` and the alternatives of its answer token."""
    return json.dumps({key: value}), dict(probabilities or {})
