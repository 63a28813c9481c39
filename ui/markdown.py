"""Untrusted text rendered as Markdown that shows it literally: every ASCII punctuation mark is
backslash-escaped, so ``**``, links, HTML, ``:color[...]`` directives, emoji short codes and ``$``
maths are shown as typed. Used where a page needs Markdown styling around untrusted text (a
narrative diff, an expander label); otherwise prefer :func:`ui.text.literal`."""
from __future__ import annotations

import re
import string

from annotation.narratives.diff import DiffSpan, join_tokens

_MD_SPECIAL = re.compile("([" + re.escape(string.punctuation) + "])")


def md_escape(text: str) -> str:
    """Backslash-escape every ASCII punctuation character so that Markdown (and Streamlit's
    ``:color[...]`` directives, emoji short codes and ``$`` maths) render ``text`` literally.

    >>> md_escape("**not** [x](y) :red[z] $1")
    '\\\\*\\\\*not\\\\*\\\\* \\\\[x\\\\]\\\\(y\\\\) \\\\:red\\\\[z\\\\] \\\\$1'
    """
    return _MD_SPECIAL.sub(r"\\\1", text).replace("\n", " ")


def diff_markdown(spans: list[DiffSpan]) -> str:
    """The diff as Markdown safe for ``st.markdown``: every token escaped with :func:`md_escape`;
    additions as ``:green-background[**...**]``, removals as ``:red-background[~~...~~]``."""
    parts = []
    for k, s in enumerate(spans):
        body, space = join_tokens(s.tokens, s.spaces, escape=md_escape)
        if s.op == "insert":
            body = f":green-background[**{body}**]"
        elif s.op == "delete":
            body = f":red-background[~~{body}~~]"
        parts.append((" " if space and k else "") + body)
    return "".join(parts)


