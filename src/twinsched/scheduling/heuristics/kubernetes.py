"""Kubernetes' NodeResourcesFit strategies and BalancedAllocation, with GPU as a third resource.

Each resource's fraction is computed *after* placing the pod; resources a node lacks
(capacity 0) are left out of its average, as Kubernetes does for extended resources.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from twinsched.model.cluster import F64, I64, Nodes, float_operand, float_row
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import MAX_SCORE, BaseScore, PodView, Scores

_ONE, _MAX = float_operand(1.0), float_operand(float(MAX_SCORE))


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


class ResourceColumns(NamedTuple):
    """What :func:`mean_used_of` reads besides the free resources (made once per nodes):
    per resource (CPU, memory, GPU milli) one contiguous row over the nodes, and the same
    as (N, 3) matrices, whose rows a refresh of a few nodes gathers at once."""

    nodes: Nodes
    capacity: F64  # (3, N)
    has: F64  # (3, N): 1.0 where the node has the resource
    divisor: F64  # (3, N): max(capacity, 1)
    resources: F64  # (N,): max(how many of the three the node has, 1)
    everywhere: tuple[bool, ...]  # per resource: every node has it (``has`` is all 1.0)
    by_node: F64  # (N, 3): ``capacity`` per node
    divisor_by_node: F64  # (N, 3): ``divisor`` per node
    rows: F64  # (N, 10): capacity, divisor, has per resource, then max(resources, 1)

    @classmethod
    def of(cls, nodes: Nodes) -> ResourceColumns:
        cap, has = nodes.capacity, nodes.has_resource
        capacity, present = np.ascontiguousarray(cap.T), np.ascontiguousarray(has.T)
        divisor = np.ascontiguousarray(np.maximum(cap, 1.0).T)
        everywhere = tuple(bool(row.all()) for row in present == 1.0)
        resources = np.maximum(has.sum(axis=1), 1.0)
        by_node, divisor_by_node = np.ascontiguousarray(cap), np.ascontiguousarray(divisor.T)
        rows = np.concatenate([cap, divisor_by_node, has, resources[:, None]], axis=1)
        return cls(nodes, capacity, present, divisor, resources, everywhere, by_node,
                   divisor_by_node, rows)  # fmt: skip


GATHER_ROWS = 1024  # up to this many nodes (a refresh), the (k, 3) gathers cost less


def mean_used_of(columns: ResourceColumns, state: ClusterState, pod: PodView, nodes: I64) -> F64:
    """``_mean(*used_fractions(...))``: the same IEEE operations, and a row of three summed
    left to right as NumPy sums it. Operands are arrays (NumPy converts a Python scalar at
    every call), and a resource every node has skips its product by 1.0 (exact).

    A refresh's few hundred nodes are gathered as (k, 3) rows at once (``take``: fewer
    calls); over more nodes one resource at a time on 1-D columns costs less.
    """
    if nodes.size > GATHER_ROWS:
        return _mean_used_by_column(columns, state, pod, nodes)
    used = columns.by_node.take(nodes, axis=0)
    used -= state.free.take(nodes, axis=0)  # float64 minus int64, as ``cap - free``
    used += float_row((pod.cpu_milli, pod.memory_mib, pod.gpu_request))
    used /= columns.divisor_by_node.take(nodes, axis=0)
    np.minimum(used, _ONE, out=used)
    for r in range(3):
        if not columns.everywhere[r]:
            used[:, r] *= columns.has[r].take(nodes)
    total = used[:, 0] + used[:, 1]
    total += used[:, 2]
    total /= columns.resources.take(nodes)
    return total


def _mean_used_by_column(
    columns: ResourceColumns, state: ClusterState, pod: PodView, nodes: I64
) -> F64:
    """:func:`mean_used_of` one resource at a time on 1-D columns (many nodes)."""
    request = (pod.cpu_milli, pod.memory_mib, pod.gpu_request)
    free = (state.cpu_free, state.mem_free, state.gpu_idle)
    total: F64 | None = None
    for r in range(3):
        used = columns.capacity[r][nodes] - free[r][nodes]
        used += float_operand(float(request[r]))
        used /= columns.divisor[r][nodes]
        np.minimum(used, _ONE, out=used)
        if not columns.everywhere[r]:
            used *= columns.has[r][nodes]
        if total is None:
            total = used
        else:
            total += used
    assert total is not None
    total /= columns.resources[nodes]
    return total


def _mean(values: F64, has: F64) -> F64:
    mean: F64 = values.sum(axis=1) / np.maximum(has.sum(axis=1), 1.0)
    return mean


Row = list[float]  # capacities, divisors, resources present, their count (at least 1)


def mean_used(row: Row, free: list[int], request: tuple[int, int, int]) -> float:
    """``_mean(*used_fractions(...))`` of one node (``row``: its ``ResourceColumns.rows``)
    with Python floats: the same IEEE operations in the same order (NumPy sums a row of
    three left to right)."""
    c0, c1, c2, d0, d1, d2, h0, h1, h2, count = row
    u0 = min((c0 - free[0] + request[0]) / d0, 1.0) * h0
    u1 = min((c1 - free[1] + request[1]) / d1, 1.0) * h1
    u2 = min((c2 - free[2] + request[2]) / d2, 1.0) * h2
    return (u0 + u1 + u2) / count


class _MeanUsed(BaseScore):
    """A score of the mean used fraction, with the nodes' resource columns kept."""

    _columns: ResourceColumns | None = None

    def columns(self, state: ClusterState) -> ResourceColumns:
        if self._columns is None or self._columns.nodes is not state.nodes:
            self._columns = ResourceColumns.of(state.nodes)
        return self._columns

    def mean_used(self, state: ClusterState, pod: PodView, nodes: I64) -> F64:
        return mean_used_of(self.columns(state), state, pod, nodes)

    def mean_used_one(self, state: ClusterState, pod: PodView, node: int) -> float:
        """:meth:`mean_used` of one node, in plain Python."""
        row: Row = self.columns(state).rows[node].tolist()
        request = (pod.cpu_milli, pod.memory_mib, pod.gpu_request)
        return mean_used(row, state.free[node].tolist(), request)


class LeastAllocated(_MeanUsed):
    name = "leastallocated"
    shape_columns = ("cpu", "memory", "gpus")  # capacities are static: part of every shape
    cheap_score = True

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        free = np.subtract(_ONE, self.mean_used(state, pod, nodes))
        free *= _MAX
        return Scores(free.astype(np.int64))

    def score_one(self, state: ClusterState, pod: PodView, node: int) -> tuple[int, int | None]:
        """:meth:`score` of one node with Python floats."""
        return int((1.0 - self.mean_used_one(state, pod, node)) * MAX_SCORE), None


class MostAllocated(_MeanUsed):
    name = "mostallocated"

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        return Scores((self.mean_used(state, pod, nodes) * MAX_SCORE).astype(np.int64))

    def score_one(self, state: ClusterState, pod: PodView, node: int) -> tuple[int, int | None]:
        """:meth:`score` of one node with Python floats."""
        return int(self.mean_used_one(state, pod, node) * MAX_SCORE), None


class BalancedAllocation(BaseScore):
    """``(1 - std of the used fractions) * 100``: prefers nodes whose resources stay even."""

    name = "balancedallocation"

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        used, has = used_fractions(state, pod, nodes)
        mean = _mean(used, has)
        var = (((used - mean[:, None]) * has) ** 2).sum(axis=1) / np.maximum(has.sum(axis=1), 1)
        return Scores(((1.0 - np.sqrt(var)) * MAX_SCORE).astype(np.int64))
