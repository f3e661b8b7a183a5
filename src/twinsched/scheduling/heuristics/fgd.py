"""Fragmentation Gradient Descent (Weng et al., USENIX ATC'23), from the protocol document.

A node's fragmentation for a *typical pod* t is the free GPU milli that t cannot use: all of
it when t cannot run there at all, else the GPUs with less than t's milli free. FGD places a
pod where the weighted fragmentation grows least: ``int(100 sigmoid((F - F') / 1000))``.
"""

from __future__ import annotations

import bisect
import functools
import math
import struct
import sys
from collections.abc import Callable

import numpy as np

from twinsched.metrics.fragmentation import (
    TypicalPods,
    fragmentation,
    row_fragmentation,
    typical_pods,
)
from twinsched.model.cluster import F64, I64, MILLI_PER_GPU, BoolA
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import BaseScore, PodView, RunContext, Scores
from twinsched.scheduling.plugin_scheduler import PluginScheduler
from twinsched.scheduling.rows import distinct_rows

DEDUP_FROM = 256  # below this many nodes, finding distinct rows costs more than it saves
MEMO_ROWS = 1 << 12  # node rows whose fragmentation one node's scoring remembers (then forgets)
NEAR_INTEGER = 1e-9  # math.exp and np.exp agree far closer than this


def fgd_score(before: F64, after: F64) -> I64:
    return (100.0 / (1.0 + np.exp(-(before - after) / 1000.0))).astype(np.int64)


def one_fgd_score(before: float, after: float) -> int:
    """:func:`fgd_score` of one pair with ``math.exp``, unless the value lies so near an
    integer that NumPy's ``exp`` (which may differ in the last bit) could truncate it
    otherwise: then with :func:`fgd_score` itself."""
    if before == after:
        return 50  # exp(0) is 1 to the bit in both
    value = 100.0 / (1.0 + math.exp(-(before - after) / 1000.0))
    if abs(value - round(value)) < NEAR_INTEGER:
        return int(fgd_score(np.array([before]), np.array([after]))[0])
    return int(value)


def whole_gpus_taken(gpu_left: I64, count: int) -> I64:
    """``gpu_left`` after taking the ``count`` lowest-index free GPUs of every row."""
    free = gpu_left == MILLI_PER_GPU
    take = free & (np.cumsum(free, axis=1) <= count)
    return np.where(take, 0, gpu_left)


def share_candidates(left: I64, milli: int) -> tuple[I64, I64]:
    """(row, GPU) pairs a share pod may take: one GPU per distinct free share that fits.

    GPUs of a row with equal free milli are interchangeable, so only the first is kept.
    Sorted by row, then GPU.
    """
    earlier_equal = (left[:, :, None] == left[:, None, :]) & _earlier(left.shape[1])
    candidate = (left >= milli) & ~earlier_equal.any(axis=1)
    rows, gpus = np.nonzero(candidate)
    return rows.astype(np.int64), gpus.astype(np.int64)


@functools.cache
def _row_format(g: int) -> struct.Struct:
    """A node row as bytes: CPU level, GPU model, each GPU's free milli (at most 1000)."""
    return struct.Struct(f"<qh{g}H")


@functools.cache
def _earlier(g: int) -> BoolA:
    """``[0, i, j]``: GPU i comes before GPU j (of ``g``), broadcast over rows (read-only)."""
    mask: BoolA = np.tri(g, k=-1, dtype=bool).T[None]
    mask.flags.writeable = False
    return mask


