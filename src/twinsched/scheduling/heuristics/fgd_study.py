"""The baselines of the FGD study (BestFit, DotProd, GpuPacking, GpuClustering).

Written from ``shared/docs/fgd-protocol.md``: integer scores, CPU scale 128,000 milli and
GPU scale 8,000 milli. FGD itself is in :mod:`fgd`.
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import I64, MILLI_PER_GPU, float_operand, int_operand
from twinsched.model.state import SHARE_TAG, ClusterState
from twinsched.scheduling.framework import BaseScore, PodView, Scores, min_max_normalize

CPU_SCALE = 128_000.0
GPU_SCALE = 8_000.0
_TWICE_CPU_SCALE, _TWICE_GPU_SCALE = float_operand(2 * CPU_SCALE), float_operand(2 * GPU_SCALE)
_ONE, _HUNDRED = float_operand(1.0), float_operand(100.0)


class BestFit(BaseScore):
    """``raw = int((1 - s) 100)``, ``s`` the weighted free share left after placing; min-max."""

    name = "bestfit"
    normalizes = True

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        # ``x / SCALE * 0.5`` is ``x / (2 SCALE)`` to the bit (halving is exact), so each
        # term is one division; the rest in place: fewer passes over a refresh's nodes.
        # Operands as 0-d arrays: NumPy converts a Python scalar at every call, at a cost.
        s = (state.cpu_free[nodes] - int_operand(pod.cpu_milli)) / _TWICE_CPU_SCALE
        s += (state.gpu_idle[nodes] - int_operand(pod.gpu_request)) / _TWICE_GPU_SCALE
        np.subtract(_ONE, s, out=s)
        s *= _HUNDRED
        return Scores(s.astype(np.int64))

    def score_one(self, state: ClusterState, pod: PodView, node: int) -> tuple[int, int | None]:
        """:meth:`score` of one node with Python floats (the same IEEE operations)."""
        cpu_after = int(state.cpu_free[node]) - pod.cpu_milli
        gpu_after = int(state.gpu_idle[node]) - pod.gpu_request
        s = cpu_after / CPU_SCALE * 0.5 + gpu_after / GPU_SCALE * 0.5
        return int((1.0 - s) * 100.0), None

    def normalize(self, values: I64) -> I64:
        return min_max_normalize(values)


class DotProd(BaseScore):
    """``100 (1 - v.r / 2)``: v the node's free (CPU, GPU), r the pod's request, both scaled."""

    name = "dotprod"

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        cpu_left = state.cpu_free[nodes]
        dot = (cpu_left / CPU_SCALE) * (pod.cpu_milli / CPU_SCALE) + (
            state.gpu_idle[nodes] / GPU_SCALE
        ) * (pod.gpu_request / GPU_SCALE)
        values = ((1.0 - dot / 2.0) * 100.0).astype(np.int64)
        return Scores(np.where(cpu_left >= pod.cpu_milli, values, 0))

    def score_one(self, state: ClusterState, pod: PodView, node: int) -> tuple[int, int | None]:
        """:meth:`score` of one node with Python floats (the same IEEE operations)."""
        cpu_left = state.cpu_free.item(node)
        if cpu_left < pod.cpu_milli:
            return 0, None
        dot = (cpu_left / CPU_SCALE) * (pod.cpu_milli / CPU_SCALE) + (
            state.gpu_idle.item(node) / GPU_SCALE
        ) * (pod.gpu_request / GPU_SCALE)
        return int((1.0 - dot / 2.0) * 100.0), None


class GpuOnly(BaseScore):
    """A score that ranks nodes for GPU pods only: CPU-only pods score 0 everywhere."""

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        if pod.gpu_count == 0:
            return Scores(np.zeros(nodes.size, dtype=np.int64))
        return Scores(self.gpu_score(state, pod, nodes).astype(np.int64))

    def score_one(self, state: ClusterState, pod: PodView, node: int) -> tuple[int, int | None]:
        """:meth:`score` of one node in plain Python (a row holds a handful of GPUs)."""
        if pod.gpu_count == 0:
            return 0, None
        return self.gpu_score_one(state, pod, node), None

    def gpu_score(self, state: ClusterState, pod: PodView, nodes: I64) -> I64:
        """The scores of a pod that asks for GPUs."""
        raise NotImplementedError

    def gpu_score_one(self, state: ClusterState, pod: PodView, node: int) -> int:
        """:meth:`gpu_score` of one node, with integers."""
        raise NotImplementedError


class GpuPacking(GpuOnly):
    """Prefer GPUs already shared, then free GPUs on used nodes, then empty nodes."""

    name = "gpupacking"
    shape_columns = ("gpus",)

    def gpu_score(self, state: ClusterState, pod: PodView, nodes: I64) -> I64:
        left = state.gpu_left[nodes]
        n_free = (left == MILLI_PER_GPU).sum(axis=1)
        empty_node = n_free == state.nodes.gpu_count[nodes]
        # The pod takes, in ascending order of free share, the first GPUs that fit it.
        fits = left >= pod.gpu_milli
        order = np.argsort(np.where(fits, left, np.iinfo(np.int64).max), axis=1, kind="stable")
        ranked_left = np.take_along_axis(left, order, axis=1)[:, : pod.gpu_count]
        ranked_fits = np.take_along_axis(fits, order, axis=1)[:, : pod.gpu_count]
        used_free = ((ranked_left == MILLI_PER_GPU) & ranked_fits).sum(axis=1)
        shared_pct = (np.where(ranked_fits, ranked_left, 0) * 100 // MILLI_PER_GPU).sum(axis=1)
        values: I64 = np.where(
            empty_node,
            np.maximum(33 - n_free, n_free),
            np.where(
                used_free > 0,
                np.maximum(50 - used_free, 33),
                np.maximum(100 - shared_pct // 10, 50),
            ),
        )
        return values

    def gpu_score_one(self, state: ClusterState, pod: PodView, node: int) -> int:
        left: list[int] = state.gpu_left[node].tolist()
        n_free = left.count(MILLI_PER_GPU)
        if n_free == state.nodes.gpu_count.item(node):  # an empty node
            return max(33 - n_free, n_free)
        # The GPUs the pod takes: the fitting ones in ascending order of free share (a
        # stable sort: equal shares are interchangeable here), at most gpu_count of them.
        taken = sorted(v for v in left if v >= pod.gpu_milli)[: pod.gpu_count]
        used_free = taken.count(MILLI_PER_GPU)
        if used_free > 0:
            return max(50 - used_free, 33)
        shared_pct = sum(v * 100 // MILLI_PER_GPU for v in taken)
        return max(100 - shared_pct // 10, 50)


class GpuClustering(GpuOnly):
    """Keep pods of one kind (share, or k whole GPUs) together; prefer fuller nodes."""

    name = "gpuclustering"

    def gpu_score(self, state: ClusterState, pod: PodView, nodes: I64) -> I64:
        idle = state.gpu_idle[nodes]
        base = 25 * (8000 - idle) // 8000
        tags = state.gpu_tags[nodes] > 0
        tag = SHARE_TAG if pod.is_share else pod.gpu_count
        n_tags = tags.sum(axis=1)
        # 75 where the pod's kind is the node's only kind, 50 where it is one of several,
        # 25 on a node running no GPU pod, else 0 (two wheres: np.select costs several times more)
        bonus = np.where(n_tags == 0, 25, 0)
        if tag < tags.shape[1]:
            has_tag = tags[:, tag]
            bonus = np.where(has_tag, np.where(n_tags == 1, 75, 50), bonus)
        total: I64 = base + bonus
        return total

    def gpu_score_one(self, state: ClusterState, pod: PodView, node: int) -> int:
        base = 25 * (8000 - state.gpu_idle.item(node)) // 8000
        tags: list[int] = state.gpu_tags[node].tolist()
        tag = SHARE_TAG if pod.is_share else pod.gpu_count
        n_tags = sum(1 for t in tags if t > 0)
        if tag < len(tags) and tags[tag] > 0:
            return base + (75 if n_tags == 1 else 50)
        return base + (25 if n_tags == 0 else 0)
