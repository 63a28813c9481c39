"""Query and instruction terms highlighted in a passage (the annotate page's "Highlight terms"
switch), as Markdown that still shows the untrusted text literally: every piece of the text is
escaped with :func:`ui.markdown.md_escape`; only whole words (letters and digits, which need no
escaping) are wrapped in Streamlit's ``:orange-background[...]`` directive."""
from __future__ import annotations

import re

from ui.markdown import md_escape

_WORD = re.compile(r"\w+", re.UNICODE)
# words too common to point at anything (English; other languages keep every word of 3+ letters)
STOPWORDS = frozenset("""a an and are as at be but by can do does for from has have how i in is it its my of on or
our that the their them they this to was we what when where which who why will with you your want need
know about into more most some than then there these those would should could also just like""".split())


def terms(*texts: str) -> set[str]:
    """The words of ``texts`` worth highlighting: lower-cased, 3 characters or more, no stop words.

    >>> sorted(terms("What is an endocrinology clinic?", "I want the FIRST visit"))
    ['clinic', 'endocrinology', 'first', 'visit']
    """
    return {w.lower() for t in texts for w in _WORD.findall(t) if len(w) >= 3 and w.lower() not in STOPWORDS}


def highlight_markdown(text: str, words: set[str]) -> str:
    """``text`` as Markdown shown literally, with the words in ``words`` (lower-case) highlighted;
    line breaks are kept.

    >>> highlight_markdown("A **clinic** <b>visit</b>", {"clinic", "visit"})
    'A \\\\*\\\\*:orange-background[clinic]\\\\*\\\\* \\\\<b\\\\>:orange-background[visit]\\\\<\\\\/b\\\\>'
    """
    lines = []
    for line in text.split("\n"):
        out, at = [], 0
        for m in _WORD.finditer(line):
            out.append(md_escape(line[at:m.start()]))
            word = m.group()
            out.append(f":orange-background[{md_escape(word)}]" if word.lower() in words else md_escape(word))
            at = m.end()
        out.append(md_escape(line[at:]))
        lines.append("".join(out))
    return "  \n".join(lines)
