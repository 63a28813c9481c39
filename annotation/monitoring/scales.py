"""Mean scores of the 1-5 (and 0-3) questions of a study, in the shape of IFIR's Table 2.

IFIR-EVAL (§3.4, Table 2) reports, from its human validation, the mean 1-5 naturalness of the
instructions, the mean 1-5 matching score of the gold passages and the score of the excluded
passages. :func:`scale_summary` gives those means with a seeded bootstrap 95% interval, overall
and broken down by instruction level (the instance variant: ``level1``..``level3``, ``og``) and by
domain (the query's subset), for every question of a study that declares mean scores
(``Question.summary``): ``naturalness`` asked on the 1-5 scale, ``passage_match`` (1-5, split by
item kind: ``gold`` / ``excluded``), ``instfol_match`` (0-3) and a lead's own numeric scale.

How a mean is formed: each item's score is the mean of its current labels; the summary is the
mean of the item scores (every item weighs the same, whatever its number of labels). The
interval is the percentile bootstrap of that mean over **query groups within domains**: the
instances of a query are scored alike more often than two random ones, so a study's items are a
cluster sample and resampling items gives too narrow an interval. Each replicate draws ``n_h - 1``
of the ``n_h`` sampled query groups of each domain with replacement, each weighing
``n_h / (n_h - 1)`` (Rao & Wu 1988, *JASA* 83:231; :func:`annotation.agreement.bootstrap.cluster_draws`,
as the agreement intervals do; domains with a single sampled group are collapsed into one, Rust &
Kalton 1987, *J. Official Statistics* 3:69, so that they are not held fixed), and the replicate's mean is ``sum_g c_g S_g / sum_g c_g N_g``
(``S_g``, ``N_g``: the group's item scores summed and counted). Seeded; undefined below two query
groups. :func:`mean_interval` without groups is the item bootstrap (``scipy.stats.bootstrap``,
percentile), kept as a named comparison.

Excluded passages are shown to annotators exactly like gold ones (the kind is not revealed), so
their score is a *match* score: low means the instruction rightly rules the passage out. IFIR's
Table 2 reads its excluded score the other way round ("how effectively irrelevant passages are
rejected", higher is better); the row ``Excluded passage score (6 - match)`` gives that direction.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import sparse, stats

from annotation.agreement.bootstrap import cluster_draws

from annotation.questions.study import study_questions
from storage import projects, studies
from storage.db import Database

COLUMNS = ("question", "statistic", "kind", "by", "group", "items", "labels", "mean", "ci_low", "ci_high")


def mean_interval(values, *, groups=None, strata=None, n_boot: int = 1000,
                  seed: int = 0) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high): the mean and its percentile bootstrap 95% interval.

    With ``groups`` (one query group per value) and optionally ``strata`` (one domain per value):
    the Rao-Wu bootstrap over query groups within domains (module docstring); ``low``/``high`` are
    None below two groups. Without: items resampled with replacement (the comparison); None below
    two values. None also with ``n_boot = 0``; the mean is None for no value.

    >>> mean_interval([4, 4, 4], n_boot=200)
    (4.0, 4.0, 4.0)
    >>> mean_interval([5], n_boot=200)
    (5.0, None, None)
    >>> mean_interval([5, 4, 2, 1], groups=["q1", "q1", "q2", "q2"], n_boot=200)  # q2's mean, then q1's
    (3.0, 1.5, 4.5)
    """
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return None, None, None
    mean = float(x.mean())
    if groups is None:
        if x.size < 2 or n_boot <= 0:
            return mean, None, None
        if np.all(x == x[0]):
            return mean, mean, mean
        res = stats.bootstrap((x,), np.mean, n_resamples=n_boot, method="percentile", confidence_level=0.95,
                              random_state=np.random.default_rng(seed), vectorized=True)
        return mean, float(res.confidence_interval.low), float(res.confidence_interval.high)
    codes, names = pd.factorize(pd.Series(list(groups), dtype=object))
    if len(names) < 2 or n_boot <= 0:
        return mean, None, None
    if np.all(x == x[0]):
        return mean, mean, mean
    stratum_of_item = np.zeros(len(x), np.int64) if strata is None else pd.factorize(
        pd.Series(list(strata), dtype=object))[0]
    group_stratum = np.zeros(len(names), np.int64)
    group_stratum[codes] = stratum_of_item
    lone = np.bincount(group_stratum)[group_stratum] == 1
    group_stratum[lone] = -1  # domains with one sampled group collapsed into one (Rust & Kalton 1987)
    sums = sparse.csr_matrix(np.column_stack([np.bincount(codes, x, len(names)), np.bincount(codes, None, len(names))]))
    draws = cluster_draws(sums, group_stratum, n_boot, np.random.default_rng(seed))
    low, high = np.percentile(draws[:, 0] / draws[:, 1], [2.5, 97.5])
    return mean, float(low), float(high)


