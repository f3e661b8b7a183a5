"""Events that change cluster state; ``ClusterState.apply`` is the only way to apply them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class Phase(IntEnum):
    """Pod phases, following Kubernetes (``Unschedulable`` is a failed placement)."""

    PENDING = 0
    RUNNING = 1
    SUCCEEDED = 2
    UNSCHEDULABLE = 3
    NOT_ARRIVED = 4


@dataclass(frozen=True, slots=True)
class Bind:
    """Place pod ``pod`` on node ``node`` using the GPUs in ``gpus`` (indices on that node)."""

    pod: int
    node: int
    gpus: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Unbind:
    """Undo a bind: pod ``pod`` goes back to the pending queue (preemption, what-if search)."""

    pod: int


@dataclass(frozen=True, slots=True)
class Release:
    """Pod ``pod`` completed: give its resources back."""

    pod: int


@dataclass(frozen=True, slots=True)
class Arrive:
    """Pod ``pod`` entered the pending queue."""

    pod: int


@dataclass(frozen=True, slots=True)
class Reject:
    """Pod ``pod`` could not be placed, for ``reason``; it leaves the queue for good."""

    pod: int
    reason: str


@dataclass(frozen=True, slots=True)
class NodeDown:
    node: int


@dataclass(frozen=True, slots=True)
class NodeUp:
    node: int


Event = Bind | Unbind | Release | Arrive | Reject | NodeDown | NodeUp
