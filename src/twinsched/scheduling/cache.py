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

from twinsched.model.cluster import I64, BoolA
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

    def get(
        self, state: ClusterState, pod: PodView, only: BoolA | None = None
    ) -> tuple[np.ndarray, ...]:
        """The class's columns, refreshed where nodes changed.

        With ``only``, values are computed just where ``only`` is true and left stale
        elsewhere. Sound when ``only`` is itself a pure function of (node state, pod class),
        such as eligibility: a node outside it can only enter it by changing.
        """
        entry = self._entries.get(pod.cls)
        log = state.changes
        if entry is None:
            nodes = np.arange(state.nodes.n, dtype=np.int64)
            if only is not None:
                nodes = nodes[only]
            fresh = self._compute(state, pod, nodes)
            columns = tuple(np.zeros(state.nodes.n, dtype=f.dtype) for f in fresh)
            for column, values in zip(columns, fresh, strict=True):
                column[nodes] = values
            self._entries[pod.cls] = _Entry(columns, len(log))
            return columns
        if entry.seen < len(log):
            stale = state.changed_since(entry.seen)
            if only is not None:
                stale = stale[only[stale]]
            fresh = self._compute(state, pod, stale)
            for column, values in zip(entry.columns, fresh, strict=True):
                column[stale] = values
            entry.seen = len(log)
        return entry.columns
