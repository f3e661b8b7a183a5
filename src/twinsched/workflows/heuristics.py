"""The built-in workflow schedulers: COMPSs priorities, HEFT, CPOP and a portfolio.

* ``spt``, ``lpt``, ``lnsnl``, ``lns``: the COMPSs priority heuristics. Tasks go level by
  level (a level is the depth in the DAG, so a level is the ready queue once the previous
  levels are placed); inside a level: shortest work first, longest work first, most
  successors in the next level first, most successors overall (all descendants) first.
* ``heft`` (Topcuoglu et al., 2002): ready tasks by decreasing upward rank, placed with
  insertion into idle gaps.
* ``cpop`` (same paper): ready tasks by upward + downward rank; the critical path runs on
  the one node that runs it fastest; insertion too.
* ``portfolio``: runs all of the above and keeps the schedule with the smallest makespan.

Ties always go to the lower task index, so every scheduler is deterministic. Placement is
:func:`twinsched.workflows.placement.place` for all of them. The COMPSs rules place
append-only, like a runtime that starts tasks as they come; HEFT and CPOP use insertion.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from twinsched.model.cluster import F64, I64
from twinsched.workflows.dag import DAG
from twinsched.workflows.placement import Schedule, place, unschedulable
from twinsched.workflows.platform import Platform

PORTFOLIO = ("heft", "cpop", "lns", "lnsnl", "lpt", "spt")


def level_order(dag: DAG, key: F64 | I64) -> I64:
    """Tasks by level, then by ``key`` ascending, then by index."""
    order: I64 = np.lexsort((np.arange(dag.n), key, dag.level)).astype(np.int64)
    return order


def ready_order(dag: DAG, priority: F64) -> I64:
    """A ready-queue order: always the ready task with the highest priority (lowest index)."""
    indegree = np.bincount(dag.child, minlength=dag.n).tolist()
    prio = (-priority).tolist()
    off, kids, _ = dag._children_csr
    off_l, kids_l = off.tolist(), kids.tolist()
    heap = [(prio[t], t) for t in range(dag.n) if indegree[t] == 0]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, t = heapq.heappop(heap)
        order.append(t)
        for c in kids_l[off_l[t] : off_l[t + 1]]:
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(heap, (prio[c], c))
    return np.array(order, dtype=np.int64)


def mean_costs(dag: DAG, platform: Platform) -> tuple[F64, F64]:
    """HEFT's average costs: work over the mean speed of each task's eligible nodes, and
    each edge's transfer time averaged over all pairs of distinct nodes."""
    classes, eligible = platform.eligibility(dag)
    inv = 1.0 / platform.speed
    counts = eligible.sum(axis=1)
    mean_inv = np.where(counts > 0, (eligible * inv).sum(axis=1) / np.maximum(counts, 1), 0.0)
    work: F64 = dag.work_s * mean_inv[classes]
    tiers = len(platform.tier_names)
    per_tier = np.bincount(platform.tier, minlength=tiers).astype(np.float64)
    pairs = np.outer(per_tier, per_tier) - np.diag(per_tier)  # ordered pairs, distinct nodes
    weight = pairs / max(pairs.sum(), 1.0)
    latency = float((weight * platform.latency_s).sum())
    inv_bw = float((weight / platform.bandwidth_bytes_s).sum())
    comm: F64 = latency + dag.size_bytes * inv_bw
    return work, comm


def upward_rank(dag: DAG, work: F64, comm: F64) -> F64:
    """Longest path from each task to an exit task, including the task itself."""
    off, kids, edges = dag._children_csr
    off_l, kids_l, edges_l = off.tolist(), kids.tolist(), edges.tolist()
    w, cm = work.tolist(), comm.tolist()
    rank = [0.0] * dag.n
    for t in reversed(dag.topological_order.tolist()):
        lo, hi = off_l[t], off_l[t + 1]
        tail = max((cm[edges_l[k]] + rank[kids_l[k]] for k in range(lo, hi)), default=0.0)
        rank[t] = w[t] + tail
    return np.array(rank)


