"""MTEB v2 retrieval layout: a dataset folder of parquet configs, as published on the Hugging Face hub.

Facts from MTEB's loader (``mteb/abstasks/retrieval_dataset_loaders.py``, ``_push_dataset_to_hub``
in ``mteb/abstasks/retrieval.py``) and from the FollowIR / mFollowIR tasks that read
``jhu-clsp/*-instructions-mteb``. A config is a folder of parquet files named
``<split>-<shard>-of-<n>.parquet``; the folder ``data/`` is the config ``default``.

==================  ==========================================  ================================
config              columns                                      becomes
==================  ==========================================  ================================
``corpus``          ``_id`` or ``id``, ``title``?, ``text``      documents
``queries``         ``_id`` or ``id``, ``text``, ``instruction``?  queries (``query`` also accepted)
``default``         ``query-id``, ``corpus-id``, ``score``       qrels (``qrels`` or ``data`` too)
``instruction``     ``query-id``, ``instruction``                instances
``top_ranked``      ``query-id``, ``corpus-ids`` (list)          candidate lists to rerank
``qrel_diff``       ``query-id``, ``corpus-ids`` (list)          FollowIR only: checked, not stored
==================  ==========================================  ================================

A config name may carry a subset: MTEB's own prefix (``fas-corpus``, ``fas-qrels``) or mFollowIR's
suffix (``corpus-fas``, ``default-fas``). The subset becomes :attr:`formats.bundle.Query.subset`.

Two shapes, told apart by the query ids of each subset:

- **FollowIR** (every query id is ``<q>-og`` or ``<q>-changed``, each ``<q>`` with both): query
  ``<q>`` (text of ``<q>-og``), instances ``<q>-og`` / ``<q>-changed`` (variants ``og`` / ``changed``,
  group ``<q>``) with their instructions, which are also the two narratives of ``<q>``; qrels rows
  of ``<q>-og`` become version ``original`` and rows of ``<q>-changed`` version ``changed``, both
  keyed by ``<q>``; ``top_ranked`` is keyed by ``<q>``. This is the Bundle the FollowIR hub-v1
  import gives for the same data.
- **IFIR** (every query id is ``<q>_v<k>``, k = 0..3, as IFJudge writes an IFIR domain for MTEB's
  IFIR tasks, which read the level by ``"v1" in id``): query ``<q>``, instances ``<q>_<k>`` (variant
  ``level<k>``) and ``<q>_inst`` for ``<q>_v0`` (a level-0 instruction, variant ``og``), group
  ``<q>``, qrels keyed by instance; the subset is the config prefix, else the card's ``pretty_name``.
- **generic**: one query per row; a query with an instruction (non-blank) becomes an instance of the
  same id (group = query id, variant ``og``); qrels version ``original``.

Scores are cast as MTEB casts them (to float, then to int); a non-integral score is refused. Each
subset needs a corpus, a queries and a qrels config (MTEB refuses a task without them); with
several subsets each one's corpus config is its own corpus (``Bundle.subset_documents``), which an
evaluation ranks that subset's queries against, as MTEB does. Errors
name the parquet file, the row (1-based, reported as the line) and the column.
"""
from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from formats.bundle import Bundle, Document, Instance, Narrative, Qrel, Query
from formats.errors import ImportFailure
from formats.limits import ROW_BYTES, VALUE_BYTES, budget, too_large
from formats.text import IdTable
from formats.text import received as _received_text

from .beir import check_known

#: config roles and the names a config of that role may have (first = preferred, as MTEB prefers it)
ROLES: dict[str, tuple[str, ...]] = {
    "corpus": ("corpus",),
    "queries": ("query", "queries"),
    "qrels": ("default", "qrels", "data"),
    "instruction": ("instruction",),
    "top_ranked": ("top_ranked",),
    "qrel_diff": ("qrel_diff",),
}
_NAME_ROLE = {name: role for role, names in ROLES.items() for name in names}
_SHARD = re.compile(r"^(?P<split>.+?)(?:-\d{5}-of-\d{5})?$")
ID_COLUMNS = ("_id", "id")
VARIANT_SUFFIXES = (("-og", "og"), ("-changed", "changed"))


