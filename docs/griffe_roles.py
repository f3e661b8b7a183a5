"""A Griffe extension for the API reference: the Sphinx roles of the docstrings as links.

The docstrings name objects the Sphinx way (``:func:`twinsched.report.table.columns```,
``:func:`~twinsched.report.table.columns``` to show the last name only, or a name relative
to the docstring's module). Markdown has no roles: once the package is loaded, each role
becomes a cross-reference (``[`columns`][twinsched.report.table.columns]``, resolved by
mkdocs-autorefs) when its target is shown in the reference, else a code span, so the strict
build never meets a link to nowhere (a private name, another library, an undocumented object).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|data|mod|meth|attr|exc|obj|const):`(~?)\.?([^`]+)`")


class SphinxRoles(griffe.Extension):
    """Rewrites every docstring of the package once it is loaded whole."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        for obj in _objects(pkg):
            if obj.docstring is not None:
                obj.docstring.value = rewrite(obj.docstring.value, obj, loader)


def rewrite(text: str, owner: griffe.Object, loader: griffe.GriffeLoader) -> str:
    """The docstring ``text`` of ``owner`` with each role a link or a code span."""

    def one(match: re.Match[str]) -> str:
        short, target = match[1], match[2]
        shown = f"`{target.rsplit('.', 1)[-1] if short else target}`"
        path = _shown_path(target, owner, loader)
        return f"[{shown}][{path}]" if path else shown

    return ROLE.sub(one, text)


def _objects(obj: griffe.Object) -> Iterator[griffe.Object]:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)  # type: ignore[arg-type]


def _shown_path(target: str, owner: griffe.Object, loader: griffe.GriffeLoader) -> str | None:
    """The path of ``target`` if the reference shows it (public, documented), else None."""
    for scope in (owner, owner.module):
        try:
            path = target if target.startswith("twinsched.") else scope.resolve(target)
            found = loader.modules_collection.get_member(path)
            if found.is_alias:
                found = found.final_target
        except (griffe.NameResolutionError, griffe.AliasResolutionError, KeyError, ValueError):
            continue
        if _shown(found):
            return str(found.path)
    return None


def _shown(obj: Any) -> bool:
    if any(part.startswith("_") for part in obj.path.split(".")):
        return False
    if not obj.path.startswith("twinsched") or not (obj.has_docstring or obj.is_module):
        return False
    parent = obj.parent
    while parent is not None and not parent.is_module:
        if not parent.has_docstring:
            return False
        parent = parent.parent
    return True
