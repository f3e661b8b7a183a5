"""Importers by name: each reads files in place and returns whole scenarios, or raises.

An importer parses everything before the store is touched, and the store writes all its
scenarios in one transaction, so a bad row anywhere leaves the store unchanged. Bad rows raise
:class:`twinsched.errors.TraceFormatError` naming file, line and field.

An importer is ``(path, name, options) -> list[Scenario]``; most return one scenario called
``name``, ``alibaba-gpu-2023`` with several variants returns ``name/variant`` for each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from twinsched.errors import TwinschedError, UnknownNameError
from twinsched.model.cluster import Scenario

ImportFunction = Callable[[Path, str, Mapping[str, str]], list[Scenario]]


@dataclass(frozen=True)
class Importer:
    name: str
    function: ImportFunction
    help: str
    options: Mapping[str, str]  # option -> what it means


_BUILTINS = {
    "alibaba-gpu-2023": "alibaba_gpu_2023",
    "alibaba-gpu-2025-dlrm": "alibaba_dlrm_2025",
    "swf": "swf",
    "supercloud": "supercloud",
    "twin-json": "twin_json",
    "twin-csv": "twin_csv",
    "synthetic": "synthetic",
}
_REGISTRY: dict[str, Importer] = {}


def register(
    name: str, help: str, options: Mapping[str, str] | None = None
) -> Callable[[ImportFunction], ImportFunction]:
    """Decorator: add an importer under ``name``; a second one with the same name is refused."""

    def add(function: ImportFunction) -> ImportFunction:
        if name in _REGISTRY and _REGISTRY[name].function is not function:
            raise TwinschedError(f"importer '{name}' is registered already")
        _REGISTRY[name] = Importer(name, function, help, dict(options or {}))
        return function

    return add


def importers() -> dict[str, Importer]:
    """Every importer: the built-ins plus the ``twinsched.importers`` entry points."""
    for module in _BUILTINS.values():
        import_module(f"twinsched.store.importers.{module}")
    from importlib.metadata import entry_points

    for entry in entry_points(group="twinsched.importers"):
        if entry.name not in _REGISTRY:
            register(entry.name, f"plug-in from {entry.value}")(entry.load())
    return dict(sorted(_REGISTRY.items()))


def get_importer(name: str) -> Importer:
    known = importers()
    if name not in known:
        raise UnknownNameError("importer", name, list(known))
    return known[name]


def option(options: Mapping[str, str], key: str, default: str, known: Mapping[str, str]) -> str:
    """One option's value; an unknown option key fails listing the known ones."""
    for given in options:
        if given not in known:
            raise UnknownNameError("importer option", given, list(known))
    return options.get(key, default)
