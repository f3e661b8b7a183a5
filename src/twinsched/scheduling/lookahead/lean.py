"""FGD as pure functions over node rows, one pod class per row (the rollouts' base policy).

The live scheduler scores one pod against many nodes; a batch of rollouts scores many
(rollout, node) rows at once, each row for the pod its own rollout places next. Scores are
the same integers FGD gives (:func:`fragmentation` is exact per row whatever the batch).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from twinsched.metrics.fragmentation import TypicalPods, fragmentation
from twinsched.model.cluster import I64, MILLI_PER_GPU, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.framework import CLASS_COLUMNS, PodView
from twinsched.scheduling.heuristics.fgd import fgd_score


@dataclass
class ClassTable:
    """Pod classes seen by the look-ahead: requests per class and static eligibility."""

    views: list[PodView]  # one representative per class, ``cls`` = its row here
    cpu: I64
    mem: I64
    count: I64
    milli: I64
    static: BoolA  # [class, node]: GPU model, labels and latency allow it

    @property
    def request(self) -> I64:
        return self.count * self.milli

    @cached_property
    def rows(self) -> I64:
        """(CPU, memory, GPU count, GPU milli) per class, one row each (compiled kernels)."""
        rows: I64 = np.ascontiguousarray(np.stack([self.cpu, self.mem, self.count, self.milli], 1))
        return rows


class ClassIndex:
    """Numbers pod classes by their :data:`CLASS_COLUMNS` (its own numbering, shared by the
    look-ahead's base scheduler and memos, never mixed with the run's class ids)."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self._ids: dict[tuple[object, ...], int] = {}
        self._views: list[PodView] = []
        self._table: ClassTable | None = None

    def view(self, pod: PodView) -> PodView:
        """``pod`` renumbered into this index (a new class gets the next id)."""
        key = tuple(getattr(pod, c) for c in CLASS_COLUMNS)
        cls = self._ids.get(key)
        if cls is None:
            cls = self._ids[key] = len(self._views)
            self._views.append(_renumbered(pod, cls))
            self._table = None
        return _renumbered(pod, cls) if pod.cls != cls else pod

    def table(self) -> ClassTable:
        """The classes so far as arrays (rebuilt only after a new class was added)."""
        if self._table is None or len(self._table.views) != len(self._views):
            views = list(self._views)
            everything = np.arange(self.state.nodes.n, dtype=np.int64)
            static = np.stack([filters.static_rules(self.state, v, everything) for v in views])
            cpu, mem, count, milli = (
                np.array([getattr(v, c) for v in views], dtype=np.int64)
                for c in ("cpu_milli", "memory_mib", "gpu_count", "gpu_milli")
            )
            self._table = ClassTable(views, cpu, mem, count, milli, static)
        return self._table


def _renumbered(pod: PodView, cls: int) -> PodView:
    return PodView(
        pod.index, cls, pod.cpu_milli, pod.memory_mib, pod.gpu_count, pod.gpu_milli,
        pod.model_mask, pod.required_labels, pod.rejected_labels, pod.preferred_labels,
        pod.retracted_labels, pod.data_pool, pod.max_latency_ms, pod.priority,
    )  # fmt: skip


def fits_rows(
    cpu: I64, mem: I64, left: I64, pcpu: I64, pmem: I64, pcount: I64, pmilli: I64
) -> BoolA:
    """Row r has room for its pod (CPU, memory, GPUs); static rules are checked apart."""
    ok: BoolA = (cpu >= pcpu) & (mem >= pmem)
    share = (pcount == 1) & (pmilli < MILLI_PER_GPU)
    whole_free = (left == MILLI_PER_GPU).sum(axis=1)
    gpu_ok = np.where(share, left.max(axis=1, initial=0) >= pmilli, whole_free >= pcount)
    fits: BoolA = ok & ((pcount == 0) | gpu_ok)
    return fits


def take_whole(left: I64, count: I64) -> I64:
    """Each row's ``left`` after its ``count`` lowest-index free GPUs are taken."""
    free = left == MILLI_PER_GPU
    take = free & (np.cumsum(free, axis=1) <= count[:, None])
    return np.where(take, 0, left)


def fgd_rows(
    typical: TypicalPods, cpu: I64, left: I64, model: I64, pcpu: I64, pcount: I64, pmilli: I64
) -> tuple[I64, I64]:
    """FGD's score of placing row r's pod on row r's node, and the GPU a share pod takes
    (-1 for others): the best-scoring fitting GPU, the lowest index on ties.

    Rows must fit their pods (:func:`fits_rows`).
    """
    r, g = left.shape
    share = (pcount == 1) & (pmilli < MILLI_PER_GPU)
    plain = np.flatnonzero(~share)
    after_plain = take_whole(left[plain], pcount[plain])
    srows, sgpus = np.nonzero(share[:, None] & (left >= pmilli[:, None]))
    after_share = left[srows].copy()
    after_share[np.arange(srows.size), sgpus] -= pmilli[srows]
    cpu_after = cpu - pcpu
    frag = fragmentation(
        np.concatenate([cpu, cpu_after[plain], cpu_after[srows]]),
        np.concatenate([left, after_plain, after_share]),
        np.concatenate([model, model[plain], model[srows]]),
        typical,
    )
    before, rest = frag[:r], frag[r:]
    score = np.zeros(r, dtype=np.int64)
    gpu = np.full(r, -1, dtype=np.int64)
    score[plain] = fgd_score(before[plain], rest[: plain.size])
    if srows.size:
        s_score = fgd_score(before[srows], rest[plain.size :])
        key = s_score * (g + 1) + (g - sgpus)  # best score, then lowest GPU index
        best = np.full(r, -1, dtype=np.int64)
        np.maximum.at(best, srows, key)
        has = best >= 0
        score[has] = best[has] // (g + 1)
        gpu[has] = g - best[has] % (g + 1)
    return score, gpu
