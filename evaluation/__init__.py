"""Evaluation: retrievers, runs, standard and instruction-following metrics, comparisons (no Streamlit)."""
