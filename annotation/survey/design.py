"""A study's sample as a survey design: weights and the linearised (Taylor) covariance of totals.

:func:`annotation.studies.sample_instances` draws query groups per stratum (a domain, or one
stratum), then up to ``per_group`` instances (the *units*) of each drawn group, and a unit may hold
several items (IFIR's excluded passages, of which ``max_excluded`` are drawn). That is a stratified
three-stage sample without replacement; :class:`SampleDesign` holds it for one estimate, row by row
(a row is an item, or a unit without an item of the question: ``x = 0``).

With ``h`` the strata, ``N_h`` the groups of stratum h in the population and ``n_h`` those sampled,
``M_g`` the units of group g and ``m_g`` those sampled, ``E_u`` the items of unit u and ``e_u``
those sampled, an item's weight is ``w = N_h/n_h * M_g/m_g * E_u/e_u``. The covariance of the
estimated totals of several per-row variables ``U`` (columns) is the sum of three stages
(Särndal, Swensson & Wretman 1992, Result 4.4.1; Cochran 1977, §11.8 and §10.9)::

    T_u = E_u/e_u sum_{i in u} U_i            t_g = M_g/m_g sum_{u in g} T_u
    C = sum_h N_h^2 (1 - n_h/N_h) S_h(t) / n_h
      + sum_h N_h/n_h sum_g M_g^2 (1 - m_g/M_g) S_g(T) / m_g
      + sum_h N_h/n_h sum_g M_g/m_g sum_u E_u^2 (1 - e_u/E_u) S_u(U) / e_u

with ``S`` the sample covariance matrix (n - 1 in the denominator) of the stratum's group totals,
the group's unit totals and the unit's rows. ``N_h = None`` is an infinite population (no
finite-population correction, the with-replacement form ``n_h S_h(t)``). A ratio ``R = Y / X`` has
the linearised variable ``u = (y - R x) / X`` (:meth:`SampleDesign.ratio`), whose total's variance
is the variance of ``R``.

A stratum with a single sampled group (of several) centres its group on the mean over all groups
(R ``survey``'s ``lonely.psu = "adjust"``); a group with one sampled unit (a unit with one sampled
item) of several has no term at its stage: both are named in :attr:`SampleDesign.notes`.

Examples
--------
Two strata of 4 groups, 2 sampled in each, 2 of 3 instances per group:

>>> d = SampleDesign.build(stratum=list("aaaabbbb"), cluster=["a1", "a1", "a2", "a2", "b1", "b1", "b2", "b2"],
...                        population_groups={"a": 4, "b": 4}, group_units=dict.fromkeys(["a1", "a2", "b1", "b2"], 3))
>>> d.weights.tolist()
[3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0]
>>> R, u = d.ratio(np.array([1, 1, 0, 1, 1, 0, 0, 0.]), np.ones(8))
>>> R, round(float(d.variance(u)) * 24**2, 10)  # 12 / X^2 with X = 24 (tests/test_estimates.py)
(0.5, 12.0)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from storage.errors import IFJudgeError


def _codes(values) -> tuple[np.ndarray, list]:
    """Integer codes of ``values`` in order of first appearance, and the distinct values."""
    seen: dict = {}
    codes = np.fromiter((seen.setdefault(v, len(seen)) for v in values), dtype=np.int64, count=len(values))
    return codes, list(seen)


def _sum_by(codes: np.ndarray, n: int, U: np.ndarray) -> np.ndarray:
    """Per code, the sum of the rows of ``U`` (n x k)."""
    out = np.zeros((n, U.shape[1]))
    np.add.at(out, codes, U)
    return out


def _within_cov(codes: np.ndarray, n: int, V: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per code, the sample covariance matrix (n - 1) of its rows of ``V``; 0 where it has one row."""
    s1 = _sum_by(codes, n, V)
    s2 = np.zeros((n, V.shape[1], V.shape[1]))
    np.add.at(s2, codes, V[:, :, None] * V[:, None, :])
    c = counts[:, None, None].astype(float)
    cov = (s2 - s1[:, :, None] * s1[:, None, :] / np.maximum(c, 1)) / np.maximum(c - 1, 1)
    cov[counts < 2] = 0.0
    return cov


