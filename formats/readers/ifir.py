"""IFIR as published (Song et al., NAACL 2025; hub ``songtingyu/IFIR``, code ``SighingSnow/IFIR``).

The release is one folder per domain (``aila``, ``cds``, ``fiqa``, ``fire``, ``nfcorpus``, ``pm``,
``scifact_open``), each holding::

    <s>-corpus.jsonl   {"_id", "title"?, "text"}        the domain's corpus (some texts are empty)
    <s>-query.jsonl    {"_id": "<qid>_<level>", "text"}  "_0" the bare query; "_1".."_3" the query
                                                          and the instruction joined by a space
    <s>-qrel.tsv       query-id <TAB> corpus-id <TAB> score, keyed by those "<qid>_<level>" ids
    test_data.json     a JSON array of items
                       {"_id": "<qid>", "text": <query>, "corpus": [{"_id", "title", "text"}, ...],
                        "instructions": [{"instruction", "level", "rel": [indices into corpus]}]}

``test_data.json`` is what IFIR's own evaluation reads (``src/utils/dataset.py``: the candidate
passages of each query and, per instruction, the indices of its gold passages); the query and
qrels files are what its BEIR scripts read (``beir/eval_with_faiss.py`` splits ids at the last
``_``, treats level ``0`` as "no instruction" and retrieves with the other texts as they are,
which ``src/eval.py`` builds as ``query + " " + instruction``). Instructions have levels 1-3 in
fiqa, pm, scifact_open and aila, level 0 in the other domains.

Mapping to a :class:`~formats.bundle.Bundle` (``test_data.json`` is the authority; the query and
qrels files, when given, must agree with it or the import is refused):

- every item is a query ``<qid>`` (the bare query text) whose ``subset`` is the domain;
- the bare query is the instance ``<qid>_0`` (empty instruction, variant ``bare``): the run without
  instruction that INSTFOL compares with, the baseline of the level analysis, never averaged into
  a headline figure (IFIR and MTEB score the instructed queries only). Its qrels (version
  ``original``) are every passage of the item's candidate corpus;
- an instruction of level k in 1-3 is the instance ``<qid>_<k>`` (variant ``level<k>``); an
  instruction of level 0 (domains without levels) is the instance ``<qid>_inst`` (variant ``og``),
  because the release's ``<qid>_0`` is the bare query. Its qrels are its gold passages (``rel``);
- every instance has group ``<qid>``; relevance is the qrels file's score where it lists the pair,
  else 1;
- the **excluded passages** of an instruction (IFIR Table 2) are those relevant to the bare query
  but not gold for the instruction: :func:`excluded_passages`.

Documents with an empty text are skipped, as IFIR's loader does, and counted in ``Bundle.notes``
(with the judgments that pointed at them). When several domains are imported together, every id
is prefixed with its domain (``fiqa/12_1``, ``fiqa/501``): the domains' ids overlap, and documents
carry no domain otherwise. A single domain keeps the published ids. Each domain's documents are
its own corpus (``Bundle.subset_documents``): an evaluation ranks a domain's queries against it,
as IFIR and MTEB do.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from formats.bundle import BARE, Bundle, Document, Instance, Qrel, Query
from formats.errors import ImportFailure
from formats.limits import TOO_DEEP

from formats.text import (
    IdTable, _has_lone_surrogate, optional_str, parse_int, read_jsonl, read_text, read_tsv, received, require_str,
)
from .beir import QRELS_HEADERS

DOMAINS = ("aila", "cds", "fiqa", "fire", "nfcorpus", "pm", "scifact_open")
#: the suffix of the instance of a level-0 instruction (``<qid>_0`` is the bare query)
LEVEL0_SUFFIX = "_inst"
TEST_DATA = "test_data.json"
_ROLES = {"-corpus.jsonl": "corpus", "-query.jsonl": "query", "-qrel.tsv": "qrel"}


def bare_instance_id(group_id: str) -> str:
    """The instance id of the bare query (no instruction) of an IFIR group.

    >>> bare_instance_id("fiqa/12")
    'fiqa/12_0'
    """
    return f"{group_id}_0"


def excluded_passages(qrels: list[Qrel], instance_id: str, bare_id: str, *, version: str = "original") -> list[str]:
    """The excluded passages of an instruction: relevant to its bare query, not gold for it.

    IFIR's human validation (paper §3.4, Table 2) scores how well the instruction rejects these
    passages. Formally, with R(x) the documents judged relevant (> 0) to ``x`` in ``version``:
    ``excluded(i) = R(bare) \\ R(i)``, in the order of the bare query's qrels.

    Parameters
    ----------
    qrels : list of Qrel
        The judgments (any versions; only ``version`` is read).
    instance_id : str
        The instructed instance (``<qid>_<level>`` or ``<qid>_inst``).
    bare_id : str
        Its bare query's instance (``<qid>_0``; see :func:`bare_instance_id`).

    Examples
    --------
    >>> qrels = [Qrel("12_0", "d1", 1), Qrel("12_0", "d2", 1), Qrel("12_0", "d3", 1),
    ...          Qrel("12_2", "d2", 1), Qrel("12_2", "d3", 0)]
    >>> excluded_passages(qrels, "12_2", "12_0")
    ['d1', 'd3']
    """
    gold = {q.doc_id for q in qrels if q.qid == instance_id and q.version == version and q.relevance > 0}
    return [q.doc_id for q in qrels
            if q.qid == bare_id and q.version == version and q.relevance > 0 and q.doc_id not in gold]


# --------------------------------------------------------------------------- finding the files

@dataclass
class _Subset:
    name: str
    files: dict[str, Path] = field(default_factory=dict)  # role -> path


def _role(path: Path) -> tuple[str, str] | None:
    """(role, domain) of a file name of the release, or None."""
    if path.name == TEST_DATA:
        return "test_data", ""
    for suffix, role in _ROLES.items():
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            return role, path.name[: -len(suffix)]
    return None


def _subset_of_folder(folder: Path) -> _Subset | None:
    """The subset a folder holds (None when it holds no file of the release)."""
    found = [(p, r) for p in sorted(folder.iterdir()) if p.is_file() and (r := _role(p))]
    if not found:
        return None
    names = {domain for _, (_, domain) in found if domain}
    if len(names) > 1:
        raise ImportFailure(str(folder), None, None,
                            f"files of several subsets in one folder ({', '.join(sorted(names))}); "
                            "expected one subset per folder, e.g. fiqa/fiqa-corpus.jsonl")
    subset = _Subset(names.pop() if names else folder.name)
    for path, (role, _) in found:
        subset.files[role] = path
    return subset


def detect(path: Path) -> bool:
    """True for an IFIR root folder (holding subset folders) or one subset folder: a folder that
    holds ``test_data.json``, ``<s>-corpus.jsonl``, ``<s>-query.jsonl`` or ``<s>-qrel.tsv``, itself
    or one level down.

    >>> detect(Path("no/such/folder"))
    False
    """
    path = Path(path)
    if not path.is_dir():
        return False
    def holds_release_files(folder: Path) -> bool:
        return any(_role(p) for p in folder.iterdir() if p.is_file())

    try:
        return holds_release_files(path) or any(holds_release_files(p) for p in path.iterdir() if p.is_dir())
    except OSError:
        return False


def _collect(paths: list[Path]) -> list[_Subset]:
    subsets: dict[str, _Subset] = {}
    loose: list[tuple[Path, str, str]] = []

    def add(subset: _Subset) -> None:
        into = subsets.setdefault(subset.name, _Subset(subset.name))
        for role, path in subset.files.items():
            if role in into.files and into.files[role].resolve() != path.resolve():
                raise ImportFailure(str(path), None, None,
                                    f"a second {role} file for subset {subset.name!r} (the first is "
                                    f"{into.files[role]}); expected one per subset")
            into.files[role] = path

    for path in map(Path, paths):
        if path.is_dir():
            own = _subset_of_folder(path)
            if own is not None:
                add(own)
                continue
            children = [s for p in sorted(path.iterdir()) if p.is_dir() and (s := _subset_of_folder(p))]
            if not children:
                raise ImportFailure(str(path), None, None,
                                    "holds no IFIR subset; expected the release's root folder (fiqa/, nfcorpus/, ...) "
                                    "or one subset folder with <s>-corpus.jsonl, <s>-query.jsonl, <s>-qrel.tsv "
                                    "and test_data.json")
            for child in children:
                add(child)
        elif not path.exists():
            raise ImportFailure(str(path), None, None, "no such file or directory")
        else:
            role = _role(path)
            if role is None:
                raise ImportFailure(str(path), None, None,
                                    f"cannot tell what {path.name!r} holds; expected <s>-corpus.jsonl, "
                                    "<s>-query.jsonl, <s>-qrel.tsv or test_data.json")
            loose.append((path, *role))
    # a loose test_data.json belongs to the subset of the files given beside it (else its folder)
    named = {p.parent.resolve(): d for p, _, d in loose if d}
    for path, role, domain in loose:
        add(_Subset(domain or named.get(path.parent.resolve(), path.parent.name), {role: path}))
    if not subsets:
        raise ImportFailure(str(paths[0]) if paths else "(no files)", None, None, "no IFIR file given")
    for subset in subsets.values():
        for role, what in (("test_data", TEST_DATA), ("corpus", f"{subset.name}-corpus.jsonl")):
            if role not in subset.files:
                given = next(iter(subset.files.values()))
                raise ImportFailure(str(given), None, None,
                                    f"subset {subset.name!r} has no {what}; an IFIR import needs {TEST_DATA} "
                                    f"and {subset.name}-corpus.jsonl for every subset")
    return [subsets[name] for name in sorted(subsets)]


# --------------------------------------------------------------------------- test_data.json

def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\n\r":
        i += 1
    return i


def _json_array(path: Path, sources: list[tuple[str, str]]) -> list[tuple[int, object]]:
    """The elements of a JSON array file, each with the line it starts on."""
    text = read_text(path, sources)
    decoder = json.JSONDecoder()
    line_at = [0, 1]  # (position, line) of the last line count, to count newlines once

    def line_of(pos: int) -> int:
        line_at[1] += text.count("\n", line_at[0], pos)
        line_at[0] = pos
        return line_at[1]

    def decode(pos: int) -> tuple[object, int]:
        try:
            return decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ImportFailure(str(path), exc.lineno, None,
                                f"malformed JSON ({exc.msg} at column {exc.colno}); expected a JSON array of items") from None
        except RecursionError:
            raise ImportFailure(str(path), line_of(pos), None, f"{TOO_DEEP}; expected a JSON array of items") from None
        except ValueError as exc:
            raise ImportFailure(str(path), line_of(pos), None,
                                f"unreadable JSON ({type(exc).__name__}); expected a JSON array of items") from None

    i = _skip_ws(text, 0)
    if text[i] != "[":
        value, _ = decode(i)
        raise ImportFailure(str(path), line_of(i), None,
                            f"received a JSON {type(value).__name__}; expected a JSON array of items "
                            "({\"_id\", \"text\", \"corpus\", \"instructions\"})")
    items: list[tuple[int, object]] = []
    i = _skip_ws(text, i + 1)
    if i < len(text) and text[i] == "]":
        i += 1
    else:
        while True:
            start = line_of(i)
            value, end = decode(i)
            items.append((start, value))
            i = _skip_ws(text, end)
            if i < len(text) and text[i] == ",":
                i = _skip_ws(text, i + 1)
                continue
            if i < len(text) and text[i] == "]":
                i += 1
                break
            raise ImportFailure(str(path), line_of(min(i, len(text.rstrip()))), None,
                                "malformed JSON: expected ',' or ']' after an item of the array")
    if _skip_ws(text, i) != len(text):
        raise ImportFailure(str(path), line_of(i), None, "extra data after the JSON array; expected one array")
    if "\\u" in text and _has_lone_surrogate([v for _, v in items]):
        raise ImportFailure(str(path), None, None,
                            "a \\uD800-\\uDFFF escape without its pair (a lone surrogate) cannot be stored as text; "
                            "expected valid Unicode")
    return items


@dataclass
class _Instruction:
    text: str
    level: int
    gold: list[str]  # document ids, in rel order
    fld: str         # "instructions[k]", the field path in messages


@dataclass
class _Item:
    number: int
    line: int
    item_id: str
    text: str
    corpus: list[str]
    instructions: list[_Instruction]

    def where(self, path: Path) -> str:
        return f"{path.name} item {self.number} (line {self.line})"


def _id_value(value: object) -> str | None:
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _fail(path: Path, line: int, number: int, fld: str, message: str) -> ImportFailure:
    return ImportFailure(str(path), line, fld, f"item {number}: {message}")


def _require(obj: dict, key: str, fld: str, path: Path, line: int, number: int) -> object:
    if key not in obj:
        present = ", ".join(sorted(map(str, obj))) or "none"
        raise _fail(path, line, number, fld, f"required field is missing (fields present: {present})")
    return obj[key]


def _read_items(path: Path, sources: list[tuple[str, str]]) -> list[_Item]:
    items: list[_Item] = []
    ids = IdTable("query id")
    for number, (line, obj) in enumerate(_json_array(path, sources)):
        if not isinstance(obj, dict):
            raise _fail(path, line, number, None, f"received a JSON {type(obj).__name__}; expected a JSON object")
        item_id = _id_value(_require(obj, "_id", "_id", path, line, number))
        if item_id is None:
            raise _fail(path, line, number, "_id", f"received {received(obj['_id'])}; expected a non-blank id string")
        ids.add(item_id, path, line, "_id")
        text = _require(obj, "text", "text", path, line, number)
        if not isinstance(text, str) or not text.strip():
            raise _fail(path, line, number, "text", f"received {received(text)}; expected the query as a non-blank string")
        corpus_value = _require(obj, "corpus", "corpus", path, line, number)
        if not isinstance(corpus_value, list):
            raise _fail(path, line, number, "corpus", f"received {received(corpus_value)}; expected a list of passages")
        corpus: list[str] = []
        seen: dict[str, int] = {}
        for k, passage in enumerate(corpus_value):
            fld = f"corpus[{k}]._id"
            if not isinstance(passage, dict):
                raise _fail(path, line, number, f"corpus[{k}]",
                            f"received {received(passage)}; expected an object {{\"_id\", \"title\", \"text\"}}")
            doc_id = _id_value(_require(passage, "_id", fld, path, line, number))
            if doc_id is None:
                raise _fail(path, line, number, fld, f"received {received(passage['_id'])}; expected a document id")
            if doc_id in seen:
                raise _fail(path, line, number, fld,
                            f"document {doc_id!r} is listed twice (also corpus[{seen[doc_id]}]); expected each once")
            seen[doc_id] = k
            corpus.append(doc_id)
        instructions_value = _require(obj, "instructions", "instructions", path, line, number)
        if not isinstance(instructions_value, list):
            raise _fail(path, line, number, "instructions",
                        f"received {received(instructions_value)}; expected a list of instructions")
        instructions: list[_Instruction] = []
        levels: dict[int, int] = {}
        for k, inst in enumerate(instructions_value):
            base = f"instructions[{k}]"
            if not isinstance(inst, dict):
                raise _fail(path, line, number, base,
                            f"received {received(inst)}; expected an object {{\"instruction\", \"level\", \"rel\"}}")
            instruction = _require(inst, "instruction", f"{base}.instruction", path, line, number)
            if not isinstance(instruction, str) or not instruction.strip():
                raise _fail(path, line, number, f"{base}.instruction",
                            f"received {received(instruction)}; expected a non-blank string")
            level = _require(inst, "level", f"{base}.level", path, line, number)
            if isinstance(level, bool) or not isinstance(level, int) or level not in (0, 1, 2, 3):
                raise _fail(path, line, number, f"{base}.level", f"received {received(level)}; expected the integer 0, 1, 2 or 3")
            if level in levels:
                raise _fail(path, line, number, f"{base}.level",
                            f"a second instruction of level {level} (also instructions[{levels[level]}]); "
                            "expected at most one instruction per level in an item")
            levels[level] = k
            rel = _require(inst, "rel", f"{base}.rel", path, line, number)
            if not isinstance(rel, list):
                raise _fail(path, line, number, f"{base}.rel", f"received {received(rel)}; expected a list of indices into corpus")
            gold: list[str] = []
            for index in rel:
                if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(corpus):
                    raise _fail(path, line, number, f"{base}.rel",
                                f"received {received(index)}; expected an index into this item's corpus "
                                f"(0 to {len(corpus) - 1})" if corpus else
                                f"received {received(index)}; this item's corpus is empty")
                if corpus[index] in gold:
                    raise _fail(path, line, number, f"{base}.rel", f"index {index} is listed twice; expected each once")
                gold.append(corpus[index])
            instructions.append(_Instruction(instruction, level, gold, base))
        items.append(_Item(number, line, item_id, text, corpus, instructions))
    return items


# --------------------------------------------------------------------------- one subset

def _split_release_id(value: str, path: Path, line: int, fld: str, items: dict[str, _Item]) -> tuple[_Item, int]:
    """``<qid>_<level>`` -> (item, level), refused unless the item exists in test_data.json."""
    base, sep, level = value.rpartition("_")
    if not sep or level not in ("0", "1", "2", "3"):
        raise ImportFailure(str(path), line, fld, f"received {received(value)}; expected '<query id>_<level>' "
                                                  "with level 0 (the bare query) to 3")
    if base not in items:
        raise ImportFailure(str(path), line, fld, f"query {base!r} of {value!r} is not an item of {TEST_DATA}; "
                                                  "expected the ids of test_data.json")
    return items[base], int(level)


def _instruction_at(item: _Item, level: int) -> _Instruction | None:
    return next((i for i in item.instructions if i.level == level), None)


def _without_levels(item: _Item) -> bool:
    """An item of a domain without levels: its instructions are all of level 0."""
    return bool(item.instructions) and all(i.level == 0 for i in item.instructions)


def _instruction_named(item: _Item, level: int) -> _Instruction | None:
    """The instruction a release id ``<qid>_<level>`` (level >= 1) names: the instruction of that
    level, or, in a domain without levels, ``<qid>_1`` names the level-0 instruction (releases of
    cds, fire and nfcorpus number the instructed query 1 while test_data.json says level 0)."""
    found = _instruction_at(item, level)
    if found is None and level == 1 and _without_levels(item):
        found = _instruction_at(item, 0)
    return found


def _check_queries(path: Path, sources: list[tuple[str, str]], items: dict[str, _Item], test_data: Path) -> None:
    """The query file must say what test_data.json says."""
    seen: dict[str, dict[str, int]] = {}  # release id -> kind ("bare" / "instructed") -> line
    for line, record in read_jsonl(path, sources):
        release_id = require_str(record, "_id", path, line)
        text = require_str(record, "text", path, line)
        item, level = _split_release_id(release_id, path, line, "_id", items)
        instruction = _instruction_named(item, level) if level else _instruction_at(item, 0)
        if level > 0 and instruction is None:
            raise ImportFailure(str(path), line, "_id",
                                f"{release_id!r}: {item.where(test_data)} has no instruction of level {level}; "
                                f"expected the levels it has ({', '.join(str(i.level) for i in item.instructions) or 'none'})")
        accepted = [] if instruction is None else [f"{item.text} {instruction.text}".strip(), instruction.text.strip()]
        if level == 0 and text.strip() == item.text.strip():
            kind = "bare"
        elif text.strip() in accepted:
            kind = "instructed"
        else:
            if level == 0:
                expected = f"the bare query of {item.where(test_data)}, {received(item.text)}"
                if instruction is not None:
                    expected += ", or that query and its level-0 instruction joined by a space"
            else:
                expected = (f"the query and the level-{level} instruction of {item.where(test_data)} joined by a "
                            f"space, {received(accepted[0])}")
            raise ImportFailure(str(path), line, "text", f"received {received(text)} for {release_id!r}; expected {expected}")
        kinds = seen.setdefault(release_id, {})
        if kind in kinds:
            raise ImportFailure(str(path), line, "_id", f"duplicate query id {release_id!r} (first on line "
                                                        f"{kinds[kind]}); expected each once")
        kinds[kind] = line
    for item in items.values():
        for instruction in item.instructions:
            release_id = f"{item.item_id}_{instruction.level}"
            if instruction.level > 0 and "instructed" not in seen.get(release_id, {}):
                raise ImportFailure(str(path), None, "_id",
                                    f"no query {release_id!r} for {instruction.fld} of {item.where(test_data)}; "
                                    "expected the query file and test_data.json to hold the same instructions")


def _read_qrels(path: Path, sources: list[tuple[str, str]], items: dict[str, _Item],
                test_data: Path) -> dict[tuple[str, str], int]:
    """Scores of the qrels file by (release query id, doc id), checked against test_data.json."""
    scores: dict[tuple[str, str], int] = {}
    lines: dict[tuple[str, str], int] = {}
    for line, (release_id, doc_id, score) in read_tsv(path, sources, columns=3, headers=QRELS_HEADERS):
        item, level = _split_release_id(release_id, path, line, "query-id", items)
        if level == 0:
            if doc_id not in item.corpus:
                raise ImportFailure(str(path), line, "corpus-id",
                                    f"{doc_id!r} is not a passage of {item.where(test_data)} (field 'corpus'); "
                                    f"expected the bare query {release_id!r} to be judged on its candidate passages")
        else:
            instruction = _instruction_named(item, level)
            if instruction is None:
                raise ImportFailure(str(path), line, "query-id",
                                    f"{item.where(test_data)} has no instruction of level {level}; expected the "
                                    "qrels file and test_data.json to hold the same instructions")
            if doc_id not in instruction.gold:
                raise ImportFailure(str(path), line, "corpus-id",
                                    f"{doc_id!r} is not gold for {release_id!r}: {item.where(test_data)}, field "
                                    f"'{instruction.fld}.rel' lists {instruction.gold}; expected the same gold passages")
        value = parse_int(score, path, line, "score")
        if value <= 0:
            raise ImportFailure(str(path), line, "score",
                                f"received {received(score)}; expected a positive score (the IFIR qrels list relevant passages)")
        if (release_id, doc_id) in scores:
            raise ImportFailure(str(path), line, "corpus-id",
                                f"duplicate judgment {release_id!r} / {doc_id!r} (first on line {lines[(release_id, doc_id)]}); "
                                "expected each once")
        scores[(release_id, doc_id)] = value
        lines[(release_id, doc_id)] = line
    for item in items.values():
        for instruction in item.instructions:
            release_id = f"{item.item_id}_{instruction.level}"
            if instruction.level == 0:
                continue
            for doc_id in instruction.gold:
                if (release_id, doc_id) not in scores:
                    raise ImportFailure(str(path), None, "corpus-id",
                                        f"no row {release_id!r} / {doc_id!r} for the gold passage listed by "
                                        f"{item.where(test_data)}, field '{instruction.fld}.rel'; expected the "
                                        "qrels file and test_data.json to hold the same gold passages")
    return scores


def _parse_subset(subset: _Subset, bundle: Bundle, prefix: str) -> None:
    sources = bundle.source_files
    corpus_path = subset.files["corpus"]
    doc_ids = IdTable("document id")
    skipped: set[str] = set()
    for line, record in read_jsonl(corpus_path, sources):
        doc_id = require_str(record, "_id", corpus_path, line)
        doc_ids.add(doc_id, corpus_path, line, "_id")
        text = require_str(record, "text", corpus_path, line, blank_ok=True)
        title = optional_str(record, "title", corpus_path, line)
        if not text.strip():
            skipped.add(doc_id)
            continue
        bundle.documents.append(Document(doc_id=prefix + doc_id, text=text, title=title))
    if skipped:
        bundle.notes.append(f"{corpus_path.name}: {len(skipped)} document{'s' if len(skipped) != 1 else ''} "
                            "with empty text skipped")

    test_data = subset.files["test_data"]
    items_list = _read_items(test_data, sources)
    items = {item.item_id: item for item in items_list}
    for item in items_list:
        for k, doc_id in enumerate(item.corpus):
            if doc_id not in doc_ids:
                raise _fail(test_data, item.line, item.number, f"corpus[{k}]._id",
                            f"document {doc_id!r} is not in {corpus_path.name}; expected the ids of the subset's corpus")
    if "query" in subset.files:
        _check_queries(subset.files["query"], sources, items, test_data)
    scores = _read_qrels(subset.files["qrel"], sources, items, test_data) if "qrel" in subset.files else {}

    dropped = 0
    for item in items_list:
        query_id = prefix + item.item_id
        bundle.queries.append(Query(query_id=query_id, text=item.text, subset=subset.name))
        judged = [(bare_instance_id(query_id), "", BARE, item.corpus, f"{item.item_id}_0")]
        for instruction in item.instructions:
            if instruction.level == 0:  # its scores, where the release lists them, are under <qid>_1
                judged.append((query_id + LEVEL0_SUFFIX, instruction.text, "og", instruction.gold,
                               f"{item.item_id}_1"))
            else:
                judged.append((f"{query_id}_{instruction.level}", instruction.text, f"level{instruction.level}",
                               instruction.gold, f"{item.item_id}_{instruction.level}"))
        for instance_id, instruction, variant, docs, release_id in judged:
            bundle.instances.append(Instance(instance_id=instance_id, query_id=query_id, group_id=query_id,
                                             instruction=instruction, variant=variant))
            for doc_id in docs:
                if doc_id in skipped:
                    dropped += 1
                    continue
                relevance = scores.get((release_id, doc_id), 1) if release_id else 1
                bundle.qrels.append(Qrel(qid=instance_id, doc_id=prefix + doc_id, relevance=relevance, version="original"))
    if dropped:
        bundle.notes.append(f"{subset.name}: {dropped} judgment{'s' if dropped != 1 else ''} of documents "
                            "with empty text dropped")


def parse(paths: list[Path]) -> Bundle:
    """Parse the IFIR release (root folder, subset folders or one subset's files) into a Bundle.

    Examples
    --------
    >>> b = parse([Path("tests/fixtures/published/ifir")])
    >>> sorted({q.subset for q in b.queries})
    ['fiqa', 'nfcorpus']
    """
    subsets = _collect(paths)
    bundle = Bundle()
    several = len(subsets) > 1
    for subset in subsets:
        first = len(bundle.documents)
        _parse_subset(subset, bundle, f"{subset.name}/" if several else "")
        if several:
            bundle.subset_documents[subset.name] = [d.doc_id for d in bundle.documents[first:]]
    if several:
        bundle.notes.append(f"{len(subsets)} domains imported together: every id is prefixed with its domain "
                            f"(e.g. '{subsets[0].name}/<id>'); import one domain folder to keep the published ids")
    return bundle


__all__ = ["DOMAINS", "LEVEL0_SUFFIX", "bare_instance_id", "detect", "excluded_passages", "parse"]
