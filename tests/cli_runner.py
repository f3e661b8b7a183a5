"""The ``twinsched`` command tree built once, and a runner on it.

typer's ``CliRunner.invoke(app, ...)`` converts the whole app into click commands (about 170
of them, 0.2 s of CPU) at every call; the fuzz tests invoke it hundreds of times. The tree
is the same every time (typer reads the app's declarations only), so these build it once
and run it through click's runner, which typer's own runner mirrors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache

import click
import typer
from click.testing import CliRunner, Result

from twinsched.cli import app


@cache
def command_of(typer_app: typer.Typer) -> click.Command:
    """``typer_app`` as a click command, built on the first call for that app (the suite's
    conftest gives typer's own ``CliRunner`` this cache too)."""
    return typer.main.get_command(typer_app)


def root_command() -> click.Command:
    """``twinsched`` as a click command (built on the first call)."""
    return command_of(app)


def invoke(args: Sequence[str], env: Mapping[str, str | None] | None = None) -> Result:
    """Run ``twinsched ARGS`` in this process, as typer's ``CliRunner().invoke(app, ARGS)``."""
    return CliRunner().invoke(root_command(), list(args), env=env)