class FragmentationGradient(BaseScore):
    name = "fgd"
    shape_columns = ("cpu", "gpus")

    def __init__(self) -> None:
        self.typical: TypicalPods | None = None
        self._one: OneScore | None = None  # the compiled single-node score (prepare)
        self._frag: dict[bytes, float] = {}  # (CPU level, model, GPUs' free milli) -> F
        self._cpus: list[int] = []  # the typical pods' distinct CPU requests, ascending

    def prepare(self, state: ClusterState, ctx: RunContext) -> None:
        self.typical = typical_pods(ctx.workload)
        self._frag = {}
        self._cpus = sorted(set(self.typical.cpu_milli.tolist()))
        self._one = _compiled_one(self.typical)

    def score_one(self, state: ClusterState, pod: PodView, node: int) -> tuple[int, int | None]:
        """:meth:`score` of one node: compiled (numba, :func:`_compiled_one`) or in plain
        Python, the same integers either way."""
        if self._one is not None:
            return self._one(state, pod, node)
        return self._score_one(state, pod, node)

    def _score_one(self, state: ClusterState, pod: PodView, node: int) -> tuple[int, int | None]:
        """:meth:`score` of one node in plain Python: fragmentation of the rows before and
        after, remembered per row (an exact function of it), then :func:`one_fgd_score`."""
        _scored[0] += 1
        left = state.gpu_left[node].tolist()
        cpu, model = int(state.cpu_free[node]), int(state.nodes.gpu_model[node])
        before = self._row_fragmentation(cpu, model, left)
        cpu_after = cpu - pod.cpu_milli
        if not pod.is_share:
            after = left
            if pod.gpu_count:
                free = [g for g, v in enumerate(left) if v == MILLI_PER_GPU][: pod.gpu_count]
                after = [0 if g in free else v for g, v in enumerate(left)]
            return one_fgd_score(before, self._row_fragmentation(cpu_after, model, after)), None
        g, milli = len(left), pod.gpu_milli
        best, met = -1, set()
        for gpu, v in enumerate(left):  # one GPU per distinct free share (share_candidates)
            if v < milli or v in met:
                continue
            met.add(v)
            after = left.copy()
            after[gpu] -= milli
            score = one_fgd_score(before, self._row_fragmentation(cpu_after, model, after))
            best = max(best, score * (g + 1) + (g - gpu))
        if best < 0:
            return 0, -1
        return best // (g + 1), g - best % (g + 1)

    def _row_fragmentation(self, cpu: int, model: int, left: list[int]) -> float:
        # A row's fragmentation reads its free CPU only through ``cpu >= t.cpu`` for each
        # typical pod t: rows whose CPU passes the same typical requests (the same *level*)
        # have the same value, to the bit, so they share one memo entry.
        level = bisect.bisect_right(self._cpus, cpu)
        key = _row_format(len(left)).pack(level, model, *left)  # a few bytes, not a tuple
        frag = self._frag.get(key)
        if frag is None:
            if len(self._frag) >= MEMO_ROWS:
                self._frag.clear()
            assert self.typical is not None, "prepare() first"
            frag = self._frag[key] = row_fragmentation(cpu, left, model, self.typical)
        return frag

    def score(self, state: ClusterState, pod: PodView, nodes: I64) -> Scores:
        model = state.nodes.gpu_model[nodes]
        left, cpu = state.gpu_left[nodes], state.cpu_free[nodes]
        if nodes.size <= DEDUP_FROM:
            return self._score_rows(pod, cpu, left, model)
        # Many nodes are in identical states: score each distinct (CPU, model, GPUs) row once.
        rows = np.concatenate([cpu[:, None], model[:, None], left], axis=1)
        distinct, inverse = distinct_rows(rows)
        scores = self._score_rows(pod, distinct[:, 0], distinct[:, 2:], distinct[:, 1])
        gpu = None if scores.share_gpu is None else scores.share_gpu[inverse]
        return Scores(scores.values[inverse], gpu)

    def _score_rows(self, pod: PodView, cpu: I64, left: I64, model: I64) -> Scores:
        cpu_after = cpu - pod.cpu_milli
        if pod.is_share:
            return self._share(cpu, left, model, cpu_after, pod.gpu_milli)
        after_left = whole_gpus_taken(left, pod.gpu_count) if pod.gpu_count else left
        both = self._fragmentation(
            np.concatenate([cpu, cpu_after]),
            np.concatenate([left, after_left]),
            np.concatenate([model, model]),
        )
        return Scores(fgd_score(both[: cpu.size], both[cpu.size :]))

    def _fragmentation(self, cpu: I64, left: I64, model: I64) -> F64:
        assert self.typical is not None, "prepare() first"
        return fragmentation(cpu, left, model, self.typical)

    def _share(self, cpu: I64, left: I64, model: I64, cpu_after: I64, milli: int) -> Scores:
        """Try every fitting GPU (one per distinct free share: equal shares score alike)."""
        k, g = left.shape
        rows, gpus = share_candidates(left, milli)
        values = np.zeros(k, dtype=np.int64)
        chosen = np.full(k, -1, dtype=np.int64)
        if rows.size == 0:
            return Scores(values, chosen)
        after_left = left[rows].copy()
        after_left[np.arange(rows.size), gpus] -= milli
        both = self._fragmentation(
            np.concatenate([cpu, cpu_after[rows]]),
            np.concatenate([left, after_left]),
            np.concatenate([model, model[rows]]),
        )
        score = fgd_score(both[:k][rows], both[k:])
        key = score * (g + 1) + (g - gpus)  # best score, then lowest GPU index
        starts = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
        best = np.maximum.reduceat(key, starts)
        values[rows[starts]] = best // (g + 1)
        chosen[rows[starts]] = g - best % (g + 1)
        return Scores(values, chosen)


