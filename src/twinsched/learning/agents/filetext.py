"""Reading an agent file before the schema sees it: its size and nesting are bounded first.

A file over :data:`MAX_FILE_BYTES` is refused without being read whole, and one whose arrays
and inline tables nest deeper than :data:`MAX_DEPTH` is refused before ``tomllib`` parses it
(its parser recurses once per level: 5,000 levels were a ``RecursionError``). The format
itself needs at most five levels (``agents`` > agent > ``sensor`` > ``reads`` > a read).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from twinsched.errors import TwinschedError
from twinsched.learning.agents.excerpt import excerpt

MAX_FILE_BYTES = 1 << 20  # 1 MiB: the format's largest sane file is a few kilobytes
MAX_DEPTH = 8  # nested arrays and inline tables ([ and {) in one value


class AgentConfigError(TwinschedError, ValueError):
    """An agent file that cannot be read or does not follow the schema."""


def read_agent_toml(path: Path) -> dict[str, Any]:
    """The parsed TOML of ``path``, refused (:class:`AgentConfigError`) when it is larger
    than :data:`MAX_FILE_BYTES`, nested deeper than :data:`MAX_DEPTH`, unreadable or not TOML."""
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_FILE_BYTES + 1)  # never more than the limit and a byte
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentConfigError(f"{path}: cannot read: {excerpt(str(exc), 200)}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise AgentConfigError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes, the limit")
    return parse_agent_toml(text, str(path))


def parse_agent_toml(text: str, source: str = "agent file") -> dict[str, Any]:
    """``tomllib.loads(text)`` once its nesting is known to be within :data:`MAX_DEPTH`."""
    line = deepest_line(text, MAX_DEPTH)
    if line is not None:
        raise AgentConfigError(
            f"{source}: line {line}: nested deeper than {MAX_DEPTH} levels, the limit"
        )
    try:
        return tomllib.loads(text)
    except (
        tomllib.TOMLDecodeError,
        ValueError,
        RecursionError,
    ) as exc:  # ValueError: 4,300+ digits
        raise AgentConfigError(f"{source}: not TOML: {excerpt(str(exc), 200)}") from None


def deepest_line(text: str, limit: int) -> int | None:
    """The line at which ``[`` and ``{`` outside strings and comments first nest deeper than
    ``limit``, or None. A scan of the characters, no recursion; a table header such as
    ``[[agents]]`` counts as the two levels it opens and closes on its line."""
    depth, line, i, n = 0, 1, 0, len(text)
    while i < n:
        char = text[i]
        if char in "[{":
            depth += 1
            if depth > limit:
                return line
        elif char in "]}":
            depth = max(depth - 1, 0)
        elif char == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif char in "\"'":
            end = _string_end(text, i)
            line += text.count("\n", i, end)
            i = end
            continue
        elif char == "\n":
            line += 1
        i += 1
    return None


def _string_end(text: str, start: int) -> int:
    """The index just past the TOML string that opens at ``start`` (the end of the text for
    one left open: the parser will name it)."""
    quote = text[start]
    fence = quote * 3 if text.startswith(quote * 3, start) else quote
    i = start + len(fence)
    while True:
        end = text.find(fence, i)
        newline = text.find("\n", i)
        if len(fence) == 1 and 0 <= newline < (end if end >= 0 else len(text)):
            return newline  # a one-line string cannot go on: the parser stops here too
        if end < 0:
            return len(text)
        if quote == '"' and _escaped(text, end, i):
            i = end + 1
            continue
        if len(fence) == 3:  # up to two quotes more may close a multi-line string
            while text.startswith(quote, end + 3) and end + 3 < len(text):
                end += 1
        return end + len(fence)


def _escaped(text: str, at: int, lowest: int) -> bool:
    """Whether the quote at ``at`` follows an odd number of backslashes."""
    count = 0
    while at - count - 1 >= lowest and text[at - count - 1] == "\\":
        count += 1
    return count % 2 == 1
