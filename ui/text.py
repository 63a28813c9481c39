"""Untrusted text (instructions, passages, reasons, names) is shown literally: st.text parses
neither Markdown nor HTML. Never use unsafe_allow_html with it."""
from __future__ import annotations

import streamlit as st


def literal(label: str | None, body: str, *, key: str | None = None) -> None:
    if label:
        st.caption(label)
    st.text(body, width="stretch")