def _parse_name(name: str) -> tuple[str, str, int] | None:
    """``(role, subset, rank)`` of a config name; rank orders the names of one role as MTEB prefers them."""
    for known, role in _NAME_ROLE.items():
        rank = ROLES[role].index(known)
        if name == known:
            return role, "", rank
        if name.startswith(known + "-") and len(name) > len(known) + 1:
            return role, name[len(known) + 1:], rank
    for known, role in _NAME_ROLE.items():
        if name.endswith("-" + known) and len(name) > len(known) + 1:
            return role, name[: -len(known) - 1], ROLES[role].index(known)
    return None


def config_role(name: str) -> tuple[str, str] | None:
    """``(role, subset)`` of a config name, or None when it is not a retrieval config.

    Examples
    --------
    >>> config_role("corpus"), config_role("fas-corpus"), config_role("default-fas")
    (('corpus', ''), ('corpus', 'fas'), ('qrels', 'fas'))
    """
    parsed = _parse_name(name)
    return None if parsed is None else parsed[:2]


@dataclass
class _Config:
    name: str
    files: list[Path]
    root: Path
    rank: int = 0


@dataclass
class _Found:
    configs: dict[tuple[str, str], _Config] = field(default_factory=dict)  # (subset, role) -> config
    notes: list[str] = field(default_factory=list)
    roots: list[Path] = field(default_factory=list)


def _split_of(path: Path) -> str:
    return _SHARD.match(path.stem).group("split")


def _parquet_files(folder: Path) -> list[Path]:
    """Parquet files of a config folder: directly inside it or one folder down (never deeper, so
    that telling a folder's format stays quick on any folder)."""
    return sorted([*folder.glob("*.parquet"), *folder.glob("*/*.parquet")])


def _config_dirs(root: Path) -> list[tuple[str, Path]]:
    out = []
    for sub in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if _parquet_files(sub):
            out.append(("default" if sub.name == "data" else sub.name, sub))
    return out


def detect(path: Path) -> bool:
    """True for a directory holding MTEB v2 parquet configs (at least a queries config).

    Examples
    --------
    >>> detect(Path("tests/fixtures/published/followir_mteb"))
    True
    """
    path = Path(path)
    if not path.is_dir():
        return False
    try:
        return any((r := config_role(name)) is not None and r[0] == "queries" for name, _ in _config_dirs(path))
    except OSError:
        return False


def _choose_split(config: str, folder: Path, files: list[Path]) -> list[Path]:
    by_split: dict[str, list[Path]] = {}
    for f in files:  # <config>/<split>-00000-of-00001.parquet, or <config>/<split>/0000.parquet (hub's parquet branch)
        by_split.setdefault(f.parent.name if f.parent != folder else _split_of(f), []).append(f)
    if len(by_split) == 1:
        return files
    if "test" in by_split:
        return by_split["test"]
    raise ImportFailure(
        str(folder), None, None,
        f"config {config!r} holds the splits {', '.join(sorted(by_split))}; expected one split or a 'test' "
        "split (MTEB evaluates the test split)",
    )


def _collect(paths: list[Path]) -> _Found:
    found = _Found()
    for path in map(Path, paths):
        if not path.exists():
            raise ImportFailure(str(path), None, None, "no such file or directory")
        if not path.is_dir():
            raise ImportFailure(
                str(path), None, None,
                f"cannot read {path.name!r} alone; expected the dataset folder that holds the config folders "
                "(corpus/, queries/, data/ or qrels/, ...) of an MTEB v2 layout",
            )
        found.roots.append(path)
        for name, folder in _config_dirs(path):
            parsed = _parse_name(name)
            if parsed is None:
                found.notes.append(f"{folder}: config {name!r} is not part of an MTEB retrieval layout; ignored")
                continue
            role, subset, rank = parsed
            cfg = _Config(name, _choose_split(name, folder, _parquet_files(folder)), path, rank)
            kept = found.configs.get((subset, role))
            if kept is None:
                found.configs[(subset, role)] = cfg
                continue
            if kept.rank == cfg.rank:
                raise ImportFailure(
                    str(folder), None, None,
                    f"config {name!r} repeats the {role} of {_label(subset)} already read from config "
                    f"{kept.name!r} in {kept.root}; expected it once",
                )
            if cfg.rank < kept.rank:
                kept, cfg = cfg, kept
            found.configs[(subset, role)] = kept
            found.notes.append(f"config {cfg.name!r} ignored: {kept.name!r} holds the {role} (MTEB reads {kept.name!r})")
    return found


