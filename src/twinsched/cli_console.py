"""The Rich console that the ``twinsched`` commands print through."""

from __future__ import annotations

from rich.console import Console


def make_console(stderr: bool = False, width: int = 160) -> Console:
    """A console on stdout (stderr with ``stderr``): the terminal's width on a terminal, else
    ``width`` columns (logs, pipes), so tables never wrap mid-word."""
    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, width=width)
