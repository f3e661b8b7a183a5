"""Every ``twinsched`` command in README.md and docs/*.md parses against the real CLI (habit 20).

Commands come from the fenced ``bash`` blocks of README.md and docs/*.md. Backslash
continuations are joined, comments dropped, and a line is cut at ``;``, ``&&``, ``||`` and
``&``; every piece that starts with ``twinsched`` (or ``python -m twinsched.cli``) is one
command. Each is parsed as the ``twinsched`` program would parse it, but not run: the
subcommand path is resolved group by group (``make_context`` and ``resolve_command`` on the
command Typer builds, ``typer.main.get_command(app)``; Typer 0.29 vendors click as
``typer._click``), then the leaf command's options and arguments are parsed and converted.
So an unknown command or option, a missing required value, a value outside a declared
choice or of the wrong type fails the test, naming file and line.

Documentation shorthand is read, not skipped:

* ``twinsched scenarios list | show NAME | delete NAME``: a ``|`` followed by a subcommand of
  the same group lists alternatives, and each is checked; a ``|`` followed by anything else
  is a real pipe, and only what comes before it is checked;
* ``[--yes]``, ``[NAME[@VERSION]]``: brackets mark an optional part; they are dropped and the
  part is checked;
* a bare ``...`` (``twinsched train ... --epochs 0``: options elided) is dropped, and
  ``ID...`` (a repeated argument) reads as ``ID``;
* upper-case placeholders stay (``NAME``, ``DIR``: to the parser they are values), except
  those of a typed value, which read as an example of their type (:data:`EXAMPLES`: ``ID``
  is a run id, an integer).

Skipped, because their words are only known when a shell runs them: a command with a shell
variable or substitution (``$VAR``, ``$(...)``) or a redirection or angle-bracket placeholder
(``<``, ``>``). Today no command is skipped: :data:`SKIPPED` lists the skipped ones and
:func:`test_nothing_unexpected_is_skipped` fails when that list changes, so a new skip is
seen and written down here.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.core import TyperGroup

from twinsched.cli import app

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELLS = {"bash", "sh", "shell"}
SEPARATORS = {";", "&&", "||", "&"}
EXAMPLES = {"ID": "1"}  # placeholder -> a value of its type
SKIPPED: list[str] = []  # "file:line: command" of every skipped command (see the docstring)


@dataclass(frozen=True)
class Command:
    where: str  # "README.md:23"
    args: tuple[str, ...]  # the words after ``twinsched``
    alternatives: tuple[tuple[str, ...], ...] = ()  # sibling subcommands after ``|``


def shell_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, logical line) of each fenced shell block, continuations joined."""
    inside, pending, start = False, "", 0
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fence = line.strip()
        if fence.startswith("```"):
            inside = not inside and fence[3:].strip() in SHELLS
            continue
        if not inside:
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        yield start, pending + line
        pending = ""


def words(line: str) -> list[str]:
    """Shell words of ``line``, comments dropped, with ``;``, ``|``, ``&&``... as own words."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def unshorthand(word: str) -> str:
    """``[--yes]`` is ``--yes``, ``ID...`` is ``ID``, a bare ``...`` is nothing."""
    word = word.replace("[", "").replace("]", "").removesuffix("...")
    return EXAMPLES.get(word, word)


def pieces(tokens: list[str]) -> Iterator[list[str]]:
    """The commands of one line: split at the shell's list separators."""
    piece: list[str] = []
    for token in tokens:
        if token in SEPARATORS:
            yield piece
            piece = []
        else:
            piece.append(token)
    yield piece


def program_args(piece: list[str]) -> list[str] | None:
    """The words after the program when ``piece`` runs twinsched, else None."""
    if piece[:1] == ["twinsched"]:
        return piece[1:]
    if piece[:3] == ["python", "-m", "twinsched.cli"]:
        return piece[3:]
    return None


def read_line(where: str, line: str) -> tuple[list[Command], list[str]]:
    """The twinsched commands of one logical shell line, and the skipped ones."""
    found: list[Command] = []
    skipped: list[str] = []
    for piece in pieces(words(line)):
        args = program_args(piece)
        if args is None:
            continue
        if any("$" in w or w in {"<", ">", ">>", "(", ")"} for w in args):
            skipped.append(f"{where}: twinsched {' '.join(args)}")
            continue
        first, *alternatives = _split_at(args, "|")
        found.append(Command(where, _clean(first), tuple(_clean(a) for a in alternatives)))
    return found, skipped


