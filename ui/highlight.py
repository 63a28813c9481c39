"""Query and instruction terms highlighted in a passage (the annotate page's "Highlight query
terms" switch): the text cut into pieces at the words to mark (:func:`highlight_parts`), which the
item component sets as text, the marked ones in a ``<mark>``: the untrusted text stays literal."""
from __future__ import annotations

import re

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


def highlight_parts(text: str, words: set[str]) -> list[str]:
    """``text`` cut where the words of ``words`` (lower-case) occur as whole words: the pieces in
    order, every second one (odd positions) a word to mark. Joined, they are ``text`` unchanged;
    the annotate page sets each piece as text (never as HTML or Markdown).

    >>> highlight_parts("A **clinic** <b>visit</b>", {"clinic", "visit"})
    ['A **', 'clinic', '** <b>', 'visit', '</b>']
    >>> highlight_parts("no term here", {"clinic"})
    ['no term here']
    """
    parts, at = [], 0
    for m in _WORD.finditer(text):
        if m.group().lower() in words:
            parts += [text[at:m.start()], m.group()]
            at = m.end()
    parts.append(text[at:])
    return parts
