"""Agents on the digital twin: a service's instances are twin nodes; scale them, read them.

A *twin service* is a set of nodes in the twin: the nodes of one nodepool, or the nodes whose
labels match a selector, or both. Its instances are its ``Ready`` nodes.
:class:`TwinActuator` applies an :class:`Action` with one ``PATCH /state``: the first
``replicas`` nodes that match the placement in force (node selector, nodepool) become
``Ready``, every other node of the service ``NotReady``, and each node of the service gets
three metric samples at the action's time (``serving`` 1/0, the service's ``instances`` and
the ``replicas`` asked for), so ``GET /history?metric=instances`` shows every scaling.
:class:`TwinSensor` reads the service's load and latency from the twin's history
(``GET /history``, the newest sample of each node in the last ``window`` seconds up to
``now``, so it also works on a simulated clock) and its instances from ``GET /nodes``.

The client is a :class:`twinsched.twin.client.TwinClient` (``pip install 'twinsched[twin]'``),
built by the caller; this module imports no HTTP library.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from twinsched.errors import TwinschedError
from twinsched.learning.agents.agent import Action, Reading

if TYPE_CHECKING:  # the twin's client needs httpx (twinsched[twin]); only its type here
    from twinsched.twin.client import TwinClient

NodeView = Mapping[str, Any]  # one item of ``GET /nodes``: id, nodepool, labels, status, ...
Combine = Literal["sum", "max", "mean"]


class TwinAgentError(TwinschedError, ValueError):
    """A twin service that cannot be scaled or read as configured."""


@dataclass(frozen=True)
class TwinService:
    """Which twin nodes are the service's instances: a nodepool's, those matching labels."""

    nodepool: str | None = None
    selector: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.nodepool is None and not self.selector:
            raise TwinAgentError("a twin service needs a nodepool or a label selector")

    def members(self, api: TwinClient) -> list[NodeView]:
        """The service's nodes, in document order."""
        filters = {} if self.nodepool is None else {"nodepool": self.nodepool}
        nodes: list[NodeView] = [n for n in api.nodes(**filters) if matches(n, self.selector)]
        if not nodes:
            raise TwinAgentError(f"no twin node is in {self.describe()}")
        return nodes

    def describe(self) -> str:
        """E.g. ``nodepool 'edge' with labels {'app': 'detector'}``."""
        pool = f"nodepool '{self.nodepool}'" if self.nodepool is not None else "any nodepool"
        return f"{pool} with labels {dict(self.selector)}"


def matches(node: NodeView, selector: Mapping[str, str], nodepool: str | None = None) -> bool:
    """Whether the node has every label of the selector (Kubernetes ``nodeSelector``) and,
    when one is named, is in the nodepool."""
    labels = node.get("labels") or {}
    if nodepool is not None and node.get("nodepool") != nodepool:
        return False
    return all(labels.get(key) == value for key, value in selector.items())


def scaling_deltas(
    members: Sequence[NodeView],
    replicas: int,
    node_selector: Mapping[str, str],
    nodepool: str | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The ``PATCH /state`` deltas that make the first ``replicas`` members that match the
    placement (selector, nodepool) Ready and the others NotReady (status deltas only where
    the status changes), and the ids of the Ready ones. Fewer matching members than
    replicas: all of them serve."""
    if replicas < 0:
        raise TwinAgentError(f"replicas must be >= 0, got {replicas}")
    eligible = [n for n in members if matches(n, node_selector, nodepool)]
    serving = [str(n["id"]) for n in eligible[:replicas]]
    chosen = set(serving)
    deltas: list[dict[str, Any]] = []
    for node in members:
        status = "Ready" if node["id"] in chosen else "NotReady"
        if node.get("status") != status:
            deltas.append({"op": "node", "node": node["id"], "status": status})
    for node in members:
        values = {
            "serving": float(node["id"] in chosen),
            "instances": float(len(serving)),
            "replicas": float(replicas),
        }
        deltas.append({"op": "metrics", "node": node["id"], "values": values})
    return deltas, serving


@dataclass
class TwinActuator:
    """Scales a twin service: sets its nodes Ready/NotReady and records the scaling.

    An action's placement (``node_selector``, ``nodepool``) stays in force until an action
    brings another one (as a Kubernetes Deployment's node selector does); ``{}`` alone
    clears it.
    """

    api: TwinClient
    service: TwinService
    node_selector: Mapping[str, str] = field(default_factory=dict)
    applied: list[tuple[float, int, list[str]]] = field(default_factory=list)
    nodepool: str | None = None

    def apply(self, action: Action, now: float) -> None:
        if action.places:
            self.node_selector = dict(action.node_selector or {})
            self.nodepool = action.nodepool
        members = self.service.members(self.api)
        deltas, serving = scaling_deltas(
            members, action.replicas, self.node_selector, self.nodepool
        )
        self.api.patch(now, deltas)
        self.applied.append((now, action.replicas, serving))


@dataclass(frozen=True)
class MetricRead:
    """One reading: a twin metric, combined over the service's nodes."""

    metric: str
    combine: Combine = "sum"


DEFAULT_READS: Mapping[str, MetricRead] = {
    "load": MetricRead("requests_per_min", "sum"),
    "p95_ms": MetricRead("p95_ms", "max"),
}


@dataclass
class TwinSensor:
    """Reads a twin service: ``instances`` (its Ready nodes) and, for each entry of
    ``reads``, the newest sample of each of its nodes in ``[now - window, now]``, combined
    (sum, max or mean); NaN when no node has a sample there."""

    api: TwinClient
    service: TwinService
    reads: Mapping[str, MetricRead] = field(default_factory=lambda: dict(DEFAULT_READS))
    window: float = 60.0

    def read(self, now: float) -> Reading:
        members = self.service.members(self.api)
        ids = {str(n["id"]) for n in members}
        reading: dict[str, float] = {
            "instances": float(sum(n.get("status") == "Ready" for n in members))
        }
        for key, spec in self.reads.items():
            answer = self.api.history(spec.metric, start=now - self.window, end=now)
            latest = [s["values"][-1] for s in answer["series"] if s["node"] in ids and s["values"]]
            reading[key] = combine(latest, spec.combine)
        return reading


def combine(values: Sequence[float], how: Combine) -> float:
    """Sum, max or mean of the values; NaN for none."""
    if not values:
        return math.nan
    if how == "sum":
        return float(math.fsum(values))
    if how == "max":
        return float(max(values))
    return float(math.fsum(values) / len(values))
