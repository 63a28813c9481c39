"""A file that declares questions, in TOML or YAML: each question's fields and the line of each.

The layout (docs/questions.md; examples in ``docs/examples/``): one
question at the top level, or several as an array of tables ``[[question]]`` (TOML) or a list
under ``questions:`` (YAML, or a list at the top level)::

    id = "negation"
    wording = "Does the passage respect what the instruction excludes?"
    categories = ["Respects", "Violates", "Unclear"]

What the fields mean and which values are accepted is the domain's business
(:mod:`annotation.questions.own`); this module reads the file, names the file and the line of a
syntax error, and keeps the line of every field so that a later refusal can name it too.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "q.toml"
>>> _ = p.write_text('[[question]]\\nid = "a"\\nwording = "A?"\\n\\n[[question]]\\nid = "b"\\n')
>>> [(q.fields["id"], q.line, q.lines["id"]) for q in read_question_file(p)]
[('a', 1, 2), ('b', 5, 6)]
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from formats.errors import ImportFailure
from formats.text import decode_utf8

SUFFIXES = {".toml": "toml", ".yaml": "yaml", ".yml": "yaml"}
MAX_BYTES = 1 << 20  # a question file is a few hundred bytes; a megabyte is not one


@dataclass
class DeclaredQuestion:
    """One question as the file declares it: its ``fields`` as parsed, the ``line`` it starts on and
    the line of each field (``lines``; a nested table's own fields as ``table.key``)."""

    fields: dict
    line: int
    lines: dict[str, int] = field(default_factory=dict)

    def line_of(self, name: str) -> int:
        """The line of field ``name`` (``on_outcome.Yes``: of that key, else of ``on_outcome``),
        else the question's first line."""
        while name:
            if name in self.lines:
                return self.lines[name]
            name = name.rpartition(".")[0]
        return self.line


def read_question_file(path: str | Path) -> list[DeclaredQuestion]:
    """The questions a TOML (``.toml``) or YAML (``.yaml``, ``.yml``) file declares, in file order.
    Refused with :class:`formats.errors.ImportFailure` naming the file and the line: a syntax
    error, another suffix, a file that declares no question, a question that is not a table."""
    path = Path(path)
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ImportFailure(str(path), None, None, f"a question file is TOML (.toml) or YAML (.yaml, .yml), "
                                                   f"got {path.suffix or 'no suffix'}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImportFailure(str(path), None, None, f"cannot read the file: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise ImportFailure(str(path), None, None, f"{len(data):,} bytes: a question file is at most {MAX_BYTES:,}")
    return parse_questions(decode_utf8(data, path), kind, str(path))


def parse_questions(text: str, kind: str, source: str) -> list[DeclaredQuestion]:
    """The questions ``text`` declares in ``kind`` (``toml`` or ``yaml``): what
    :func:`read_question_file` reads from a file, here from text typed on a page; ``source`` names
    it in a refusal.

    >>> [q.fields["id"] for q in parse_questions("id: harmful\\nwording: Harmful?\\n", "yaml", "typed")]
    ['harmful']
    >>> parse_questions("", "toml", "typed")
    Traceback (most recent call last):
    ...
    formats.errors.ImportFailure: typed, line 1: nothing declares a question (expected the fields of one question, or a list of questions)
    """
    if kind not in ("toml", "yaml"):
        raise ImportFailure(source, None, None, f"a question declaration is TOML or YAML, got {kind!r}")
    questions = _toml(text, source) if kind == "toml" else _yaml(text, source)
    if not questions:
        raise ImportFailure(source, 1, None, "nothing declares a question (expected the fields of one question, "
                                             "or a list of questions)")
    return questions


# ------------------------------------------------------------------------------------ TOML

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*("[^"]*"|'[^']*'|[A-Za-z0-9_-]+)\s*=""")


def _toml(text: str, path: str) -> list[DeclaredQuestion]:
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise ImportFailure(path, int(m.group(1)) if m else None, None, f"not valid TOML: {exc}") from None
    blocks = _toml_lines(text)
    if "question" in data or "questions" in data:
        name = "question" if "question" in data else "questions"
        items = data[name]
        if not isinstance(items, list):
            raise ImportFailure(path, blocks[0].get(name, 1) if blocks else 1, name,
                                f"expected an array of tables [[{name}]], got a {type(items).__name__}")
        marks = [b for b in blocks[1:] if b.get("__array__") == name]
        out = []
        for k, item in enumerate(items):
            lines = marks[k] if k < len(marks) else {}
            start = lines.get("__start__", 1)
            if not isinstance(item, dict):
                raise ImportFailure(path, start, name, f"question {k + 1} is not a table")
            out.append(DeclaredQuestion(item, start, {n: v for n, v in lines.items() if not n.startswith("__")}))
        return out
    if not data:
        return []
    first = blocks[0] if blocks else {}
    return [DeclaredQuestion(data, min((v for n, v in first.items() if not n.startswith("__")), default=1),
                             {n: v for b in blocks for n, v in b.items() if not n.startswith("__")})]


def _toml_lines(text: str) -> list[dict]:
    """Per block of the file (the top level, then each table or array-of-tables header) the line
    of each key: ``{key: line}``, with ``__start__`` (the header's line) and ``__array__`` (the
    array's name for ``[[name]]``). A sub-table ``[name.sub]`` of an array's element adds ``sub``
    (and its keys as ``sub.key``) to that element's block."""
    blocks: list[dict] = [{"__start__": 1}]
    prefix = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        h = _HEADER.match(raw)
        if h and not raw.lstrip().startswith(("#",)):
            name = h.group(2).replace('"', "").replace("'", "")
            head, _, sub = name.partition(".")
            if h.group(1) == "[[":
                blocks.append({"__start__": number, "__array__": name})
                prefix = ""
            elif sub and len(blocks) > 1 and blocks[-1].get("__array__") == head:
                blocks[-1].setdefault(sub, number)
                prefix = sub + "."
            else:
                blocks[0].setdefault(name, number)
                prefix = name + "."
            continue
        k = _KEY.match(raw)
        if k:
            key = k.group(1).strip("\"'")
            blocks[-1].setdefault(prefix + key, number)
            if prefix:
                blocks[-1].setdefault(prefix.rstrip("."), number)
    return blocks


# ------------------------------------------------------------------------------------ YAML

def _yaml(text: str, path: str) -> list[DeclaredQuestion]:
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise ImportFailure(path, None if mark is None else mark.line + 1, None,
                            f"not valid YAML: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ImportFailure(path, None, None, f"not valid YAML: {exc}") from None
    if root is None or data is None:
        return []
    nodes, values = [root], [data]
    if isinstance(data, dict) and ("questions" in data or "question" in data):
        name = "questions" if "questions" in data else "question"
        node = next(v for k, v in root.value if k.value == name)
        if not isinstance(data[name], list):
            raise ImportFailure(path, node.start_mark.line + 1, name, "expected a list of questions")
        nodes, values = list(node.value), data[name]
    elif isinstance(data, list):
        nodes, values = list(root.value), data
    out = []
    for node, value in zip(nodes, values):
        if not isinstance(value, dict):
            raise ImportFailure(path, node.start_mark.line + 1, None, "a question is a mapping of its fields")
        out.append(DeclaredQuestion(value, node.start_mark.line + 1, _yaml_lines(node)))
    return out


def _yaml_lines(node, prefix: str = "") -> dict[str, int]:
    out: dict[str, int] = {}
    for key, value in getattr(node, "value", ()) if node.tag.endswith(":map") else ():
        name = prefix + str(key.value)
        out[name] = key.start_mark.line + 1
        if value.tag.endswith(":map"):
            out.update(_yaml_lines(value, name + "."))
    return out
