"""Studies, sampling, assignment, questions, agreement and adjudication (no Streamlit)."""