def item_scores(db: Database, study_id: int) -> pd.DataFrame:
    """One row per labelled item of a scale question: question, kind, query (its group), level, domain, labels, score
    (the mean of its current labels)."""
    study = studies.get_study(db, study_id)
    # the questions that declare mean scores (``Question.summary``: naturalness on its 1-5 form, ...)
    scale_questions = [q for q, d in study_questions(study).items() if d.summary]
    if not scale_questions:  # nothing to summarise: the project's instances are not read
        return pd.DataFrame([], columns=["question", "item", "kind", "query", "level", "domain", "labels", "score"])
    pid = study["project_id"]
    subsets = projects.query_subsets(db, pid)
    insts = {i["instance_id"]: i for i in projects.instances(db, pid)}
    rows = []
    for q in scale_questions:
        values: dict[int, list[float]] = {}
        for r in studies.current_labels(db, study_id, q):
            values.setdefault(r["item"], []).append(float(r["value"]))
        for it in studies.items_of_study(db, study_id, q):
            if it["id"] not in values:
                continue
            inst = insts.get(it["instance_id"], {})
            v = values[it["id"]]
            rows.append({
                "question": q, "item": it["id"], "kind": it["payload"].get("kind", ""),
                "query": inst.get("query_id", ""),
                "level": inst.get("variant", ""), "domain": subsets.get(inst.get("query_id", ""), ""),
                "labels": len(v), "score": sum(v) / len(v),
            })
    return pd.DataFrame(rows, columns=["question", "item", "kind", "query", "level", "domain", "labels", "score"])


def scale_summary(db: Database, study_id: int, *, n_boot: int = 1000, seed: int | None = None) -> pd.DataFrame:
    """IFIR Table 2 for a study: mean score and its 95% interval (bootstrap over query groups within
    domains, module docstring) per scale question and item
    kind, overall (``by = "all"``), per level (``by = "level"``) and per domain (``by = "domain"``).

    Columns: question, statistic (IFIR's row name), kind (``gold`` / ``excluded`` for
    ``passage_match``, else empty), by, group, items, labels, mean, ci_low, ci_high. The seed
    defaults to the study's. Empty frame (same columns) when no scale question has a label.

    References
    ----------
    IFIR-EVAL (anonymous ACL submission), §3.4 and Table 2. Efron & Tibshirani (1993), An
    Introduction to the Bootstrap, percentile interval; Rao & Wu (1988), the rescaling bootstrap of a
    cluster sample.

    Examples
    --------
    Gold items scored (5, 4, 5) and (3, 3, 4): item means 14/3 and 10/3, gold mean 4.0.
    """
    study = studies.get_study(db, study_id)
    seed = study["settings"].get("seed", 0) if seed is None else seed
    declared = study_questions(study)
    scores = item_scores(db, study_id)
    out = []
    for (q, kind), part in scores.groupby(["question", "kind"], sort=False):
        d = declared[q]
        statistic = dict(d.summary).get(kind, q)
        reversed_as = dict(d.summary_reversed).get(kind)
        for by in ("all", "level", "domain"):
            groups = [("all", part)] if by == "all" else sorted(part.groupby(by), key=lambda g: g[0])
            for group, g in groups:
                mean, low, high = mean_interval(g["score"], groups=g["query"], strata=g["domain"], n_boot=n_boot,
                                                seed=seed)
                out.append({"question": q, "statistic": statistic, "kind": kind, "by": by, "group": group or "(none)",
                            "items": len(g), "labels": int(g["labels"].sum()), "mean": mean, "ci_low": low, "ci_high": high})
                if reversed_as is not None:  # the same mean read the other way round: max + 1 - mean
                    top = max(float(c) for c in d.categories) + 1
                    out.append({**out[-1], "statistic": reversed_as, "mean": top - mean,
                                "ci_low": None if high is None else top - high,
                                "ci_high": None if low is None else top - low})
    return pd.DataFrame(out, columns=list(COLUMNS))
