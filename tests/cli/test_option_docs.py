"""``docs/cli.md`` lists every numeric and path option with the range ``--help`` shows.

The rows are read from the command tree Typer builds (the help text's ``[lo..hi]``, the
``DIR``/``PATH`` metavars of checked paths, the seed lists), so a new option or a changed
range without its row in the page fails here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from twinsched.cli import app

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
_RULE = re.compile(r"\[([^\[\]]+)\]$")  # the accepted values, at the end of the help


def _leaves(command: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(command, TyperGroup):
        return [
            leaf
            for name, sub in sorted(command.commands.items())
            for leaf in _leaves(sub, (*path, name))
        ]
    return [(path, command)]


def option_rows() -> list[str]:
    """``| command | option | accepted |`` for every option whose help ends with its rule."""
    rows = []
    for path, command in _leaves(typer.main.get_command(app), ()):
        for param in command.params:
            help_text = " ".join((getattr(param, "help", None) or "").split())
            found = _RULE.search(help_text)
            if not found:
                continue
            name = max(param.opts, key=len) if param.opts else param.name
            if param.param_type_name == "argument":
                name = (param.name or "").upper()
            accepted = found.group(1)
            rows.append(f"| `twinsched {' '.join(path)}` | `{name}` | {accepted} |")
    return rows


def test_the_page_lists_every_checked_option_with_its_range() -> None:
    page = PAGE.read_text(encoding="utf-8")
    listed = [line for line in page.splitlines() if line.startswith("| `twinsched")]
    assert listed == option_rows()
