"""One way to say that a value is undefined: :class:`Undefined` with the reason, never 0 or NaN.

Agreement coefficients (:mod:`annotation.agreement.stats`), significance tests and Kendall's tau
(:mod:`evaluation.significance`) return it; JSON shows an undefined value as null beside its reason
(:func:`defined_or_none`).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Undefined:
    """A statistic that has no value on these data; ``reason`` says why (e.g. ``0/0``).

    It is falsy and prints with its reason:

    >>> u = Undefined("fewer than 2 common queries")
    >>> bool(u), str(u)
    (False, 'undefined (fewer than 2 common queries)')
    """

    reason: str

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        return f"undefined ({self.reason})"


def is_defined(value) -> bool:
    """True when ``value`` is a number (not :class:`Undefined`, not None).

    >>> is_defined(0.0), is_defined(Undefined("0/0")), is_defined(None)
    (True, False, False)
    """
    return value is not None and not isinstance(value, Undefined)


def defined_or_none(value):
    """``value``, or None when it is :class:`Undefined` (the JSON form; the reason goes beside it).

    >>> defined_or_none(0.5), defined_or_none(Undefined("0/0"))
    (0.5, None)
    """
    return None if isinstance(value, Undefined) else value


def mean_or_undefined(values, reason: str):
    """The mean of ``values``, or :class:`Undefined` with ``reason`` when there is none (0/0).

    >>> mean_or_undefined([0.5, 1.0], "no query"), mean_or_undefined([], "no query")
    (0.75, Undefined(reason='no query'))
    """
    values = list(values)
    return sum(values) / len(values) if values else Undefined(reason)


def as_json(result: dict) -> dict:
    """A measure's result dict as JSON shows it: each top-level :class:`Undefined` value as null
    and its reason in ``undefined`` ({name: reason}; empty when every value is defined), as the
    stored evaluations keep them (:func:`defined_or_none`).

    >>> as_json({"p-MRR": Undefined("no changed document"), "n_queries": 0})
    {'p-MRR': None, 'n_queries': 0, 'undefined': {'p-MRR': 'no changed document'}}
    """
    out = {k: defined_or_none(v) for k, v in result.items()}
    out["undefined"] = {k: v.reason for k, v in result.items() if isinstance(v, Undefined)}
    return out
