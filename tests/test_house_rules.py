"""House rules: a test module imports builders from tests/builders.py and fixtures from
tests/conftest.py, never from another test module (so that running one module, or deleting one,
never breaks another); and no function of the library packages is over 80 lines (a longer one is
several named steps, each with a docstring saying what it computes)."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
LIBRARY = ("accounts", "annotation", "evaluation", "exports", "formats", "storage")
MAX_LINES = 80

# Imports across test modules still left; none now. The set may only shrink: a new exception is a
# builder to move to tests/builders.py (or a fixture to tests/conftest.py) instead.
LEFT: set[tuple[str, str]] = set()


def _is_test_module(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return name.startswith("tests.") and (last.startswith("test_") or last.endswith("_test"))


def imports_of_test_modules(path: Path) -> set[str]:
    """The test modules ``path`` imports (``from tests.test_x import y``, ``import tests.test_x``,
    ``from tests import test_x``), at any depth of the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if _is_test_module(a.name)}
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:  # from .test_x import y
                module = "tests." + node.module
            else:
                module = node.module
            if _is_test_module(module):
                found.add(module)
            elif module in ("tests", "tests.e2e"):
                found |= {f"{module}.{a.name}" for a in node.names if _is_test_module(f"{module}.{a.name}")}
    return found


def cross_imports() -> set[tuple[str, str]]:
    return {(path.relative_to(TESTS).as_posix(), module)
            for path in sorted(TESTS.rglob("*.py"))
            for module in imports_of_test_modules(path)}


def test_no_test_module_imports_another():
    new = cross_imports() - LEFT
    assert not new, ("a test module imports another test module; put the shared builder in tests/builders.py "
                     f"or the fixture in tests/conftest.py: {sorted(new)}")


def test_the_list_of_exceptions_only_shrinks():
    gone = LEFT - cross_imports()
    assert not gone, f"these imports are gone: delete them from LEFT in {Path(__file__).name}: {sorted(gone)}"


def test_the_rule_sees_every_form_of_import(tmp_path):
    path = tmp_path / "test_probe.py"
    path.write_text("import tests.test_a\nfrom tests.test_b import x\nfrom tests import test_c, builders\n"
                    "def f():\n    from tests.e2e.test_d import y\nfrom .test_e import z\nfrom tests.builders import app\n")
    assert imports_of_test_modules(path) == {"tests.test_a", "tests.test_b", "tests.test_c", "tests.e2e.test_d",
                                             "tests.test_e"}


def functions_over(path: Path, max_lines: int) -> dict[str, int]:
    """The functions of a module (methods and nested functions too, by qualified name) longer than
    ``max_lines``, with their length: from the ``def`` line (decorators left out) to the last line."""
    found: dict[str, int] = {}

    def visit(node, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef) and child.end_lineno - child.lineno + 1 > max_lines:
                    found[name] = child.end_lineno - child.lineno + 1
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def long_functions() -> dict[tuple[str, str], int]:
    return {(path.relative_to(ROOT).as_posix(), name): n
            for pkg in LIBRARY for path in sorted((ROOT / pkg).rglob("*.py"))
            for name, n in functions_over(path, MAX_LINES).items()}


def test_no_library_function_is_over_80_lines():
    long = long_functions()
    assert not long, (f"library functions over {MAX_LINES} lines; split each into named steps (a docstring each "
                     f"saying what it computes): {sorted(long.items())}")


def test_the_length_rule_counts_every_kind_of_function(tmp_path):
    path = tmp_path / "probe.py"
    body = "    x = 1\n" * 80
    path.write_text(f"def short():\n{body[:-10]}\n\ndef long():\n{body}\n"
                    f"class K:\n    async def m(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n"
                    f"def outer():\n    def inner():\n    {body.replace(chr(10), chr(10) + '    ')}\n")
    assert functions_over(path, 80) == {"long": 81, "K.m": 81, "outer": 82, "outer.inner": 81}
