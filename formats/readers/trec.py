"""TREC files: topics with narratives, qrels and runs; which file is which is told from content.

- topics: ``<top> <num> Number: 301 <title> ... <desc> Description: ... <narr> Narrative: ...
  </top>`` (closing tags such as ``</title>`` optional). Each topic is a query (text = title) and an
  instance (id = topic number, group = topic number, instruction = narrative, variant ``og``), and
  its narrative is a :class:`~formats.bundle.Narrative` of variant ``og``. The description is read
  but not kept (the Bundle has no field for it).
- qrels: ``qid iter docid rel`` -> qrels version ``original``; every qid must be a topic of the
  topics given in the same import (a qrels file alone is refused: nothing to check it against).
- runs: ``qid Q0 docid rank score tag`` -> ``Bundle.runs[tag]`` (5 columns, without a tag:
  ``runs[file stem]``); checked against the topics when topics are given.

Qrels and run rows are read by :mod:`formats.trec_rows`, the reader ``ifjudge eval`` uses too.
"""
from __future__ import annotations

import re
from pathlib import Path

from formats.bundle import Bundle, Instance, Narrative, Query, RunRow
from formats.errors import ImportFailure

from formats.text import IdTable
from formats.trec_rows import qrels_rows, read_trec_text, run_rows, trec_fields, trec_lines
from .beir import QrelsReader, check_known

_TAG = re.compile(r"<(/?)(top|num|title|desc|narr)>", re.IGNORECASE)
_PREFIX = {"num": "Number:", "title": "Topic:", "desc": "Description:", "narr": "Narrative:"}


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _field_text(tag: str, raw: str) -> str:
    value = raw.strip()
    prefix = _PREFIX[tag]
    if value[: len(prefix)].lower() == prefix.lower():
        value = value[len(prefix):].strip()
    return value


def parse_topics(path: Path, text: str) -> list[dict]:
    """Topics of a TREC topics file: ``[{"num", "title", "desc", "narr", "line": {...}}]``."""
    topics: list[dict] = []
    current: dict | None = None
    tokens = list(_TAG.finditer(text))
    lead = text[: tokens[0].start()] if tokens else text
    if lead.strip():
        raise ImportFailure(str(path), 1, None, f"received {lead.strip()[:40]!r} before the first <top>; expected '<top>'")
    for index, token in enumerate(tokens):
        closing, tag = token.group(1) == "/", token.group(2).lower()
        end = tokens[index + 1].start() if index + 1 < len(tokens) else len(text)
        body = text[token.end(): end]
        line = _line_at(text, token.start())
        if tag == "top":
            if not closing:
                if current is not None:
                    raise ImportFailure(str(path), line, "top", "received <top> inside a topic; expected </top> first")
                current = {"line": {"top": line}}
            else:
                if current is None:
                    raise ImportFailure(str(path), line, "top", "received </top> without <top>")
                topics.append(current)
                current = None
            if body.strip():
                raise ImportFailure(str(path), _line_at(text, token.end()), tag,
                                    f"received text {body.strip()[:40]!r} outside a field; expected a <num>, <title>, <desc> or <narr> tag")
            continue
        if current is None:
            raise ImportFailure(str(path), line, tag, f"received <{tag}> outside <top> ... </top>")
        if closing:
            if body.strip():
                raise ImportFailure(str(path), _line_at(text, token.end()), tag,
                                    f"received text {body.strip()[:40]!r} after </{tag}>; expected the next tag")
            continue
        if tag in current:
            raise ImportFailure(str(path), line, tag, f"received a second <{tag}> in topic starting at line {current['line']['top']}")
        current[tag] = _field_text(tag, body)
        current["line"][tag] = line
    if current is not None:
        raise ImportFailure(str(path), current["line"]["top"], "top", "topic is not closed; expected </top>")
    if not topics:
        raise ImportFailure(str(path), None, None, "no <top> ... </top> topic found; expected TREC topics")
    for topic in topics:
        for tag in ("num", "title", "narr"):
            if not topic.get(tag):
                raise ImportFailure(
                    str(path), topic["line"].get(tag, topic["line"]["top"]), tag,
                    f"topic at line {topic['line']['top']} has a missing or blank <{tag}>; expected a non-blank value",
                )
    return topics


def _kind(path: Path, text: str) -> str:
    number, first = next(trec_lines(text))
    if first.lstrip().lower().startswith("<top>"):
        return "topics"
    columns = len(trec_fields(first))
    if columns == 4:
        return "qrels"
    if columns in (5, 6):
        return "run"
    raise ImportFailure(
        str(path), number, None,
        f"cannot tell what this file holds: received {columns} columns; expected TREC topics ('<top>'), "
        "qrels (qid iter docid rel) or a run (qid Q0 docid rank score tag)",
    )


def _expand(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")))
        elif not path.exists():
            raise ImportFailure(str(path), None, None, "no such file or directory")
        else:
            files.append(path)
    if not files:
        raise ImportFailure(str(paths[0]) if paths else "(no files)", None, None, "no TREC file given")
    return files


def parse(paths: list[Path]) -> Bundle:
    """Parse TREC topics, qrels and runs (told apart by content) into a validated :class:`Bundle`."""
    bundle = Bundle()
    sources = bundle.source_files
    by_kind: dict[str, list[Path]] = {"topics": [], "qrels": [], "run": []}
    texts: dict[Path, str] = {}
    for path in _expand(paths):
        text = read_trec_text(path, sources)
        texts[path] = text
        by_kind[_kind(path, text)].append(path)

    topic_ids = IdTable("topic number")
    for path in by_kind["topics"]:
        for topic in parse_topics(path, texts[path]):
            qid = topic["num"]
            topic_ids.add(qid, path, topic["line"]["num"], "num")
            bundle.queries.append(Query(query_id=qid, text=topic["title"]))
            bundle.instances.append(Instance(instance_id=qid, query_id=qid, group_id=qid,
                                             instruction=topic["narr"], variant="og"))
            bundle.narratives.append(Narrative(query_id=qid, text=topic["narr"], variant="og"))
    known = set(topic_ids.seen) if by_kind["topics"] else None

    if by_kind["qrels"] and known is None:
        raise ImportFailure(
            str(by_kind["qrels"][0]), None, None,
            "TREC qrels given without topics; expected the topics file in the same import (the qrels' "
            "query ids must be topics of the project)",
        )
    reader = QrelsReader(qids=known or set(), qid_where="the topics files", doc_ids=None)
    for path in by_kind["qrels"]:
        for line, qid, doc_id, rel in qrels_rows(path, texts[path]):
            reader.add(path, line, qid, doc_id, rel, "original", ("qid", "docid", "rel"))
    bundle.qrels = reader.qrels

    seen = IdTable("run row")
    for path in by_kind["run"]:
        for line, qid, doc_id, rank, score, tag in run_rows(path, texts[path], tag_optional=True):
            name = tag if tag is not None else path.stem
            check_known(qid, known, path, line, "qid", "query id", "the topics files")
            seen.add(f"{name} / {qid} / {doc_id}", path, line, "docid")
            bundle.runs.setdefault(name, []).append(RunRow(qid=qid, doc_id=doc_id, rank=rank, score=score))
    return bundle
