"""File importers: parse benchmark files into a validated :class:`formats.bundle.Bundle`.

``parse(fmt, paths)`` is all-or-nothing: it returns a complete Bundle or raises one
:class:`formats.errors.ImportFailure` naming the file, the line and the field. It never touches
SQLite; the caller writes the Bundle in one transaction.

Formats (one module each): ``beir``, ``instructir``, ``followir`` (FollowIR hub v1),
``infosearch``, ``ifir``, ``mteb`` (MTEB v2 parquet: FollowIR and generic retrieval), ``trec``
(topics with narratives, qrels, runs); ``auto`` recognises which (:mod:`.auto`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from formats.bundle import Bundle
from formats.errors import ImportFailure

from . import auto, beir, followir, ifir, infosearch, instructir, mteb, trec
from .parts import ROLES as PART_ROLES
from .parts import parse_part

_PARSERS: dict[str, Callable[[list[Path]], Bundle]] = {
    "beir": beir.parse,
    "instructir": instructir.parse,
    "followir": followir.parse,
    "infosearch": infosearch.parse,
    "ifir": ifir.parse,
    "mteb": mteb.parse,
    "trec": trec.parse,
}
#: the concrete format names ``parse`` reads
FORMATS: tuple[str, ...] = tuple(_PARSERS)
#: what a user is offered (CLI ``--format``, the import page): ``auto`` first
CHOICES: tuple[str, ...] = ("auto", *FORMATS)


def resolve_format(fmt: str, paths: list[Path]) -> tuple[str, str | None]:
    """``(format, reason)``: ``fmt`` itself with no reason, or for ``"auto"`` the layout
    :func:`formats.readers.auto.detect` recognised and why."""
    if fmt != "auto":
        return fmt, None
    found, why = auto.detect([Path(p) for p in paths])
    if found not in _PARSERS:
        raise ImportFailure(", ".join(str(p) for p in paths), None, "format",
                            f"looks like the {found} layout ({why}), which this version cannot read; "
                            f"expected one of {', '.join(FORMATS)}")
    return found, why


# where each benchmark publishes the corpus its release may come without
CORPUS_PUBLISHED_AT = {
    "instructir": "InstructIR's 16,072 revised passages are INSTRUCTIR/corpus.jsonl of github.com/kaistAI/InstructIR "
                  "(the same release is the Hugging Face hub dataset kaist-ai/InstructIR)",
    "followir": "FollowIR publishes corpus.jsonl beside queries.jsonl in each dataset on the Hugging Face hub "
                "(jhu-clsp/robust04-instructions, core17-instructions, news21-instructions)",
    "infosearch": "InfoSearch publishes corpus.jsonl in each dimension's dataset on the Hugging Face hub "
                  "(jianqunZ/Language-v1, ...)",
    "ifir": "IFIR publishes <domain>-corpus.jsonl in each domain folder of the hub dataset songtingyu/IFIR",
}


def import_warnings(bundle: Bundle, *, fmt: str | None = None, project: str = "NAME") -> list[str]:
    """What a user should hear after an import besides the counts: the reader's notes, and data
    that is missing for the studies and evaluations that usually follow -- for a missing corpus,
    which file it is, where the benchmark publishes it and how to add it to the project.

    >>> print(import_warnings(Bundle(), fmt="instructir", project="p")[0])  # doctest: +ELLIPSIS
    no corpus: ... INSTRUCTIR/corpus.jsonl of github.com/kaistAI/InstructIR ...; add it ... --project p --add corpus corpus.jsonl` ...
    """
    out = list(bundle.notes)
    if not bundle.documents:
        where = CORPUS_PUBLISHED_AT.get(fmt or "", "")
        out.append("no corpus: these files hold no passages, and best-passage and passage-match questions and "
                   "retriever evaluations need them. " + (f"{where}; " if where else "")
                   + f"add it to this project with `ifjudge import --project {project} --add corpus corpus.jsonl` "
                   "(or the Projects page's import section, 'Add to an existing project')")
    if not bundle.qrels:
        out.append("no qrels were imported: validated qrels and evaluations need relevance judgments")
    return out


def parse(fmt: str, paths: list[Path], *, subset: str | None = None) -> Bundle:
    """Parse ``paths`` (files and/or directories) of format ``fmt`` into a validated Bundle.

    Parameters
    ----------
    fmt : str
        One of :data:`FORMATS`, or ``"auto"`` (see :func:`resolve_format`).
    paths : list of Path
        The files and/or directories given on the command line.
    subset : str, optional
        The subset every query belongs to (an InfoSearch dimension, an IFIR domain), overriding
        what the reader inferred from folder names.

    Returns
    -------
    Bundle
        Documents, queries, instances, qrels, narratives, top_ranked and runs, with
        ``source_files`` holding (path, sha256) of every file read.

    Raises
    ------
    ImportFailure
        For an unknown format, a missing path, and every defect of the files.

    Examples
    --------
    >>> parse("auto", [Path("datasets/instructir")]).counts()["instances"]
    9906
    """
    if fmt == "auto":
        fmt, _ = resolve_format(fmt, paths)
    if fmt not in FORMATS:
        raise ImportFailure(
            ", ".join(str(p) for p in paths) or "(no files)", None, "format",
            f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}",
        )
    if not paths:
        raise ImportFailure("(no files)", None, None, f"no file or directory given for format {fmt!r}")
    bundle = _PARSERS[fmt]([Path(p) for p in paths])
    if subset is not None:
        if not subset.strip():
            raise ImportFailure(", ".join(str(p) for p in paths), None, "subset",
                                "received a blank subset name; expected e.g. 'Language' or 'fiqa'")
        bundle.queries = [replace(q, subset=subset.strip()) for q in bundle.queries]
        bundle.subset_documents = {}  # one subset now: its corpus is every document
    return bundle


__all__ = ["CHOICES", "CORPUS_PUBLISHED_AT", "FORMATS", "PART_ROLES", "import_warnings", "parse", "parse_part",
           "resolve_format"]
