"""The face of an annotation package: the public names its ``__init__`` lists, imported from their
modules on first use.

A package's ``__init__`` names what it offers and where each name is defined, in the shape of
scikit-learn's ``sklearn/metrics/cluster/__init__.py``, but does not import those modules when the
package is imported: ``ifjudge --help`` imports the command parsers, which import a few light
modules of these packages, and must not pay numpy and pandas for the heavy ones beside them
(tests/test_cli_startup.py). ``from annotation.agreement import agreement_report`` imports
``annotation.agreement.report`` then, and only then.

>>> import types
>>> pkg = types.ModuleType("annotation.example")
>>> pkg.__getattr__, pkg.__dir__ = lazy_face("annotation", {"lazy_face": "package_face"})
>>> pkg.lazy_face is lazy_face
True
>>> pkg.missing
Traceback (most recent call last):
AttributeError: module 'annotation' has no attribute 'missing'
"""
from __future__ import annotations

from collections.abc import Callable
from importlib import import_module


def lazy_face(package: str, where: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package`` whose public names are the keys
    of ``where``, each defined in the submodule its value names (``{"agreement_report": "report"}``).

    A name not in ``where`` raises ``AttributeError``, so ``from package import submodule`` still
    imports the submodule."""

    def __getattr__(name: str) -> object:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(f"{package}.{where[name]}"), name)

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__
