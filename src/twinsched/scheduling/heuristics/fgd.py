"""Fragmentation Gradient Descent (Weng et al., USENIX ATC'23), from the protocol document.

A node's fragmentation for a *typical pod* t is the free GPU milli that t cannot use: all of
it when t cannot run there at all, else the GPUs with less than t's milli free. FGD places a
pod where the weighted fragmentation grows least: ``int(100 sigmoid((F - F') / 1000))``.
"""

from __future__ import annotations

import numpy as np

from twinsched.metrics.fragmentation import TypicalPods, fragmentation, typical_pods
from twinsched.model.cluster import F64, I64, MILLI_PER_GPU
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import BaseScore, PodView, RunContext, Scores
from twinsched.scheduling.plugin_scheduler import PluginScheduler
from twinsched.scheduling.registry import register

def fgd_score(before: F64, after: F64) -> I64:
    return (100.0 / (1.0 + np.exp(-(before - after) / 1000.0))).astype(np.int64)


def whole_gpus_taken(gpu_left: I64, count: int) -> I64:
    """``gpu_left`` after taking the ``count`` lowest-index free GPUs of every row."""
    free = gpu_left == MILLI_PER_GPU
    take = free & (np.cumsum(free, axis=1) <= count)
    return np.where(take, 0, gpu_left)


class FragmentationGradient(BaseScore):
    name = "fgd"

    def __init__(self) -> None:
        self.typical: TypicalPods | None = None

    def prepare(self, state: ClusterState, ctx: RunContext) -> None:
        self.typical = typical_pods(ctx.workload)

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        assert self.typical is not None, "prepare() first"
        model = state.nodes.gpu_model[nodes]
        left, cpu = state.gpu_left[nodes], state.cpu_free[nodes]
        before = fragmentation(cpu, left, model, self.typical)
        cpu_after = cpu - pod.cpu_milli
        if not pod.is_share:
            after_left = whole_gpus_taken(left, pod.gpu_count) if pod.gpu_count else left
            after = fragmentation(cpu_after, after_left, model, self.typical)
            return Scores(fgd_score(before, after))
        return self._share(nodes.size, left, cpu_after, model, before, pod.gpu_milli)

    def _share(
        self, k: int, left: I64, cpu_after: I64, model: I64, before: F64, milli: int
    ) -> Scores:
        """Try every fitting GPU (one per distinct free share: equal shares score alike)."""
        assert self.typical is not None
        g = left.shape[1]
        earlier_equal = (left[:, :, None] == left[:, None, :]) & np.tri(g, k=-1, dtype=bool).T[None]
        candidate = (left >= milli) & ~earlier_equal.any(axis=1)
        rows, gpus = np.nonzero(candidate)
        values = np.zeros(k, dtype=np.int64)
        chosen = np.full(k, -1, dtype=np.int64)
        if rows.size == 0:
            return Scores(values, chosen)
        after_left = left[rows].copy()
        after_left[np.arange(rows.size), gpus] -= milli
        after = fragmentation(cpu_after[rows], after_left, model[rows], self.typical)
        score = fgd_score(before[rows], after)
        key = score * (g + 1) + (g - gpus)  # best score, then lowest GPU index
        nodes_with, starts = np.unique(rows, return_index=True)
        best = np.maximum.reduceat(key, starts)
        values[nodes_with] = best // (g + 1)
        chosen[nodes_with] = g - best % (g + 1)
        return Scores(values, chosen)


register("fgd", "Fragmentation Gradient Descent (FGD, USENIX ATC'23)")(
    lambda: PluginScheduler("fgd", [(FragmentationGradient(), 1)])
)
