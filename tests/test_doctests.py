"""The examples in the docstrings of the library packages run as written.

Every module of annotation/, evaluation/, exports/, formats/ and storage/ is collected (pages/, ui/
and cli/ are shells without examples). Examples that read files name them relative to the
repository, as a user types them; those that need a database build the demo in memory. Only an
example that needs a model to download may be marked ``# doctest: +SKIP``.
"""
from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ("accounts", "annotation", "evaluation", "exports", "formats", "storage")
# Modules that must keep at least one example that runs.
MODULES = ["formats.text", "formats.readers", "formats.readers.auto", "formats.writers", "evaluation.measures",
           "evaluation.measure_registry", "evaluation.significance", "evaluation.compare", "annotation.narratives.diff",
           "annotation.narratives.versions", "annotation.narratives.rejudging", "annotation.agreement.stats",
           "annotation.agreement.kernels", "annotation.outcomes.qrels_builds", "storage.backup", "evaluation.jobs",
           "evaluation.undefined"]
# Where an example may be skipped: it needs a retrieval model (downloaded) to run.
MAY_SKIP = ("evaluation.runner", "evaluation.retrievers.", "evaluation.embedding_cache")


def library_modules() -> list[str]:
    names = []
    for package in LIBRARY:
        names.append(package)
        names += [m.name for m in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}.")]
    return sorted(names)


def run_examples(name: str) -> doctest.TestResults:
    return doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)


@pytest.mark.parametrize("name", library_modules())
def test_docstring_examples_run(name, monkeypatch):
    monkeypatch.chdir(ROOT)  # examples name files relative to the repository, as a user types them
    result = run_examples(name)
    assert result.failed == 0
    if name in MODULES:
        assert result.attempted > 0, f"{name} has no example"


def test_examples_are_skipped_only_where_a_model_is_needed():
    skipped = set()
    for name in library_modules():
        path = ROOT / (name.replace(".", "/") + ".py")
        if not path.exists():
            path = ROOT / name.replace(".", "/") / "__init__.py"
        if not path.exists():  # a namespace package (formats/) has no file of its own
            continue
        if re.search(r"doctest:\s*\+SKIP", path.read_text(encoding="utf-8")):
            skipped.add(name)
    assert sorted(n for n in skipped if not n.startswith(MAY_SKIP)) == []
    assert len(library_modules()) > 50  # the walk found the packages
