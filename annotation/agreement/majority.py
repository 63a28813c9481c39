"""The one majority rule of IFJudge: every decision from labels goes through :func:`decide`
(item outcomes, re-judged documents, validated qrels) or :func:`majority_index` (the agreement
statistics' majority vote), so that the monitor, the adjudication queue, the exports and the
report never disagree about what "the majority" is.

Rule (docs/statistics.md): the label with a **strict plurality** of the current
labels wins; a tie for the most labels is **no majority**; a lead's adjudication overrides
everything. How many labels decide follows the study's **planned overlap** (annotators per item):
with overlap 1 the one label decides; with overlap r >= 2 (and when the overlap is not known) an
item with a single label has **no majority yet** (one person does not decide an item meant for
several), so two labels are the minimum (:func:`min_labels`).

Provenance of a decision: ``adjudicated``, ``unanimous`` (>= 2 labels, all equal), ``majority``
(strict plurality, not unanimous) or ``unresolved``, with the reason ``no labels``,
``awaiting labels`` (one label) or ``tie``.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

UNRESOLVED_REASONS = ("no labels", "awaiting labels", "tie")
MIN_LABELS = 2  # labels an item needs before it is decided, when several annotators are planned


def min_labels(overlap: int | None = None) -> int:
    """How many labels decide an item planned for ``overlap`` annotators: 1 when the study planned
    one annotator per item, else :data:`MIN_LABELS` (2); None (overlap unknown) is 2.

    >>> min_labels(1), min_labels(3), min_labels()
    (1, 2, 2)
    """
    return 1 if overlap is not None and int(overlap) <= 1 else MIN_LABELS


@dataclass(frozen=True)
class Decision:
    """What the labels (and an adjudication) of one item decide."""

    value: str | None
    provenance: str  # unanimous, majority, adjudicated or unresolved
    reason: str | None = None  # why unresolved: one of UNRESOLVED_REASONS
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def resolved(self) -> bool:
        return self.value is not None


def decide(labels: Iterable[str] | Mapping[str, int], *, adjudication: str | None = None,
           overlap: int | None = None) -> Decision:
    """Decide one item from its current labels (a list of values, or a ``{value: count}`` map).

    Parameters
    ----------
    labels : iterable of str, or mapping value -> count
        The current label of each annotator (or their counts).
    adjudication : str, optional
        The newest adjudicated value; when given it is the decision (``adjudicated``).
    overlap : int, optional
        The planned number of annotators of the item (the study's overlap). With 1, a single label
        decides (``unanimous``); otherwise (and when None) a single label is ``awaiting labels``.

    Returns
    -------
    Decision
        ``value`` None when unresolved, with ``reason`` ``no labels`` / ``awaiting labels`` / ``tie``.

    Examples
    --------
    >>> decide(["Yes", "Yes", "No"])
    Decision(value='Yes', provenance='majority', reason=None, counts={'Yes': 2, 'No': 1})
    >>> decide(["Yes", "No"]).reason, decide(["Yes"]).reason, decide([]).reason
    ('tie', 'awaiting labels', 'no labels')
    >>> decide(["Yes", "No"], adjudication="No").provenance
    'adjudicated'
    >>> decide(["Yes"], overlap=1).value, decide(["Yes"], overlap=3).reason
    ('Yes', 'awaiting labels')
    """
    counts = dict(labels) if isinstance(labels, Mapping) else dict(Counter(labels))
    counts = {k: int(v) for k, v in counts.items() if v}
    if adjudication is not None:
        return Decision(adjudication, "adjudicated", None, counts)
    n = sum(counts.values())
    if n == 0:
        return Decision(None, "unresolved", "no labels", counts)
    if n < min_labels(overlap):
        return Decision(None, "unresolved", "awaiting labels", counts)
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    (top, k), rest = ranked[0], ranked[1:]
    if rest and rest[0][1] == k:
        return Decision(None, "unresolved", "tie", counts)
    return Decision(top, "unanimous" if k == n else "majority", None, counts)


def majority_index(counts, *, overlap=None, adjudicated=None) -> np.ndarray:
    """Vectorised :func:`decide` over a (items x categories) count matrix: the index of the
    category with a strict plurality per row; -1 for a tie, a row without labels or a row with
    fewer labels than :func:`min_labels` of its planned ``overlap``.

    ``overlap`` is one planned overlap for every row or one per row (None: unknown, 2 labels
    decide); ``adjudicated`` gives per row the category index a lead decided, -1 for none (it
    overrides the vote).

    Examples
    --------
    >>> majority_index([[2, 1, 0], [1, 1, 0], [0, 0, 1], [0, 0, 2]]).tolist()
    [0, -1, -1, 2]
    >>> majority_index([[0, 0, 1], [1, 1, 0]], overlap=1, adjudicated=[-1, 1]).tolist()
    [2, 1]
    """
    c = np.asarray(counts)
    if c.ndim != 2:
        c = c.reshape(len(c), -1)
    if overlap is None:
        need = MIN_LABELS
    else:
        ov = np.asarray(overlap)
        need = np.where(ov <= 1, 1, MIN_LABELS) if ov.ndim else min_labels(int(ov))
    mx = c.max(1) if c.shape[1] else np.zeros(len(c))
    strict = ((c == mx[:, None]).sum(1) == 1) & (c.sum(1) >= need) & (c.sum(1) > 0)
    out = np.where(strict, np.argmax(c, axis=1), -1)
    if adjudicated is not None:
        adj = np.asarray(adjudicated, dtype=np.int64)
        out = np.where(adj >= 0, adj, out)
    return out
