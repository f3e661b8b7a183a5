"""Migration in a replay: a descheduler's moves, applied with their cost.

After each scheduling cycle (and after a node comes back) :class:`Migrations` asks the run's
descheduler (``scheduling/descheduling/``) for moves, at most ``moves`` per step and steps at
least ``every_s`` apart. A move is an ``Unbind`` and a bind through the controller's Bind step
(so observers and the invariant checks see both), after the controller's own validity check.
It costs downtime: ``restart_s`` plus the pod's memory sent over the link between the two
nodepools at its bandwidth now (a degraded link is slower; a partitioned one is never
crossed). The pod keeps its progress but does no work while it moves, and neither do the
other running pods of its job (a gang waits for its members): their completions move later
by the downtime. A completion event is the pod's real one only if the pod runs and the time
is its current end (:meth:`Migrations.stale`).
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from twinsched.errors import TwinschedError
from twinsched.model.cluster import F64, BoolA
from twinsched.model.events import Phase, Unbind
from twinsched.scheduling.controller import Binding, SchedulerController
from twinsched.scheduling.descheduling import Descheduler, Move, Trigger, create
from twinsched.scheduling.framework import Placement
from twinsched.sim.engine import Engine, Kind

MBIT_PER_MIB = 8 * 1.048576
DeschedulerArg = str | Descheduler


class Migrations:
    """The moves of one run, their cost, and which completion events they made stale."""

    def __init__(
        self,
        descheduler: DeschedulerArg,
        control: SchedulerController,
        engine: Engine,
        start_t: F64,
    ) -> None:
        self.descheduler = create(descheduler) if isinstance(descheduler, str) else descheduler
        self.control, self.engine, self.start_t = control, engine, start_t
        self.descheduler.reset(control.state, control.ctx)
        self.limits = self.descheduler.limits
        self._last_step = -np.inf
        self._moved_at = np.full(control.state.pods.n, -np.inf)
        self._recovered = -1
        self.count = self.cross_pool = self.refused = self.steps = 0
        self.downtime_pod_s = self.data_mib = 0.0

    def recovered(self, node: int) -> None:
        """Node ``node`` came back up: the next step may rebalance onto it."""
        self._recovered = node

    def stale(self, pod: int, now: float) -> bool:
        """Is a completion of ``pod`` at ``now`` one that a move or an eviction made stale?"""
        state = self.control.state
        if state.phase[pod] != Phase.RUNNING:
            return True
        return bool(now != self.start_t[pod] + float(state.pods.duration_s[pod]))

    def step(self, now: float, waiting: Collection[int]) -> bool:
        """Ask the descheduler for moves and apply them; did any pod move?"""
        if now - self._last_step < self.limits.every_s:
            return False  # a recovery waits for the next step
        trigger = Trigger(now, tuple(sorted(waiting)), self._recovered)
        self._recovered = -1
        state = self.control.state
        if not self.descheduler.wants(state, trigger):
            return False
        self._last_step = now
        self.steps += 1
        movable, moved = self.movable(now), False
        moves = self.descheduler.moves(state, self.control, movable, trigger)
        for tried, move in enumerate(moves, 1):
            moved |= self._apply(move, now)
            movable[move.pod] = False
            if tried >= self.limits.moves:
                break
        return moved

    def movable(self, now: float) -> BoolA:
        """Running pods on nodes that are up, not moved in the last ``every_s``, with more
        work left than a restart costs."""
        state = self.control.state
        running = state.phase == Phase.RUNNING
        on_up = state.up[np.maximum(state.pod_node, 0)]
        left = self.start_t + state.pods.duration_s - now
        rested = now - self._moved_at >= self.limits.every_s
        out: BoolA = running & on_up & rested & ~(left <= self.limits.restart_s)
        return out

    def _apply(self, move: Move, now: float) -> bool:
        state, control = self.control.state, self.control
        pod, node = move.pod, move.node
        if not (0 <= pod < state.pods.n) or state.phase[pod] != Phase.RUNNING:
            raise TwinschedError(f"{self.descheduler.name} moved pod {pod}, which is not running")
        source = int(state.pod_node[pod])
        a, b = int(state.nodes.pool[source]), int(state.nodes.pool[node])
        bandwidth = float(state.bandwidth_mbps[a, b])
        target = Placement(node, move.gpus)
        if node == source or bandwidth <= 0 or control.validate(pod, target):
            self.refused += 1  # the same node, a partitioned link, or not a valid placement
            return False
        mib = float(state.pods.memory_mib[pod])
        downtime = self.limits.restart_s + mib * MBIT_PER_MIB / bandwidth
        state.apply(Unbind(pod))
        moved = control.commit(pod, target, fallback=False)
        assert isinstance(moved, Binding)  # freeing the source changed no other node

        self._moved_at[pod] = now
        self.count += 1
        self.cross_pool += a != b
        self.data_mib += mib
        self._pause_job(pod, downtime)
        return True

    def _pause_job(self, pod: int, downtime: float) -> None:
        """The pod and the other running pods of its job do no work for ``downtime``."""
        state = self.control.state
        job = state.pods.job[pod]
        for q in np.flatnonzero((state.pods.job == job) & (state.phase == Phase.RUNNING)).tolist():
            self.start_t[q] += downtime
            self.downtime_pod_s += downtime
            duration = float(state.pods.duration_s[q])
            if np.isfinite(duration):
                self.engine.at(self.start_t[q] + duration, Kind.COMPLETE, q)

    def summary(self) -> dict[str, object]:
        return {
            "migrations": self.count,
            "cross_pool_migrations": self.cross_pool,
            "migration_downtime_pod_s": round(self.downtime_pod_s, 3),
            "migration_data_gib": round(self.data_mib / 1024.0, 3),
            "descheduler_steps": self.steps,
            "migrations_refused": self.refused,
        }