OneScore = Callable[[ClusterState, PodView, int], tuple[int, "int | None"]]
# Importing numba costs about 0.6 s of CPU and 120 MB, and the compiled score saves about
# 7 us a call: a process compiles once it has scored this many nodes in plain Python (or
# has numba loaded already). The integers are the same either way.
COMPILE_AFTER = 100_000
_scored = [0]  # single-node FGD scores computed in plain Python by this process


def _compiled_one(typical: TypicalPods) -> OneScore | None:
    """FGD's score of one node by the look-ahead's compiled kernel, where the compiled
    kernels run (:func:`~twinsched.scheduling.lookahead.compiled.wanted`) and it pays
    (:data:`COMPILE_AFTER`), else None."""
    from twinsched.scheduling.lookahead import compiled

    if not ("numba" in sys.modules or _scored[0] >= COMPILE_AFTER) or not compiled.wanted():
        return None
    kernel = compiled.kernels().fgd_one
    typ, values = compiled.typical_columns(typical)
    allowed, total = typical.allowed_by_model, typical.total
    rows: dict[int, I64] = {}  # per pod class: (CPU, memory, GPU count, GPU milli)
    scratch = [np.empty((3, values.size), dtype=np.int64)]  # rows of the kernel's work

    def one(state: ClusterState, pod: PodView, node: int) -> tuple[int, int | None]:
        work = scratch[0]
        if work.shape[1] < state.gpu_left.shape[1]:
            work = scratch[0] = np.empty((3, state.gpu_left.shape[1]), dtype=np.int64)
        row = rows.get(pod.cls)
        if row is None:
            row = rows[pod.cls] = np.array(
                [pod.cpu_milli, pod.memory_mib, pod.gpu_count, pod.gpu_milli], dtype=np.int64
            )
        runs = allowed[state.nodes.gpu_model.item(node) + 1]
        score, gpu = kernel(state.cpu_free.item(node), state.gpu_left[node], runs, typ,
                            values, total, row, work)  # fmt: skip
        if not pod.is_share:
            return score, None
        return (0, -1) if score < 0 else (score, gpu)

    return one


def fgd_scheduler() -> PluginScheduler:
    """FGD alone, as the registry's ``fgd``: the default hint, base and fallback of the
    composites built without the registry (benches, tests)."""
    return PluginScheduler(FragmentationGradient.name, [(FragmentationGradient(), 1)])
