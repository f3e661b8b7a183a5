"""The VTE's node metrics through the broker: a run observer (``vte serve --broker``).

Every ``every_s`` simulated seconds (read on the run's clock) and at the run's end it
publishes each node's metrics as twin samples, one message per node, with the names and
definitions of the Prometheus collector's default queries (``cpu_util``, ``memory_util``,
``gpu_util`` in [0, 1], ``gpu_allocated``, ``pods_running``, ``up``; a node without a
resource gets no utilisation of it). :func:`node_samples` is the pure part.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from twinsched.metrics import exposition as ex
from twinsched.model.events import Event
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import RunContext
from twinsched.twin.broker.publisher import BrokerPublisher


class Now(Protocol):
    def now(self) -> float: ...


def _ratio(used: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    out = np.full(len(capacity), np.nan)
    np.divide(used, capacity, out=out, where=capacity > 0)
    return out


def node_samples(state: ClusterState, at: float) -> dict[str, Any]:
    """A ``PATCH /state`` batch of every node's metrics at time ``at``."""
    v = ex.node_values(state)
    columns = {
        "cpu_util": _ratio(v[ex.CPU_ALLOCATED], v[ex.CPU_CAPACITY]),
        "memory_util": _ratio(v[ex.MEMORY_ALLOCATED], v[ex.MEMORY_CAPACITY]),
        "gpu_util": _ratio(v[ex.GPU_MILLI_ALLOCATED] / 1000.0, v[ex.GPU_CAPACITY]),
        "gpu_allocated": v[ex.GPU_ALLOCATED],
        "pods_running": v[ex.PODS_RUNNING],
        "up": v[ex.NODE_UP],
    }
    names = list(columns)
    table = np.column_stack([columns[n] for n in names]).tolist()
    deltas = [
        {"op": "metrics", "node": node, "time": at,
         "values": {n: x for n, x in zip(names, row, strict=True) if x == x}}  # NaN: none
        for node, row in zip(state.nodes.names, table, strict=True)
    ]  # fmt: skip
    return {"time": at, "deltas": deltas}


class BrokerSamples:
    """Publishes the run's node metrics every ``every_s`` simulated seconds of ``clock``."""

    def __init__(self, publisher: BrokerPublisher, clock: Now, every_s: float = 60.0) -> None:
        self.publisher, self.clock, self.every_s = publisher, clock, every_s
        self.batches = 0
        self._last: float | None = None

    def on_start(self, state: ClusterState, ctx: RunContext) -> None:
        self._publish(state)

    def on_events(self, state: ClusterState, events: Sequence[Event]) -> None:
        if self._last is None or self.clock.now() - self._last >= self.every_s:
            self._publish(state)

    def on_end(self, state: ClusterState) -> None:
        self._publish(state)
        self.publisher.flush()

    def _publish(self, state: ClusterState) -> None:
        self._last = self.clock.now()
        self.publisher.publish_samples(node_samples(state, self._last))
        self.batches += 1
