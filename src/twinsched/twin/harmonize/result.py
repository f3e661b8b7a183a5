"""What harmonisation returns, the samples it carries, and the error it raises for bad input."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from twinsched.errors import TwinschedError
from twinsched.model.io import TwinDocument, format_path

Source = Literal["decice", "tables", "prometheus", "twin"]
SourceOrAuto = Literal["auto", "decice", "tables", "prometheus", "twin"]
SOURCES: tuple[Source, ...] = ("decice", "tables", "prometheus", "twin")
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


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Dropped(_Model):
    """One thing left out of the result, with where it was and why."""

    path: str = Field(description="Where it was in the payload, e.g. 'vertexpools[0].devices[1]'.")
    reason: str = Field(description="Why it was left out.")


class Series(_Model):
    """The samples of one metric of one node, in time order (on the grid when aligned)."""

    node: str = Field(description="Node id.")
    metric: str = Field(description="Metric name, e.g. 'cpu_util'.")
    times: list[float] = Field(description="Sample times in seconds, increasing.")
    values: list[float] = Field(description="One value per time.")


class HarmonizeResult(_Model):
    """A payload converted into the twin format, its samples, and what was dropped why."""

    source: Source = Field(description="The format the payload was read as.")
    document: TwinDocument = Field(description="The converted, schema-valid twin document.")
    step_s: float | None = Field(
        description="Grid step the samples are aligned on; null = raw samples, not aligned."
    )
    samples: list[Series] = Field(description="Node metric series, one per node and metric.")
    dropped: list[Dropped] = Field(description="What was left out, with its path and reason.")
    notes: list[str] = Field(description="Assumptions made while converting (units, defaults).")


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

    def dropped_list(self, limit: int) -> list[Dropped]:
        """The first ``limit`` drops, then one entry counting the rest."""
        out = [
            Dropped(path=format_path(w) if w else "payload", reason=r)
            for w, r in self.dropped[:limit]
        ]
        if len(self.dropped) > limit:
            more = (
                f"{len(self.dropped) - limit} more dropped, not listed (only the first {limit} are)"
            )
            out.append(Dropped(path="payload", reason=more))
        return out
