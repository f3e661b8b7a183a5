"""``rebalance-after-recovery``: when a node comes back, move pods onto it from busier nodes.

After a failure the evicted pods were packed onto the nodes left, often in another nodepool
than their data. When the node recovers, pods whose data is in its nodepool but which run
elsewhere come back first (locality), then pods of the busiest nodes, as long as each move
leaves the recovered node less busy than the node the pod leaves (so the load evens out and
nothing moves back and forth).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from twinsched.metrics.cluster import node_utilisation
from twinsched.model.cluster import MILLI_PER_GPU, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.controller import SchedulerController
from twinsched.scheduling.descheduling import Move, Trigger, limits_of
from twinsched.scheduling.framework import PodView, RunContext

CANDIDATES = 64  # pods weighed per move: those of its data first, then of the busiest nodes


class Rebalance:
    """After a node recovers, moves pods onto it from busier nodes, its data's pods first."""

    def __init__(self, spec: str, params: dict[str, float]) -> None:
        self.name = spec
        self.limits = limits_of(spec, params)

    def reset(self, state: ClusterState, ctx: RunContext) -> None:
        return None

    def wants(self, state: ClusterState, trigger: Trigger) -> bool:
        return trigger.recovered >= 0 and bool(state.up[trigger.recovered])

    def moves(
        self, state: ClusterState, control: SchedulerController, movable: BoolA, trigger: Trigger
    ) -> Iterator[Move]:
        node = trigger.recovered
        while (move := self.next_move(state, control, movable, node)) is not None:
            yield move

    def next_move(
        self, state: ClusterState, control: SchedulerController, movable: BoolA, node: int
    ) -> Move | None:
        """The first pod (by locality, then by how busy its node is) whose move onto ``node``
        evens out the load, if any."""
        nodes, pods = state.nodes, state.pods
        pool = int(nodes.pool[node])
        load = node_utilisation(state)
        src = np.where(movable, state.pod_node, node)
        reachable = np.isfinite(state.latency_ms[nodes.pool[src], pool])
        candidates = np.flatnonzero(movable & (src != node) & reachable)
        src = src[candidates]
        home = (pods.data_pool[candidates] == pool) & (nodes.pool[src] != pool)
        order = np.lexsort((candidates, -load[src], ~home))
        for k in order[:CANDIDATES].tolist():
            view = control.views[int(candidates[k])]
            if not control.eligible(view)[node]:
                continue
            if home[k] or load[node] + _share(state, view, node) < load[src[k]]:
                return Move(view.index, node)
        return None


def _share(state: ClusterState, pod: PodView, node: int) -> float:
    """How much the pod adds to the node's utilisation (``node_utilisation``'s measure)."""
    nodes = state.nodes
    cpu = pod.cpu_milli / max(int(nodes.cpu_milli[node]), 1)
    gpus = int(nodes.gpu_count[node])
    if gpus == 0:
        return cpu
    return (cpu + pod.gpu_milli * pod.gpu_count / (gpus * MILLI_PER_GPU)) / 2.0
