"""How ``ifjudge`` commands print numbers and tables: one formatter for every command.

:func:`fmt_value` is the one way a command shows a figure (an undefined value is a word, never
``None``); :func:`format_table` lines up rows of cells in columns; :func:`infosearch_lines` is
the InfoSearch block (WISE / SICR / p-MRR per dimension) that ``eval run`` and ``eval compare``
both print.
"""
from __future__ import annotations

import math

from evaluation.undefined import Undefined


def fmt_value(value, *, digits: int = 4, undefined: str = "undefined") -> str:
    """``value`` as printed: a float with ``digits`` decimals, ``undefined`` for None or Undefined.

    >>> fmt_value(0.123456), fmt_value(1 / 3, digits=3), fmt_value(None), fmt_value(None, undefined="-")
    ('0.1235', '0.333', 'undefined', '-')
    >>> fmt_value(12), fmt_value(float("nan"))
    ('12', 'nan')
    """
    if value is None or isinstance(value, Undefined):
        return undefined
    if isinstance(value, float):
        return f"{value:.{digits}f}" if math.isfinite(value) else str(value)
    return str(value)


def format_table(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows of text cells lined up in columns two spaces apart, trailing blanks cut.

    >>> format_table([("statistic", "value"), ("kappa", "0.5")])
    ['statistic  value', 'kappa      0.5']
    """
    if not rows:
        return []
    width = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width[i]) for i, cell in enumerate(r)).rstrip() for r in rows]


def infosearch_lines(block: dict, *, indent: str = "", undefined: str = "undefined") -> list[str]:
    """One line per dimension and one ``overall``: WISE / SICR / p-MRR and the number of queries.

    ``block`` holds ``by_dimension`` (dimension -> row) and ``overall`` (a row); a row has ``WISE``,
    ``SICR``, ``p-MRR`` and ``n_queries``.

    >>> row = {"WISE": 0.5, "SICR": None, "p-MRR": -0.25, "n_queries": 2}
    >>> print("\\n".join(infosearch_lines({"by_dimension": {"audience": row}, "overall": row}, indent="  ")))
      audience         0.5000 / undefined / -0.2500  (2)
      overall          0.5000 / undefined / -0.2500  (2)
    """
    def f(v):
        return fmt_value(v, undefined=undefined)

    return [f"{indent}{dim:<16} {f(r['WISE'])} / {f(r['SICR'])} / {f(r['p-MRR'])}  ({r['n_queries']})"
            for dim, r in [*block["by_dimension"].items(), ("overall", block["overall"])]]
