"""A judge behind any OpenAI-compatible chat-completions endpoint (vLLM, Ollama, llama.cpp's
server, TGI, OpenAI, a LiteLLM proxy), through the ``openai`` client.

One request per item: the question's prompt (:mod:`evaluation.judges.questions`) rendered with
the item's texts, temperature 0 by default, the answer constrained by a JSON schema
(``response_format`` ``json_schema``, strict; ``json_object`` or ``none`` for servers without it),
and, where the server returns them, the top log-probabilities of the answer's first token, from
which the question's score is computed (IFIR A.2's probability-weighted score; the probability of
Yes for a yes/no question).

The key comes from the environment only (``OPENAI_API_KEY`` unless the run names another
variable); a local server that needs none gets a placeholder. Retries with exponential backoff
on 408 / 409 / 429 / 5xx, on time-outs and on refused connections are the ``openai`` client's
(``max_retries``; it honours ``Retry-After``); how many each answer took is stored with it.
"""
from __future__ import annotations

import math
import os
import re
import time
from dataclasses import asdict, dataclass

from evaluation.judges.questions import SCALE_NOTES, JudgeQuestion, Prompt, answer_schema, render
from storage.errors import IFJudgeError

STRUCTURED = ("json_schema", "json_object", "none")
KEY_PLACEHOLDER = "not-needed"  # what a local server without a key receives


@dataclass(frozen=True)
class ChatConfig:
    """How a chat judge is called. The first group of fields defines the judgments (a run with
    other values is another run); ``concurrency``, ``timeout``, ``retries`` and ``api_key_env``
    only say how the requests are sent."""

    base_url: str
    model: str
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int | None = None
    logprobs: bool = True
    top_logprobs: int = 10
    structured: str = "json_schema"
    seed: int | None = None
    concurrency: int = 4
    timeout: float = 60.0
    retries: int = 8
    api_key_env: str = "OPENAI_API_KEY"

    DEFINING = ("base_url", "model", "temperature", "top_p", "max_tokens", "logprobs", "top_logprobs", "structured",
                "seed")

    def check(self) -> "ChatConfig":
        if not self.base_url.startswith(("http://", "https://")):
            raise IFJudgeError(f"the judge's base URL must start with http:// or https://, got {self.base_url!r}")
        if not self.model.strip():
            raise IFJudgeError("name the judge's model (--judge-model or the setting judge.model)")
        if self.structured not in STRUCTURED:
            raise IFJudgeError(f"structured must be one of {', '.join(STRUCTURED)}, got {self.structured!r}")
        for name, low in (("concurrency", 1), ("top_logprobs", 0), ("retries", 0)):
            if getattr(self, name) < low:
                raise IFJudgeError(f"{name} must be at least {low}, got {getattr(self, name)}")
        if self.timeout <= 0:
            raise IFJudgeError(f"the time-out must be positive, got {self.timeout}")
        return self

    def defining(self) -> dict:
        return {k: getattr(self, k) for k in self.DEFINING}

    def as_dict(self) -> dict:
        return asdict(self)


def item_fields(question: JudgeQuestion, item: dict, instance: dict, docs: dict[str, dict],
                choices: tuple[str, ...]) -> dict[str, str]:
    """The texts a prompt's placeholders take for one item: the query, the instruction (the
    narrative of a re-judging item), the passage (title, then text) or the numbered candidate
    passages, and the answer choices."""
    def passage(doc_id: str) -> str:
        d = docs.get(doc_id) or {}
        return "\n".join(part for part in (d.get("title", ""), d.get("text", "")) if part)

    fields = {"query": instance.get("query", ""), "instruction": instance.get("instruction", ""),
              "narrative": instance.get("instruction", ""), "choices": ", ".join(choices),
              "scale_note": SCALE_NOTES.get(tuple(choices), "")}
    if item.get("doc_id"):
        fields["passage"] = passage(item["doc_id"])
    candidates = item.get("payload", {}).get("candidates")
    if candidates:
        fields["passages"] = "\n".join(f"[{i}] {passage(d)}" for i, d in enumerate(candidates, start=1))
    return {f: fields.get(f, "") for f in question.fields}


