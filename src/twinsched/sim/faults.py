"""Node failures in a replay: the deterministic fault schedule of a seed, and its bookkeeping.

:func:`fault_schedule` draws each node's failures from its own random stream (seed, node), so
changing one nodepool's rates leaves the others' faults where they were; explicit faults are
added, and overlapping down times of one node merge. :class:`Disruptions` evicts the pods of
a node that goes down and the other pods of their jobs (through ``ClusterState.apply``:
``Unbind``), counts what they lost and how long they waited to run again.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

from twinsched.errors import UnknownNameError
from twinsched.model.cluster import F64, BoolA, Nodes
from twinsched.model.events import Phase, Unbind
from twinsched.model.state import ClusterState

if TYPE_CHECKING:  # pydantic is imported only by runs that have faults
    from twinsched.model.faults import FaultSpec

FAULT_STREAM = 0xFA17  # mixed into each node's seed: fault draws never shift other draws
DAY_S = 86400.0

Fault = tuple[float, int, bool]  # (time, node, up): the node goes down, or comes back up


def _drawn(spec: FaultSpec, nodes: Nodes, horizon_s: float, seed: int) -> list[list[float]]:
    """Down intervals ``[down, up]`` per node drawn from the rates, failures before horizon."""
    out: list[list[float]] = []
    for n in range(nodes.n):
        rates = spec.rates(nodes.pool_names[int(nodes.pool[n])])
        if rates.rate_per_day <= 0:
            continue
        rng = np.random.default_rng([seed, FAULT_STREAM, n])
        for down, up in outages(rng, rates.rate_per_day, rates.mttr_s, horizon_s):
            out.append([down, up, float(n)])
    return out


def outages(
    rng: np.random.Generator, rate_per_day: float, mean_repair_s: float, horizon_s: float
) -> list[tuple[float, float]]:
    """``(down, up)`` times of an alternating renewal process: exponential times between
    failures (mean ``DAY_S / rate_per_day``) and repairs (mean ``mean_repair_s``), the
    failures before ``horizon_s``; draws from ``rng`` in that order."""
    out: list[tuple[float, float]] = []
    t = 0.0
    while True:
        t += float(rng.exponential(DAY_S / rate_per_day))
        if t > horizon_s:
            return out
        repair = float(rng.exponential(mean_repair_s))
        out.append((t, t + repair))
        t += repair


def _some(names: list[str], most: int = 8) -> list[str]:
    return names if len(names) <= most else [*names[:most], f"... ({len(names)} in all)"]


def check_names(spec: FaultSpec, nodes: Nodes) -> None:
    """Every nodepool in ``pools`` and every node in ``faults`` is the scenario's, or
    :class:`UnknownNameError` naming it and (some of) the known ones."""
    for pool in spec.pools:
        if pool not in nodes.pool_names:
            raise UnknownNameError("nodepool in faults.pools", pool, list(nodes.pool_names))
    for outage in spec.outages:
        if outage.pool not in nodes.pool_names:
            raise UnknownNameError("nodepool in outages", outage.pool, list(nodes.pool_names))
    known = set(nodes.names)
    for fault in spec.faults:
        if fault.node not in known:
            raise UnknownNameError("node in faults", fault.node, _some(list(nodes.names)))
    for link in spec.links:
        for pool in link.pools:
            if pool not in nodes.pool_names:
                raise UnknownNameError("nodepool in links.pools", pool, list(nodes.pool_names))


def fault_schedule(spec: FaultSpec, nodes: Nodes, horizon_s: float, seed: int) -> list[Fault]:
    """Every node's down and up times, in time order (down before up at equal times)."""
    check_names(spec, nodes)
    intervals = _drawn(spec, nodes, horizon_s, seed)
    index = {name: i for i, name in enumerate(nodes.names)}
    for fault in spec.faults:
        intervals.append([fault.down_s, fault.down_s + fault.for_s, float(index[fault.node])])
    for outage in spec.outages:  # every node of the pool, as one explicit fault each
        pool = nodes.pool_names.index(outage.pool)
        for member in np.flatnonzero(nodes.pool == pool).tolist():
            intervals.append([outage.down_s, outage.down_s + outage.for_s, float(member)])
    merged: list[Fault] = []
    by_node: dict[int, list[tuple[float, float]]] = {}
    for down, up, node in intervals:
        by_node.setdefault(int(node), []).append((down, up))
    for node in sorted(by_node):
        spans = sorted(by_node[node])
        start, end = spans[0]
        for down, up in spans[1:]:
            if down <= end:
                end = max(end, up)
                continue
            merged += [(start, node, False), (end, node, True)]
            start, end = down, up
        merged += [(start, node, False), (end, node, True)]
    return sorted(merged, key=lambda f: (f[0], f[2], f[1]))


class Disruptions:
    """Evictions of one run: lost work, time to reschedule, completions to ignore."""

    def __init__(self) -> None:
        self.count = 0  # pods evicted
        self.gang_restarts = 0  # of which on a node that stayed up (their job restarted)
        self.lost_pod_s = 0.0  # run time thrown away by evictions
        self.to_reschedule_s: list[float] = []
        self.node_failures = 0
        self._evicted_at: dict[int, float] = {}
        self._stale: Counter[int] = Counter()  # completions scheduled before an eviction

    def evict(self, state: ClusterState, node: int, now: float, start_t: F64) -> list[int]:
        """Unbind the pods running on ``node`` (it went down) and the other running pods of
        their jobs (a gang restarts whole); all are pending again, in index order."""
        self.node_failures += 1
        running = state.phase == Phase.RUNNING
        return self.evict_pods(state, running & (state.pod_node == node), now, start_t)

    def evict_pods(self, state: ClusterState, hit: BoolA, now: float, start_t: F64) -> list[int]:
        """Unbind the running pods in ``hit`` and the other running pods of their jobs."""
        running = state.phase == Phase.RUNNING
        jobs = np.unique(state.pods.job[running & hit])
        victims = running & np.isin(state.pods.job, jobs)
        pods = np.flatnonzero(victims).tolist()
        for i in pods:
            if not hit[i]:
                self.gang_restarts += 1
            state.apply(Unbind(i))
            self.count += 1
            # < 0: a migration's pause, or a node waking up (not started yet)
            self.lost_pod_s += max(0.0, now - float(start_t[i]))
            self._evicted_at[i] = now
            if np.isfinite(state.pods.duration_s[i]):
                self._stale[i] += 1
        return pods

    def rebound(self, pod: int, now: float) -> None:
        """Pod ``pod`` was bound: if it had been evicted, it is rescheduled now."""
        evicted = self._evicted_at.pop(pod, None)
        if evicted is not None:
            self.to_reschedule_s.append(now - evicted)

    def stale(self, pod: int) -> bool:
        """Is this completion of ``pod`` one scheduled before it was evicted (to ignore)?

        The stale completion always comes first: it was scheduled from an earlier start.
        """
        if self._stale[pod]:
            self._stale[pod] -= 1
            return True
        return False

    def summary(self, pending_at_end: int) -> dict[str, object]:
        waits = np.array(self.to_reschedule_s)

        def pct(q: float) -> float:
            return round(float(np.percentile(waits, q)), 3) if waits.size else 0.0

        return {
            "node_failures": self.node_failures,
            "disruptions": self.count,
            "gang_restarts": self.gang_restarts,
            "rescheduled": int(waits.size),
            "time_to_reschedule_p50_s": pct(50),
            "time_to_reschedule_p95_s": pct(95),
            "lost_work_pod_s": round(self.lost_pod_s, 3),
            "pending_at_end": pending_at_end,
        }
