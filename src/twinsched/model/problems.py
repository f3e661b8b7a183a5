"""Where a document's value is wrong: a field's path and the problem, for every reader of the
twin format and its sections (``model/document.py``, ``model/data.py``, ``model/schema.py``)."""

from __future__ import annotations

import json
from collections.abc import Iterable


class FieldProblem(ValueError):
    """Raised by cross-field validators: ``path`` is relative to the model that raised it."""

    def __init__(self, path: str, problem: str) -> None:
        self.path, self.problem = path, problem
        super().__init__(f"{path}: {problem}")


def format_path(parts: Iterable[str | int]) -> str:
    """``('nodepools', 0, 'id')`` -> ``nodepools[0].id``; the empty path is ``document``."""
    out = ""
    for part in parts:
        if isinstance(part, int) or part == "[key]":
            out += f"[{part}]" if isinstance(part, int) else part
        elif part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "document"