def render_messages(prompt: Prompt, fields: dict[str, str]) -> list[dict]:
    """The chat messages of one item: the system message (when the prompt has one) and the user
    message, placeholders filled."""
    messages = [{"role": "system", "content": render(prompt.system, fields)}] if prompt.system.strip() else []
    return messages + [{"role": "user", "content": render(prompt.user, fields)}]


def request_body(config: ChatConfig, question: JudgeQuestion, messages: list[dict], choices: tuple[str, ...]) -> dict:
    """The ``chat.completions.create`` arguments of one item."""
    body = {"model": config.model, "messages": messages, "temperature": config.temperature,
            "max_tokens": config.max_tokens or question.max_tokens}
    top_p = config.top_p if config.top_p is not None else question.top_p
    if top_p is not None:
        body["top_p"] = top_p
    if config.logprobs:
        body["logprobs"] = True
        if config.top_logprobs:
            body["top_logprobs"] = config.top_logprobs
    if config.structured == "json_schema":
        body["response_format"] = {"type": "json_schema", "json_schema": {
            "name": f"{question.id}_answer", "schema": answer_schema(question, choices), "strict": True}}
    elif config.structured == "json_object":
        body["response_format"] = {"type": "json_object"}
    if config.seed is not None:
        body["seed"] = config.seed
    return body


def make_client(config: ChatConfig):
    """The ``openai`` client of a judge: base URL, key from the environment, time-out and retries."""
    import openai

    key = os.environ.get(config.api_key_env) or KEY_PLACEHOLDER
    return openai.OpenAI(base_url=config.base_url, api_key=key, timeout=config.timeout, max_retries=config.retries)


# --------------------------------------------------------------------------- reading an answer


def read_answer(content: str, question: JudgeQuestion, choices: tuple[str, ...]) -> tuple[str | None, int | None]:
    """``(answer, offset)``: the answer among ``choices`` in the model's reply and the character
    offset where it starts in ``content`` (None, None when no answer can be read). A JSON object
    with the question's key is read first; then a reply that is only a choice; then
    ``answer: <choice>``.

    >>> q = __import__("evaluation.judges.questions", fromlist=["x"]).judge_question("validity")
    >>> read_answer('{"answer": "No"}', q, ("Yes", "No")), read_answer(" yes.", q, ("Yes", "No"))
    (('No', 12), ('Yes', 1))
    """
    canon = {c.lower(): c for c in choices}
    m = re.search(r'"%s"\s*:\s*"?' % re.escape(question.answer_key), content)
    if m:
        rest = content[m.end():]
        hit = re.match(r"([^\"},\n]+)", rest)
        if hit and hit.group(1).strip().lower() in canon:
            return canon[hit.group(1).strip().lower()], m.end()
    stripped = content.strip().strip('."\'').strip()
    if stripped.lower() in canon:
        return canon[stripped.lower()], content.lower().find(stripped.lower())
    m = re.search(r"(?i)\b(?:answer|score)\s*[:=]\s*\"?(%s)\b" % "|".join(re.escape(c) for c in
                                                                      sorted(choices, key=len, reverse=True)), content)
    if m:
        return canon[m.group(1).lower()], m.start(1)
    return None, None


