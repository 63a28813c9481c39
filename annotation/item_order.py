"""Each annotator's own order of a study's items (issue 28, item 5): when every annotator sees the
items in the same order, order effects (fatigue, anchoring on the first items, drift) are shared by
all raters and look like agreement. Each annotator therefore gets a seeded random order of their
own, in which the items of one query are kept apart: one query never comes twice in a row where
the items allow it.

The order is made when the annotator first opens the study (and again for items that reach them
later, e.g. a new re-judging round): :func:`annotation.workspace.open_screen` calls
``storage.studies.order_own_queue`` with :func:`spaced_order`. The place at which each item was
answered is stored with its label (``labels.shown_position``).
"""
from __future__ import annotations

import heapq
import random
from collections.abc import Sequence


def spaced_order(items: Sequence[tuple[str, str]], *, seed: str | int) -> list[str]:
    """The keys of ``items`` (``(key, group)`` pairs, e.g. a screen and its query) in a seeded
    random order in which no two neighbours share a group, wherever the groups allow it.

    Each step takes a random remaining item of another group than the last one taken, unless a
    group holds more than half of what is left: that group must come now, or two of its items
    would have to touch later (a sequence of ``n`` items with no equal neighbours exists when no
    group holds more than ``ceil(n / 2)`` of them). When only the last group is left, its items
    follow each other. The same ``items`` and ``seed`` give the same order.

    >>> items = [("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b"), ("c1", "c"), ("c2", "c")]
    >>> order = spaced_order(items, seed="3:7")
    >>> sorted(order) == sorted(k for k, _ in items), order == spaced_order(items, seed="3:7")
    (True, True)
    >>> group = dict(items)
    >>> any(group[x] == group[y] for x, y in zip(order, order[1:]))
    False
    >>> spaced_order([("x1", "x"), ("x2", "x"), ("x3", "x"), ("y1", "y"), ("y2", "y")], seed=1)
    ['x2', 'y2', 'x3', 'y1', 'x1']
    """
    rng = random.Random(str(seed))
    remaining = [(key, group) for key, group in items]
    rng.shuffle(remaining)
    by_group: dict[str, list[int]] = {}
    for i, (_, group) in enumerate(remaining):
        by_group.setdefault(group, []).append(i)
    count = {g: len(ix) for g, ix in by_group.items()}
    heap = [(-c, g) for g, c in count.items()]  # the largest group first (stale entries skipped)
    heapq.heapify(heap)
    taken = [False] * len(remaining)
    alive = list(range(len(remaining)))  # indexes not taken yet (swap-removed)
    where = list(range(len(remaining)))  # index -> its place in ``alive``
    out: list[str] = []
    last = None

    def largest_other() -> str | None:
        top = []
        while heap:
            c, g = heap[0]
            if -c != count[g] or count[g] == 0:
                heapq.heappop(heap)  # stale
                continue
            if g != last:
                break
            top.append(heapq.heappop(heap))
        found = heap[0][1] if heap else None
        for entry in top:
            heapq.heappush(heap, entry)
        return found

    while alive:
        n = len(alive)
        big = largest_other()
        if big is not None and count[big] * 2 > n:
            i = next(j for j in by_group[big] if not taken[j])
        elif big is None:  # only the last group is left
            i = alive[0]
        else:
            while True:
                i = alive[rng.randrange(n)]
                if remaining[i][1] != last:
                    break
        key, group = remaining[i]
        taken[i] = True
        moved = alive[-1]
        alive[where[i]] = moved
        where[moved] = where[i]
        alive.pop()
        count[group] -= 1
        heapq.heappush(heap, (-count[group], group))
        out.append(key)
        last = group
    return out
