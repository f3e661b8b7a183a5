"""Incremental fragmentation bookkeeping: only the node that changed is recomputed."""

from __future__ import annotations

import numpy as np

from twinsched.metrics.fragmentation import TypicalPods, fragmentation
from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.state import ClusterState


class FragmentationTracker:
    def __init__(self, state: ClusterState, typical: TypicalPods) -> None:
        self.state, self.typical = state, typical
        self.per_node = fragmentation(state.cpu_free, state.gpu_left, state.nodes.gpu_model, typical)

    def update(self, node: int) -> None:
        s = self.state
        sl = slice(node, node + 1)
        self.per_node[node] = fragmentation(
            s.cpu_free[sl], s.gpu_left[sl], s.nodes.gpu_model[sl], self.typical
        )[0]

    def ratio_pct(self) -> float:
        """Fragmented over idle milli-GPU, in %."""
        idle = float(self.state.gpu_left.sum())
        return 100.0 * float(self.per_node.sum()) / idle if idle else 0.0

    def amount_pct(self) -> float:
        """Fragmented milli-GPU as a share of all GPUs, in %."""
        gpus = self.state.nodes.total_gpu_milli / MILLI_PER_GPU
        return 100.0 * float(self.per_node.sum()) / MILLI_PER_GPU / gpus if gpus else 0.0

    def total(self) -> float:
        return float(np.sum(self.per_node))
