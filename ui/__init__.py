"""Shared Streamlit helpers for the pages: the signed-in user, role checks, literal text."""
