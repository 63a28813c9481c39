"""Each annotator's habits, for the lead who asks "can I trust this person's labels?": how they
answer (the share of each answer; for the best passage, the position on screen they pick), how
often they agree with the others of the same items, how that moves over time, and a flag for
straight-lining.

Computed in one vectorised pass over the study's current labels (the outcome table's label
columns, :func:`annotation.outcomes.table.outcome_table`, and for the best passage the order in
which the passages were shown, :func:`storage.studies.shown_order_columns`): no query per
annotator, so the Monitor of a 100,000-label study stays fast.

Definitions (the Monitor's help repeats them):

* **Answers**: per question, the share of each answer among the annotator's current labels.
* **Agrees with the others**: the share of the annotator's labels equal to the strict-plurality
  answer of the OTHER labels of the same item (leave-one-out majority), over the items where at
  least two others answered and have such a plurality. Their own vote does not count, so it
  does not flatter them (with 3 annotators per item, it is "both others agree with me" among the
  items where both others agree).
* **Agrees pairwise**: the share of pairs (this annotator's label, another label of the same
  item) that are equal: ``sum_j (c(i_j, v_j) - 1) / sum_j (n(i_j) - 1)`` over the annotator's
  labels j on items i with n(i) >= 2 labels, c(i, v) the item's labels equal to v.
* **Over time**: both shares in consecutive windows of the annotator's labels in their queue
  order, the order the study hands screens out and annotators answer them (:data:`WINDOWS`
  windows at most, :data:`MIN_WINDOW` labels at least).
* **Straight-lining** (flag): on a question, at least :data:`MIN_STRAIGHT` labels, every one
  the same answer (best passage: the same position on screen, as passages are shuffled per
  annotator), while the other annotators of those items gave another answer (position) at least
  once. A question everyone answers alike is not flagged.
* **Fast** (flag): a median time per screen under :data:`FAST_FRACTION` of the study's median,
  over at least :data:`MIN_STRAIGHT` screens.

>>> from storage.db import connect
>>> from annotation.demo import load_demo
>>> db = connect(":memory:"); sid = load_demo(db)["study"]["study_id"]
>>> annotator_habits(db, sid)["annotators"]
[]
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from annotation.outcomes.table import outcome_table
from annotation.questions.study import study_questions
from storage import studies, users
from storage.db import Database

MIN_STRAIGHT = 10  # labels of a question before an identical answer to all of them is a flag
FAST_FRACTION = 1 / 3  # a median time per screen under this share of the study's median is a flag
WINDOWS = 8  # windows of the over-time chart, at most
MIN_WINDOW = 5  # labels per window, at least


def _ordinal(n: int) -> str:
    return {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth"}.get(n, f"{n}th")


def label_columns(db: Database, study_id: int) -> dict:
    """The study's current labels as columns, in each annotator's queue order (the order the
    study hands out its screens, which is the order annotators answer them but for skips): ``row``
    (the item's index in the outcome table, which lists items in queue order), ``who`` (an index of
    ``names``, the annotators sorted), ``q`` (an index of ``questions``), ``value`` (the answer)
    and ``v`` (its code, ``values`` the answers), ``n`` (labels of the item), ``position`` (best
    passage: the 1-based position on screen of the chosen passage; 0 when unknown or another
    question), ``screen`` (a code of the item's screen)."""
    t = outcome_table(db, study_id)
    who, names = pd.factorize(t.annotator, sort=True)
    q, questions = pd.factorize(t.question)
    q = q[t.label_row]
    position = np.zeros(len(t.label_row), np.int64)
    declared = study_questions(studies.get_study(db, study_id))
    # the question whose answers are passages shown in a shuffled order (the best passage): read by position
    bp = next((i for i, name in enumerate(questions) if declared[name].answers_are_passages), -1)
    rows = np.flatnonzero(q == bp)
    if len(rows):  # the one extra read: the shown order of the best-passage labels, aligned on (item, user)
        order = studies.shown_order_columns(db, study_id)
        uid_of = {u["name"]: u["id"] for u in users.list_users(db)}
        user = np.asarray([uid_of.get(n, -1) for n in names], dtype=np.int64)[who[rows]]
        o_user = np.asarray(order["user"], dtype=np.int64)
        width = int(max(user.max(initial=0), o_user.max(initial=0))) + 1
        key_o = np.asarray(order["item"], dtype=np.int64) * width + o_user
        if len(key_o):
            sorter = np.argsort(key_o, kind="stable")
            key_t = t.item[t.label_row[rows]].astype(np.int64) * width + user
            at = sorter[np.minimum(np.searchsorted(key_o, key_t, sorter=sorter), len(key_o) - 1)]
            found = key_o[at] == key_t
            shown = np.asarray(order["shown_order"], dtype=object)[at]
            position[rows[found]] = shown_positions(shown[found], t.label_value[rows[found]])
    v, values = pd.factorize(t.label_value)
    screen, _ = pd.factorize(np.asarray(studies.item_screens(db, study_id), dtype=object))
    by_queue = np.argsort(t.label_row, kind="stable")
    return {"row": t.label_row[by_queue], "who": who[by_queue], "names": list(names), "q": q[by_queue],
            "questions": list(questions), "value": t.label_value[by_queue], "v": v[by_queue], "values": values,
            "n": t.n_labels[t.label_row][by_queue], "position": position[by_queue], "best_passage": bp,
            "titles": [declared[name].title for name in questions],
            "screen": screen[t.label_row][by_queue]}


def shown_positions(shown: np.ndarray, values: np.ndarray) -> np.ndarray:
    """:func:`shown_position` of each (stored passage order, chosen doc id), vectorised over the
    orders whose text needs no parsing (:func:`numpy.char.find` and ``count``); the others one by one.

    >>> shown_positions(np.array(['["d2", "d7", "d1"]', '["x"]', None], dtype=object),
    ...                 np.array(["d7", "y", "d1"], dtype=object)).tolist()
    [2, 0, 0]
    """
    out = np.zeros(len(shown), np.int64)
    text = np.array([s if isinstance(s, str) else "" for s in shown.tolist()], dtype=str)
    vals = np.array([v if isinstance(v, str) else "" for v in values.tolist()], dtype=str)
    simple = (np.char.find(text, "\\") < 0) & (np.char.find(vals, '"') < 0) & (text != "")
    if simple.any():
        quoted = np.char.add(np.char.add('"', vals[simple]), '"')
        at = np.char.find(text[simple], quoted)
        quotes = np.char.count(text[simple], '"', 0, np.maximum(at, 0))
        out[simple] = np.where((at >= 0) & (quotes % 2 == 0), quotes // 2 + 1, 0)
    for j in np.flatnonzero(~simple & (text != "")).tolist():
        out[j] = shown_position(text[j], vals[j])
    return out


def shown_position(shown: str, value: str) -> int:
    r"""The 1-based position of ``value`` in a stored passage order (a JSON list of doc ids), 0
    when absent. Found in the text without parsing it when no id holds a quote or a backslash
    (every id before it then adds exactly two quotes); parsed otherwise.

    >>> shown_position('["d2", "d7", "d1"]', "d7"), shown_position('["a\\"b", "c"]', "c"), shown_position('["x"]', "y")
    (2, 2, 0)
    """
    if "\\" not in shown and '"' not in value:
        at = shown.find(f'"{value}"')
        quotes = shown.count('"', 0, at) if at >= 0 else 1
        if at >= 0 and quotes % 2 == 0:
            return quotes // 2 + 1
        if at < 0:
            return 0
    ids = json.loads(shown)
    return ids.index(value) + 1 if value in ids else 0


def others_agreement(row: np.ndarray, value_code: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per label j (its item ``row[j]``, its answer ``value_code[j]``, ``n[j]`` labels on the
    item): (the other labels of the item equal to it, ``others_agree``: 1.0 when it equals the
    strict plurality of the other labels of its item, 0.0 when another answer has it, NaN when
    fewer than two others answered or they tie).

    From each item's two most given answers (counts c1 >= c2, answers v1, v2) and the third
    count c3: a label v1 leaves the others c1 - 1, c2, c3; a label v2 leaves c1, c2 - 1, c3;
    any other leaves c1, c2 (and c3 - 1 or less).

    >>> row = np.array([0, 0, 0, 1, 1, 1]); v = np.array([0, 0, 1, 0, 1, 2]); n = np.array([3] * 6)
    >>> same, agree = others_agreement(row, v, n)
    >>> same.tolist(), agree.tolist()
    ([1, 1, 0, 0, 0, 0], [nan, nan, 0.0, nan, nan, nan])
    """
    if not len(row):
        return np.zeros(0, np.int64), np.zeros(0)
    k = int(value_code.max()) + 1
    pair, keys = pd.factorize(row.astype(np.int64) * k + value_code)
    count = np.bincount(pair)
    same = count[pair] - 1
    keys = np.asarray(keys, dtype=np.int64)
    p_row, p_val = keys // k, keys % k
    order = np.lexsort((-count, p_row))  # per item, most given first
    p_row, p_val, p_count = p_row[order], p_val[order], count[order]
    first = np.r_[True, p_row[1:] != p_row[:-1]]
    rank = np.arange(len(p_row)) - np.maximum.accumulate(np.where(first, np.arange(len(p_row)), 0))
    size = int(row.max()) + 1
    top = np.zeros((size, 3), np.int64)
    val = np.full((size, 2), -1, np.int64)
    keep = rank < 3
    top[p_row[keep], rank[keep]] = p_count[keep]
    two = rank < 2
    val[p_row[two], rank[two]] = p_val[two]
    c1, c2, c3 = top[row, 0], top[row, 1], top[row, 2]
    is1, is2 = value_code == val[row, 0], value_code == val[row, 1]
    # the others' plurality: (its count, the runner-up's count, whether it is the label's own answer)
    win = np.where(is1, np.maximum(c1 - 1, c2), c1)
    runner = np.where(is1, np.where(c1 - 1 >= c2, np.maximum(c2, c3), np.maximum(c1 - 1, c3)),
                      np.where(is2, np.maximum(c2 - 1, c3), c2))
    own = is1 & (c1 - 1 > c2)
    agree = np.where((n - 1 >= 2) & (win > runner), own.astype(float), np.nan)
    return same, agree


def _windows(cols: dict, same: np.ndarray, pairs: np.ndarray, agree: np.ndarray) -> list[dict]:
    """The over-time rows: per annotator and window of their labels (submission order), the
    labels given so far and both agreement shares in the window."""
    rows = []
    for k, name in enumerate(cols["names"]):
        at = np.flatnonzero(cols["who"] == k)
        size = max(MIN_WINDOW, -(-len(at) // WINDOWS))
        for start in range(0, len(at), size):
            w = at[start:start + size]
            decided = agree[w][~np.isnan(agree[w])]
            n_pairs = int(pairs[w].sum())
            given = start + len(w)
            rows.append({"annotator": name, "labels": given, "measure": "agrees with the others' majority",
                         "share": float(decided.mean()) if len(decided) else None})
            rows.append({"annotator": name, "labels": given, "measure": "agrees pairwise",
                         "share": float(same[w].sum() / n_pairs) if n_pairs else None})
    return rows


def _distinct_per_group(group: np.ndarray, code: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group, the number of distinct codes among its members (codes >= 0)."""
    width = int(code.max(initial=0)) + 1
    seen = np.zeros(n_groups * width, bool)
    seen[group * width + code] = True
    return seen.reshape(n_groups, width).sum(1)


def _straight_lining(cols: dict) -> dict[str, list[str]]:
    """annotator -> a flag per question answered identically :data:`MIN_STRAIGHT` times or more
    (best passage: the same position) while the others of those items answered otherwise at
    least once."""
    flags: dict[str, list[str]] = {}
    who, q, row, names, questions = cols["who"], cols["q"], cols["row"], cols["names"], cols["questions"]
    is_bp = q == cols["best_passage"]
    answer = np.where(is_bp, cols["position"] - 1, cols["v"])  # -1: a position not known
    known = answer >= 0
    group = who.astype(np.int64) * len(questions) + q
    n_groups = len(names) * len(questions)
    n = np.bincount(group[known], minlength=n_groups)
    distinct = _distinct_per_group(group[known], answer[known], n_groups)
    for g in np.flatnonzero((n >= MIN_STRAIGHT) & (distinct == 1)).tolist():
        k, qi = divmod(g, len(questions))
        mine = np.flatnonzero((group == g) & known)
        one = answer[mine[0]]
        others = answer[(q == qi) & (who != k) & known & np.isin(row, row[mine])]
        if not len(others) or (others == one).all():
            continue  # the others answered alike too: no sign of straight-lining
        what = (f"always the {_ordinal(int(one) + 1)} passage shown" if qi == cols["best_passage"]
                else f"“{cols['value'][mine[0]]}” to all")
        flags.setdefault(names[k], []).append(
            f"Straight-lining on {cols['titles'][qi]}: {what} {len(mine)} items (the others: "
            f"{float((others == one).mean()):.0%} of their labels on these items)")
    return flags


def annotator_habits(db: Database, study_id: int, *, seconds: dict[str, float | None] | None = None) -> dict:
    """The habits of every annotator of a study with labels: ``{"annotators": [{"annotator",
    "labels", "answers": {question: {answer: share}} (not the best passage), "positions":
    {position: share} (best passage), "others_agree", "others_n", "pairwise", "pairs",
    "flags"}], "timeline": [{"annotator", "labels", "measure", "share"}]}``. ``seconds``:
    annotator -> median seconds per screen (:func:`annotation.monitoring.monitor.annotator_table`), for the
    "fast" flag. Computed once while ``db`` shares its reads (:func:`storage.studies.shared`; then
    read the result, do not change it)."""
    key = ("annotator_habits", study_id, tuple(sorted((seconds or {}).items())))
    return studies.shared(db, key, lambda: _annotator_habits(db, study_id, seconds=seconds))


def _annotator_habits(db: Database, study_id: int, *, seconds: dict[str, float | None] | None) -> dict:
    cols = label_columns(db, study_id)
    if not len(cols["row"]):
        return {"annotators": [], "timeline": []}
    who, q, names, questions = cols["who"], cols["q"], cols["names"], cols["questions"]
    same, agree = others_agreement(cols["row"], cols["v"], cols["n"])
    pairs = cols["n"] - 1
    flags = _straight_lining(cols)
    times = {k: v for k, v in (seconds or {}).items() if v is not None}
    median = float(np.median(list(times.values()))) if times else None
    m = len(names)
    decided = ~np.isnan(agree)
    agree_sum = np.bincount(who[decided], weights=agree[decided], minlength=m)
    agree_n = np.bincount(who[decided], minlength=m)
    same_sum = np.bincount(who, weights=same, minlength=m)
    pair_sum = np.bincount(who, weights=pairs, minlength=m)
    n_labels = np.bincount(who, minlength=m)
    screens = _distinct_per_group(who.astype(np.int64), cols["screen"], m)
    # answers per (annotator, question, answer code) and passage positions per annotator, counted once
    is_bp = q == cols["best_passage"]
    n_values = int(cols["v"].max(initial=0)) + 1
    per = np.bincount((who.astype(np.int64) * len(questions) + q) * n_values + cols["v"],
                      minlength=m * len(questions) * n_values).reshape(m, len(questions), n_values)
    value_of = cols["values"]  # answer code -> answer
    pos = cols["position"]
    at = is_bp & (pos > 0)
    pos_counts = np.bincount(who[at] * (int(pos.max(initial=0)) + 1) + pos[at],
                             minlength=m * (int(pos.max(initial=0)) + 1)).reshape(m, -1)
    out = []
    for k, name in enumerate(names):
        answers = {}
        for qi, question in enumerate(questions):
            if qi == cols["best_passage"] or not per[k, qi].sum():
                continue
            codes = np.flatnonzero(per[k, qi])
            total = per[k, qi].sum()
            answers[question] = {value_of[c]: float(per[k, qi, c] / total)
                                 for c in sorted(codes.tolist(), key=lambda c: -per[k, qi, c])}
        total_pos = pos_counts[k].sum()
        own = list(flags.get(name, []))
        sec = times.get(name)
        if median and sec is not None and sec < FAST_FRACTION * median and screens[k] >= MIN_STRAIGHT:
            own.append(f"Fast: median {sec:.1f} s per screen, under a third of the study's {median:.1f} s")
        out.append({
            "annotator": name, "labels": int(n_labels[k]), "answers": answers,
            "positions": {p: float(c / total_pos) for p, c in enumerate(pos_counts[k].tolist()) if c},
            "others_agree": float(agree_sum[k] / agree_n[k]) if agree_n[k] else None, "others_n": int(agree_n[k]),
            "pairwise": float(same_sum[k] / pair_sum[k]) if pair_sum[k] else None, "pairs": int(pair_sum[k]),
            "flags": own,
        })
    return {"annotators": out, "timeline": _windows(cols, same, pairs, agree)}
