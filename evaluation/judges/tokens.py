"""Counting the tokens of the chat requests a judge sends, before and after the run.

The estimate shown before a run and the count recorded with each answer apply the SAME rule to the
SAME messages (the requests are rendered once, :func:`evaluation.judges.chat.render_messages`), so
the estimate equals what is sent by that rule; the server's own count (its ``usage`` field, when it
returns one) is stored beside it, per answer, and the run's report shows both.

Two rules:

- ``words`` (the default; needs nothing): per message 3 tokens of chat framing plus one per word or
  punctuation mark of its content (the regular expression ``\\w+|[^\\w\\s]``), plus 3 tokens that
  prime the reply -- the framing constants of OpenAI's cookbook (``num_tokens_from_messages``) over
  a word count instead of a BPE vocabulary. A deterministic rule, not the server's tokenizer: BPE
  tokenizers give more tokens than words on long or rare words, so read the server's usage after a
  first run to calibrate a price;
- ``hf:DIR``: the Hugging Face tokenizer at DIR with its chat template
  (``apply_chat_template(messages, add_generation_prompt=True)``): the prompt token count a server
  that runs this tokenizer (vLLM, TGI, llama.cpp with the same model) reports, exactly.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from storage.errors import IFJudgeError

WORD = re.compile(r"\w+|[^\w\s]")
PER_MESSAGE = 3
REPLY_PRIMING = 3
DEFAULT_RULE = "words"

Messages = Sequence[dict]


def words_rule(messages: Messages) -> int:
    """Tokens of ``messages`` by the ``words`` rule.

    >>> words_rule([{"role": "user", "content": "Is it valid? Yes."}])  # 3 + 6 + 3
    12
    """
    return sum(PER_MESSAGE + len(WORD.findall(m["content"])) for m in messages) + REPLY_PRIMING


@lru_cache(maxsize=4)
def _hf_tokenizer(path: str):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path, local_files_only=True)
    except Exception as exc:  # noqa: BLE001 -- any loading error is the user's path
        raise IFJudgeError(f"cannot load the tokenizer at {path!r} (a folder with tokenizer.json and a chat "
                           f"template): {exc}") from None


def counter(rule: str = DEFAULT_RULE) -> Callable[[Messages], int]:
    """The counting function of a rule name (``words`` or ``hf:DIR``)."""
    if rule == "words":
        return words_rule
    if rule.startswith("hf:"):
        tok = _hf_tokenizer(rule[3:])

        def count(messages: Messages) -> int:
            ids = tok.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=True)
            return len(ids["input_ids"] if isinstance(ids, dict) else ids)

        return count
    raise IFJudgeError(f"unknown token rule {rule!r}; expected 'words' or 'hf:DIR' (a local tokenizer)")


def describe(rule: str) -> str:
    """One line naming the rule, printed beside every estimate."""
    if rule == "words":
        return ("IFJudge's words rule: 3 per message + one per word or punctuation mark + 3 for the reply "
                "(not the server's tokenizer; the server's usage is recorded beside it)")
    return f"the tokenizer at {rule[3:]} with its chat template (what a server running it counts)"
