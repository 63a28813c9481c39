"""The monitor's "Benchmark-wide estimates" section: each question's share over the whole
benchmark with its design-aware 95% interval, the design effect, the effective sample size and the
labels that would halve the interval (:func:`annotation.estimates.benchmark_estimates`), beside the
naive independent (Wilson) interval. Self-contained: the monitor page calls :func:`render_estimates`."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from annotation.estimates import benchmark_estimates
from annotation.glossary import ESTIMATES, header_help
from ui.markdown import md_escape


def _fig(value, fmt: str) -> str:
    """A figure as the monitor shows it: formatted, or "—" when undefined (never None or NaN)."""
    return "—" if value is None or (isinstance(value, float) and value != value) else format(value, fmt)


def estimate_rows(result: dict) -> list[dict]:
    """The table the section shows, one row per estimate (figures as text; "—" where undefined).

    >>> estimate_rows({"estimates": [{"estimand": "valid instruction", "share": 0.5, "low": 0.2, "high": 0.8,
    ...     "undefined": None, "naive_independent": {"low": 0.3, "high": 0.7}, "deff": 2.0, "n_effective": 5.0,
    ...     "n_items": 10, "n_groups": 5, "to_halve": {"further_labels": 45}}]})[0]["95% CI (design)"]
    '[0.200, 0.800]'
    """
    rows = []
    for e in result["estimates"]:
        naive = e.get("naive_independent") or {}
        rows.append({ESTIMATES[k]: v for k, v in {
            "estimand": e["estimand"], "share": _fig(e["share"], ".3f"),
            "interval": (f"[{e['low']:.3f}, {e['high']:.3f}]" if e.get("low") is not None
                         else f"undefined: {e.get('undefined') or 'no interval'}"),
            "naive_independent": (f"[{naive['low']:.3f}, {naive['high']:.3f}]" if naive else "—"),
            "deff": _fig(e["deff"], ".2f"), "n_effective": _fig(e["n_effective"], ".1f"),
            "n_items": e["n_items"], "n_groups": e["n_groups"],
            "to_halve": _fig(e["to_halve"]["further_labels"], "d"),
        }.items()})
    return rows


def render_estimates(conn, study_id: int) -> None:
    """Show the section for one study (read live from the database on every run)."""
    result = benchmark_estimates(conn, study_id)
    st.subheader("Benchmark-wide estimates (design-aware 95%)")
    st.caption(md_escape(f"Design: {result['design']['description']}."))
    for note in result["design"].get("notes") or []:
        st.caption(md_escape(f"Note: {note}."))
    if not result["estimates"]:
        st.caption("No question of this study has a benchmark-wide estimate.")
        return
    frame = pd.DataFrame(estimate_rows(result))
    main = [ESTIMATES[k] for k in ("estimand", "share", "interval", "naive_independent", "n_items", "n_groups")]
    details = [ESTIMATES[k] for k in ("estimand", "deff", "n_effective", "to_halve")]
    short = {ESTIMATES["naive_independent"]: "Naive CI (comparison)"}
    widths = {ESTIMATES["estimand"]: 240, ESTIMATES["share"]: 60, ESTIMATES["interval"]: 120,
              ESTIMATES["naive_independent"]: 150, ESTIMATES["n_items"]: 100, ESTIMATES["n_groups"]: 70,
              ESTIMATES["deff"]: 110, ESTIMATES["n_effective"]: 100, ESTIMATES["to_halve"]: 220}

    def config(names):
        return {c: st.column_config.Column(short.get(c, c), help=header_help(c), width=widths.get(c)) for c in names}

    st.dataframe(frame, hide_index=True, key="mon_estimates", column_order=main, column_config=config(main))
    with st.expander("Design effect, effective sample size, labels to halve the interval"):
        st.dataframe(frame, hide_index=True, key="mon_estimates_design", column_order=details, column_config=config(details))
        st.caption(md_escape(f"Method: {result['method']}. The naive interval treats sampled instances as independent "
                             "(too narrow when instances of a query group are alike)."))
