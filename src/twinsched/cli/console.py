"""The Rich console that the ``twinsched`` commands print through, and their error exit."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape

from twinsched.errors import TwinschedError


def make_console(stderr: bool = False, width: int = 160) -> Console:
    """A console on stdout (stderr with ``stderr``): the terminal's width on a terminal, else
    ``width`` columns (logs, pipes), so tables never wrap mid-word."""
    probe = Console(stderr=stderr)
    return probe if probe.is_terminal else Console(stderr=stderr, width=width)


def error_exit(exc: BaseException, prefix: str = "") -> typer.Exit:
    """Print one red ``error:`` line for ``exc`` and give the exit (status 2) to raise."""
    make_console(stderr=True).print(
        f"[red]error:[/] {escape(f'{prefix}{exc}')}", markup=True, highlight=False
    )
    return typer.Exit(2)


@contextmanager
def expected_errors() -> Iterator[None]:
    """Expected failures (our errors, a missing optional extra, a file system that refuses a
    write) print one red line and exit with status 2 (like ``twinsched run``)."""
    try:
        yield
    except (TwinschedError, ImportError, OSError) as exc:
        raise error_exit(exc) from exc


@contextmanager
def progress_bar(what: str) -> Iterator[Callable[[str, int, int], None]]:
    """A transient progress bar on stderr; yields ``progress(what, done, total)`` to move it."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())  # fmt: skip
    with Progress(*columns, console=make_console(stderr=True), transient=True) as bar:
        task = bar.add_task(what, total=None)

        def progress(what: str, done: int, total: int) -> None:
            bar.update(task, description=what, completed=done, total=total)

        yield progress
