"""JSON text parsed with limits checked first: its size, then its nesting depth.

``json.loads`` recurses once per level, so a few thousand nested brackets raise
``RecursionError`` (or worse, deeper down); the depth is counted here by a linear scan of the
brackets outside strings before the parser sees the text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from twinsched.errors import TwinschedError

MAX_CHARS = 1 << 20
MAX_DEPTH = 64
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


class BoundedJsonError(TwinschedError, ValueError):
    """JSON text too long, too deep or malformed; the message names its source and the limit."""


def nesting(text: str) -> int:
    """The deepest bracket nesting of ``text`` (brackets inside strings ignored)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def loads_bounded(
    text: str, source: str, max_chars: int = MAX_CHARS, max_depth: int = MAX_DEPTH
) -> Any:
    """``json.loads(text)`` when it has at most ``max_chars`` characters and ``max_depth``
    levels; else :class:`BoundedJsonError` naming ``source`` and the limit."""
    if len(text) > max_chars:
        raise BoundedJsonError(
            f"{source}: {len(text):,} characters, over the {max_chars:,} allowed"
        )
    if (depth := nesting(text)) > max_depth:
        raise BoundedJsonError(
            f"{source}: nested {depth} levels deep, over the {max_depth} allowed"
        )
    try:
        return json.loads(text)
    except ValueError as exc:
        raise BoundedJsonError(f"{source}: not valid JSON: {exc}") from None
