"""Payload text as JSON or CSV, with the one leniency the DECICE seed documents need.

The published NodePool schema (``../shared/docs/seed-formats.md``, section 2) has a comma
before its closing ``]``; JSON whose only fault is such a comma is read without it, and the
caller is told so. The twin's harmoniser and the ``decice`` store importer both read text here.
"""

from __future__ import annotations

import json
from typing import Any

from twinsched.traces.conversion import HarmonizeError

TRAILING_COMMAS = (
    "JSON with a comma before a closing ] or } (as the published NodePool schema has after "
    "its last 'required' entry) is read as if the comma were not there"
)


def parse_text(text: str) -> tuple[Any, str | None]:
    """JSON text as its value (other text is kept as is: CSV tables), and a note when the
    JSON was read only after leaving out trailing commas."""
    stripped = text.strip()
    if not stripped:
        raise HarmonizeError((), "is empty")
    if stripped[0] not in "[{":
        return text, None
    try:
        return json.loads(stripped), None
    except json.JSONDecodeError as exc:
        lenient = without_trailing_commas(stripped)
        if lenient != stripped:
            try:
                return json.loads(lenient), TRAILING_COMMAS
            except (json.JSONDecodeError, RecursionError):
                pass
        raise HarmonizeError((), f"is not valid JSON: {exc.msg} (line {exc.lineno})") from None
    except RecursionError:
        raise HarmonizeError((), "is JSON nested too deeply") from None


def without_trailing_commas(text: str) -> str:
    """``text`` without the commas that only whitespace separates from a ``]`` or ``}``
    (outside strings)."""
    out: list[str] = []
    in_string = escaped = False
    pending: int | None = None  # index in out of a comma that may be trailing
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string, pending = True, None
        elif ch in "]}" and pending is not None:
            out[pending] = ""
            pending = None
        elif ch == ",":
            pending = len(out)
        elif not ch.isspace():
            pending = None
        out.append(ch)
    return "".join(out)