def _label(subset: str) -> str:
    return f"subset {subset!r}" if subset else "the dataset"


def _read_rows(path: Path, sources: list[tuple[str, str]], needed: list[tuple[str, ...]],
               optional: tuple[str, ...] = (), config: str = "") -> tuple[list[str], list[tuple[int, dict]]]:
    """Rows of a parquet file as (1-based row, {column: value}); ``needed`` lists the accepted
    names of each required column (e.g. ``("_id", "id")``). Returns the column names chosen."""
    import pyarrow as pa  # here, not at the top: every import command loads this module, few read parquet
    import pyarrow.parquet as pq

    data = path.read_bytes()
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        meta, columns = parquet.metadata, parquet.schema_arrow.names
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise ImportFailure(str(path), None, None,
                            f"not a readable parquet file ({exc}); expected a parquet file of config {config!r}") from None
    wanted = [n for names in needed for n in names if n in columns] + [c for c in optional if c in columns]
    allowed = budget(len(data))
    if _expected_bytes(meta, wanted) > allowed:  # from the metadata, before a value is read
        raise ImportFailure(str(path), None, None, too_large(f"read, its {meta.num_rows:,} rows",
                                                             _expected_bytes(meta, wanted), len(data)))
    try:
        table = pq.read_table(pa.BufferReader(data), columns=wanted or None,
                              read_dictionary=_text_leaves(meta, wanted) or None)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise ImportFailure(str(path), None, None,
                            f"not a readable parquet file ({exc}); expected a parquet file of config {config!r}") from None
    decoded = sum(_decoded_bytes(c) for c in table.columns) + _expected_bytes(meta, wanted)
    if decoded > allowed:  # repeated long values kept dictionary-encoded until now
        raise ImportFailure(str(path), None, None, too_large(f"read, its {meta.num_rows:,} rows", decoded, len(data)))
    sources.append((str(path), hashlib.sha256(data).hexdigest()))
    chosen: list[str] = []
    for names in needed:
        hit = next((n for n in names if n in columns), None)
        if hit is None:
            raise ImportFailure(
                str(path), None, names[0],
                f"column missing (columns found: {', '.join(columns) or 'none'}); expected "
                f"{' or '.join(repr(n) for n in names)} in config {config!r}",
            )
        chosen.append(hit)
    chosen += [c for c in optional if c in columns]
    try:
        rows = table.select(chosen).to_pylist()
    except (pa.ArrowException, UnicodeDecodeError) as exc:
        raise ImportFailure(str(path), None, None,
                            f"unreadable values ({type(exc).__name__}: {exc}); expected UTF-8 strings, ids and "
                            "numbers") from None
    return chosen, [(i, row) for i, row in enumerate(rows, start=1)]


def _leaves(meta, wanted: list[str]) -> list:
    """The column chunks (of every row group) of the ``wanted`` columns."""
    return [meta.row_group(g).column(c) for g in range(meta.num_row_groups) for c in range(meta.num_columns)
            if meta.row_group(g).column(c).path_in_schema.split(".")[0] in wanted]


def _expected_bytes(meta, wanted: list[str]) -> int:
    """What reading ``wanted`` of a parquet file costs at least, from its metadata alone: the
    uncompressed pages of those columns plus a Python dict per row and an object per value."""
    leaves = _leaves(meta, wanted)
    return (sum(c.total_uncompressed_size + c.num_values * VALUE_BYTES for c in leaves)
            + meta.num_rows * ROW_BYTES)


