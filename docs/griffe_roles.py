"""A Griffe extension for the API reference: Sphinx roles in docstrings read as code.

The docstrings name objects the Sphinx way (``:func:`twinsched.report.table.columns```);
Markdown has no roles, so each role becomes a code span of its target (a ``~`` prefix keeps
the last dotted name only, as in Sphinx).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|data|mod|meth|attr|exc|obj|const):`(~?)([^`]+)`")


def strip_roles(text: str) -> str:
    """``:func:`a.b``` -> ```a.b```; ``:func:`~a.b``` -> ```b```."""
    return ROLE.sub(lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}`", text)


class SphinxRoles(griffe.Extension):
    """Rewrites every docstring once, when its object is loaded."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = strip_roles(obj.docstring.value)
