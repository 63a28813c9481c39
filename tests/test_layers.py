"""The layering of the house, read from the import statements (module level and inside functions):
pages/cli -> annotation | evaluation | exports -> accounts -> storage -> formats; nothing imports
upwards, no module imports itself back through others, Streamlit stays in pages/ and ui/, and the
statistics packages of annotation/ (agreement, survey) read no storage."""
from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("formats", "storage", "accounts", "annotation", "evaluation", "exports", "ui", "cli", "pages")
# What each package may import from IFJudge (besides itself).
ALLOWED = {
    "formats": set(),
    "storage": {"formats"},
    "accounts": {"storage", "formats"},
    "annotation": {"accounts", "storage", "formats", "evaluation"},
    "evaluation": {"storage", "formats"},
    "exports": {"annotation", "evaluation", "storage", "formats"},
    "ui": {"accounts", "annotation", "evaluation", "exports", "storage", "formats"},
    "cli": {"accounts", "annotation", "evaluation", "exports", "storage", "formats"},
    "pages": {"accounts", "annotation", "evaluation", "exports", "storage", "formats", "ui"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> tuple[dict[str, set[str]], set[str]]:
    """Each module of the packages with the IFJudge modules it imports (anywhere in the file), and
    the modules that import Streamlit."""
    files = [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]
    names = {_module_name(p) for p in files}
    g: dict[str, set[str]] = {}
    streamlit: set[str] = set()
    for path in files:
        src = _module_name(path)
        g[src] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            for t in targets:
                # the longest IFJudge module the name denotes ("from annotation import majority" -> annotation.agreement.majority)
                while t and t not in names:
                    t = t.rpartition(".")[0]
                if t and t != src and not (src.startswith(t + ".") and t.count(".") == 0):
                    g[src].add(t)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "streamlit":
                streamlit.add(src)
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "streamlit" for a in node.names):
                streamlit.add(src)
    return g, streamlit


def test_no_module_imports_itself_back():
    g, _ = import_graph()
    library = {m: deps for m, deps in g.items() if m.split(".")[0] not in ("cli", "pages")}
    try:
        list(TopologicalSorter(library).static_order())
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_import_only_the_layers_below(package):
    g, _ = import_graph()
    upward = sorted((a, b) for a, deps in g.items() for b in deps if a.split(".")[0] == package
                    and b.split(".")[0] != package and b.split(".")[0] not in ALLOWED[package])
    assert upward == []


def test_streamlit_only_in_pages_and_ui():
    _, streamlit = import_graph()
    users = sorted(n for n in streamlit if n.split(".")[0] not in ("pages", "ui"))
    assert users == []


# Packages of annotation/ that compute from the values they are given and read no storage: nothing they
# import, directly or through another module, is a storage module other than storage.errors (the
# errors they raise) or a module of annotation/ outside the package (those read studies).
READS_NO_STORAGE = ("annotation.agreement", "annotation.survey")
PACKAGE_FACE = "annotation.package_face"


@pytest.mark.parametrize("package", READS_NO_STORAGE)
def test_statistics_packages_read_no_storage(package):
    g, _ = import_graph()
    inside = {m for m in g if m == package or m.startswith(package + ".")}
    assert len(inside) > 2  # the package and its modules are found
    reached, todo = set(), list(inside)
    while todo:
        for dep in g.get(todo.pop(), ()):
            if dep not in reached:
                reached.add(dep)
                todo.append(dep)
    outside = sorted(m for m in reached - inside - {PACKAGE_FACE, "storage.errors"}
                     if m.split(".")[0] == "storage" or (m.split(".")[0] == "annotation" and m != "annotation"))
    assert outside == []


def test_package_faces_name_what_their_modules_define():
    """Each package's ``__init__`` says its concern and lists its public names (``__all__``); every
    name it lists is defined by one of its modules."""
    import importlib

    inits = sorted((ROOT / "annotation").glob("*/__init__.py")) + [ROOT / "accounts" / "__init__.py"]
    assert len(inits) >= 8
    for path in inits:
        name = _module_name(path)
        package = importlib.import_module(name)
        assert (package.__doc__ or "").strip(), f"{name}: no docstring saying its concern"
        assert package.__all__, f"{name}: no public names"
        modules = [importlib.import_module(f"{name}.{m.stem}") for m in path.parent.glob("*.py") if m != path]
        for public in package.__all__:
            value = getattr(package, public)
            assert any(vars(m).get(public) is value for m in modules), f"{name}.{public}: in none of its modules"


def _storage_writers() -> dict[str, set[str]]:
    """storage module -> its functions that open a write transaction (``write(...)``)."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / "storage").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
            calls = {c.func.id for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
            if "write" in calls:
                out.setdefault(path.stem, set()).add(fn.name)
    return out


def test_pages_never_write_to_storage_directly():
    """A page reads through storage at most; every write goes through annotation / evaluation /
    exports, where the domain rules are."""
    writers = _storage_writers()
    assert writers["studies"] and writers["projects"]  # the scan finds the writers it guards against
    offenders = []
    for path in sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "storage":
                aliases.update({a.asname or a.name: a.name for a in node.names})
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("storage."):
                mod = node.module.split(".", 1)[1]
                offenders += [f"{path.name}: {mod}.{a.name}" for a in node.names if a.name in writers.get(mod, set())]
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr in writers.get(aliases[node.value.id], set())):
                offenders.append(f"{path.name}: {aliases[node.value.id]}.{node.attr}")
    assert offenders == []