def _text_leaves(meta, wanted: list[str]) -> list[str]:
    """The paths of the text (byte array) leaves of ``wanted``: read dictionary-encoded, so that a
    value repeated a million times is held once until :func:`_decoded_bytes` has counted it."""
    return sorted({c.path_in_schema for c in _leaves(meta, wanted) if c.physical_type == "BYTE_ARRAY"})


def _decoded_bytes(array) -> int:
    """The bytes of an Arrow array's values once every dictionary in it is expanded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(array, pa.ChunkedArray):
        return sum(_decoded_bytes(chunk) for chunk in array.chunks)
    if pa.types.is_dictionary(array.type):
        return int(pc.sum(pc.binary_length(array.dictionary).take(array.indices)).as_py() or 0)
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        return array.offsets.nbytes + _decoded_bytes(array.flatten())
    return array.nbytes


def received(value: object) -> str:
    """How a cell is quoted in an error: as for text files, and binary cells (parquet ``binary``
    columns) by their repr."""
    try:
        return _received_text(value)
    except (TypeError, ValueError):
        text = repr(value)
        return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _id(value: object, path: Path, line: int, column: str) -> str:
    """An id cell: a string, or an integer read as its decimal string (MTEB casts ids to string)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise ImportFailure(str(path), line, column, f"received {received(value)}; expected a non-blank id string")
    return value


def _text(value: object, path: Path, line: int, column: str, *, blank_ok: bool = False) -> str:
    if value is None and blank_ok:
        return ""
    if not isinstance(value, str):
        raise ImportFailure(str(path), line, column, f"received {received(value)}; expected a string")
    if not blank_ok and not value.strip():
        raise ImportFailure(str(path), line, column, f"received {received(value)}; expected a non-blank string")
    return value


def _score(value: object, path: Path, line: int, column: str) -> int:
    """A qrels score cast as MTEB casts it: to float, then to int; a non-integral value is refused."""
    number: float | None = None
    if isinstance(value, bool) or value is None:
        number = None
    elif isinstance(value, int):
        return value
    elif isinstance(value, float):
        number = value
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or number != int(number):
        raise ImportFailure(str(path), line, column,
                            f"received {received(value)}; expected an integral score such as 0, 1, 2 or 2.0")
    return int(number)


def _id_list(value: object, path: Path, line: int, column: str, known: set[str] | None, *,
             empty_ok: bool) -> list[str]:
    if not isinstance(value, list) or (not value and not empty_ok):
        raise ImportFailure(str(path), line, column,
                            f"received {received(value)}; expected a {'' if empty_ok else 'non-empty '}list of document ids")
    out: list[str] = []
    for item in value:
        doc_id = _id(item, path, line, column)
        check_known(doc_id, known, path, line, column, "document id", "the corpus config")
        if doc_id in out:
            raise ImportFailure(str(path), line, column, f"document id {doc_id!r} appears twice; expected each once")
        out.append(doc_id)
    return out


@dataclass
class _Subset:
    """What one subset's configs hold, read and checked row by row."""

    queries: list[tuple[str, str, Path, int]] = field(default_factory=list)  # id, text, file, row
    instruction: dict[str, str] = field(default_factory=dict)
    qrels: list[tuple[str, str, int, Path, int]] = field(default_factory=list)  # qid, doc, score, file, row
    top_ranked: list[tuple[str, list[str], Path, int]] = field(default_factory=list)
    qrel_diff: list[tuple[str, list[str], Path, int]] = field(default_factory=list)
    id_col: str = "_id"


