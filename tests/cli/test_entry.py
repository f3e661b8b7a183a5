"""The entry point builds only the command it runs (``cli/entry.py``), and that command is
the one the full app has."""

from __future__ import annotations

from typing import Any

import pytest
from typer.core import TyperGroup
from typer.main import get_command

from twinsched.cli import app
from twinsched.cli.entry import command_names

FULL = get_command(app)
assert isinstance(FULL, TyperGroup)


def shape(command: Any) -> Any:
    """What a user sees of a command: its options and arguments, help, and subcommands."""
    params = [(p.name, tuple(p.opts), p.required, repr(p.default)) for p in command.params]
    subs = getattr(command, "commands", {})
    return command.help, params, {name: shape(sub) for name, sub in sorted(subs.items())}


def test_every_command_is_found_by_name() -> None:
    assert sorted(command_names(app)) == sorted(FULL.commands)


@pytest.mark.parametrize("name", sorted(FULL.commands))
def test_a_command_built_alone_is_the_full_apps(name: str) -> None:
    alone = app.only(name)
    assert alone is not None
    built = get_command(alone)
    assert isinstance(built, TyperGroup) and list(built.commands) == [name]
    assert shape(built.commands[name]) == shape(FULL.commands[name])


def test_anything_else_is_left_to_the_full_app() -> None:
    assert app.only("--help") is None and app.only("ruun") is None


def test_a_call_runs_the_command_alone(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        app(["schedulers"], prog_name="twinsched")
    assert done.value.code == 0
    assert "fgd" in capsys.readouterr().out
