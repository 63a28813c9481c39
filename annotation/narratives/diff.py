"""Word-level diff of two narratives (FollowIR, Weller et al., 2024, §3: experts edit a TREC
narrative; the edit is shown word by word).

:func:`word_diff` compares two texts; the diff reads as counts (:func:`diff_counts`), a table of the
changed runs (:func:`diff_rows`) or wdiff text (:func:`diff_text`). The Markdown rendering for the
pages lives in :mod:`ui.markdown`. Plain Python: no Streamlit, no SQL.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_TOKEN = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


@dataclass(frozen=True)
class DiffSpan:
    """A run of tokens that is ``equal`` in both texts, or was ``insert``-ed or ``delete``-d.
    ``spaces[i]`` is True when token ``i`` was preceded by whitespace in its text."""

    op: str
    tokens: tuple[str, ...]
    spaces: tuple[bool, ...]


def tokenize(text: str) -> list[tuple[str, bool]]:
    """Words (letters, digits, inner apostrophes) and single punctuation marks, each with a flag
    telling whether whitespace preceded it. Whitespace itself is not a token.

    >>> tokenize("robots, not humans")
    [('robots', False), (',', False), ('not', True), ('humans', True)]
    """
    return [(m.group(), m.start() > 0 and text[m.start() - 1].isspace()) for m in _TOKEN.finditer(text or "")]


def word_diff(original: str, modified: str) -> list[DiffSpan]:
    """Word-level diff of two narratives (``difflib.SequenceMatcher`` over :func:`tokenize` tokens).

    A replaced run is reported as a deletion followed by an insertion. Punctuation marks are tokens
    of their own, so a changed comma shows as one removed and one added token; whitespace and line
    breaks are not compared.

    Parameters
    ----------
    original, modified : str
        The two texts (either may be empty).

    Returns
    -------
    list of DiffSpan, in reading order; concatenating the ``equal`` and ``delete`` spans gives the
    original tokens, the ``equal`` and ``insert`` spans the modified ones.

    Examples
    --------
    >>> [(s.op, " ".join(s.tokens)) for s in word_diff("robots in surgery", "robots in surgery in the US")]
    [('equal', 'robots in surgery'), ('insert', 'in the US')]
    """
    a, b = tokenize(original), tokenize(modified)
    matcher = difflib.SequenceMatcher(None, [t for t, _ in a], [t for t, _ in b], autojunk=False)
    spans: list[DiffSpan] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("delete", "replace") and i2 > i1:
            spans.append(DiffSpan("delete", tuple(t for t, _ in a[i1:i2]), tuple(s for _, s in a[i1:i2])))
        if op == "equal":
            spans.append(DiffSpan("equal", tuple(t for t, _ in b[j1:j2]), tuple(s for _, s in b[j1:j2])))
        if op in ("insert", "replace") and j2 > j1:
            spans.append(DiffSpan("insert", tuple(t for t, _ in b[j1:j2]), tuple(s for _, s in b[j1:j2])))
    return spans


def diff_counts(spans: list[DiffSpan]) -> dict[str, int]:
    """Tokens ``added`` and ``removed`` (words and punctuation marks)."""
    return {
        "added": sum(len(s.tokens) for s in spans if s.op == "insert"),
        "removed": sum(len(s.tokens) for s in spans if s.op == "delete"),
    }


def same_words(a: str, b: str) -> bool:
    """True when the two texts have the same tokens (they differ at most in whitespace)."""
    return [t for t, _ in tokenize(a)] == [t for t, _ in tokenize(b)]


def join_tokens(tokens: tuple[str, ...], spaces: tuple[bool, ...], *, escape=lambda t: t) -> tuple[str, bool]:
    """The tokens of a span as text, each passed through ``escape``, with a space where the original
    text had whitespace; and whether the span itself was preceded by whitespace.

    >>> join_tokens(("not", "humans", "."), (True, True, False))
    ('not humans.', True)
    """
    out = "".join((" " if sp and k else "") + escape(t) for k, (t, sp) in enumerate(zip(tokens, spaces)))
    return out, bool(spaces and spaces[0])


def diff_text(spans: list[DiffSpan]) -> str:
    """The diff as plain text in wdiff style: ``[-removed-]`` and ``{+added+}``.

    >>> diff_text(word_diff("about robots.", "about surgical robots only."))
    'about {+surgical+} robots {+only+}.'
    """
    parts = []
    for k, s in enumerate(spans):
        body, space = join_tokens(s.tokens, s.spaces)
        if s.op == "insert":
            body = "{+" + body + "+}"
        elif s.op == "delete":
            body = "[-" + body + "-]"
        parts.append((" " if space and k else "") + body)
    return "".join(parts)


def diff_rows(spans: list[DiffSpan]) -> list[dict]:
    """The changes only, one row per changed run: ``{"change": "added" | "removed", "text"}``."""
    return [
        {"change": "added" if s.op == "insert" else "removed", "text": join_tokens(s.tokens, s.spaces)[0]}
        for s in spans
        if s.op != "equal"
    ]