class _Reader:
    def __init__(self) -> None:
        self.bundle = Bundle()
        self.sources = self.bundle.source_files
        self.doc_where: dict[str, tuple[Path, int]] = {}
        self.doc_of: dict[str, Document] = {}
        self.query_ids = IdTable("query id")

    def corpus(self, cfg: _Config) -> list[str]:
        """Read one corpus config; returns its document ids (identical copies read before included)."""
        ids: list[str] = []
        for path in cfg.files:
            (id_col, text_col, *rest), rows = _read_rows(path, self.sources, [ID_COLUMNS, ("text",)], ("title",), cfg.name)
            for line, row in rows:
                doc_id = _id(row[id_col], path, line, id_col)
                text = _text(row[text_col], path, line, text_col, blank_ok=True)
                title = _text(row["title"], path, line, "title", blank_ok=True) if rest else ""
                if not text.strip() and not title.strip():
                    raise ImportFailure(str(path), line, text_col,
                                        f"document {doc_id!r} has a blank text and no title; expected a non-blank text or title")
                doc = Document(doc_id=doc_id, text=text, title=title)
                ids.append(doc_id)
                if doc_id in self.doc_of:
                    if self.doc_of[doc_id] != doc:  # the same corpus repeated per subset is fine
                        first, first_line = self.doc_where[doc_id]
                        raise ImportFailure(
                            str(path), line, id_col,
                            f"document id {doc_id!r} was read with another title or text from {first}, line "
                            f"{first_line}; expected each document id once (or identical copies per subset)",
                        )
                    continue
                self.doc_of[doc_id] = doc
                self.doc_where[doc_id] = (path, line)
                self.bundle.documents.append(doc)
        return ids

    def subset(self, name: str, configs: dict[str, _Config]) -> _Subset:
        s = _Subset()
        label = _label(name)
        missing = [role for role in ("corpus", "queries", "qrels") if role not in configs]
        if missing:
            found = ", ".join(sorted(c.name for c in configs.values())) or "none"
            accepted = "; ".join(f"{role}: " + " or ".join(_named(n, name) for n in ROLES[role]) for role in missing)
            raise ImportFailure(
                str(next(iter(configs.values())).root), None, None,
                f"{label} has no {' / '.join(missing)} config (configs found: {found}); expected {accepted}",
            )
        seen = IdTable("query id")
        has_instruction_column = False
        for path in configs["queries"].files:
            cols, rows = _read_rows(path, self.sources, [ID_COLUMNS, ("text",)], ("instruction",), configs["queries"].name)
            id_col, text_col = cols[0], cols[1]
            s.id_col = id_col
            for line, row in rows:
                qid = _id(row[id_col], path, line, id_col)
                seen.add(qid, path, line, id_col)
                s.queries.append((qid, _text(row[text_col], path, line, text_col), path, line))
                if "instruction" in cols:
                    has_instruction_column = True
                    if row["instruction"] is not None:
                        value = _text(row["instruction"], path, line, "instruction", blank_ok=True)
                        if value.strip():
                            s.instruction[qid] = value
        qids = set(seen.seen)
        if "instruction" in configs:
            column, s.instruction = s.instruction, {}  # MTEB takes the instruction config over the column
            per = IdTable("instruction query id")
            for path in configs["instruction"].files:
                _, rows = _read_rows(path, self.sources, [("query-id",), ("instruction",)], (), configs["instruction"].name)
                for line, row in rows:
                    qid = _id(row["query-id"], path, line, "query-id")
                    check_known(qid, qids, path, line, "query-id", "query id", configs["queries"].name)
                    per.add(qid, path, line, "query-id")
                    value = _text(row["instruction"], path, line, "instruction", blank_ok=True)
                    if value.strip():
                        s.instruction[qid] = value
            if has_instruction_column and column != s.instruction:
                self.bundle.notes.append(f"{label}: the queries' instruction column differs from the instruction "
                                         "config; the config was read (as MTEB does)")
        known_docs = set(self.doc_of)
        judged = IdTable("judgment")
        for path in configs["qrels"].files:
            _, rows = _read_rows(path, self.sources, [("query-id",), ("corpus-id",), ("score",)], (), configs["qrels"].name)
            for line, row in rows:
                qid = _id(row["query-id"], path, line, "query-id")
                doc_id = _id(row["corpus-id"], path, line, "corpus-id")
                check_known(qid, qids, path, line, "query-id", "query id", configs["queries"].name)
                check_known(doc_id, known_docs, path, line, "corpus-id", "document id", configs["corpus"].name)
                score = _score(row["score"], path, line, "score")
                judged.add(f"{qid} / {doc_id}", path, line, "corpus-id")
                s.qrels.append((qid, doc_id, score, path, line))
        for role, target, empty_ok in (("top_ranked", s.top_ranked, False), ("qrel_diff", s.qrel_diff, True)):
            if role not in configs:
                continue
            listed = IdTable(f"{role} query id")
            for path in configs[role].files:
                _, rows = _read_rows(path, self.sources, [("query-id",), ("corpus-ids",)], (), configs[role].name)
                for line, row in rows:
                    qid = _id(row["query-id"], path, line, "query-id")
                    listed.add(qid, path, line, "query-id")
                    target.append((qid, _id_list(row["corpus-ids"], path, line, "corpus-ids", known_docs,
                                                 empty_ok=empty_ok), path, line))
        return s


