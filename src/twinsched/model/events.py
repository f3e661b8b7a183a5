"""Events that change cluster state; ``ClusterState.apply`` is the only way to apply them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from twinsched.model.values import quick_init


class Phase(IntEnum):
    """Pod phases, following Kubernetes (``Unschedulable`` is a failed placement)."""

    PENDING = 0
    RUNNING = 1
    SUCCEEDED = 2
    UNSCHEDULABLE = 3
    NOT_ARRIVED = 4


@quick_init
@dataclass(frozen=True, slots=True)
class Bind:
    """Place pod ``pod`` on node ``node`` using the GPUs in ``gpus`` (indices on that node)."""

    pod: int
    node: int
    gpus: tuple[int, ...] = ()


@quick_init
@dataclass(frozen=True, slots=True)
class PodEvent:
    """Something happened to one pod, ``pod`` (its index in the run's pods).

    The subclasses add no field, only a meaning (and ``__slots__ = ()``: no ``__dict__``).
    """

    pod: int


class Unbind(PodEvent):
    """Undo a bind: pod ``pod`` goes back to the pending queue (preemption, what-if search)."""

    __slots__ = ()


class Release(PodEvent):
    """Pod ``pod`` completed: give its resources back."""

    __slots__ = ()


class Arrive(PodEvent):
    """Pod ``pod`` entered the pending queue."""

    __slots__ = ()


@quick_init
@dataclass(frozen=True, slots=True)
class Reject:
    """Pod ``pod`` could not be placed, for ``reason``; it leaves the queue for good."""

    pod: int
    reason: str


@dataclass(frozen=True, slots=True)
class NodeEvent:
    """Something happened to one node, ``node``."""

    node: int


class NodeDown(NodeEvent):
    """Node ``node`` is down (a fault): the filters keep new pods off it."""

    __slots__ = ()


class NodeUp(NodeEvent):
    """Node ``node`` is back."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class LinkChange:
    """The link between nodepools ``a`` and ``b`` now has ``latency_ms`` (``inf``: the link
    is partitioned) and ``bandwidth_mbps`` (a fault, or its end)."""

    a: int
    b: int
    latency_ms: float
    bandwidth_mbps: float


Event = Bind | Unbind | Release | Arrive | Reject | NodeDown | NodeUp | LinkChange