@dataclass(frozen=True)
class SampleDesign:
    """One estimate's sample: per row its stratum, group and unit codes, the population sizes
    (``N_h``, ``M_g``, ``E_u``), the sample sizes (``n_h``, ``m_g``, ``e_u``) and the weights.
    Build it with :meth:`build`."""

    row_unit: np.ndarray        # per row: unit code
    unit_group: np.ndarray      # per unit: group code
    group_stratum: np.ndarray   # per group: stratum code
    N: np.ndarray               # per stratum: groups in the population (inf: no FPC)
    M: np.ndarray               # per group: units in the population
    E: np.ndarray               # per unit: items in the population
    strata: list
    groups: list
    notes: tuple = field(default=())

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(cls, *, stratum, cluster, population_groups: dict, group_units: dict, unit=None,
              unit_items: dict | None = None) -> "SampleDesign":
        """The design of sampled rows: ``stratum`` and ``cluster`` (the query group) per row,
        ``population_groups`` stratum -> ``N_h`` (None: infinite), ``group_units`` group -> ``M_g``;
        ``unit`` per row (default: each row is its own unit) and ``unit_items`` unit -> ``E_u``
        (default: the unit's rows, every item of the unit sampled)."""
        stratum = [str(s) for s in stratum]
        cluster = [str(c) for c in cluster]
        units = [str(u) for u in unit] if unit is not None else [str(i) for i in range(len(cluster))]
        if not (len(stratum) == len(cluster) == len(units)):
            raise IFJudgeError(f"stratum, cluster and unit need one value per row, got {len(stratum)}, "
                               f"{len(cluster)} and {len(units)}")
        row_unit, unit_names = _codes(units)
        first = np.zeros(len(unit_names), dtype=np.int64)
        first[row_unit[::-1]] = np.arange(len(units))[::-1]
        unit_group, group_names = _codes([cluster[i] for i in first])
        g_first = np.zeros(len(group_names), dtype=np.int64)
        g_first[unit_group[::-1]] = np.arange(len(unit_group))[::-1]
        group_stratum, stratum_names = _codes([stratum[first[u]] for u in g_first])
        N = np.array([np.inf if population_groups.get(h) is None else float(population_groups[h])
                      for h in stratum_names])
        M = np.array([float(group_units[g]) for g in group_names])
        e = np.bincount(row_unit, minlength=len(unit_names)).astype(float)
        E = e.copy() if not unit_items else np.array(
            [float(unit_items.get(u) or e[k]) for k, u in enumerate(unit_names)])
        return cls(row_unit, unit_group, group_stratum, N, M, np.maximum(E, e), stratum_names, group_names)

    def subset(self, keep_groups: np.ndarray) -> "SampleDesign":
        """The design of the rows of the groups where ``keep_groups`` (per group code) is True, the
        population sizes unchanged (a subsample of the groups is a sample of the same population)."""
        keep_units = keep_groups[self.unit_group]
        rows = keep_units[self.row_unit]
        g_new = np.cumsum(keep_groups) - 1
        u_new = np.cumsum(keep_units) - 1
        s_used = np.unique(self.group_stratum[keep_groups])
        s_new = np.full(len(self.strata), -1)
        s_new[s_used] = np.arange(len(s_used))
        return SampleDesign(u_new[self.row_unit[rows]], g_new[self.unit_group[keep_units]],
                            s_new[self.group_stratum[keep_groups]], self.N[s_used], self.M[keep_groups],
                            self.E[keep_units], [self.strata[s] for s in s_used],
                            [g for g, k in zip(self.groups, keep_groups) if k])

    # ------------------------------------------------------------------ sizes and weights
    @property
    def n_rows(self) -> int:
        return len(self.row_unit)

    @property
    def n_groups(self) -> int:
        return len(self.group_stratum)

    @property
    def n_strata(self) -> int:
        return len(self.N)

    @property
    def sampled_units(self) -> np.ndarray:
        """``m_g``: sampled units per group."""
        return np.bincount(self.unit_group, minlength=self.n_groups).astype(float)

    @property
    def sampled_groups(self) -> np.ndarray:
        """``n_h``: sampled groups per stratum."""
        return np.bincount(self.group_stratum, minlength=self.n_strata).astype(float)

    @property
    def sampled_items(self) -> np.ndarray:
        """``e_u``: sampled rows per unit."""
        return np.bincount(self.row_unit, minlength=len(self.E)).astype(float)

    @property
    def stage_weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(N_h/n_h per stratum, M_g/m_g per group, E_u/e_u per unit)``; ``N_h/n_h`` is 1 for an
        infinite population."""
        n_h = self.sampled_groups
        w1 = np.where(np.isinf(self.N), 1.0, self.N / np.maximum(n_h, 1))
        return w1, self.M / np.maximum(self.sampled_units, 1), self.E / np.maximum(self.sampled_items, 1)

    @property
    def weights(self) -> np.ndarray:
        """Each row's weight ``N_h/n_h * M_g/m_g * E_u/e_u``."""
        w1, w2, w3 = self.stage_weights
        g = self.unit_group[self.row_unit]
        return w1[self.group_stratum[g]] * w2[g] * w3[self.row_unit]

    @property
    def df(self) -> int:
        """Degrees of freedom of the variance: sampled groups - strata (at least 1)."""
        return max(self.n_groups - self.n_strata, 1)

    @property
    def finite(self) -> bool:
        return bool(np.isfinite(self.N).all())

    # ------------------------------------------------------------------ estimates
    def ratio(self, num, den) -> tuple[float, np.ndarray]:
        """``R = sum w num / sum w den`` and its linearised variable ``(num - R den) / X`` per row
        (Särndal et al. 1992, §5.6); ``R`` is NaN when ``sum w den`` is 0."""
        w = self.weights
        num, den = np.asarray(num, float), np.asarray(den, float)
        X = float((w * den).sum())
        if X <= 0:
            return float("nan"), np.zeros(len(num))
        R = float((w * num).sum()) / X
        return R, (num - R * den) / X

    def kish_size(self, x, scale=None) -> float:
        """Kish's (1965) effective sample size of the rows counted ``x`` times (items), each item
        weighted ``w * scale``: ``(sum w s x)^2 / sum (w s)^2 x`` -- the size of a simple random
        sample as precise as these weights allow when the outcome does not depend on them (design
        effect of weighting ``1 + cv^2(w)``).

        >>> SampleDesign.build(stratum=["", "", ""], cluster=["a", "b", "b"], population_groups={"": 10},
        ...                    group_units={"a": 1, "b": 4}).kish_size([1, 1, 1])  # weights 5, 10, 10
        2.7777777777777777
        """
        x = np.asarray(x, float)
        v = self.weights * (1.0 if scale is None else np.asarray(scale, float))
        den = float((v * v * x).sum())
        return float((v * x).sum()) ** 2 / den if den > 0 else 0.0

    def sampled_fraction(self, x) -> float:
        """The share of the population's counted items that the sample holds: ``sum x / sum w x``
        (0 for an infinite population)."""
        if not self.finite:
            return 0.0
        x = np.asarray(x, float)
        total = float((self.weights * x).sum())
        return float(x.sum() / total) if total > 0 else 0.0

    # ------------------------------------------------------------------ variance
    def covariance(self, U, *, notes: list | None = None, fpc: bool = True) -> np.ndarray:
        """The covariance matrix (k x k) of the estimated totals of the columns of ``U`` (rows x k,
        or one column) under the three-stage design (module docstring); ``fpc=False`` drops the
        first stage's finite-population correction. Appends the lonely-group and single-unit
        adjustments to ``notes``."""
        U = np.asarray(U, float)
        U = U[:, None] if U.ndim == 1 else U
        k = U.shape[1]
        w1, w2, w3 = self.stage_weights
        n_units, n_groups = len(self.E), self.n_groups
        e, m, n_h = self.sampled_items, self.sampled_units, self.sampled_groups
        T = _sum_by(self.row_unit, n_units, U) * w3[:, None]          # unit totals
        t = _sum_by(self.unit_group, n_groups, T) * w2[:, None]       # group totals
        C = np.zeros((k, k))
        grand = t.mean(0)
        for h in range(self.n_strata):
            rows = np.flatnonzero(self.group_stratum == h)
            N = self.N[h]
            big_n = N if np.isfinite(N) else n_h[h]
            fpc1 = 1 - n_h[h] / N if (fpc and np.isfinite(N)) else 1.0
            if len(rows) >= 2:
                C += big_n**2 * fpc1 * np.atleast_2d(np.cov(t[rows].T, ddof=1)) / len(rows)
            elif fpc1 > 0:
                d = t[rows[0]] - grand
                C += big_n**2 * fpc1 * np.outer(d, d)
                if notes is not None:
                    notes.append(f"stratum {self.strata[h] or '(all)'} has a single sampled group: its variance is "
                                 "centred on the mean over all groups (lonely PSU, adjust)")
        g_w1 = w1[self.group_stratum]
        cov_g = _within_cov(self.unit_group, n_groups, T, m.astype(int))
        f2 = np.where((m >= 2) & (m < self.M), g_w1 * self.M**2 * (1 - m / self.M) / np.maximum(m, 1), 0.0)
        C += np.einsum("g,gjk->jk", f2, cov_g)
        cov_u = _within_cov(self.row_unit, n_units, U, e.astype(int))
        u_w = (g_w1 * w2)[self.unit_group]
        f3 = np.where((e >= 2) & (e < self.E), u_w * self.E**2 * (1 - e / self.E) / np.maximum(e, 1), 0.0)
        C += np.einsum("u,ujk->jk", f3, cov_u)
        if notes is not None:
            for g in np.flatnonzero((m == 1) & (self.M > 1)):
                notes.append(f"group {self.groups[g]}: one sampled unit of {int(self.M[g])}, no within-group variance term")
        return C

    def variance(self, u, *, notes: list | None = None) -> float:
        """The variance of the estimated total of ``u`` (:meth:`covariance` of one column)."""
        return float(self.covariance(u, notes=notes)[0, 0])
