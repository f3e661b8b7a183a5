"""One way to quote a value in an error message: a bounded excerpt.

Every error of the agents' validation (the file's size and nesting, TOML, the schema, cron
expressions, URLs, the built agents) quotes what it refuses through :func:`excerpt`, so a
50 MB value or a 10,000-item list costs a few dozen characters and microseconds, never an
echo of the input.
"""

from __future__ import annotations

import reprlib

LIMIT = 80  # characters of an excerpt, its ellipsis included

_REPR = reprlib.Repr()
_REPR.maxstring = LIMIT + 8  # reprlib cuts the middle of long strings; we cut the end below
_REPR.maxother = LIMIT
_REPR.maxlevel = 3  # reprlib writes deeper levels as "..." without looking at them
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = _REPR.maxset = 6


def excerpt(value: object, limit: int = LIMIT) -> str:
    """``repr(value)`` of at most ``limit`` characters; a longer one ends with ``…``.

    Strings are cut before ``repr`` (so the cost does not grow with them), an integer too
    long to print says how many bits it has."""
    if isinstance(value, str | bytes):
        text = repr(value[: limit + 1])  # cut first: repr of 50 MB would take its time
    elif isinstance(value, int) and value.bit_length() > 4 * limit:
        text = f"<an integer of {value.bit_length()} bits>"
    else:
        text = _REPR.repr(value)
    return clip(text, limit)


def clip(text: str, limit: int = LIMIT) -> str:
    """``text`` itself when it has at most ``limit`` characters, else its start and ``…``."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
