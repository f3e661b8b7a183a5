"""The body of ``PATCH /state``: a batch of deltas, discriminated on ``op``.

``metrics`` sets a node's latest metric values and appends one history sample per value;
``pod`` changes a pod's phase and binding; ``pod_add`` adds a pod to a job (created when
missing); ``node`` sets a node up or down. A batch applies in order and all or nothing.

Batch times never go backwards: a batch older than the state is refused (409), so the state
at a past time (``GET /state?at=``) never holds what happened later. Nor do they leap: a
batch more than ``MAX_AHEAD_S`` after both the state's time and the wall clock is refused
(422), so one far-future batch cannot make every later real-time batch "too old". A ``PUT``
may start a new timeline at any time. Sample times inside a batch (``metrics.time``) are free.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from twinsched.model.document import Id, Pod, PodPhase
from twinsched.model.ids import ID_PATTERN

MAX_TIME = 1e12  # seconds; keeps time / step buckets inside 64-bit integers
MAX_AHEAD_S = 86_400.0  # a batch's time: at most a day after the state's time or the clock
MAX_VALUE = 1e18  # keeps sums of samples finite in SQL aggregates
MAX_METRIC_LENGTH = 128
MetricName = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_METRIC_LENGTH, pattern=ID_PATTERN)
]  # 1-128 characters, no control characters (stored and indexed as SQL text)
MetricValue = Annotated[float, Field(ge=-MAX_VALUE, le=MAX_VALUE)]
ModelVersion = Annotated[
    str, StringConstraints(min_length=1, max_length=MAX_METRIC_LENGTH, pattern=ID_PATTERN)
]  # e.g. ``placer@3`` (a registered model's ``NAME@VERSION``)
Time = Annotated[float, Field(ge=0, le=MAX_TIME)]
NodeStatus = Literal["Ready", "NotReady"]


class _Delta(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class MetricsDelta(_Delta):
    """Latest metric values of one node; each value is also a history sample."""

    op: Literal["metrics"]
    node: Id = Field(description="Node id.")
    time: Time | None = Field(None, description="Sample time in seconds; null = the batch's time.")
    values: dict[MetricName, MetricValue] = Field(description="Metric name -> value.")


class PodDelta(_Delta):
    """A pod's new phase and binding (node and GPU indices)."""

    op: Literal["pod"]
    pod: Id = Field(description="Pod id.")
    phase: PodPhase = Field(description="New lifecycle phase.")
    node: Id | None = Field(None, description="Node it is bound to; required when Running.")
    gpus: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=list, description="GPU indices on that node."
    )
    start_s: float | None = Field(None, ge=0, description="Start time, when it starts running.")
    scheduler: Id | None = Field(
        None,
        description="Scheduler that made this binding; null keeps the pod's (cleared when it "
        "becomes unbound).",
    )
    fallback: bool | None = Field(
        None, description="The binding came from the fallback heuristic; null keeps the pod's."
    )
    model_version: ModelVersion | None = Field(
        None,
        description="Version of the trained model that made this binding (`NAME@VERSION`); "
        "null: the version in the scheduler's name `ai:NAME@VERSION`, if any. Kept with the "
        "decision (`GET /decisions`).",
    )


def model_version_of(scheduler: str | None) -> str | None:
    """The model version a scheduler name carries: ``ai:NAME@VERSION`` -> ``NAME@VERSION``."""
    if scheduler is None or not scheduler.startswith("ai:") or "@" not in scheduler:
        return None
    return scheduler.removeprefix("ai:")


class PodAddDelta(_Delta):
    """A new pod in a job; the job is created when it does not exist."""

    op: Literal["pod_add"]
    job: Id = Field(description="Job id.")
    pod: Pod = Field(description="The whole pod, as in the twin document.")


class NodeDelta(_Delta):
    """A node going up or down, or cordoned and uncordoned."""

    op: Literal["node"]
    node: Id = Field(description="Node id.")
    status: NodeStatus | None = Field(None, description="New status; null keeps it.")
    unschedulable: bool | None = Field(
        None, description="Cordoned (true) or not (false); null keeps it."
    )


Delta = Annotated[MetricsDelta | PodDelta | PodAddDelta | NodeDelta, Field(discriminator="op")]

PATCH_EXAMPLE: dict[str, Any] = {
    "time": 12.0,
    "deltas": [
        {"op": "metrics", "node": "n1", "values": {"cpu_util": 0.5, "gpu_util": 0.25}},
        {"op": "pod", "pod": "p1", "phase": "Running", "node": "n1", "gpus": [0]},
        {"op": "node", "node": "n2", "status": "NotReady"},
    ],
}


class StatePatch(_Delta):
    """A batch of deltas at one time; applied in order, all or nothing."""

    model_config = ConfigDict(json_schema_extra={"examples": [PATCH_EXAMPLE]})

    time: Time = Field(
        description="Time of the batch, in seconds; the state's new time. Not earlier than "
        "the state's time (409 otherwise)."
    )
    deltas: list[Delta] = Field(description="Changes, applied in order.")


class PatchResult(BaseModel):
    """What a PATCH did: deltas applied, samples stored, the state's new version."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"applied": 3, "samples": 2, "version": 7, "time": 12.0}]}
    )

    applied: int = Field(description="Number of deltas applied.")
    samples: int = Field(description="Number of history samples stored.")
    version: int = Field(description="State version after the batch.")
    time: float = Field(description="State time after the batch.")
    session: int | None = Field(None, description="The session the batch went to.")
