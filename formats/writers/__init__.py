"""Writers of a :class:`formats.bundle.Bundle` to the file layouts the importers read, one module
per layout as the readers (:mod:`formats.readers`): ``formats/writers/<layout>.py``.

Every writer produces files that :func:`formats.readers.parse` reads back into an equal Bundle
(apart from ``source_files``), for a Bundle of that layout's shape:

============================  ==========================================  ==================
writer                        files                                        import format
============================  ==========================================  ==================
:func:`write_beir`            corpus.jsonl, queries.jsonl, qrels/<split>.tsv  ``beir``
:func:`write_instructir`      only_instruction_queries.jsonl, only_queries.jsonl,
                              qrels/test.tsv, corpus.jsonl                  ``instructir``
:func:`write_followir`        queries.jsonl (instruction_og/_changed), corpus.jsonl,
                              qrels_og/ and qrels_changed/ (.tsv and .jsonl),
                              top_ranked.jsonl ({qid, pid} per pair), README.md  ``followir``
:func:`write_infosearch`      the above plus instruction_reversed, qrels_reversed/  ``infosearch``
:func:`write_ifir`            <s>/<s>-corpus.jsonl, -query.jsonl, -qrel.tsv,
                              test_data.json per domain                     ``ifir``
:func:`write_mteb`            MTEB v2 parquet configs (corpus, queries, instruction,
                              default qrels, qrel_diff, top_ranked) + README.md  ``mteb``
:func:`write_trec_topics`     one TREC topics file                          ``trec``
:func:`write_trec_qrels`      one TREC qrels file                           ``trec``
:func:`write_trec_run`        one TREC run file                             ``trec``
:func:`write_jsonl`           one JSON object per line (the ``jsonl`` export)  --
============================  ==========================================  ==================

A Bundle that a layout cannot express (e.g. InstructIR instances written as BEIR) is refused with
a ``ValueError`` saying what the layout needs, rather than written lossily.

Every writer is importable from this package (``from formats.writers import write_beir``):

>>> from formats.writers import write_trec_run
>>> write_trec_run.__module__
'formats.writers.trec'
"""
from formats.writers.beir import write_beir
from formats.writers.followir import write_followir
from formats.writers.ifir import ifir_domains, ifir_level, is_bare, is_ifir_shaped, write_ifir
from formats.writers.hub import hub_queries
from formats.writers.infosearch import write_infosearch
from formats.writers.instructir import write_instructir
from formats.writers.jsonl import write_jsonl
from formats.writers.mteb import is_followir_shaped, write_mteb
from formats.writers.trec import write_trec_qrels, write_trec_run, write_trec_topics

__all__ = ["write_beir", "write_followir", "write_ifir", "write_infosearch", "write_instructir", "write_jsonl", "write_mteb",
           "write_trec_qrels", "write_trec_run", "write_trec_topics", "ifir_level", "is_bare", "is_ifir_shaped",
           "is_followir_shaped", "ifir_domains", "hub_queries"]
