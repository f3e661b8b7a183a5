"""What a converter into the twin format produces, and the error it raises for bad input.

The DECICE, SuperCloud-tables, Prometheus and twin-JSON readers turn a payload into
twin-format data (not yet validated), raw node samples, and what they dropped why; the twin's
harmoniser (:mod:`twinsched.twin.harmonize`) accepts, aligns and validates them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from twinsched.errors import TwinschedError
from twinsched.model.schema import format_path

Path = tuple[str | int, ...]


class HarmonizeError(TwinschedError):
    """The payload is none of the accepted formats, or a field is bad enough to stop.

    ``parts`` is the path of the bad field inside the payload (``("vertexpools", 0, "id")``);
    the message starts with it written as ``vertexpools[0].id``. ``argument`` is true when
    the bad field is an argument of :func:`harmonize` (``source``, ``step_s``), not the payload.
    """

    def __init__(self, parts: Path, problem: str, *, argument: bool = False) -> None:
        self.parts, self.problem, self.argument = parts, problem, argument
        self.field = format_path(parts) if parts else "payload"
        super().__init__(f"{self.field}: {problem}")


@dataclass(frozen=True)
class Sample:
    """One raw metric sample of one node; ``where`` says where it came from in the payload."""

    node: str
    metric: str
    t: float
    value: float
    where: Path


@dataclass
class Conversion:
    """What a converter produces: twin-format data (not yet validated), samples, drops, notes."""

    data: dict[str, Any]
    samples: list[Sample] = field(default_factory=list)
    dropped: list[tuple[Path, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def drop(self, where: Path, reason: str) -> None:
        """Record that the thing at ``where`` was left out for ``reason``."""
        self.dropped.append((where, reason))

    def note(self, text: str) -> None:
        """Record an assumption once."""
        if text not in self.notes:
            self.notes.append(text)