def _named(role_name: str, subset: str) -> str:
    if not subset:
        return "data/" if role_name == "data" else f"{role_name}/"
    return f"{subset}-{role_name}/ or {role_name}-{subset}/"


def _base(qid: str) -> tuple[str, str] | None:
    for suffix, variant in VARIANT_SUFFIXES:
        if qid.endswith(suffix) and len(qid) > len(suffix):
            return qid[: -len(suffix)], variant
    return None


def _followir_shaped(s: _Subset) -> bool:
    if not s.queries:
        return False
    variants: dict[str, set[str]] = {}
    for qid, *_ in s.queries:
        b = _base(qid)
        if b is None:
            return False
        variants.setdefault(b[0], set()).add(b[1])
    return all(v == {"og", "changed"} for v in variants.values())


def qrel_diff(original: dict[str, dict[str, int]], changed: dict[str, dict[str, int]]) -> dict[str, list[str]]:
    """The FollowIR changed documents per query, as MTEB's ``qrel_diff`` config holds them.

    For every query of the original qrels: its documents whose label in the changed qrels differs
    from the original label, in original order (a document the changed qrels do not judge counts
    as 0, trec_eval's reading of an unjudged document). Source: FollowIR (Weller et al. 2024, §3)
    and MTEB 1.x ``AbsTaskInstructionRetrieval.create_qrel_diff``.

    Examples
    --------
    >>> qrel_diff({"305": {"d1": 2, "d2": 0}}, {"305": {"d1": 0, "d2": 0}})
    {'305': ['d1']}
    """
    return {q: [d for d, r in docs.items() if changed.get(q, {}).get(d, 0) != r] for q, docs in original.items()}


def _followir(reader: _Reader, name: str, s: _Subset, configs: dict[str, _Config]) -> None:
    b = reader.bundle
    label = _label(name)
    text: dict[str, str] = {}
    order: list[str] = []
    for qid, value, path, line in s.queries:
        base, variant = _base(qid)
        if base not in text:
            reader.query_ids.add(base, path, line, s.id_col)
            order.append(base)
            text[base] = value
        if variant == "og":
            text[base] = value
    for qid, value, path, line in s.queries:
        base, _ = _base(qid)
        if value != text[base]:
            b.notes.append(f"{label}: query {base!r} has another text under {qid!r}; the text of {base + '-og'!r} was kept")
    where = configs.get("instruction", configs["queries"]).name
    for base in order:
        b.queries.append(Query(query_id=base, text=text[base], subset=name))
        for variant in ("og", "changed"):
            iid = f"{base}-{variant}"
            if iid not in s.instruction:
                raise ImportFailure(
                    str(configs.get("instruction", configs["queries"]).files[0]), None, "instruction",
                    f"query {iid!r} has no instruction; expected a non-blank instruction for every -og and "
                    f"-changed query in config {where!r}",
                )
            b.instances.append(Instance(instance_id=iid, query_id=base, group_id=base,
                                        instruction=s.instruction[iid], variant=variant))
        for variant in ("og", "changed"):
            b.narratives.append(Narrative(query_id=base, text=s.instruction[f"{base}-{variant}"], variant=variant))
    versions = {"og": "original", "changed": "changed"}
    split: dict[str, list[Qrel]] = {"original": [], "changed": []}
    for qid, doc_id, score, _, _ in s.qrels:
        base, variant = _base(qid)
        split[versions[variant]].append(Qrel(qid=base, doc_id=doc_id, relevance=score, version=versions[variant]))
    b.qrels += split["original"] + split["changed"]
    lists: dict[str, dict[str, list[str]]] = {}
    for qid, docs, path, line in s.top_ranked:
        parsed = _base(qid)
        base, variant = parsed if parsed else (qid, "og")
        check_known(base, set(order), path, line, "query-id", "query id", configs["queries"].name)
        if variant in lists.get(base, {}):
            raise ImportFailure(str(path), line, "query-id",
                                f"a second candidate list for {qid!r}; expected one per query")
        lists.setdefault(base, {})[variant] = docs
    for base, by_variant in lists.items():
        kept = by_variant.get("og", by_variant.get("changed"))
        if "og" in by_variant and "changed" in by_variant and by_variant["og"] != by_variant["changed"]:
            b.notes.append(f"{label}: the top_ranked lists of {base + '-og'!r} and {base + '-changed'!r} differ; "
                           f"the -og list was kept")
        b.top_ranked[base] = kept
    if s.qrel_diff:
        og: dict[str, dict[str, int]] = {}
        ch: dict[str, dict[str, int]] = {}
        for q in split["original"]:
            og.setdefault(q.qid, {})[q.doc_id] = q.relevance
        for q in split["changed"]:
            ch.setdefault(q.qid, {})[q.doc_id] = q.relevance
        expected = qrel_diff(og, ch)
        differs = []
        for qid, docs, path, line in s.qrel_diff:
            check_known(qid, set(order), path, line, "query-id", "query id (without -og / -changed)",
                        configs["queries"].name)
            if set(docs) != set(expected.get(qid, [])):
                differs.append(qid)
        if differs:
            b.notes.append(f"{label}: qrel_diff disagrees with the -og / -changed qrels for {len(differs)} "
                           f"query(ies) ({', '.join(differs[:5])}); IFJudge derives the changed documents from the qrels")


