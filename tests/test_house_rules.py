"""House rules of the test suite: a test module imports builders from tests/builders.py and
fixtures from tests/conftest.py, never from another test module (so that running one module, or
deleting one, never breaks another)."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent

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