def downward_rank(dag: DAG, work: F64, comm: F64) -> F64:
    """Longest path from an entry task to each task, excluding the task itself."""
    off, pars, edges = dag._parents_csr
    off_l, pars_l, edges_l = off.tolist(), pars.tolist(), edges.tolist()
    w, cm = work.tolist(), comm.tolist()
    rank = [0.0] * dag.n
    for t in dag.topological_order.tolist():
        lo, hi = off_l[t], off_l[t + 1]
        rank[t] = max(
            (rank[pars_l[k]] + w[pars_l[k]] + cm[edges_l[k]] for k in range(lo, hi)), default=0.0
        )
    return np.array(rank)


class OrderScheduler:
    """A priority rule turned into a scheduler by the shared EFT placement."""

    def __init__(
        self, name: str, order: Callable[[DAG, Platform], I64], insertion: bool = False
    ) -> None:
        self.name = name
        self._order = order
        self.insertion = insertion

    def schedule(self, dag: DAG, platform: Platform) -> Schedule:
        order = self._order(dag, platform)
        return place(dag, platform, order, self.name, insertion=self.insertion)


def _spt(dag: DAG, platform: Platform) -> I64:
    return level_order(dag, dag.work_s)


def _lpt(dag: DAG, platform: Platform) -> I64:
    return level_order(dag, -dag.work_s)


def _lnsnl(dag: DAG, platform: Platform) -> I64:
    return level_order(dag, -dag.successors_next_level)


def _lns(dag: DAG, platform: Platform) -> I64:
    return level_order(dag, -dag.descendants)


def _heft(dag: DAG, platform: Platform) -> I64:
    return ready_order(dag, upward_rank(dag, *mean_costs(dag, platform)))


def spt() -> OrderScheduler:
    return OrderScheduler("spt", _spt)


def lpt() -> OrderScheduler:
    return OrderScheduler("lpt", _lpt)


def lnsnl() -> OrderScheduler:
    return OrderScheduler("lnsnl", _lnsnl)


def lns() -> OrderScheduler:
    return OrderScheduler("lns", _lns)


def heft() -> OrderScheduler:
    return OrderScheduler("heft", _heft, insertion=True)


class CPOP:
    """Critical path on one processor: the critical path goes to its fastest eligible node."""

    name = "cpop"

    def schedule(self, dag: DAG, platform: Platform) -> Schedule:
        blocked = unschedulable(dag, platform, self.name)
        if blocked is not None:
            return blocked
        work, comm = mean_costs(dag, platform)
        priority = upward_rank(dag, work, comm) + downward_rank(dag, work, comm)
        order = ready_order(dag, priority)
        critical = critical_path(dag, priority)
        classes, eligible = platform.eligibility(dag)
        hosts = eligible[np.unique(classes[critical])].all(axis=0)
        pinned = np.full(dag.n, -1, dtype=np.int64)
        if hosts.any():
            # The node minimising the critical path's run time is the fastest one.
            speed = np.where(hosts, platform.speed, -np.inf)
            pinned[critical] = int(np.argmax(speed))
        return place(dag, platform, order, self.name, pinned, insertion=True)


def critical_path(dag: DAG, priority: F64) -> I64:
    """CPOP's critical path: from the entry task of highest priority, always the child of
    highest priority (lowest index on ties), down to an exit task."""
    if dag.n == 0:
        return np.zeros(0, dtype=np.int64)
    entries = np.flatnonzero(np.bincount(dag.child, minlength=dag.n) == 0)
    t = int(entries[np.argmax(priority[entries])])
    path = [t]
    while (kids := dag.children(t)).size:
        t = int(kids[np.lexsort((kids, -priority[kids]))[0]])
        path.append(t)
    return np.array(path, dtype=np.int64)


def cpop() -> CPOP:
    return CPOP()


class Portfolio:
    """Simulates every heuristic and keeps the shortest makespan (first listed on a tie)."""

    name = "portfolio"

    def __init__(self, members: tuple[str, ...] = PORTFOLIO) -> None:
        self.members = members

    def schedule(self, dag: DAG, platform: Platform) -> Schedule:
        from twinsched.workflows.registry import create

        best: Schedule | None = None
        makespans: dict[str, float] = {}
        for name in self.members:
            candidate = create(name).schedule(dag, platform)
            makespans[name] = candidate.makespan
            if best is None or candidate.makespan < best.makespan:
                best = candidate
        assert best is not None
        meta: dict[str, object] = {"chosen": best.scheduler, "makespans": makespans}
        return Schedule(
            self.name, best.node, best.start, best.finish, best.done, best.order, best.reason, meta
        )


def portfolio() -> Portfolio:
    return Portfolio()
