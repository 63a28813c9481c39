"""The in-memory form of an import: every importer parses files into a :class:`Bundle`,
validates it completely, and only then is it written to SQLite in one transaction.

Exporters of the file layouts produce files that parse back into an equal Bundle.
"""
from __future__ import annotations

from dataclasses import dataclass, field

VARIANTS = ("og", "changed", "reversed", "level1", "level2", "level3", "bare")
#: the variant of a bare query (no instruction) held beside the instructed instances of its group
#: (IFIR's ``<qid>_0``): the baseline of INSTFOL and the level analysis, never part of a headline figure
BARE = "bare"
# qrels versions as the benchmarks publish them: an import accepts only these, and nothing
# overwrites them afterwards
PUBLISHED_QRELS_VERSIONS = ("original", "changed", "reversed")
# versions built from human outcomes (stored by storage.projects.store_qrels_build, with provenance):
# ``validated`` (instance validation, InstructIR / IFIR), ``changed-validated`` (FollowIR re-judging,
# InfoSearch instructed mode), ``reversed-validated`` (InfoSearch reversed mode)
DERIVED_QRELS_VERSIONS = ("validated", "changed-validated", "reversed-validated")
QRELS_VERSIONS = PUBLISHED_QRELS_VERSIONS + DERIVED_QRELS_VERSIONS
# the published version each derived version validates
VALIDATES = {"validated": "original", "changed-validated": "changed", "reversed-validated": "reversed"}


@dataclass(frozen=True)
class Document:
    doc_id: str
    text: str
    title: str = ""


@dataclass(frozen=True)
class Query:
    """A query. ``subset`` is the published part it belongs to: the IFIR domain (``fiqa``), the
    InfoSearch dimension (``Language``), an MTEB subset or language; empty when the release has
    none. Studies sample per subset and reports break results down by it."""

    query_id: str
    text: str
    subset: str = ""


@dataclass(frozen=True)
class Instance:
    """One evaluated unit of an instruction-following benchmark.

    ``group_id`` is the set of instances sharing a query (InstructIR: the id prefix before ``_``).
    ``variant`` is one of :data:`VARIANTS`; :data:`BARE` marks the bare query of a group whose other
    instances carry instructions (IFIR ``<qid>_0``).
    """

    instance_id: str
    query_id: str
    group_id: str
    instruction: str
    variant: str = "og"


@dataclass(frozen=True)
class Qrel:
    """One relevance judgment. ``qid`` is the id the qrels file uses: an instance id
    (InstructIR: one target per instance) or a query id (FollowIR, BEIR)."""

    qid: str
    doc_id: str
    relevance: int
    version: str = "original"


@dataclass(frozen=True)
class Narrative:
    """A narrative (TREC) or instruction text attached to a query, as imported."""

    query_id: str
    text: str
    variant: str = "og"


@dataclass(frozen=True)
class RunRow:
    qid: str
    doc_id: str
    rank: int
    score: float


@dataclass
class Bundle:
    # a list when read from files; an export of a stored project gives the writers a
    # formats.corpus.StreamedCorpus instead (ids known, text read from storage in chunks)
    documents: list[Document] = field(default_factory=list)
    queries: list[Query] = field(default_factory=list)
    instances: list[Instance] = field(default_factory=list)
    qrels: list[Qrel] = field(default_factory=list)
    narratives: list[Narrative] = field(default_factory=list)
    # candidate lists to rerank (FollowIR top_ranked.jsonl): qid -> doc ids in order
    top_ranked: dict[str, list[str]] = field(default_factory=dict)
    # the corpus of each subset when a release publishes one per subset (IFIR domains, InfoSearch
    # dimensions, MTEB subset configs): subset -> its document ids. Empty: one corpus for every query.
    # An evaluation ranks each subset's queries against its own corpus (evaluation.subsets).
    subset_documents: dict[str, list[str]] = field(default_factory=dict)
    # external runs: run name -> rows
    runs: dict[str, list[RunRow]] = field(default_factory=dict)
    # (path, sha256) of every file read, for the export manifest
    source_files: list[tuple[str, str]] = field(default_factory=list)
    # what the reader skipped or assumed, said to the user after the import
    # (e.g. "fiqa-corpus.jsonl: 3 documents with empty text skipped")
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        qrels_by_version: dict[str, int] = {}
        for q in self.qrels:
            qrels_by_version[q.version] = qrels_by_version.get(q.version, 0) + 1
        return {
            "documents": len(self.documents),
            "queries": len(self.queries),
            "instances": len(self.instances),
            "groups": len({i.group_id for i in self.instances}),
            "narratives": len(self.narratives),
            "top_ranked": len(self.top_ranked),
            "run_rows": sum(len(r) for r in self.runs.values()),
            **{f"qrels_{v}": n for v, n in sorted(qrels_by_version.items())},
            # only for releases published in parts (IFIR domains, InfoSearch dimensions)
            **({"subsets": n_subsets} if (n_subsets := len({q.subset for q in self.queries if q.subset})) else {}),
        }
