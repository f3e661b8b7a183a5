"""Fragmentation after every event, computed in one vectorised batch at the end.

Each bind snapshots the changed node's row; the per-event total is the initial total plus
the cumulative change ``F(snapshot) - F(previous snapshot of that node)``.
"""

from __future__ import annotations

import numpy as np

from twinsched.metrics.fragmentation import TypicalPods, fragmentation
from twinsched.model.cluster import F64, I64, MILLI_PER_GPU
from twinsched.model.state import ClusterState

CHUNK = 1024  # rows per fragmentation call: its (rows x milli values x GPUs) arrays stay small


class FragmentationTracker:
    def __init__(self, state: ClusterState, events: int, typical: TypicalPods) -> None:
        self.state, self.typical = state, typical
        nd = state.nodes
        self.initial = fragmentation(state.cpu_free, state.gpu_left, nd.gpu_model, typical)
        self.node = np.full(events, -1, dtype=np.int64)
        self.cpu = np.zeros(events, dtype=np.int64)
        self.left = np.zeros((events, state.gpu_left.shape[1]), dtype=np.int64)
        self.idle = np.zeros(events, dtype=np.int64)

    def record(self, event: int, node: int | None) -> None:
        """Call after every event; ``node`` is the node that changed, if any."""
        s = self.state
        self.idle[event] = s.nodes.total_gpu_milli - s.allocated_gpu_milli
        if node is not None:
            self.node[event] = node
            self.cpu[event] = s.cpu_free.item(node)
            self.left[event] = s.gpu_left[node]

    def series(self) -> tuple[F64, F64]:
        """(fragmentation ratio %, fragmentation amount %) after every event."""
        changed = np.flatnonzero(self.node >= 0)
        nodes = self.node[changed]
        model = self.state.nodes.gpu_model[nodes]
        value = _chunked(self.cpu[changed], self.left[changed], model, self.typical)
        # Previous value of the same node: the last earlier snapshot, else the initial one.
        order = np.lexsort((changed, nodes))
        first = np.ones(order.size, dtype=bool)
        first[1:] = nodes[order][1:] != nodes[order][:-1]
        prev_sorted = np.where(first, self.initial[nodes[order]], np.roll(value[order], 1))
        prev = np.empty_like(value)
        prev[order] = prev_sorted
        delta = np.zeros(self.node.size)
        delta[changed] = value - prev
        total = self.initial.sum() + np.cumsum(delta)
        gpus = self.state.nodes.total_gpu_milli / MILLI_PER_GPU
        ratio = np.where(self.idle > 0, 100.0 * total / np.maximum(self.idle, 1), 0.0)
        amount = 100.0 * total / MILLI_PER_GPU / max(gpus, 1.0)
        return ratio, amount


def _chunked(cpu: I64, left: I64, model: I64, typical: TypicalPods) -> F64:
    """:func:`fragmentation`, ``CHUNK`` rows at a time (a row's value is exact whatever the
    rows it is computed with)."""
    parts = [
        fragmentation(cpu[i : i + CHUNK], left[i : i + CHUNK], model[i : i + CHUNK], typical)
        for i in range(0, cpu.size, CHUNK)
    ]
    return np.concatenate(parts) if parts else np.zeros(0)