def _split_at(args: list[str], separator: str) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for word in args:
        if word == separator:
            parts.append([])
        else:
            parts[-1].append(word)
    return parts


def _clean(args: list[str]) -> tuple[str, ...]:
    return tuple(w for w in map(unshorthand, args) if w)


def collect() -> tuple[list[Command], list[str]]:
    """Every twinsched command of the pages, and the skipped ones (as "file:line: text")."""
    found: list[Command] = []
    skipped: list[str] = []
    for page in PAGES:
        for number, line in shell_lines(page):
            commands, skips = read_line(f"{page.relative_to(ROOT)}:{number}", line)
            found += commands
            skipped += skips
    return found, skipped


@cache
def root() -> Any:
    return typer.main.get_command(app)


def parse(args: list[str] | tuple[str, ...]) -> list[str]:
    """Parse ``twinsched ARGS`` as the program would, without running it; the command path.

    Raises the parser's usage errors (unknown command or option, bad value, missing
    argument): ``typer.TyperException``.
    """
    command, name, rest = root(), "twinsched", list(args)
    parent: Any = None
    path: list[str] = []
    while True:
        ctx = command.make_context(name, list(rest), parent=parent, resilient_parsing=False)
        if not isinstance(command, TyperGroup):
            return path
        # A group stops at its subcommand: what it left is the subcommand and its words.
        tail = rest[len(rest) - len(ctx.args) - 1 :]
        if not tail or tail[0].startswith("-"):
            ctx.fail("Missing command.")
        found, sub, rest = command.resolve_command(ctx, tail)
        assert found is not None and sub is not None
        path.append(found)
        command, name, parent = sub, found, ctx


def check(command: Command) -> None:
    """Parse the command and each of its alternatives; fail naming where it is written."""
    args = command.args
    try:
        path = parse(args)
        group = tuple(path[:-1])  # the groups take no options: the path is their words
        for alternative in command.alternatives:
            if not (alternative and _is_subcommand(group, alternative[0])):
                break  # a real pipe: the rest of the line is another program
            args = (*group, *alternative)
            parse(args)
    except typer.TyperException as exc:
        pytest.fail(f"{command.where}: twinsched {' '.join(args)}: {exc}")


def _is_subcommand(group: tuple[str, ...], word: str) -> bool:
    command = root()
    for name in group:
        command = command.commands[name]
    return isinstance(command, TyperGroup) and word in command.commands


COMMANDS, SKIPS = collect()


@pytest.mark.parametrize("command", COMMANDS, ids=[c.where for c in COMMANDS])
def test_documented_command_parses(command: Command) -> None:
    check(command)


def test_every_page_with_commands_is_read() -> None:
    """The collector is not blind: the README's and docs' commands are all found."""
    pages = {c.where.split(":")[0] for c in COMMANDS}
    assert {"README.md", "docs/store.md", "docs/twin.md", "docs/models.md"} <= pages
    assert len(COMMANDS) >= 40


def test_nothing_unexpected_is_skipped() -> None:
    assert SKIPS == SKIPPED


@pytest.mark.parametrize(
    "line",
    [
        "twinsched no-such-command",
        "twinsched scenarios no-such-command",
        "twinsched run --no-such-option 1",
        "twinsched run --trace",  # an option without its value
        "twinsched run --jobs two",  # a value of the wrong type
        "twinsched scenarios show",  # a missing argument
        "twinsched scenarios",  # a group without its command
        "twinsched scenarios list | show NAME | delete",  # an alternative without its argument
    ],
)
def test_a_wrong_command_fails(line: str) -> None:
    """The check itself: each of these must be reported."""
    (command,), _ = read_line("x", line)
    with pytest.raises(pytest.fail.Exception):
        check(command)


def test_shorthand_is_read() -> None:
    """Alternatives are checked, brackets and ellipses dropped; a real pipe ends the command."""
    (command,), _ = read_line("x", "twinsched runs list | compare ID ID... [--out DIR]  # a note")
    assert command == Command("x", ("runs", "list"), (("compare", "1", "1", "--out", "DIR"),))
    check(command)
    (piped,), _ = read_line("x", "twinsched runs list | grep fgd")
    check(piped)
    (elided,), _ = read_line("x", "twinsched train ... --epochs 0")
    assert elided.args == ("train", "--epochs", "0")


def test_variables_are_skipped() -> None:
    line = 'export T=1; twinsched twin serve --db "$DB" && twinsched runs list'
    found, skipped = read_line("x", line)
    assert [c.args for c in found] == [("runs", "list")]
    assert skipped == ["x: twinsched twin serve --db $DB"]
