"""Which published layout a folder (or a list of files) holds: ``--format auto``.

The rules look only at file and folder names and at the field names of the first query record;
nothing is parsed here. The first rule that matches wins, most specific first:

=============  ==========================================================================
format         recognised by
=============  ==========================================================================
``mteb``       ``*.parquet`` files (MTEB v2 configs: ``corpus/``, ``queries/``, ``data/`` ...)
``ifir``       ``test_data.json`` or ``<subset>-query.jsonl`` (in the folder or one level down)
``infosearch`` ``qrels_reversed/`` or queries with ``instruction_reversed``
``followir``   ``qrels_og/`` / ``qrels_changed/`` or queries with ``instruction_og``
``instructir`` ``only_instruction_queries.jsonl`` or ``og_queries.jsonl``
``beir``       ``queries.jsonl`` (with ``corpus.jsonl`` and/or ``qrels/``)
``trec``       a file holding ``<top>`` topics
=============  ==========================================================================
"""
from __future__ import annotations

import json
from pathlib import Path

from formats.errors import ImportFailure

#: what ``detect`` can answer, in the order the rules are tried
DETECTABLE = ("mteb", "ifir", "infosearch", "followir", "instructir", "beir", "trec")


def _first_record_fields(path: Path) -> set[str]:
    """Field names of the first JSON record of a JSONL file (empty when unreadable: the reader
    will then say exactly what is wrong)."""
    try:
        with path.open("r", encoding="utf-8-sig", errors="replace") as f:
            for line in f:
                if line.strip():
                    record = json.loads(line)
                    return set(record) if isinstance(record, dict) else set()
    except (OSError, ValueError, RecursionError):  # the reader then says what is wrong
        return set()
    return set()


def _looks_like_topics(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(65536).lower()
    except OSError:
        return False
    return b"<top>" in head


def _names_below(folder: Path, depth: int = 2) -> list[Path]:
    out: list[Path] = []
    level = [folder]
    for _ in range(depth):
        nxt = []
        for d in level:
            try:
                children = sorted(d.iterdir())
            except OSError:
                continue
            for child in children:
                if child.name.startswith("."):
                    continue
                out.append(child)
                if child.is_dir():
                    nxt.append(child)
        level = nxt
    return out


def _rule(files: list[Path], dirs: list[Path]) -> tuple[str, str] | None:
    names = {f.name for f in files}
    dir_names = {d.name for d in dirs}
    parquet = [f for f in files if f.suffix == ".parquet"]
    if parquet:
        return "mteb", f"{len(parquet)} parquet file(s), e.g. {parquet[0].name}"
    if "test_data.json" in names:
        return "ifir", "test_data.json"
    ifir_queries = sorted(n for n in names if n.endswith("-query.jsonl"))
    if ifir_queries:
        return "ifir", ifir_queries[0]
    query_files = [f for f in files if f.name == "queries.jsonl"]
    fields: set[str] = set()
    for f in query_files:
        fields |= _first_record_fields(f)
    if "qrels_reversed" in dir_names or "instruction_reversed" in fields:
        why = "qrels_reversed/" if "qrels_reversed" in dir_names else "queries.jsonl has instruction_reversed"
        return "infosearch", why
    if {"qrels_og", "qrels_changed"} & dir_names or {"instruction_og", "instruction_changed"} & fields:
        why = ("queries.jsonl has instruction_og / instruction_changed"
               if {"instruction_og", "instruction_changed"} & fields else "qrels_og/ or qrels_changed/")
        return "followir", why
    for name in ("only_instruction_queries.jsonl", "og_queries.jsonl"):
        if name in names:
            return "instructir", name
    if query_files:
        return "beir", "queries.jsonl without instruction_og / instruction_reversed"
    topics = [f for f in files if f.is_file() and _looks_like_topics(f)]
    if topics:
        return "trec", f"<top> topics in {topics[0].name}"
    return None


def detect(paths: list[Path]) -> tuple[str, str]:
    """The format of ``paths`` and the reason it was chosen.

    A folder is looked at with its sub-folders two levels down (an IFIR root holds one folder per
    domain; MTEB keeps each config in its own folder); files given one by one are looked at by
    name and first record.

    Raises
    ------
    ImportFailure
        Naming the path when nothing recognisable is there, with what was looked for.

    Examples
    --------
    >>> detect([Path("datasets/instructir")])
    ('instructir', 'only_instruction_queries.jsonl')
    """
    if not paths:
        raise ImportFailure("(no files)", None, None, "no file or directory given for format 'auto'")
    files: list[Path] = []
    dirs: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            below = _names_below(path)
            files += [p for p in below if p.is_file()]
            dirs += [p for p in below if p.is_dir()]
        elif path.is_file():
            files.append(path)
            dirs.append(path.parent)
        else:
            raise ImportFailure(str(path), None, None, "no such file or directory")
    found = _rule(files, dirs)
    if found is None:
        where = ", ".join(str(p) for p in paths)
        raise ImportFailure(
            where, None, None,
            "cannot tell which benchmark layout this is: found no parquet configs (MTEB), test_data.json or "
            "<subset>-query.jsonl (IFIR), queries.jsonl (FollowIR, InfoSearch, BEIR), "
            "only_instruction_queries.jsonl / og_queries.jsonl (InstructIR) or <top> topics (TREC); "
            "name the format with --format",
        )
    return found


__all__ = ["DETECTABLE", "detect"]