#: an IFIR query as MTEB's IFIR tasks read its level (``"v1" in id``): ``<q>_v<k>``; ``<q>_v0`` a level-0 instruction
IFIR_ID = re.compile(r"^(?P<query>.+)_v(?P<level>[0-3])$")


def _ifir_shaped(s: _Subset) -> bool:
    """Every query id is ``<q>_v<k>`` (k = 0..3), as IFJudge writes an IFIR domain for MTEB's IFIR tasks."""
    return bool(s.queries) and all(IFIR_ID.match(qid) for qid, *_ in s.queries)


def _card_name(root: Path) -> str:
    """The ``pretty_name`` of a dataset card (``README.md``), where IFJudge writes an IFIR domain."""
    card = root / "README.md"
    if not card.is_file():
        return ""
    for line in card.read_text(encoding="utf-8", errors="replace").splitlines()[1:]:
        if line.strip() == "---":
            break
        if line.startswith("pretty_name:"):
            value = line.partition(":")[2].strip()
            return value[1:-1] if len(value) > 1 and value[0] == value[-1] == '"' else value
    return ""


def _ifir(reader: _Reader, name: str, s: _Subset, configs: dict[str, _Config]) -> None:
    """An IFIR domain in the MTEB layout: ``<q>_v<k>`` is the instance ``<q>_<k>`` (variant
    ``level<k>``), ``<q>_v0`` the instance ``<q>_inst`` (a level-0 instruction, variant ``og``), all of
    query and group ``<q>``; qrels keyed by instance, version ``original``."""
    b = reader.bundle
    subset = name or _card_name(configs["queries"].root)
    instance_of: dict[str, str] = {}
    text: dict[str, str] = {}
    for qid, value, path, line in s.queries:
        m = IFIR_ID.match(qid)
        base, level = m.group("query"), int(m.group("level"))
        if base not in text:
            reader.query_ids.add(base, path, line, s.id_col)
            text[base] = value
            b.queries.append(Query(query_id=base, text=value, subset=subset))
        elif value != text[base]:
            raise ImportFailure(str(path), line, "text",
                                f"query {qid!r} has another text than {base!r} had before ({_received_text(text[base])}); "
                                "expected the same query text for every level of an IFIR query")
        iid = f"{base}_inst" if level == 0 else f"{base}_{level}"
        instance_of[qid] = iid
        b.instances.append(Instance(instance_id=iid, query_id=base, group_id=base,
                                    instruction=s.instruction.get(qid, ""),
                                    variant="og" if level == 0 else f"level{level}"))
    b.qrels += [Qrel(qid=instance_of[q], doc_id=d, relevance=r, version="original") for q, d, r, _, _ in s.qrels]
    for qid, docs, path, line in s.top_ranked:
        check_known(qid, set(instance_of), path, line, "query-id", "query id", configs["queries"].name)
        b.top_ranked[instance_of[qid]] = docs


