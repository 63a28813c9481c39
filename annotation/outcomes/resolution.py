"""How a lead settles what the labels leave open, named apart from the code that does it.

- :data:`SHOW` — the queues of the adjudication (:func:`annotation.outcomes.adjudication.queue`):
  ``unresolved`` (ties not yet decided, the default), ``majority`` (differing labels a majority
  decided), ``decided`` (a lead's decisions), ``all``;
- :data:`UNRESOLVED_POLICIES` — what a qrels build does with a judgment no majority decides
  (:mod:`annotation.outcomes.qrels_builds`): keep the published label, drop it, or set it relevant / not
  relevant.

Only names, no numpy or pandas: ``ifjudge adjudicate --help``, ``ifjudge export --help`` and the
pages' selectors list them without loading the code that applies them (which re-exports them).

>>> SHOW[0], UNRESOLVED_POLICIES[0]
('unresolved', 'keep-published')
"""
from __future__ import annotations

SHOW = ("unresolved", "majority", "decided", "all")
UNRESOLVED_POLICIES = ("keep-published", "drop", "relevant", "not-relevant")
