"""The line of a JSON document where the value at a path such as ``jobs[0].pods[2].id`` starts.

Error messages name file, line and field; JSON parsers forget positions, so this walks the text
once more for the failing path only. A path that does not exist (a missing field) gives the
line of the deepest object on the way.
"""

from __future__ import annotations

import json
import re

_TOKEN = re.compile(r'\.?([^.\[\]]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]|\[key\]')
_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"\s*")


def parse_path(path: str) -> list[str | int]:
    """``a.b[0]["x y"]`` -> ``["a", "b", 0, "x y"]``; ``document`` is the root."""
    if path == "document":
        return []
    out: list[str | int] = []
    for match in _TOKEN.finditer(path):
        name, index, quoted = match.groups()
        if index is not None:
            out.append(int(index))
        elif quoted is not None:
            out.append(str(json.loads(quoted)))
        elif name is not None:
            out.append(name)
    return out


def line_of(text: str, path: str) -> int:
    """1-based line where the value at ``path`` starts (or its deepest existing parent)."""
    pos = _find(text, _skip(text, 0), parse_path(path))
    return text.count("\n", 0, pos) + 1


def _skip(text: str, pos: int) -> int:
    match = _SPACE.match(text, pos)
    return match.end() if match else pos


def _find(text: str, pos: int, path: list[str | int]) -> int:
    if not path or pos >= len(text) or text[pos] not in "[{":
        return pos
    want, rest = path[0], path[1:]
    opening, closing = text[pos], "}" if text[pos] == "{" else "]"
    i, k = _skip(text, pos + 1), 0
    while i < len(text) and text[i] != closing:
        key: str | int = k
        if opening == "{":
            key, end = _DECODER.raw_decode(text, i)
            i = _skip(text, _skip(text, end) + 1)  # past ':'
        if key == want:
            return _find(text, i, rest)
        _, i = _DECODER.raw_decode(text, i)
        i = _skip(text, i)
        if i < len(text) and text[i] == ",":
            i = _skip(text, i + 1)
        k += 1
    return pos
