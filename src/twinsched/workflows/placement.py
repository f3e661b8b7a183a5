"""List-scheduling placement: tasks in a given order, each on the node where it ends first.

Every scheduler of this package is an *order* (a priority rule) plus this one placement
routine, so they differ only where they should. For the next task, all nodes are scored
at once with NumPy: its inputs arrive at ``finish(parent) + transfer`` (nothing to move when
the parent ran on the same node; external inputs come from their tier), it starts when
enough cores and GPUs are free, and its finish time is ``start + work / speed`` (plus the
delivery of outputs that must reach a given tier). Cores and GPUs are slots: per node, a
sorted row of the times each slot becomes free, so a task asking for ``c`` cores can start at
the ``c``-th smallest. With ``insertion`` (HEFT and CPOP as published), a one-core task may
also go into an idle gap a slot left earlier, when that ends it sooner. Memory is checked
against each node's capacity only. A task that no node can host makes the whole schedule
unschedulable: a value with a reason, not an error.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np

from twinsched.model.cluster import F64, I64, BoolA
from twinsched.workflows.dag import DAG
from twinsched.workflows.platform import Platform


@dataclass(frozen=True)
class Schedule:
    """Where and when every task runs; ``reason`` says why when it could not be built."""

    scheduler: str
    node: I64
    start: F64
    finish: F64  # end of the run on the node
    done: F64  # finish plus delivery of outputs that must reach a tier
    order: I64
    reason: str = ""
    meta: dict[str, object] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.reason

    @property
    def makespan(self) -> float:
        if not self.ok:
            return float("inf")
        return float(self.done.max(initial=0.0))


def unschedulable(dag: DAG, platform: Platform, scheduler: str) -> Schedule | None:
    """An unschedulable value when some task fits no node at all, else None."""
    classes, eligible = platform.eligibility(dag)
    empty: BoolA = ~np.any(eligible, axis=1)
    if not empty.any():
        return None
    t = int(np.flatnonzero(empty[classes])[0])
    c = dag.constraints[t]
    reason = (
        f"task {dag.names[t]}: 0/{platform.n} nodes are eligible (needs {c.cores} cores, "
        f"{c.memory_mib} MiB, {c.gpus} GPUs, tier {c.tier or 'any'}, labels {list(c.labels)})"
    )
    nan = np.full(dag.n, np.nan)
    return Schedule(scheduler, np.full(dag.n, -1), nan, nan, nan, np.zeros(0, np.int64), reason)


def external_ready(dag: DAG, platform: Platform) -> tuple[F64, F64]:
    """(T, tiers) arrival time of each task's external inputs on a node of each tier, and
    (T, tiers) time to deliver its outputs from a node of each tier to where they must go."""
    tiers = np.arange(len(platform.tier_names))
    arrive = np.zeros((dag.n, tiers.size))
    deliver = np.zeros((dag.n, tiers.size))
    for d in dag.inputs:
        cost = platform.transfer_s(d.size_bytes, platform.tier_index(d.location), tiers)
        arrive[d.task] = np.maximum(arrive[d.task], cost)
    for d in dag.outputs:
        cost = platform.transfer_s(d.size_bytes, tiers, platform.tier_index(d.location))
        deliver[d.task] = np.maximum(deliver[d.task], cost)
    return arrive, deliver


class CoreSlots:
    """Per node, when each core slot becomes free (rows sorted, with slot ids alongside) and,
    for insertion, each slot's busy intervals (sorted and disjoint)."""

    def __init__(self, cores: I64, insertion: bool) -> None:
        width = int(cores.max(initial=1))
        self.free = np.where(np.arange(width)[None, :] < cores[:, None], 0.0, np.inf)
        self.ids = np.tile(np.arange(width, dtype=np.int64), (cores.size, 1))
        self.insertion = insertion
        # Per node, the latest start of any busy interval: no gap can end after it.
        self.latest_start = np.full(cores.size, -np.inf)
        self._slot_latest = np.full(self.free.shape, -np.inf)  # same, per (node, slot id)
        self._starts: dict[tuple[int, int], list[float]] = {}
        self._ends: dict[tuple[int, int], list[float]] = {}

    def take(self, n: int, c: int, begin: float, end: float) -> None:
        """Run ``c`` cores of node ``n`` from ``begin`` to ``end`` on its earliest-free slots."""
        used = self.ids[n, :c].tolist()
        row, ids = self.free[n], self.ids[n]
        row[:c] = end
        order = np.argsort(row, kind="stable")
        row[:] = row[order]
        ids[:] = ids[order]
        if self.insertion:
            self.latest_start[n] = max(self.latest_start[n], begin)
            self._slot_latest[n, used] = begin
            for k in used:
                self._starts.setdefault((n, k), []).append(begin)
                self._ends.setdefault((n, k), []).append(end)

    def gap(self, n: int, ready: float, duration: float, latest: float) -> tuple[float, int] | None:
        """(start, slot) of the earliest idle gap of node ``n`` that fits ``duration`` after
        ``ready``, before some later busy interval of the same slot, and starts before
        ``latest``; None if there is none."""
        best: tuple[float, int] | None = None
        for k in np.flatnonzero(self._slot_latest[n] >= ready + duration).tolist():
            starts, ends = self._starts[(n, k)], self._ends[(n, k)]
            j = bisect_right(ends, ready)
            previous = ends[j - 1] if j else 0.0
            for a, b in zip(starts[j:], ends[j:], strict=True):
                begin = previous if previous > ready else ready
                if begin >= latest:
                    break
                if begin + duration <= a:
                    best, latest = (begin, k), begin  # later slots must start sooner
                    break
                previous = b
        return best

    def insert(self, n: int, k: int, begin: float, end: float) -> None:
        """Fill a gap found by :meth:`gap` (the slot's free time does not change)."""
        starts, ends = self._starts[(n, k)], self._ends[(n, k)]
        j = bisect_right(ends, begin)  # after zero-length intervals that share its start
        starts.insert(j, begin)
        ends.insert(j, end)


