"""FollowIR's narratives (Weller et al., 2024, §3): an expert edits a query's narrative, every save
is a new version that starts a re-judging round (``versions``), the edit shown word by word
(``diff``), and what the re-judging says: each document's changed relevance and the agreement of
the round (``rejudging``).
"""
from annotation.package_face import lazy_face

#: each public name -> the module of this package that defines it (imported on first use:
#: :mod:`annotation.package_face`)
_WHERE = {
    "original_judgments": "versions", "root_version": "versions",
    "DiffSpan": "diff", "diff_counts": "diff", "diff_rows": "diff", "diff_text": "diff",
    "join_tokens": "diff", "same_words": "diff", "word_diff": "diff",
    "KIND_VERSIONS": "rejudging", "PURPOSES": "rejudging", "changed_judgments": "rejudging",
    "kind_of_study": "rejudging", "rejudge_summary": "rejudging", "resolve": "rejudging",
    "rounds_agreement": "rejudging",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_face(__name__, _WHERE)