def answer_distribution(tokens: list[tuple[str, list[tuple[str, float]]]], content: str, offset: int,
                        choices: tuple[str, ...]) -> dict[str, float] | None:
    """The probabilities of the choices at the answer's first token: the top log-probabilities of
    the token where the answer starts (``offset`` in ``content``), each alternative token assigned
    to the one choice it begins (renormalised over the choices). None when the server returned no
    log-probabilities or its tokens do not spell the reply.

    >>> toks = [('{"answer":"', []), ("Yes", [("Yes", math.log(0.7)), ("No", math.log(0.2)), ("Maybe", -3.0)]), ('"}', [])]
    >>> {k: round(v, 3) for k, v in answer_distribution(toks, '{"answer":"Yes"}', 11, ("Yes", "No")).items()}
    {'Yes': 0.778, 'No': 0.222}
    """
    if not tokens or "".join(t for t, _ in tokens) != content:
        return None
    start = 0
    for token, alternatives in tokens:
        if start <= offset < start + len(token):
            prefix = token[:offset - start]
            mass: dict[str, float] = {}
            for alt, logprob in alternatives:
                if not alt.startswith(prefix) or not alt[len(prefix):].strip():
                    continue
                choice = _choice_begun(alt[len(prefix):].lstrip(), choices)
                if choice is not None:
                    mass[choice] = mass.get(choice, 0.0) + math.exp(logprob)
            total = sum(mass.values())
            return {c: v / total for c, v in mass.items()} if total > 0 else None
        start += len(token)
    return None


def _choice_begun(rest: str, choices: tuple[str, ...]) -> str | None:
    """The one choice a token's text begins ("not" begins "not relevant") or holds whole ('Yes"'
    holds "Yes"; the longest when several); None when it is none or several.

    >>> _choice_begun("not", ("relevant", "not relevant")), _choice_begun('Yes"', ("Yes", "No")), _choice_begun("x", ("Yes",))
    ('not relevant', 'Yes', None)
    """
    whole = [c for c in choices if rest.startswith(c)]
    begun = {c for c in choices if c.startswith(rest)} | set(whole)
    if len(begun) == 1:
        return begun.pop()
    return max(whole, key=len) if whole else None


def completion_tokens(completion) -> list[tuple[str, list[tuple[str, float]]]]:
    """The reply's tokens with their top alternatives, from a chat completion (empty without)."""
    lp = getattr(completion.choices[0], "logprobs", None)
    content = getattr(lp, "content", None) or []
    return [(t.token, [(a.token, a.logprob) for a in (t.top_logprobs or [])] or [(t.token, t.logprob)])
            for t in content]


def ask(client, body: dict, question: JudgeQuestion, choices: tuple[str, ...], payload: dict) -> dict:
    """Send one item's request and read the reply: ``value`` (the stored answer, None when none
    could be read, with ``error``), ``score``, ``raw`` (the reply as received), the server's
    ``prompt_tokens`` / ``completion_tokens``, ``retries`` and ``latency_ms``. API errors are
    raised (the runner decides what they mean)."""
    t0 = time.perf_counter()
    raw = client.chat.completions.with_raw_response.create(**body)
    completion = raw.parse()
    latency = int((time.perf_counter() - t0) * 1000)
    choice = completion.choices[0] if completion.choices else None
    content = (choice.message.content or "") if choice is not None else ""
    usage = getattr(completion, "usage", None)
    out = {"raw": content, "retries": int(getattr(raw, "retries_taken", 0) or 0), "latency_ms": latency,
           "prompt_tokens": getattr(usage, "prompt_tokens", None), "completion_tokens": getattr(usage, "completion_tokens", None),
           "payload": {**payload, "finish_reason": getattr(choice, "finish_reason", None)}}
    answer, offset = read_answer(content, question, choices)
    if answer is None:
        return {**out, "value": None, "score": None,
                "error": f"no answer among {', '.join(choices)} could be read in the reply"}
    dist = answer_distribution(completion_tokens(completion), content, offset, choices) if choice is not None else None
    score = question.score(dist, choices, payload) if dist and question.score else None
    if dist:
        out["payload"]["distribution"] = {c: round(p, 6) for c, p in dist.items()}
    return {**out, "value": question.stored(answer, payload), "score": score, "error": ""}