def place(
    dag: DAG,
    platform: Platform,
    order: I64,
    scheduler: str,
    pinned: I64 | None = None,
    *,
    insertion: bool = False,
) -> Schedule:
    """Place tasks in ``order`` (a topological order), each at its earliest finish time.

    ``pinned[t] >= 0`` forces task ``t`` onto that node (CPOP's critical-path processor).
    ``insertion`` lets one-core, GPU-less tasks fill earlier idle gaps.
    """
    blocked = unschedulable(dag, platform, scheduler)
    if blocked is not None:
        return blocked
    placer = _ListPlacer(dag, platform, pinned, insertion)
    for t in order.tolist():
        placer.place(t)
    return Schedule(
        scheduler, placer.node, placer.start, placer.finish, placer.done, order.astype(np.int64)
    )


class _ListPlacer:
    """The tasks placed so far, and where the next one finishes earliest."""

    def __init__(self, dag: DAG, platform: Platform, pinned: I64 | None, insertion: bool):
        self.dag, self.platform, self.insertion = dag, platform, insertion
        self.classes, self.eligible = platform.eligibility(dag)
        self.arrive, self.deliver = external_ready(dag, platform)
        self.has_delivery = bool(dag.outputs)
        node_tier = self.node_tier = platform.tier
        self.lat_to_node = platform.latency_s[:, node_tier]  # (tiers, N)
        self.inv_bw_to_node = 1.0 / platform.bandwidth_bytes_s[:, node_tier]
        self.inv_speed = 1.0 / platform.speed
        self.slots = CoreSlots(platform.cores, insertion)
        gpu_rank = np.arange(max(1, int(platform.gpus.max())))[None, :]
        self.gpu_free = np.where(gpu_rank < platform.gpus[:, None], 0.0, np.inf)
        p_off, self.p_par, self.p_edge = dag._parents_csr
        self.off_l = p_off.tolist()
        self.cores = [c.cores for c in dag.constraints]
        self.gpus = [c.gpus for c in dag.constraints]
        self.work = dag.work_s.tolist()
        self.pin = pinned.tolist() if pinned is not None else [-1] * dag.n
        self.node = np.full(dag.n, -1, dtype=np.int64)
        self.start = np.zeros(dag.n)
        self.finish = np.zeros(dag.n)
        self.done = np.zeros(dag.n)

    def ready(self, t: int) -> F64:
        """When task ``t``'s inputs can be on each node: external ones and its parents'."""
        lo, hi = self.off_l[t], self.off_l[t + 1]
        ready: F64 = self.arrive[t][self.node_tier]
        if hi > lo:
            parents = self.p_par[lo:hi]
            sizes = self.dag.size_bytes[self.p_edge[lo:hi]]
            where = self.node[parents]
            src = self.node_tier[where]
            finish = self.finish[parents]
            times = (
                finish[:, None] + self.lat_to_node[src] + sizes[:, None] * self.inv_bw_to_node[src]
            )
            times[np.arange(hi - lo), where] = finish  # same node: nothing moves
            ready = np.maximum(ready, times.max(axis=0))
        return ready

    def allowed(self, t: int) -> BoolA:
        """The nodes task ``t`` may go to: its class's eligible nodes, or its pinned one."""
        allowed: BoolA = self.eligible[self.classes[t]].copy()
        if self.pin[t] >= 0:
            allowed[:] = False
            allowed[self.pin[t]] = True
        return allowed

    def place(self, t: int) -> None:
        """Task ``t`` on the node where it (and its delivery) ends first; a gap if allowed."""
        ready = self.ready(t)
        c, g = self.cores[t], self.gpus[t]
        begin = np.maximum(ready, self.slots.free[:, c - 1])
        if g:
            begin = np.maximum(begin, self.gpu_free[:, g - 1])
        duration = self.work[t] * self.inv_speed
        end = begin + duration
        extra = self.deliver[t][self.node_tier] if self.has_delivery else np.zeros(self.platform.n)
        score = end + extra
        allowed = self.allowed(t)
        score[~allowed] = np.inf
        n = int(np.argmin(score))
        gap: tuple[int, float, int] | None = None
        if self.insertion and c == 1 and not g:
            gap = _best_gap(self.slots, float(score[n]), ready, duration, extra, allowed)
        if gap is not None:
            n, first, slot = gap
            self.node[t], self.start[t], self.finish[t] = n, first, first + duration[n]
            self.slots.insert(n, slot, first, self.finish[t])
        else:
            self.node[t], self.start[t], self.finish[t] = n, begin[n], end[n]
            self.slots.take(n, c, float(begin[n]), float(end[n]))
            if g:
                grow = self.gpu_free[n]
                grow[:g] = end[n]
                grow.sort()
        self.done[t] = self.finish[t] + extra[n]


def _best_gap(
    slots: CoreSlots, best: float, ready: F64, duration: F64, extra: F64, allowed: BoolA
) -> tuple[int, float, int] | None:
    """(node, start, slot) of an idle gap that ends the task before ``best``, or None.

    Only nodes whose lower bound (inputs ready, then run at once) beats ``best`` are scanned,
    most promising first, and the scan stops as soon as no node left can do better.
    """
    bound = ready + duration + extra
    fits = slots.latest_start >= ready + duration
    candidates = np.flatnonzero(allowed & (bound < best) & fits)
    found: tuple[int, float, int] | None = None
    for m in candidates[np.argsort(bound[candidates], kind="stable")].tolist():
        if bound[m] >= best:
            break
        latest = best - float(duration[m]) - float(extra[m])
        hit = slots.gap(m, float(ready[m]), float(duration[m]), latest)
        if hit is not None and hit[0] + duration[m] + extra[m] < best:
            best = hit[0] + duration[m] + extra[m]
            found = (m, hit[0], hit[1])
    return found
