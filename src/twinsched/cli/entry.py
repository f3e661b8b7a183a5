"""The ``twinsched`` entry point builds only the command it runs.

Typer turns every command of an app into a Click command, each option through a pydantic
adapter, before it parses a word: for the 70 commands of ``twinsched`` that was 0.08 s of CPU
in every ``twinsched run``, about ten times what the ``run`` command alone costs. :class:`App`
is the full app for everything else (``--help``, a word that is not a command, shell
completion, ``typer.testing``), and ``app()`` with a command's name first builds that
command or group alone. ``tests/cli/test_entry.py`` checks that each one built alone is the
one the full app has.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import typer
from typer.main import get_command_name, solve_typer_info_defaults
from typer.models import CommandInfo, TyperInfo


class App(typer.Typer):
    """A Typer app whose call builds only the command named by its first argument."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        words = kwargs["args"] if "args" in kwargs else args[0] if args else sys.argv[1:]
        alone = self.only(words[0]) if words and not _completing() else None
        if alone is None:
            return super().__call__(*args, **kwargs)
        return alone(*args, **kwargs)

    def only(self, name: str) -> typer.Typer | None:
        """This app with only its command or group ``name`` (None: no such name)."""
        kept = _find(self, name)
        if kept is None:
            return None
        alone = typer.Typer(
            pretty_exceptions_enable=self.pretty_exceptions_enable,
            pretty_exceptions_short=self.pretty_exceptions_short,
            pretty_exceptions_show_locals=self.pretty_exceptions_show_locals,
            add_completion=False,
        )
        if isinstance(kept, TyperInfo):
            alone.registered_groups = [kept]
        else:  # a command is mounted through an unnamed group, so the app stays a group
            holder = typer.Typer()
            holder.registered_commands = [kept]
            alone.add_typer(holder)
        return alone


def command_names(app: typer.Typer) -> list[str]:
    """The names of ``app``'s commands and groups, those of unnamed groups included."""
    names = [_command_name(info) for info in app.registered_commands]
    for info in app.registered_groups:
        name = _group_name(info)
        names += [name] if name else command_names(_instance(info))
    return names


def _find(app: typer.Typer, name: str) -> CommandInfo | TyperInfo | None:
    for command in app.registered_commands:
        if _command_name(command) == name:
            return command
    for info in app.registered_groups:
        group = _group_name(info)
        if group == name:
            return info
        if not group and (found := _find(_instance(info), name)) is not None:
            return found
    return None


def _command_name(info: CommandInfo) -> str:
    return info.name or get_command_name(info.callback.__name__)  # type: ignore[union-attr]


def _group_name(info: TyperInfo) -> str:
    name = solve_typer_info_defaults(info).name
    return name if isinstance(name, str) else ""


def _instance(info: TyperInfo) -> typer.Typer:
    assert info.typer_instance is not None
    return info.typer_instance


def _completing() -> bool:
    """Shell completion asks the whole app (``_TWINSCHED_COMPLETE``)."""
    return any(k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ)
