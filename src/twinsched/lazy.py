"""Package names imported on first use: a module-level ``__getattr__`` (PEP 562).

A package that re-exports its modules' names makes every importer pay for all of them; the
run path of ``twinsched run`` needs a few (``docs/architecture.md``, "Start-up and
loading"). The package lists its names under ``typing.TYPE_CHECKING`` for the type checker
and ``__getattr__ = lazy_names(__name__, {...})`` for the interpreter.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``package``: each name of ``modules`` (name -> submodule) is
    imported from ``package.submodule`` when first asked for, then kept on the package."""

    def attribute(name: str) -> Any:
        if name not in modules:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{modules[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return attribute
