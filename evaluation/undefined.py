"""One way to say that a value is undefined: :class:`Undefined` with the reason, never 0 or NaN;
and one way to show it: :data:`UNDEFINED` ("—") with the reason beside it.

Agreement coefficients (:mod:`annotation.agreement.stats`), significance tests and Kendall's tau
(:mod:`evaluation.significance`), p-MRR (:mod:`evaluation.pmrr`), WISE / SICR
(:mod:`evaluation.infosearch`), Robustness@k (:mod:`evaluation.robustness`), INSTFOL
(:mod:`evaluation.instfol`) and the means over subsets (:mod:`evaluation.subsets`) return it. JSON and
the stored evaluations show an undefined value as null beside its reason (:func:`defined_or_none`,
:func:`as_json`).

What a person reads (every page, every ``ifjudge`` line, the report's Markdown and LaTeX) shows a
value through :func:`show` and :func:`show_why`: a number, or :data:`UNDEFINED` with the reason in
parentheses (a page puts the reason in the hover or a "Why undefined" column). Files with a
documented format (CSV, JSON, TREC) keep their own missing value: an empty cell, null.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral

UNDEFINED = "—"  # the one word for an undefined value (U+2014 EM DASH): docs/metrics.md, "Undefined values"


@dataclass(frozen=True)
class Undefined:
    """A statistic that has no value on these data; ``reason`` says why (e.g. ``0/0``).

    It is falsy and prints as :func:`show_why` shows it:

    >>> u = Undefined("fewer than 2 common queries")
    >>> bool(u), str(u)
    (False, '— (fewer than 2 common queries)')
    """

    reason: str

    def __bool__(self) -> bool:
        return False

    def __str__(self) -> str:
        return show_why(self)


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


def json_null(value):
    """``json.dumps(..., default=json_null)``: an :class:`Undefined` nested anywhere in a result is
    written as null (the documented missing value of a JSON file); any other object is refused.

    >>> import json
    >>> json.dumps({"INSTFOL": Undefined("no query"), "check": {"INSTFOL": 0.5}}, default=json_null)
    '{"INSTFOL": null, "check": {"INSTFOL": 0.5}}'
    """
    if isinstance(value, Undefined):
        return None
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def is_undefined(value) -> bool:
    """True when ``value`` has no figure to show: None, :class:`Undefined` or NaN.

    >>> is_undefined(None), is_undefined(Undefined("0/0")), is_undefined(float("nan")), is_undefined(0.0)
    (True, True, True, False)
    """
    return value is None or isinstance(value, Undefined) or (isinstance(value, float) and math.isnan(value))


def show(value, spec: str = ".4f") -> str:
    """A value as a person reads it: a float formatted with ``spec``, an integer as it is,
    :data:`UNDEFINED` when it is undefined (:func:`is_undefined`); text as it is.

    >>> show(0.123456), show(1 / 3, ".3f"), show(12), show(None), show(Undefined("0/0")), show(float("nan"))
    ('0.1235', '0.333', '12', '—', '—', '—')
    """
    if is_undefined(value):
        return UNDEFINED
    if isinstance(value, float):
        return format(value, spec) if math.isfinite(value) else str(value)
    if isinstance(value, Integral) and not isinstance(value, bool):
        return str(int(value))
    return str(value)


def show_why(value, reason: str | None = None, spec: str = ".4f") -> str:
    """:func:`show`, with the reason in parentheses after :data:`UNDEFINED` when the value is
    undefined: its own (an :class:`Undefined`'s) or ``reason``.

    >>> show_why(Undefined("0/0")), show_why(None, "no group"), show_why(None), show_why(0.5, "unused")
    ('— (0/0)', '— (no group)', '—', '0.5000')
    """
    if not is_undefined(value):
        return show(value, spec)
    why = value.reason if isinstance(value, Undefined) else reason
    return f"{UNDEFINED} ({why})" if why else UNDEFINED
