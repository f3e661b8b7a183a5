"""The project's exception tree: exceptions are for bad input and bugs, never for "cannot place"."""

from __future__ import annotations


class TwinschedError(Exception):
    """Base class of every error twinsched raises on purpose."""


class DataNotFoundError(TwinschedError):
    """A trace or data folder is missing; the message says how to get it."""


class TraceFormatError(TwinschedError):
    """A trace file has a bad row; the message names file, line and field."""

    def __init__(self, path: str, line: int, field: str, problem: str) -> None:
        self.path, self.line, self.field, self.problem = path, line, field, problem
        super().__init__(f"{path}:{line}: field '{field}': {problem}")


class UnknownNameError(TwinschedError, KeyError):
    """A name looked up in a registry is not there; the message lists the known names."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        self.kind, self.name, self.known = kind, name, known
        super().__init__(f"unknown {kind} '{name}'; known: {', '.join(sorted(known)) or '(none)'}")

    def __str__(self) -> str:
        return str(self.args[0])


class DuplicateNameError(TwinschedError, ValueError):
    """A name is registered twice in one registry; the first one stays."""


class MissingExtraError(TwinschedError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


class InvariantError(TwinschedError):
    """A state invariant broke (over-commit, lost pod): always a bug, raised only with validate."""
