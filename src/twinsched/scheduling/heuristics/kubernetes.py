"""Kubernetes' NodeResourcesFit strategies and BalancedAllocation, with GPU as a third resource.

Each resource's fraction is computed *after* placing the pod; resources a node lacks
(capacity 0) are left out of its average, as Kubernetes does for extended resources.
"""

from __future__ import annotations

import numpy as np

from twinsched.model.cluster import F64, I64
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import MAX_SCORE, BaseScore, PodView, Scores


def used_fractions(state: ClusterState, pod: PodView, nodes: I64) -> tuple[F64, F64]:
    """(fraction used after placing the pod, 1 where the node has that resource) per resource.

    Columns: CPU, memory, GPU milli.
    """
    cap, has = state.nodes.capacity[nodes], state.nodes.has_resource[nodes]
    request = np.array([pod.cpu_milli, pod.memory_mib, pod.gpu_request], dtype=np.float64)
    used = (cap - state.free[nodes] + request) / np.maximum(cap, 1.0)
    np.minimum(used, 1.0, out=used)
    used *= has
    return used, has


def _mean(values: F64, has: F64) -> F64:
    mean: F64 = values.sum(axis=1) / np.maximum(has.sum(axis=1), 1.0)
    return mean


def mean_used(state: ClusterState, pod: PodView, node: int) -> float:
    """``_mean(*used_fractions(...))`` of one node with Python floats: the same IEEE
    operations in the same order (NumPy sums a row of three left to right)."""
    cap: list[float] = state.nodes.capacity[node].tolist()
    has: list[float] = state.nodes.has_resource[node].tolist()
    free: list[int] = state.free[node].tolist()
    request = (float(pod.cpu_milli), float(pod.memory_mib), float(pod.gpu_request))
    used = [
        min((c - f + r) / max(c, 1.0), 1.0) * h
        for c, f, r, h in zip(cap, free, request, has, strict=False)
    ]
    return (used[0] + used[1] + used[2]) / max(has[0] + has[1] + has[2], 1.0)


class LeastAllocated(BaseScore):
    name = "leastallocated"
    shape_columns = ("cpu", "memory", "gpus")  # capacities are static: part of every shape
    cheap_score = True

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        used, has = used_fractions(state, pod, nodes)
        return Scores(((1.0 - _mean(used, has)) * MAX_SCORE).astype(np.int64))

    def score_one(self, state: ClusterState, pod: PodView, node: int) -> tuple[int, int | None]:
        """:meth:`score` of one node with Python floats."""
        return int((1.0 - mean_used(state, pod, node)) * MAX_SCORE), None


class MostAllocated(BaseScore):
    name = "mostallocated"

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        used, has = used_fractions(state, pod, nodes)
        return Scores((_mean(used, has) * MAX_SCORE).astype(np.int64))

    def score_one(self, state: ClusterState, pod: PodView, node: int) -> tuple[int, int | None]:
        """:meth:`score` of one node with Python floats."""
        return int(mean_used(state, pod, node) * MAX_SCORE), None


class BalancedAllocation(BaseScore):
    """``(1 - std of the used fractions) * 100``: prefers nodes whose resources stay even."""

    name = "balancedallocation"

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        used, has = used_fractions(state, pod, nodes)
        mean = _mean(used, has)
        var = (((used - mean[:, None]) * has) ** 2).sum(axis=1) / np.maximum(has.sum(axis=1), 1)
        return Scores(((1.0 - np.sqrt(var)) * MAX_SCORE).astype(np.int64))
