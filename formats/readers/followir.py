"""FollowIR, as published on the Hugging Face hub (Weller et al. 2024; ``jhu-clsp/robust04-instructions``,
``core17-instructions``, ``news21-instructions``, read by MTEB 1.x ``AbsTaskInstructionRetrieval``),
and the InfoSearch extension of it (see :mod:`formats.readers.infosearch`).

Directory (or the same files given one by one)::

    corpus.jsonl              {"_id", "title"?, "text"}
    queries.jsonl             {"_id", "text", "instruction_og", "instruction_changed", ...}
    top_ranked.jsonl          one {"qid", "pid"} row per (query, candidate) pair, grouped by qid
    qrels_og/<split>.jsonl    {"query-id", "corpus-id", "score"}     -> qrels version "original"
    qrels_og/<split>.tsv      query-id<TAB>corpus-id<TAB>score       (same judgments as the .jsonl)
    qrels_changed/...         the same two files                     -> qrels version "changed"
    README.md, empty_scores.json, ...   not data: ignored, and said so in ``Bundle.notes``

Scores may be written ``2``, ``2.0`` or ``"2"`` (MTEB casts them to float, then int); ``2.5`` is
refused. When a qrels folder holds both ``<split>.jsonl`` and ``<split>.tsv`` they are read once
and refused if they disagree; a qrels folder with neither is refused. Fields other than those
listed (``keywords``, ``short_query``) are ignored. Older shapes of ``top_ranked.jsonl`` -- one
line per query ``{"qid", "doc_ids": [...]}`` or ``{"query-id", "corpus-ids": [...]}`` -- still read.
A directory holding no ``queries.jsonl`` but sub-folders that do (e.g. the three FollowIR sets,
or the six InfoSearch dimensions, side by side) is read as all of them.

Each query ``q`` gives instances ``q-og`` (variant ``og``, ``instruction_og``) and ``q-changed``
(variant ``changed``, ``instruction_changed``) in group ``q``, and the two instructions as
narratives of ``q`` (variants ``og`` and ``changed``). Qrels and top_ranked may be keyed by a
query id or an instance id.

Examples
--------
>>> from formats.readers import parse
>>> parse("followir", [Path("tests/fixtures/published/followir_hub")]).counts()["top_ranked"]
3
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from formats.bundle import Bundle, Instance, Narrative
from formats.errors import ImportFailure

from formats.text import IdTable, optional_str, read_jsonl, received, require_str
from .beir import QrelsReader, check_known, qrels_jsonl_rows, qrels_tsv_rows, read_corpus, read_queries

QRELS_DIRS = {"qrels_og": "original", "qrels_changed": "changed", "qrels_reversed": "reversed"}
LAYOUT_FILES = {"corpus.jsonl": "corpus", "queries.jsonl": "queries", "top_ranked.jsonl": "top_ranked"}
QRELS_SUFFIXES = (".jsonl", ".tsv")
TOP_RANKED_LISTS = (("qid", "doc_ids"), ("query-id", "corpus-ids"))

Row = tuple[int, str, str, int]  # line, query id, document id, relevance


def _qrels_version(path: Path) -> str | None:
    for name in (path.parent.name, path.stem):
        for prefix, version in QRELS_DIRS.items():
            if name == prefix or name.startswith(prefix + "_") or name.startswith(prefix + "-"):
                return version
    return None


@dataclass
class _Found:
    corpus: list[Path] = field(default_factory=list)
    corpus_subset: dict[Path, str] = field(default_factory=dict)  # a dataset folder's corpus -> its subset
    queries: list[tuple[Path, str]] = field(default_factory=list)  # (file, subset)
    top_ranked: list[Path] = field(default_factory=list)
    # (version, folder, split) -> {".jsonl": file, ".tsv": file}
    qrels: dict[tuple[str, str, str], dict[str, Path]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add_qrels(self, path: Path, version: str) -> None:
        self.qrels.setdefault((version, str(path.parent), path.stem), {})[path.suffix] = path


def _refuse_reversed(path: Path) -> ImportFailure:
    return ImportFailure(str(path), None, None,
                         "qrels_reversed/ belongs to the InfoSearch layout; expected format 'infosearch' for it")


def _collect_dir(path: Path, found: _Found, *, infosearch: bool, fmt: str, subset: str) -> None:
    used: set[str] = set()
    for name, key in LAYOUT_FILES.items():
        if (path / name).is_file():
            used.add(name)
            if key == "queries":
                found.queries.append((path / name, subset))
            else:
                getattr(found, key).append(path / name)
                if key == "corpus" and subset:
                    found.corpus_subset[path / name] = subset
    for dirname, version in QRELS_DIRS.items():
        qdir = path / dirname
        if not qdir.is_dir():
            continue
        used.add(dirname)
        if version == "reversed" and not infosearch:
            raise _refuse_reversed(qdir)
        files = sorted(f for f in qdir.iterdir() if not f.name.startswith("."))
        data = [f for f in files if f.is_file() and f.suffix in QRELS_SUFFIXES]
        if not data:
            held = ", ".join(f.name for f in files) or "nothing"
            raise ImportFailure(
                str(qdir), None, None,
                f"this qrels folder holds no readable qrels file (it holds: {held}); expected "
                "<split>.jsonl and/or <split>.tsv with query-id, corpus-id, score (e.g. test.jsonl, test.tsv)",
            )
        for f in data:
            found.add_qrels(f, version)
        skipped = [f"{dirname}/{f.name}" for f in files if f not in data]
        if skipped:
            found.notes.append(f"{path}: ignored {', '.join(skipped)} (not qrels)")
    ignored = sorted(e.name + ("/" if e.is_dir() else "") for e in path.iterdir()
                     if e.name not in used and not e.name.startswith("."))
    if ignored:
        found.notes.append(f"{path}: ignored {', '.join(ignored)} (not part of the {fmt} layout)")


def dataset_dirs(path: Path) -> list[Path]:
    """Sub-folders that hold a queries.jsonl, for a folder of several datasets side by side."""
    if (path / "queries.jsonl").is_file():
        return []
    return sorted(d for d in path.iterdir() if d.is_dir() and not d.name.startswith(".")
                  and (d / "queries.jsonl").is_file())


def _collect(paths: list[Path], *, infosearch: bool, fmt: str,
             subset_of: Callable[[Path], str] | None) -> _Found:
    found = _Found()
    subset = subset_of or (lambda _folder: "")
    for path in map(Path, paths):
        if path.is_dir():
            for folder in dataset_dirs(path) or [path]:
                _collect_dir(folder, found, infosearch=infosearch, fmt=fmt, subset=subset(folder))
        elif not path.exists():
            raise ImportFailure(str(path), None, None, "no such file or directory")
        elif path.suffix == ".jsonl" and path.name.startswith("corpus"):
            found.corpus.append(path)
        elif path.suffix == ".jsonl" and path.name.startswith("queries"):
            found.queries.append((path, subset(path.parent)))
        elif path.suffix == ".jsonl" and path.name.startswith("top_ranked"):
            found.top_ranked.append(path)
        elif path.suffix in QRELS_SUFFIXES and (version := _qrels_version(path)) is not None:
            if version == "reversed" and not infosearch:
                raise _refuse_reversed(path)
            found.add_qrels(path, version)
        elif path.suffix == ".tsv":
            accepted = ", ".join(d for d in QRELS_DIRS if infosearch or d != "qrels_reversed")
            raise ImportFailure(
                str(path), None, None,
                f"cannot tell which qrels version {path.name!r} holds; expected it inside (or named) {accepted}",
            )
        else:
            raise ImportFailure(
                str(path), None, None,
                f"cannot tell what {path.name!r} holds; expected corpus.jsonl, queries.jsonl, "
                f"top_ranked.jsonl or qrels_*/<split>.jsonl|.tsv ({fmt} layout)",
            )
    if not found.queries:
        first = str(paths[0]) if paths else "(no files)"
        raise ImportFailure(first, None, None, f"no queries.jsonl given; a {fmt} import needs queries.jsonl")
    return found


def _same_qrels(first: Path, first_rows: list[Row], second: Path, second_rows: list[Row]) -> None:
    """Refuse two copies of the same qrels (``<split>.jsonl`` and ``<split>.tsv``) that disagree."""
    tables = []
    for path, rows in ((first, first_rows), (second, second_rows)):
        table: dict[tuple[str, str], tuple[int, int]] = {}
        for line, qid, doc_id, relevance in rows:
            if (qid, doc_id) in table:
                raise ImportFailure(
                    str(path), line, "corpus-id",
                    f"duplicate judgment {qid} / {doc_id} (first on line {table[qid, doc_id][0]}); "
                    "expected each (query-id, corpus-id) pair once",
                )
            table[qid, doc_id] = (line, relevance)
        tables.append(table)
    mine, other = tables
    for (qid, doc_id), (line, relevance) in mine.items():
        if (qid, doc_id) not in other:
            raise ImportFailure(
                str(first), line, "corpus-id",
                f"judgment {qid} / {doc_id} is in {first.name} but not in {second}; expected the .jsonl and "
                ".tsv copies of the same qrels to hold the same judgments",
            )
        other_line, other_relevance = other[qid, doc_id]
        if other_relevance != relevance:
            raise ImportFailure(
                str(first), line, "score",
                f"judgment {qid} / {doc_id} has score {relevance} here but {other_relevance} in {second}, "
                f"line {other_line}; expected the .jsonl and .tsv copies of the same qrels to agree",
            )
    for (qid, doc_id), (line, _) in other.items():
        if (qid, doc_id) not in mine:
            raise ImportFailure(
                str(second), line, "corpus-id",
                f"judgment {qid} / {doc_id} is in {second.name} but not in {first}; expected the .jsonl and "
                ".tsv copies of the same qrels to hold the same judgments",
            )


def _read_qrels(found: _Found, sources, reader: QrelsReader, notes: list[str]) -> None:
    both: list[str] = []
    for (version, _folder, _split), files in found.qrels.items():
        jsonl, tsv = files.get(".jsonl"), files.get(".tsv")
        jsonl_rows = qrels_jsonl_rows(jsonl, sources) if jsonl else None
        tsv_rows = qrels_tsv_rows(tsv, sources) if tsv else None
        if jsonl and tsv:
            _same_qrels(jsonl, jsonl_rows, tsv, tsv_rows)
            both.append(f"{jsonl.parent.name}/{jsonl.stem}")
        reader.add_rows(jsonl or tsv, jsonl_rows if jsonl else tsv_rows, version=version)
    if both:
        notes.append(f"{', '.join(both)}: the .jsonl and .tsv copies hold the same judgments; each read once")


def _read_top_ranked(path: Path, sources, bundle: Bundle, qids: set[str], doc_ids: set[str] | None,
                     origin: dict[str, tuple[str, str, int]], pairs: dict[tuple[str, str], tuple[str, int]]) -> None:
    """One ``{"qid", "pid"}`` row per pair (grouped by qid, order kept), or one list per query.

    ``origin`` remembers how and where each query's candidates were first given, ``pairs`` where
    each (query, document) pair was, across files."""
    name = str(path)
    for line, record in read_jsonl(path, sources):
        if "pid" in record:
            qid = require_str(record, "qid", path, line)
            check_known(qid, qids, path, line, "qid", "query id", "queries.jsonl")
            doc_id = require_str(record, "pid", path, line)
            check_known(doc_id, doc_ids, path, line, "pid", "document id", "corpus.jsonl")
            shape, where, first = origin.setdefault(qid, ("pairs", name, line))
            if shape != "pairs":
                raise ImportFailure(
                    str(path), line, "qid",
                    f"query id {qid!r} already has its candidate list ({where}, line {first}); expected "
                    "either one {'qid', 'pid'} row per pair or one list per query, not both",
                )
            if (qid, doc_id) in pairs:
                where, first = pairs[qid, doc_id]
                raise ImportFailure(
                    str(path), line, "pid",
                    f"document id {doc_id!r} is already a candidate of query {qid!r} ({where}, line {first}); "
                    "expected each (qid, pid) pair once",
                )
            pairs[qid, doc_id] = (name, line)
            bundle.top_ranked.setdefault(qid, []).append(doc_id)
            continue
        for qid_field, list_field in TOP_RANKED_LISTS:
            if qid_field in record:
                break
        else:
            raise ImportFailure(
                str(path), line, "qid",
                f"required field is missing (fields present: {', '.join(sorted(record)) or 'none'}); "
                "expected one {'qid', 'pid'} row per pair (or a list: {'qid', 'doc_ids'} or MTEB's "
                "{'query-id', 'corpus-ids'})",
            )
        qid = require_str(record, qid_field, path, line)
        check_known(qid, qids, path, line, qid_field, "query id", "queries.jsonl")
        if list_field not in record:
            raise ImportFailure(
                str(path), line, list_field,
                "required field is missing; expected a list of document ids (or one {'qid', 'pid'} row per pair)",
            )
        if qid in origin:
            shape, where, first = origin[qid]
            raise ImportFailure(
                str(path), line, qid_field,
                f"query id {qid!r} already has {{'qid', 'pid'}} rows ({where}, line {first}); expected either "
                "one {'qid', 'pid'} row per pair or one list per query, not both" if shape == "pairs" else
                f"duplicate top_ranked query id {qid!r} (first defined in {where}, line {first}); "
                "expected each query's list once",
            )
        origin[qid] = ("list", str(path), line)
        docs = record[list_field]
        if not isinstance(docs, list) or not docs or not all(isinstance(d, str) and d.strip() for d in docs):
            raise ImportFailure(
                str(path), line, list_field,
                f"received {received(docs)}; expected a non-empty list of document id strings",
            )
        in_list: set[str] = set()
        for doc_id in docs:
            check_known(doc_id, doc_ids, path, line, list_field, "document id", "corpus.jsonl")
            if doc_id in in_list:
                raise ImportFailure(str(path), line, list_field,
                                    f"document id {doc_id!r} appears twice; expected each candidate once")
            in_list.add(doc_id)
        bundle.top_ranked[qid] = list(docs)


def parse(paths: list[Path], *, infosearch: bool = False,
          subset_of: Callable[[Path], str] | None = None) -> Bundle:
    """Parse the FollowIR hub layout (``infosearch=True``: the InfoSearch layout) into a validated
    :class:`Bundle`. ``subset_of(folder)`` names the subset of the queries read from ``folder``."""
    fmt = "infosearch" if infosearch else "followir"
    found = _collect(paths, infosearch=infosearch, fmt=fmt, subset_of=subset_of)
    bundle = Bundle()
    sources = bundle.source_files
    doc_ids = IdTable("document id")
    for path in found.corpus:
        docs = read_corpus(path, sources, doc_ids)
        bundle.documents.extend(docs)
        if path in found.corpus_subset:
            bundle.subset_documents.setdefault(found.corpus_subset[path], []).extend(d.doc_id for d in docs)
    if len(bundle.subset_documents) < 2 or len(found.corpus_subset) < len(found.corpus):
        bundle.subset_documents = {}  # one corpus (or one not tied to a subset): every query ranks all of it

    query_ids = IdTable("query id")
    variants = [("og", "instruction_og"), ("changed", "instruction_changed")]
    if infosearch:
        variants.append(("reversed", "instruction_reversed"))
    for path, subset in found.queries:
        for line, record, query in read_queries(path, sources, query_ids):
            bundle.queries.append(replace(query, subset=subset) if subset else query)
            qid = query.query_id
            for variant, name in variants:
                if infosearch and variant == "og":
                    text = optional_str(record, name, path, line)
                else:
                    text = require_str(record, name, path, line)
                bundle.instances.append(Instance(
                    instance_id=f"{qid}-{variant}", query_id=qid, group_id=qid, instruction=text, variant=variant,
                ))
                if text.strip():
                    bundle.narratives.append(Narrative(query_id=qid, text=text, variant=variant))

    known_qids = set(query_ids.seen) | {i.instance_id for i in bundle.instances}
    for instance in bundle.instances:
        if instance.instance_id in query_ids:
            where, line = query_ids.seen[instance.instance_id]
            raise ImportFailure(
                where, line, "_id",
                f"query id {instance.instance_id!r} collides with the instance id made for query "
                f"{instance.query_id!r}; expected query ids that do not end in '-og', '-changed' or '-reversed'",
            )
    corpus_ids = set(doc_ids.seen) if found.corpus else None
    reader = QrelsReader(qids=known_qids, qid_where="queries.jsonl", doc_ids=corpus_ids)
    _read_qrels(found, sources, reader, bundle.notes)
    bundle.qrels = reader.qrels
    origin: dict[str, tuple[str, str, int]] = {}
    pairs: dict[tuple[str, str], tuple[str, int]] = {}
    for path in found.top_ranked:
        _read_top_ranked(path, sources, bundle, known_qids, corpus_ids, origin, pairs)
    bundle.notes[:0] = found.notes
    return bundle


def first_query(folder: Path) -> dict | None:
    """The first record of ``folder/queries.jsonl`` (None when absent or unreadable): enough to
    tell the layouts apart without reading the whole file."""
    try:
        with (Path(folder) / "queries.jsonl").open(encoding="utf-8-sig") as f:
            for line in f:
                if line.strip():
                    record = json.loads(line)
                    return record if isinstance(record, dict) else None
    except (OSError, ValueError, RecursionError):  # the reader then says what is wrong
        return None
    return None


def _is_followir_dataset(folder: Path) -> bool:
    record = first_query(folder)
    if record is None or "instruction_reversed" in record or (folder / "qrels_reversed").is_dir():
        return False
    return "instruction_og" in record and "instruction_changed" in record and (folder / "qrels_og").is_dir()


def detect(path: Path) -> bool:
    """True when ``path`` is a directory in the FollowIR hub layout: ``queries.jsonl`` with
    ``instruction_og`` and ``instruction_changed``, and a ``qrels_og/`` folder (and nothing of
    InfoSearch: no ``instruction_reversed``, no ``qrels_reversed/``); or a folder of such
    directories side by side.

    Examples
    --------
    >>> detect(Path("tests/fixtures/published/followir_hub"))
    True
    """
    path = Path(path)
    if not path.is_dir():
        return False
    subdirs = dataset_dirs(path)
    if subdirs:
        return all(_is_followir_dataset(d) for d in subdirs)
    return _is_followir_dataset(path)


__all__ = ["parse", "detect", "first_query", "QRELS_DIRS"]