def _generic(reader: _Reader, name: str, s: _Subset, configs: dict[str, _Config]) -> None:
    b = reader.bundle
    if s.qrel_diff:
        path = configs["qrel_diff"].files[0]
        raise ImportFailure(str(path), None, "query-id",
                            "a qrel_diff config belongs to the FollowIR layout; expected query ids ending in "
                            "'-og' and '-changed' (each query with both) in config " + repr(configs["queries"].name))
    for qid, value, path, line in s.queries:
        reader.query_ids.add(qid, path, line, s.id_col)
        b.queries.append(Query(query_id=qid, text=value, subset=name))
        if qid in s.instruction:
            b.instances.append(Instance(instance_id=qid, query_id=qid, group_id=qid,
                                        instruction=s.instruction[qid], variant="og"))
    b.qrels += [Qrel(qid=q, doc_id=d, relevance=r, version="original") for q, d, r, _, _ in s.qrels]
    qids = {q for q, *_ in s.queries}
    for qid, docs, path, line in s.top_ranked:
        check_known(qid, qids, path, line, "query-id", "query id", configs["queries"].name)
        b.top_ranked[qid] = docs


def parse(paths: list[Path]) -> Bundle:
    """Parse MTEB v2 parquet folders (FollowIR-shaped or generic) into a validated :class:`Bundle`.

    Parameters
    ----------
    paths : list of Path
        Dataset folders, each holding config folders (``corpus/``, ``queries/``, ``data/``, ...).

    Returns
    -------
    Bundle
        All subsets together; each query carries its subset.

    Raises
    ------
    ImportFailure
        Naming the parquet file, the row (as the line) and the column; nothing is returned then.

    Examples
    --------
    >>> b = parse([Path("tests/fixtures/published/followir_mteb")])
    >>> [i.instance_id for i in b.instances][:2]
    ['305-og', '305-changed']
    """
    if not paths:
        raise ImportFailure("(no files)", None, None, "no folder given; expected an MTEB v2 dataset folder")
    found = _collect(paths)
    by_subset: dict[str, dict[str, _Config]] = {}
    for (subset, role), cfg in found.configs.items():
        by_subset.setdefault(subset, {})[role] = cfg
    if not any("queries" in c for c in by_subset.values()):
        names = ", ".join(sorted(c.name for c in found.configs.values())) or "none"
        raise ImportFailure(
            ", ".join(str(r) for r in found.roots), None, None,
            f"no queries config (configs found: {names}); expected config folders corpus/, queries/ (or query/), "
            "data/ (default), qrels/, instruction/, top_ranked/, qrel_diff/ holding parquet files, optionally "
            "with a subset ('fas-corpus' or 'corpus-fas')",
        )
    reader = _Reader()
    reader.bundle.notes += found.notes
    for subset in sorted(by_subset):
        if "corpus" in by_subset[subset]:
            ids = reader.corpus(by_subset[subset]["corpus"])
            if subset:
                reader.bundle.subset_documents[subset] = ids
    if len(reader.bundle.subset_documents) < 2 or "" in by_subset:
        reader.bundle.subset_documents = {}  # one corpus: every query ranks all of it
    for subset in sorted(by_subset):
        configs = by_subset[subset]
        s = reader.subset(subset, configs)
        if _followir_shaped(s):
            _followir(reader, subset, s, configs)
        elif _ifir_shaped(s) and not s.qrel_diff:
            _ifir(reader, subset, s, configs)
        else:
            _generic(reader, subset, s, configs)
    return reader.bundle


__all__ = ["parse", "detect", "config_role", "qrel_diff", "ROLES"]
