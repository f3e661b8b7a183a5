"""Per-pod-class arrays over all nodes, refreshed only where nodes changed.

Filters and cacheable scores depend only on a node's state and the pod's class, so a value
computed for a class stays right until that node changes. ``ClusterState.changes`` logs
every changed node; an entry remembers how far into the log it has caught up. This is the
idea of Kubernetes' former equivalence-class cache, made exact by the change log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from twinsched.model.cluster import I64
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import PodView

Compute = Callable[[ClusterState, PodView, I64], tuple[np.ndarray, ...]]


@dataclass
class _Entry:
    columns: tuple[np.ndarray, ...]
    seen: int  # length of state.changes already folded in


class NodeMemo:
    """Arrays per pod class, each of length ``n_nodes``, kept in step with the state."""

    def __init__(self, compute: Compute) -> None:
        self._compute = compute
        self._entries: dict[int, _Entry] = {}

    def clear(self) -> None:
        self._entries.clear()

    def get(self, state: ClusterState, pod: PodView) -> tuple[np.ndarray, ...]:
        entry = self._entries.get(pod.cls)
        log = state.changes
        if entry is None:
            all_nodes = np.arange(state.nodes.n, dtype=np.int64)
            columns = tuple(np.array(c) for c in self._compute(state, pod, all_nodes))
            self._entries[pod.cls] = _Entry(columns, len(log))
            return columns
        if entry.seen < len(log):
            pending = len(log) - entry.seen
            if pending == 1:
                stale = np.array(log[-1:], dtype=np.int64)
            elif pending > 4 * state.nodes.n:
                stale = np.arange(state.nodes.n, dtype=np.int64)
            else:
                stale = np.fromiter(dict.fromkeys(log[entry.seen :]), np.int64)
            fresh = self._compute(state, pod, stale)
            for column, values in zip(entry.columns, fresh, strict=True):
                column[stale] = values
            entry.seen = len(log)
        return entry.columns
