"""What harmonisation returns: the twin document, the aligned series and what was dropped why."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from twinsched.model.document import TwinDocument
from twinsched.model.schema import format_path
from twinsched.traces.conversion import Conversion

Source = Literal["decice", "tables", "prometheus", "twin"]
SourceOrAuto = Literal["auto", "decice", "tables", "prometheus", "twin"]
SOURCES: tuple[Source, ...] = ("decice", "tables", "prometheus", "twin")


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


def dropped_list(conversion: Conversion, limit: int) -> list[Dropped]:
    """The first ``limit`` drops of ``conversion``, then one entry counting the rest."""
    dropped = conversion.dropped
    out = [Dropped(path=format_path(w) if w else "payload", reason=r) for w, r in dropped[:limit]]
    if len(dropped) > limit:
        more = f"{len(dropped) - limit} more dropped, not listed (only the first {limit} are)"
        out.append(Dropped(path="payload", reason=more))
    return out
