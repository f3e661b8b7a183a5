"""Scheduler names on the command line are checked while it is parsed (issue 32):
``registry.check``'s message, exit 2, and nothing started or built."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from twinsched.cli import scheduler, sim


def _flat(output: str) -> str:
    """The error panel's text on one line (rich wraps it and draws a box around it)."""
    return " ".join(output.translate({ord(c): " " for c in "│╭╮╰╯─"}).split())


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["serve", "--scheduler", "lookahead:fgd/c=0"], "c=0 must be an integer in 1..64"),
        (["serve", "--scheduler", "aggregate:fgd|nope"], "unknown scheduler 'nope'"),
        (["drive", "--check", "ilp-alloc/w=0"], "w=0 must be an integer in 1..4096"),
    ],
)
def test_the_scheduler_service_refuses_bad_names_while_parsing(args: list[str], words: str) -> None:
    result = CliRunner().invoke(scheduler.app, args)
    assert result.exit_code == 2, result.output
    assert words in _flat(result.output)


def test_the_metrics_server_refuses_a_bad_name_while_parsing() -> None:
    result = CliRunner().invoke(sim.app, ["serve", "--scheduler", "bandit/l=0:fgd"])
    assert result.exit_code == 2 and "l=0 must be an integer in 1..20" in _flat(result.output)
