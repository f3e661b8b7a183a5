"""GPU fragmentation as defined by the FGD study (pure functions).

A node's fragmentation for a *typical pod* t is the free GPU milli that t cannot use: all of
it when t cannot run there at all, else the GPUs with less than t's milli free.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from twinsched.model.cluster import F64, I64, U64, BoolA, Pods

COVERAGE = 0.95


@dataclass(frozen=True)
class TypicalPods:
    """The most frequent pod shapes of a workload and how many pods each has."""

    cpu_milli: I64
    gpu_milli: I64
    gpu_count: I64
    model_mask: U64
    count: I64

    @property
    def n(self) -> int:
        return int(self.count.size)

    @cached_property
    def total(self) -> int:
        """How many pods the typical shapes have together."""
        return int(self.count.sum())

    @cached_property
    def weight(self) -> F64:
        """Each shape's share of the typical pods (summing to 1)."""
        weight: F64 = self.count / self.total
        return weight

    @cached_property
    def milli_values(self) -> tuple[I64, I64]:
        """Distinct GPU milli values, and each typical pod's index into them."""
        values, index = np.unique(self.gpu_milli, return_inverse=True)
        return values, index.reshape(-1)

    @cached_property
    def allowed_by_model(self) -> BoolA:
        """``[model + 1, t]``: typical pod t may run on that GPU model (row 0: no GPU)."""
        models = np.arange(64, dtype=np.uint64)[:, None]
        allowed = (self.model_mask[None, :] == 0) | (
            ((self.model_mask[None, :] >> models) & 1) == 1
        )
        table = np.vstack([np.zeros((1, self.n), dtype=bool), allowed])
        return table & (self.gpu_count[None, :] > 0)

    def runnable(self, model: int) -> tuple[tuple[int, tuple[tuple[int, int, int], ...]], ...]:
        """Per GPU milli value, the (CPU, GPU count, pods) of each typical pod allowed on
        ``model`` (-1: no GPU), as Python ints: the table :func:`row_fragmentation` reads."""
        table = self.__dict__.setdefault("_runnable", {})
        got: tuple[tuple[int, tuple[tuple[int, int, int], ...]], ...] | None = table.get(model)
        if got is None:
            allowed = self.allowed_by_model[model + 1]
            columns = (self.cpu_milli, self.gpu_count, self.count)
            got = table[model] = tuple(
                (milli, tuple(zip(*(c[t].tolist() for c in columns), strict=True)))
                for milli in np.unique(self.gpu_milli[allowed]).tolist()
                for t in [np.flatnonzero(allowed & (self.gpu_milli == milli))]
            )
        return got


def typical_pods(pods: Pods, coverage: float = COVERAGE) -> TypicalPods:
    """Group by (CPU, GPU milli, GPU count, models); keep the largest groups up to ``coverage``."""
    keys = np.stack(
        [pods.cpu_milli, pods.gpu_milli, pods.gpu_count, pods.model_mask.astype(np.int64)], axis=1
    )
    shapes, counts = np.unique(keys, axis=0, return_counts=True)
    # Most frequent first; on equal counts the larger spec (GPU request, then CPU) first.
    order = np.lexsort((-shapes[:, 0], -(shapes[:, 1] * shapes[:, 2]), -counts))
    shapes, counts = shapes[order], counts[order]
    covered = np.cumsum(counts) / counts.sum()
    keep = int(np.searchsorted(covered, coverage - 1e-12) + 1)
    shapes, counts = shapes[:keep], counts[:keep]
    return TypicalPods(
        cpu_milli=shapes[:, 0].copy(),
        gpu_milli=shapes[:, 1].copy(),
        gpu_count=shapes[:, 2].copy(),
        model_mask=shapes[:, 3].astype(np.uint64),
        count=counts.astype(np.int64),
    )


def fragmentation(cpu_free: I64, gpu_left: I64, gpu_model: I64, typical: TypicalPods) -> F64:
    """Expected fragmented milli-GPU per node (rows of ``gpu_left``) under the typical pods.

    The GPU part depends on a typical pod only through its milli, so it is computed once
    per distinct milli value and then spread over the typical pods.
    """
    idle = gpu_left.sum(axis=1)
    milli, index = typical.milli_values
    fits = gpu_left[:, None, :] >= milli[None, :, None]  # node x milli value x GPU
    n_fit = fits.sum(axis=2)[:, index]
    usable = (gpu_left[:, None, :] * fits).sum(axis=2)[:, index]
    runs = (
        typical.allowed_by_model[gpu_model + 1]
        & (cpu_free[:, None] >= typical.cpu_milli[None, :])
        & (n_fit >= typical.gpu_count[None, :])
    )
    # fragment = idle where t cannot run, else idle - usable; weighted by the pod counts in
    # integers, so a node's value is exact whatever rows it is computed with (a float
    # product's last bit depends on the batch, and FGD's score of "no change" is 50 only
    # when before and after are equal to the bit)
    frag: F64 = (idle * typical.total - (runs * usable) @ typical.count) / typical.total
    return frag


def row_fragmentation(
    cpu_free: int, gpu_left: list[int], gpu_model: int, typical: TypicalPods
) -> float:
    """:func:`fragmentation` of one node with Python ints: the same integers, the same one
    division (both operands exact in a double), so the same float to the bit."""
    idle = sum(gpu_left)
    if idle == 0:
        return 0.0
    used = 0
    for milli, pods in typical.runnable(gpu_model):
        fitting = [v for v in gpu_left if v >= milli]
        usable = sum(fitting)
        for cpu, count, weight in pods:
            if cpu_free >= cpu and len(fitting) >= count:
                used += usable * weight
    total = typical.total
    return (idle * total - used) / total
