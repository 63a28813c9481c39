"""A judge run: its configuration, its items, the estimate shown before it starts, and the loop
that judges the items (a worker's job of kind ``judge``, or the foreground).

A run is one judge configuration (judge kind, model, base URL, prompt version and hash, scale and
the parameters that change an answer) over one question of a project; the configuration's hash
(``config_key``) finds the run again, so starting the same configuration resumes it. Its items
are planned when it is created or resumed (:func:`open_run`); the loop judges only the items
without a stored answer, stores every answer in its own transaction as soon as it arrives, and
writes the job's progress after each one. A worker killed mid-run therefore loses at most the
answers in flight (``concurrency`` requests), which the next attempt sends again; no stored item
is ever sent again.

>>> from evaluation.judges.questions import judge_question
>>> config_key(1, judge_question("validity").default_prompt, judge="chat", model="m", base_url="http://x/v1",
...            scale="yesno", defining={"temperature": 0.0}) == config_key(1, judge_question("validity").default_prompt,
...            judge="chat", model="m", base_url="http://x/v1", scale="yesno", defining={"temperature": 0.0})
True
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace

from evaluation.judges import tokens
from evaluation.judges.chat import ChatConfig, ask, item_fields, make_client, render_messages, request_body
from evaluation.judges.questions import JUDGE_QUESTIONS, JudgeQuestion, Prompt, check_template, judge_question
from storage import judge_labels as store
from storage import projects, users
from storage.db import Database
from storage.errors import IFJudgeError

JUDGES = ("chat", "biencoder", "crossencoder")
CHUNK = 200  # items rendered (their texts read) together
FIRST_ERRORS = 5  # this many unreadable answers before the first readable one stop the run

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class JudgeSpec:
    """What a lead asks for: the judge, its model (and endpoint), the question, its scale and
    prompt, the token rule; ``extra`` defines the items further (INSTFOL's runs and top-k)."""

    question: str
    judge: str = "chat"
    model: str = ""
    chat: ChatConfig | None = None
    scale: str | None = None
    prompt_version: str | None = None
    token_rule: str = tokens.DEFAULT_RULE
    extra: dict = field(default_factory=dict)

    def checked(self) -> "JudgeSpec":
        q = judge_question(self.question)
        if self.judge not in JUDGES:
            raise IFJudgeError(f"unknown judge {self.judge!r}; expected one of {', '.join(JUDGES)}")
        if self.judge == "chat":
            if self.chat is None:
                raise IFJudgeError("a chat judge needs its base URL and model")
            self.chat.check()
        elif not q.local:
            raise IFJudgeError(f"a {self.judge} judge answers {', '.join(LOCAL_QUESTIONS)} (relevance-type questions), "
                               f"not {self.question}")
        tokens.counter(self.token_rule)
        return replace(self, scale=q.check_scale(self.scale or q.scales[0]),
                       model=self.chat.model if self.chat is not None else (self.model or "minilm"))


#: the questions a local (bi-encoder / cross-encoder) judge answers: a passage judged against a text
#: (each declares it: ``JudgeQuestion.local``)
LOCAL_QUESTIONS = tuple(q.id for q in JUDGE_QUESTIONS.values() if q.local)


def resolve_prompt(db: Database, question: str, version: str | None) -> Prompt:
    """A prompt version of the question: a built-in one, else a lead's stored one; the default
    (the first built-in) without ``version``."""
    q = judge_question(question)
    if version is None:
        return q.default_prompt
    found = q.prompt(version)
    if found is not None:
        return found
    for p in store.stored_prompts(db, question):
        if p["version"] == version:
            return Prompt(question, version, p["system"], p["user_template"], p["source"])
    known = [p.version for p in q.prompts] + [p["version"] for p in store.stored_prompts(db, question)]
    raise IFJudgeError(f"{question} has no prompt version {version!r}; it has: {', '.join(known)}")


def save_prompt(db: Database, *, question: str, version: str, system: str, user: str, author: str,
                note: str = "") -> dict:
    """A lead's new prompt version (checked: only the question's placeholders); a built-in
    version name cannot be taken."""
    q = judge_question(question)
    user_row = users.get_user(db, author)
    if user_row is None or user_row["role"] != "lead":
        raise IFJudgeError(f"{author!r} is not a lead: only a lead edits the judge's prompts")
    if q.prompt(version) is not None:
        raise IFJudgeError(f"{version!r} is a built-in prompt version of {question}: choose a new name")
    check_template(q, system, user)
    p = Prompt(question, version, system, user, f"edited by {author}")
    return store.add_prompt(db, question=question, version=version, system=system, user_template=user,
                            source=p.source, hash=p.hash, author=author, note=note)


def config_key(project_id: int, prompt: Prompt, *, judge: str, model: str, base_url: str, scale: str,
               defining: dict, extra: dict | None = None) -> str:
    """SHA-256 of what defines a run's answers: the project, question, judge, model, endpoint,
    prompt hash, scale, the answer-changing parameters and the items' definition."""
    blob = json.dumps({"project": project_id, "question": prompt.question, "judge": judge, "model": model,
                       "base_url": base_url, "prompt": prompt.hash, "scale": scale, "defining": defining,
                       "extra": extra or {}}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def open_run(db: Database, project: dict, spec: JudgeSpec, items: list[dict], *, created_by: str) -> dict:
    """The run of ``spec`` on ``project`` (found again by its configuration, or created) with
    ``items`` planned; returns ``{"run", "created", "items_added"}``."""
    spec = spec.checked()
    prompt = resolve_prompt(db, spec.question, spec.prompt_version) if spec.judge == "chat" else None
    base_url = spec.chat.base_url if spec.chat else ""
    defining = spec.chat.defining() if spec.chat else {}
    params = {"scale": spec.scale, "token_rule": spec.token_rule, "extra": spec.extra,
              **({"chat": spec.chat.as_dict()} if spec.chat else {})}
    key = config_key(project["id"], prompt or _no_prompt(spec.question), judge=spec.judge, model=spec.model,
                     base_url=base_url, scale=spec.scale, defining=defining, extra=spec.extra)
    run, created = store.find_or_create_run(
        db, project_id=project["id"], question=spec.question, judge=spec.judge, model=spec.model, base_url=base_url,
        prompt_version=prompt.version if prompt else "", prompt_hash=prompt.hash if prompt else "",
        prompt=prompt.as_dict() if prompt else {}, parameters=params, config_key=key, created_by=created_by)
    if not items:
        raise IFJudgeError(f"project {project['name']!r} has no item for a {spec.question} judge")
    return {"run": run, "created": created, "items_added": store.add_items(db, run["id"], items)}


def _no_prompt(question: str) -> Prompt:
    return Prompt(question, "", "", "")


def run_prompt(run: dict) -> Prompt:
    p = run["prompt"]
    return Prompt(run["question"], p["version"], p["system"], p["user"], p.get("source", ""))


def chat_config(run: dict, sending: dict | None = None) -> ChatConfig:
    """The run's chat configuration; ``sending`` replaces how it is sent (concurrency, time-out,
    retries, key variable) for this attempt."""
    allowed = {"concurrency", "timeout", "retries", "api_key_env"}
    return ChatConfig(**{**run["parameters"]["chat"], **{k: v for k, v in (sending or {}).items() if k in allowed}}).check()


# --------------------------------------------------------------------------- the requests


@dataclass
class Request:
    """One item ready to send: its key, payload, choices and messages."""

    item: dict
    choices: tuple[str, ...]
    messages: list[dict]


def requests(db: Database, run: dict, items: list[dict]) -> Iterator[Request]:
    """The items' requests, rendered :data:`CHUNK` items at a time (texts read per chunk)."""
    q = judge_question(run["question"])
    prompt = run_prompt(run)
    insts = {i["instance_id"]: i for i in projects.instances(db, run["project_id"])}
    scale = run["parameters"]["scale"]
    for start in range(0, len(items), CHUNK):
        chunk = items[start:start + CHUNK]
        ids = {d for it in chunk for d in ([it["doc_id"]] if it["doc_id"] else []) + it["payload"].get("candidates", [])}
        docs = projects.documents_by_id(db, run["project_id"], ids)
        for it in chunk:
            choices = q.choices(scale, len(it["payload"].get("candidates", [])))
            fields = item_fields(q, it, insts.get(it["instance_id"], {}), docs, choices)
            yield Request(it, choices, render_messages(prompt, fields))


def estimate(db: Database, run: dict, *, price_in: float | None = None, price_out: float | None = None) -> dict:
    """What the run's pending items will send, counted before anything is sent: ``requests``,
    ``prompt_tokens`` (the run's token rule over the exact messages), ``max_completion_tokens``
    (requests x the answer's token limit: an upper bound), and with prices (per million tokens)
    ``cost`` = prompt tokens x ``price_in`` + max completion tokens x ``price_out`` (an upper
    bound). ``already_judged``: items with a stored answer, which are not sent again."""
    pending = store.items(db, run["id"], pending=True)
    out = {"run_id": run["id"], "items": store.item_count(db, run["id"]), "requests": len(pending),
           "already_judged": store.item_count(db, run["id"]) - len(pending), "rule": run["parameters"]["token_rule"],
           "rule_description": tokens.describe(run["parameters"]["token_rule"])}
    if run["judge"] != "chat":
        return {**out, "prompt_tokens": 0, "max_completion_tokens": 0, "cost": 0.0, "note": "a local judge: no request"}
    count = tokens.counter(run["parameters"]["token_rule"])
    cfg, q = chat_config(run), judge_question(run["question"])
    out["prompt_tokens"] = sum(count(r.messages) for r in requests(db, run, pending))
    out["max_completion_tokens"] = len(pending) * (cfg.max_tokens or q.max_tokens)
    out["cost"] = (None if price_in is None else
                   out["prompt_tokens"] * price_in / 1e6 + out["max_completion_tokens"] * (price_out or 0.0) / 1e6)
    out["prices_per_million"] = {"input": price_in, "output": price_out}
    return out


# --------------------------------------------------------------------------- the loop


def run_judge(db: Database, run_id: int, *, sending: dict | None = None, progress: Progress | None = None,
              client=None) -> dict:
    """Judge the run's pending items; returns ``{"run_id", "judged", "errors", "retries",
    "counted_tokens", "prompt_tokens", "completion_tokens"}`` for this attempt. ``progress(done,
    total, message)`` is called after every stored answer and may raise to stop the run (a cancel):
    the answers in flight are then awaited and stored before the exception goes on."""
    run = store.get_run(db, run_id)
    if run["judge"] == "chat":
        return _ChatLoop(db, run, chat_config(run, sending), client, progress or (lambda *a: None)).run()
    from evaluation.judges.local import judge_local

    return judge_local(db, run, progress=progress or (lambda *a: None))


class _ChatLoop:
    """One attempt of a chat run: at most ``concurrency`` requests in flight, each answer stored
    as it arrives (the main thread writes; the pool's threads only talk to the server)."""

    def __init__(self, db, run, cfg: ChatConfig, client, progress: Progress):
        self.db, self.run_, self.cfg, self.progress = db, run, cfg, progress
        self.q = judge_question(run["question"])
        self.count = tokens.counter(run["parameters"]["token_rule"])
        self.client = client or make_client(cfg)
        self.pending = store.items(db, run["id"], pending=True)
        before = store.item_count(db, run["id"]) - len(self.pending)
        self.message = f"judging with {cfg.model}" + (f" ({before} items judged before)" if before else "")
        self.done, self.first_errors, self.readable = 0, [], False
        self.totals = dict.fromkeys(("errors", "retries", "counted_tokens", "prompt_tokens", "completion_tokens"), 0)

    def run(self) -> dict:
        self.progress(0, len(self.pending), self.message)
        reqs = requests(self.db, self.run_, self.pending)
        stop: BaseException | None = None
        with ThreadPoolExecutor(self.cfg.concurrency, thread_name_prefix=f"judge-{self.run_['id']}") as pool:
            outstanding: dict = {}
            self._fill(pool, outstanding, reqs)
            while outstanding:
                finished, _ = wait(outstanding, return_when=FIRST_COMPLETED)
                for f in finished:
                    outstanding.pop(f)
                    try:
                        self._save(f.result())
                    except BaseException as exc:  # noqa: BLE001 -- kept, raised once the answers in flight are stored
                        stop = stop or exc
                if stop is None:
                    try:
                        self.progress(self.done, len(self.pending), self.message)
                        self._fill(pool, outstanding, reqs)
                    except BaseException as exc:  # noqa: BLE001 -- a cancel or a stop: drain, then raise
                        stop = exc
        if stop is not None:
            raise _explained(stop, self.cfg)
        if self.first_errors:  # every answer unreadable, fewer than FIRST_ERRORS of them: keep them
            store.store_labels(self.db, self.run_["id"], self.first_errors)
        return {"run_id": self.run_["id"], "judged": self.done, **self.totals}

    def _fill(self, pool, outstanding: dict, reqs) -> None:
        while len(outstanding) < self.cfg.concurrency:
            r = next(reqs, None)
            if r is None:
                return
            outstanding[pool.submit(self._answer, r)] = r

    def _answer(self, r: Request) -> dict:
        """One item's answer (in a pool thread): the reply read, or an error answer when the
        server refused this request (400 / 422: e.g. longer than the model's context)."""
        import openai

        it = r.item
        base = {"instance_id": it["instance_id"], "question": it["question"], "doc_id": it["doc_id"],
                "prompt_hash": self.run_["prompt_hash"], "counted_tokens": self.count(r.messages)}
        body = {**request_body(self.cfg, self.q, r.messages, r.choices),
                "extra_headers": {"Idempotency-Key": idempotency_key(self.run_["id"], it)}}
        try:
            return {**base, **ask(self.client, body, self.q, r.choices, it["payload"])}
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            return {**base, "value": None, "score": None, "raw": "", "payload": it["payload"],
                    "error": f"the server refused the request ({exc.status_code}): {_short(exc)}"}

    def _save(self, label: dict) -> None:
        """Store one answer now (its own transaction). Unreadable answers before the first
        readable one are held back: :data:`FIRST_ERRORS` of them stop the run (a prompt or an
        answer format the server does not follow), and nothing of them is kept."""
        if label["value"] is None and not self.readable:
            self.first_errors.append(label)
            if len(self.first_errors) >= FIRST_ERRORS:
                raise IFJudgeError(f"the first {FIRST_ERRORS} answers could not be used ({label['error']}; reply: "
                                   f"{label['raw'][:200]!r}); check the prompt, or send --structured json_object or none "
                                   "to a server without JSON-schema answers")
            return
        batch = [label]
        if not self.readable and label["value"] is not None:
            self.readable, batch = True, self.first_errors + [label]
            self.first_errors = []
        store.store_labels(self.db, self.run_["id"], batch)
        for lab in batch:
            self.done += 1
            self.totals["errors"] += lab["value"] is None
            for k in ("retries", "counted_tokens", "prompt_tokens", "completion_tokens"):
                self.totals[k] += lab.get(k) or 0


def idempotency_key(run_id: int, item: dict) -> str:
    """The ``Idempotency-Key`` header of an item's request: the same for every attempt of the same
    run (retries, and a resumed run after a crash), so that a server or proxy that honours the
    header answers a request sent again from what it answered before.

    >>> idempotency_key(3, {"instance_id": "q1_1", "question": "validity", "doc_id": ""})
    'ifjudge-3-...'
    """
    digest = hashlib.sha256(f"{item['instance_id']}\x1f{item['question']}\x1f{item['doc_id']}".encode()).hexdigest()
    return f"ifjudge-{run_id}-{digest[:24]}"


def _short(exc) -> str:
    body = getattr(exc, "body", None)
    text = body.get("message") if isinstance(body, dict) and body.get("message") else str(exc)
    return " ".join(str(text).split())[:300]


def _explained(exc: BaseException, cfg: ChatConfig) -> BaseException:
    """An API error that stops the run, as an :class:`IFJudgeError` saying what to do; any other
    exception (a cancel, a stop) unchanged. The answers stored so far are kept: the same run
    started again judges only the rest."""
    import openai

    keep = "; the answers stored so far are kept, and the same command resumes the run"
    if isinstance(exc, openai.AuthenticationError):
        return IFJudgeError(f"the judge's server refused the key (401): set {cfg.api_key_env} in the environment{keep}")
    if isinstance(exc, openai.PermissionDeniedError):
        return IFJudgeError(f"the judge's server refused access (403): {_short(exc)}{keep}")
    if isinstance(exc, openai.NotFoundError):
        return IFJudgeError(f"the judge's server has no model {cfg.model!r} at {cfg.base_url} (404): {_short(exc)}{keep}")
    if isinstance(exc, openai.RateLimitError):
        return IFJudgeError(f"the judge's server still answered 429 (rate limit) after {cfg.retries} retries with backoff; "
                            f"lower --concurrency (now {cfg.concurrency}) or raise --retries{keep}")
    if isinstance(exc, openai.APITimeoutError):
        return IFJudgeError(f"the judge's server did not answer within {cfg.timeout:g} s, {cfg.retries} retries; raise "
                            f"--timeout{keep}")
    if isinstance(exc, openai.APIConnectionError):
        return IFJudgeError(f"cannot reach the judge's server at {cfg.base_url} ({_short(exc)}){keep}")
    if isinstance(exc, openai.APIStatusError):
        return IFJudgeError(f"the judge's server answered {exc.status_code} after {cfg.retries} retries: {_short(exc)}{keep}")
    return exc
