"""Retrievers: each turns topics (instruction + query) and documents into a run,
``run[qid][doc_id] -> score`` (the shape pytrec_eval takes).

- :mod:`.bm25` -- BM25 with ``bm25s``;
- :mod:`.dense` -- a sentence-transformers bi-encoder with the on-disk embedding cache;
- :mod:`.rerank` -- a CrossEncoder (or any scoring function) over a first stage's top k;
- :mod:`.external` -- runs read from TREC files or stored with an import;
- :mod:`.topk` -- the shared top-k selection.

A *topic* is a dict with ``qid``, ``query`` and ``instruction`` (see
``storage.projects.eval_topics``); *documents* map ``doc_id -> {"title", "text"}``.
*candidates*, when given, maps ``qid -> [doc_id, ...]``: only those documents are scored for that
query (FollowIR's ``top_ranked`` lists); a query without candidates gets an empty ranking.
"""
from __future__ import annotations

Run = dict[str, dict[str, float]]
