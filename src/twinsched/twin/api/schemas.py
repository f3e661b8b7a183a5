"""Request and response bodies of the twin's HTTP routes (pydantic models, OpenAPI schemas).

The state's own models stay where they are defined: the document in ``model.document``, the
PATCH batch and its answer in ``core.deltas``, the typed views in ``core.views``, error
bodies in ``problems``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from twinsched.store.history.query import Aggregation
from twinsched.twin.core.deltas import MAX_TIME
from twinsched.twin.harmonize.result import SourceOrAuto


class PutResult(BaseModel):
    """The state's version after a PUT."""

    version: int = Field(description="State version after the replacement.")
    time: float = Field(description="State time (the document's timestamp).")
    session: int | None = Field(None, description="The session it opened (or went on in).")


class Health(BaseModel):
    """A health answer."""

    status: str = Field(description="'ok' or 'ready'.", examples=["ok"])
    version: int = Field(description="State version.")


class SeriesView(BaseModel):
    """One node's points as parallel columns."""

    node: str = Field(description="Node id.")
    times: list[float] = Field(description="Sample times, or bucket starts with a step.")
    values: list[float] = Field(description="Values (aggregated per bucket with a step).")


class HistoryView(BaseModel):
    """The answer of ``/history``."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "metric": "cpu_util",
                    "step": 60.0,
                    "agg": "mean",
                    "truncated": False,
                    "series": [{"node": "n1", "times": [0.0, 60.0], "values": [0.4, 0.55]}],
                }
            ]
        }
    )

    metric: str = Field(description="Metric name.")
    step: float | None = Field(description="Bucket width; null = raw samples.")
    agg: Aggregation = Field(description="Aggregation per bucket.")
    truncated: bool = Field(description="True when `limit` rows were reached.")
    series: list[SeriesView] = Field(description="One series per node, by node id.")
    session: int | None = Field(None, description="The session read (null: none yet).")


class CompactView(BaseModel):
    """What a compaction did."""

    now: float | None = Field(description="Twin time of the newest sample (null: no samples).")
    dropped_samples: int = Field(description="Samples older than the retention, dropped.")
    downsampled_samples: int = Field(description="Samples merged into bucket means.")
    written_buckets: int = Field(description="Bucket means written.")
    dropped_changes: int = Field(description="Change-log entries older than the retention.")
    sessions: dict[int, dict[str, float]] = Field(
        default_factory=dict, description="The same per session compacted, with its `now`."
    )
    refused: list[str] = Field(
        default_factory=list, description="Sessions left untouched, and why (mixed timebases)."
    )


class SessionView(BaseModel):
    """One session: a feed's timeline."""

    id: int = Field(description="Session number, from 1.")
    source: str = Field(description="Who opened it: `put`, `run NAME`, `mirror URL`, ...")
    timebase: str = Field(description="`simulated` (a run's time), `wall` (Unix) or `mixed`.")
    start: float = Field(description="State time it started at (its timebase).")
    opened_at: float = Field(description="Unix time it was opened.")
    version: int = Field(description="The first state version it holds.")
    live: bool = Field(description="The live session: the twin's current state is its.")


class SessionsView(BaseModel):
    """The answer of ``/sessions``."""

    live: int | None = Field(description="The live session (null: none yet).")
    sessions: list[SessionView] = Field(description="Every session, oldest first.")


class DecisionView(BaseModel):
    """A binding written to the twin, with who made it."""

    session: int = Field(description="Its session.")
    seq: int = Field(description="Its number in the session, from 1.")
    version: int = Field(description="The state version that made it.")
    time: float = Field(description="State time of the write.")
    pod: str = Field(description="Pod id.")
    node: str = Field(description="Node it was bound to.")
    gpus: list[int] = Field(description="GPU indices on that node.")
    scheduler: str | None = Field(description="Scheduler that made it (null: not said).")
    fallback: bool = Field(description="It came from the fallback heuristic.")
    model_version: str | None = Field(description="Trained model's `NAME@VERSION`, if any.")


class DecisionsView(BaseModel):
    """The answer of ``/decisions``: newest first."""

    session: int | None = Field(description="The session read (null: none yet).")
    decisions: list[DecisionView] = Field(description="Newest first, at most `limit`.")


MIN_STEP_S = 1e-3  # as /history's step: a finer grid is noise, and t / step must stay finite
PAYLOAD_SCHEMA = {"anyOf": [{"type": "object"}, {"type": "array"}, {"type": "string"}]}


class HarmonizeRequest(BaseModel):
    """What to convert, from which format, and on which step to align its samples."""

    model_config = ConfigDict(extra="forbid")

    source: SourceOrAuto = Field(
        "auto", description="Format of the payload; 'auto' detects it from its shape."
    )
    payload: Annotated[Any, WithJsonSchema(PAYLOAD_SCHEMA)] = Field(
        description="The data: a JSON object or array, or text (JSON or CSV tables)."
    )
    step_s: float | None = Field(
        None,
        ge=MIN_STEP_S,
        le=MAX_TIME,
        allow_inf_nan=False,
        description="Align samples on this step (seconds, 0.001 to 1e12); null = raw samples.",
    )
    base: dict[str, Any] | None = Field(
        None,
        description="A twin document giving hardware for nodes the payload only measures; "
        "samples older than its timestamp are stale.",
    )


class D22Document(BaseModel):
    """The twin written as the DECICE twin deliverable's output document (D2.2): objects
    wrapped in one-key objects named after their type (``docs/harmonize.md``)."""

    model_config = ConfigDict(extra="forbid")

    lastUpdated: str = Field(description="Time of the state, 'YYYY-MM-DD HH:MM:SS' in UTC.")
    nodepools: list[dict[str, Any]] = Field(description='{"nodepool": {id, labels, nodes}}.')
    networks: list[dict[str, Any]] = Field(description='{"network": {nodepool_a_id, ...}}.')
    jobs: list[dict[str, Any]] = Field(description='{"profile", "job": {id, pods}}.')
