"""docs/architecture.md stays true: every file, folder and module it names exists, and every
function or table a recipe tells a newcomer to copy or extend is defined where the recipe says."""
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("accounts", "annotation", "evaluation", "exports", "formats", "storage", "cli", "pages", "ui", "tests")

CODE = re.compile(r"`([^`\n]+)`")
PATH = re.compile(r"^(?:%s|app\.py|docs|bench)[\w/.<>-]*$" % "|".join(PACKAGES))
MODULE = re.compile(r"^(?:%s)(?:\.\w+)+$" % "|".join(PACKAGES))
IDENT = re.compile(r"^[A-Za-z_]\w*(?:\(\))?$")
SYMBOL_IN_FILE = re.compile(r"`([A-Za-z_]\w*)(?:\(\))?` (?:of|in) `([\w/]+\.py)`")
COPY = re.compile(r"copy `([A-Za-z_]\w*)(?:\(\))?`")


def defines(path: Path, name: str, *, or_key: bool = False) -> bool:
    """True when the Python file defines ``name`` (a function, class, constant or attribute); with
    ``or_key`` also when it handles the string key ``"name"`` (a question id the recipe copies)."""
    text = path.read_text(encoding="utf-8")
    if or_key and re.search(rf"""== ["']{re.escape(name)}["']""", text):
        return True
    return re.search(rf"^\s*(?:def|class)\s+{re.escape(name)}\b|^\s*{re.escape(name)}\s*[:=]", text, re.M) is not None


def path_problem(token: str) -> str | None:
    """Why a path named by the doc does not exist (None when it does); ``<layout>`` placeholders
    need their folder."""
    if "<" in token:
        folder = ROOT / token.split("<", 1)[0]
        return None if folder.is_dir() else f"{token}: no folder {folder.relative_to(ROOT)}"
    return None if (ROOT / token.rstrip("/")).exists() else f"{token}: no such file or folder"


def names_something(token: str) -> bool:
    """True when the dotted name is a module, or a name a module defines (``storage.studies.shared``)."""
    try:
        if importlib.util.find_spec(token) is not None:
            return True
    except ModuleNotFoundError:  # the parent is a module, not a package
        pass
    parent, _, name = token.rpartition(".")
    try:
        return hasattr(importlib.import_module(parent), name)
    except ImportError:
        return False


def problems(text: str) -> list[str]:
    """Everything the architecture text names that the tree does not have."""
    out = []
    for token in CODE.findall(text):
        if " " in token:
            continue
        if "/" in token and PATH.match(token):
            out += [p for p in [path_problem(token)] if p]
        elif MODULE.match(token) and not names_something(token):
            out.append(f"{token}: no such module or name")
    for name, file in SYMBOL_IN_FILE.findall(text):
        path = ROOT / file
        if path.is_file() and not defines(path, name):
            out.append(f"`{name}` is not defined in {file}")
    # a recipe (one bullet) that says "copy `x`" names the file where x is defined
    for bullet in re.split(r"\n- ", text):
        files = [ROOT / t for t in CODE.findall(bullet) if t.endswith(".py") and (ROOT / t).is_file()]
        for name in COPY.findall(bullet):
            if IDENT.match(name) and not any(defines(f, name, or_key=True) for f in files):
                out.append(f"copy `{name}`: defined in none of the recipe's files {[str(f.relative_to(ROOT)) for f in files]}")
    return out


def test_every_name_in_the_architecture_doc_exists():
    assert problems(DOC.read_text(encoding="utf-8")) == []


def test_the_check_catches_a_stale_recipe():
    stale = ("- **Exporter**: the writer in `formats/writers.py` (copy `write_beir`), then its branch in "
             "`export_project` of `exports/validated.py` and `FORMATS` in `exports/report.py`; see "
             "`evaluation.no_such_module`, `storage.studies.no_such_function` and `formats/writers/<layout>.py`.\n"
             "- **Statistic**: copy `gwet_ac2` in `annotation/agreement/stats.py`.\n")
    assert sorted(problems(stale)) == sorted([
        "formats/writers.py: no such file or folder",
        "evaluation.no_such_module: no such module or name",
        "storage.studies.no_such_function: no such module or name",
        "`FORMATS` is not defined in exports/report.py",
        "`gwet_ac2` is not defined in annotation/agreement/stats.py",
        "copy `gwet_ac2`: defined in none of the recipe's files ['annotation/agreement/stats.py']",
        "copy `write_beir`: defined in none of the recipe's files ['exports/validated.py', 'exports/report.py']",
    ])
