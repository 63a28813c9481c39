"""The human validation (no Streamlit): the study at this level (set-up and sampling in ``studies``,
the annotate and re-judge calls in ``workspace``, check items, the INSTFOL study, imports, the demo,
closing and deleting, the glossary) and one package per concern beside it, each with a face (its
``__init__`` says its concern and lists its public names):

- :mod:`annotation.questions`: what a question is, the built-in ones, a lead's own, a study's questions;
- :mod:`annotation.agreement`: agreement coefficients, intervals, the majority rule (reads no storage);
- :mod:`annotation.outcomes`: item outcomes, adjudication, validated qrels builds;
- :mod:`annotation.monitoring`: what the lead watches while a study runs;
- :mod:`annotation.survey`: pure survey estimators (reads no storage);
- :mod:`annotation.estimates`: a study's benchmark-wide estimates;
- :mod:`annotation.narratives`: FollowIR's narrative versions and re-judging;
- :mod:`annotation.judges`: an automatic judge beside the humans.

Sign-in and accounts are :mod:`accounts`. The map: docs/architecture.md.
"""
