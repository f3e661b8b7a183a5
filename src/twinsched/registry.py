"""One generic registry of named plug-ins: in-tree tables, registration and entry points.

Built-ins are an explicit in-tree table ``name -> (source, description)``, where ``source``
is the object itself or a ``"package.module:attribute"`` string imported on first
:meth:`Registry.get`, so listing names imports no heavy module (OR-Tools, torch).
Entry points of the registry's group are discovered on first use and never override a
built-in or a registered name. A plug-in never imports the registry: it is named in a table
or in an entry point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar, cast

from twinsched.errors import DuplicateNameError, TwinschedError, UnknownNameError

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class _Entry:
    source: object  # a "module:attribute" string, an EntryPoint, or the object itself
    description: str
    loaded: bool = False
    value: object = None


def load(target: str) -> Any:
    """The object named ``"package.module:attribute"`` (the attribute may be dotted)."""
    module, sep, attribute = target.partition(":")
    if not (sep and module and attribute):
        raise TwinschedError(f"bad target {target!r}: expected 'package.module:attribute'")
    found: Any = import_module(module)
    for part in attribute.split("."):
        found = getattr(found, part)
    return found


class Registry(Generic[T]):
    """Named plug-ins of one ``kind``: unique names, lazy built-ins, entry points of ``group``."""

    def __init__(
        self,
        kind: str,
        builtins: Mapping[str, tuple[str | T, str]] | None = None,
        group: str | None = None,
    ) -> None:
        self.kind, self.group = kind, group
        table = builtins or {}
        self._entries = {name: _Entry(src, about) for name, (src, about) in table.items()}
        self._discovered = group is None

    def register(self, name: str, item: T, description: str = "") -> T:
        """Add ``item`` under ``name``; a name taken already (built-in or not) is refused."""
        if name in self._entries:
            raise DuplicateNameError(f"{self.kind} '{name}' is already registered")
        self._entries[name] = _Entry(item, description, loaded=True, value=item)
        return item

    def names(self) -> list[str]:
        """Every name: the in-tree table's order, then registrations, then entry points."""
        self._discover()
        return list(self._entries)

    def describe(self) -> dict[str, str]:
        """Name -> one line about it; nothing is imported."""
        self._discover()
        return {name: entry.description for name, entry in self._entries.items()}

    def __contains__(self, name: object) -> bool:
        self._discover()
        return name in self._entries

    def get(self, name: str) -> T:
        """The plug-in called ``name``, imported on first use; unknown names list the known."""
        self._discover()
        entry = self._entries.get(name)
        if entry is None:
            raise UnknownNameError(self.kind, name, list(self._entries))
        if not entry.loaded:
            source = entry.source
            if isinstance(source, EntryPoint):
                entry.value = source.load()
            elif isinstance(source, str):
                entry.value = load(source)
            else:
                entry.value = source
            entry.loaded = True
        return cast(T, entry.value)

    def create(self: Registry[Callable[..., R]], name: str, /, *args: Any, **kwargs: Any) -> R:
        """Call the factory called ``name`` with the given arguments."""
        return self.get(name)(*args, **kwargs)

    def _discover(self) -> None:
        # Entry points are read once, on first use: the metadata scan costs milliseconds.
        if self._discovered:
            return
        self._discovered = True
        for ep in entry_points(group=self.group or ""):
            self._entries.setdefault(ep.name, _Entry(ep, f"plug-in from {ep.value}"))
