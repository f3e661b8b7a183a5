"""Replay: pods arrive at their trace times and leave after their run times.

Pods that do not fit wait in a :class:`PendingQueue` and are retried whenever resources are
freed; the controller owns each scheduling cycle over the queue.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Unpack

import numpy as np

from twinsched.metrics import cluster as cm
from twinsched.metrics import exposition as ex
from twinsched.model.cluster import F64, Scenario
from twinsched.model.events import Arrive, Reject, Release
from twinsched.model.run import RunResult
from twinsched.scheduling import filters
from twinsched.scheduling.controller import Binding
from twinsched.scheduling.framework import PodView, Reason, Unschedulable
from twinsched.sim.clock import Clock
from twinsched.sim.energy import CARBON_TICK, deferred_arrivals, start_meter
from twinsched.sim.engine import Engine, Kind
from twinsched.sim.migration import DeschedulerArg, Migrations
from twinsched.sim.node_events import NodeEvents
from twinsched.sim.replay_summary import deadlines, replay_summary, sample
from twinsched.sim.runs import RunOptions, SchedulerArg, rewards
from twinsched.sim.runs import start as start_run
from twinsched.sim.timeline import tier_sample
from twinsched.sim.transfers import start_transfers

if TYPE_CHECKING:  # pydantic is imported only by runs that have faults or energy
    from twinsched.model.carbon import CarbonIntensity
    from twinsched.model.energy import EnergySpec
    from twinsched.model.faults import FaultSpec


class PendingQueue:
    """Pods waiting for a node, and which pod classes are not worth retrying yet.

    A failed pod can only fit again after resources were freed (binds only take), so a
    class that failed is skipped until the next release: exact, and far fewer retries.
    """

    def __init__(self) -> None:
        self.pending: set[int] = set()
        self.frees = 0  # how many releases so far
        self._failed_at: dict[int, int] = {}  # pod class -> value of ``frees`` at its failure

    def __len__(self) -> int:
        return len(self.pending)

    def add(self, pod: int) -> None:
        self.pending.add(pod)

    def remove(self, pod: int) -> None:
        self.pending.discard(pod)

    def freed(self) -> None:
        """Resources were released: every class is worth trying again."""
        self.frees += 1

    def failed(self, cls: int) -> None:
        """A pod of class ``cls`` found no node: skip the class until the next release."""
        self._failed_at[cls] = self.frees

    def stale(self, cls: int) -> bool:
        """Did the class fail since the last release (so it would fail again)?"""
        return self._failed_at.get(cls) == self.frees

    def ready(self, views: Sequence[PodView]) -> list[int]:
        """The pending pods worth a try now (in no particular order: the controller sorts)."""
        return [i for i in self.pending if not self.stale(views[i].cls)]


class ReplayOptions(RunOptions, total=False):
    """:class:`RunOptions` and what only a replay takes (see :func:`run_replay`)."""

    sample_every_s: float
    clock: Clock | None
    faults: FaultSpec | None
    energy: EnergySpec | None
    carbon: CarbonIntensity | None
    descheduler: DeschedulerArg | None


def run_replay(
    scenario: Scenario, scheduler: SchedulerArg, seed: int, **options: Unpack[ReplayOptions]
) -> RunResult:
    """Pods arrive at ``arrival_s`` and complete ``duration_s`` after they start.

    With ``faults``, nodes go down and come back up on the seed's fault schedule
    (``sim/faults.py``): the pods of a node that goes down return to the queue, losing their
    progress, and the summary counts the disruptions; links between nodepools may be
    partitioned or degraded (``sim/links.py``). With ``descheduler`` (a name such as
    ``defrag/threshold=30``), running pods may be moved at a cost (``sim/migration.py``).
    With ``energy`` (``sim/energy.py``), nodes draw power on its curves and may power off
    when idle, the energy is weighed by ``carbon`` (default: the seed's synthetic profile),
    deferrable jobs may wait for greener hours, and the summary gives kWh and g CO2 per run
    and per nodepool.
    """
    run = ReplayRun(scenario, scheduler, seed, **options)
    while run.step():
        pass
    return run.result()


class ReplayRun:
    """One replay, advanced an event at a time (as :class:`twinsched.sim.fillup.FillupRun`
    advances a fill-up a pod at a time); see :func:`run_replay` for what each option adds.

    Each event kind has its handler; node and link faults (:class:`NodeEvents`), energy
    (:class:`EnergyMeter`) and migration (:class:`Migrations`) are collaborators that exist
    only in runs that have them.
    """

    def __init__(
        self,
        scenario: Scenario,
        scheduler: SchedulerArg,
        seed: int,
        *,
        sample_every_s: float = 3600.0,
        clock: Clock | None = None,
        faults: FaultSpec | None = None,
        energy: EnergySpec | None = None,
        carbon: CarbonIntensity | None = None,
        descheduler: DeschedulerArg | None = None,
        **options: Unpack[RunOptions],
    ) -> None:
        self.started = time.perf_counter()
        self.scenario, self.seed, self.pods = scenario, seed, scenario.pods
        self.control = start_run(scenario, self.pods, scheduler, seed, **options)
        self.state, self.views = self.control.state, self.control.views
        self.engine = Engine(clock)
        self.control.ctx.clock = self.engine.clock.now
        self.start_t = np.full(self.pods.n, np.nan)
        self.queue = PendingQueue()
        self.samples: list[dict[str, float]] = []
        self._never_fits: dict[int, bool] = {}  # pod class -> cannot fit on the empty cluster
        self._energy_j, self._last_t, self._last_power = 0.0, 0.0, cm.power_w(self.state)
        self._faults, self._energy = faults, energy
        arrival_s, self.meter, self._deferral = self.pods.arrival_s, None, dict[str, object]()
        if energy is not None:
            self.meter = start_meter(self.engine, self.state, energy, carbon, seed)
            self.control.ctx.grid = self.meter
            arrival_s, self._deferral = deferred_arrivals(
                self.pods, energy, self.meter.carbon, scenario.nodes
            )
        self._schedule_arrivals(arrival_s, sample_every_s)
        self.nodes: NodeEvents | None = None
        if faults is not None and faults.enabled:
            self.nodes = NodeEvents(faults, scenario, seed, self.state)
            self.nodes.schedule(self.engine)
        self.mover = (
            Migrations(descheduler, self.control, self.engine, self.start_t)
            if descheduler
            else None
        )
        self.transfers = start_transfers(
            scenario, self.pods, self.state, self.engine, self.meter, self.control.ctx.scratch
        )
        self._handlers = {
            Kind.ARRIVE: self._arrive,
            Kind.COMPLETE: self._complete,
            Kind.NODE: self._node,
            Kind.SAMPLE: self._sample,
            Kind.ENERGY: self._energy_event,
            Kind.TRANSFER: self._transfer,
        }

    def _schedule_arrivals(self, arrival_s: F64, sample_every_s: float) -> None:
        for i in np.argsort(arrival_s, kind="stable").tolist():
            self.engine.at(float(arrival_s[i]), Kind.ARRIVE, i)
        if len(self.pods.arrival_s):
            end = float(np.max(self.pods.arrival_s))
            for t in np.arange(0.0, end + sample_every_s, sample_every_s):
                self.engine.at(float(t), Kind.SAMPLE)

    def step(self) -> bool:
        """Handle the next event; False when none is left."""
        return self.engine.step(self._handle)

    def _handle(self, kind: Kind, i: int) -> None:
        now = self.engine.clock.now()
        self._energy_j += self._last_power * (now - self._last_t)
        self._last_t = now
        if self.meter is not None:
            self.meter.advance(now, workload=kind is not Kind.ENERGY)
        changed = self._handlers[kind](i, now)
        self._inputs_in(now)
        if not changed:
            return  # nothing changed that a cycle would see
        self._cycle(now)
        self._inputs_in(now)
        if kind is Kind.NODE:
            self.control.observers.feed(self.state)  # a node's change, at its own time
        if self.mover is not None and self.mover.step(now, self.queue.pending):
            self.queue.freed()  # the moves freed room where the pods left
            self._cycle(now)
        self._last_power = cm.power_w(self.state)
        if self.meter is not None:
            after = self._energy.power_off_after_s if self._energy is not None else None
            for node in self.meter.refresh(now):
                self.engine.at(now + (after or 0.0), Kind.ENERGY, node)

    # One handler per event kind: True when a scheduling cycle should follow.

    def _arrive(self, i: int, now: float) -> bool:
        self.state.apply(Arrive(i))
        self.queue.add(i)
        return True

    def _complete(self, i: int, now: float) -> bool:
        if self.mover is not None:
            stale = self.mover.stale(i, now)
        else:
            stale = self.nodes is not None and self.nodes.disrupt.stale(i)
        if stale:
            return False  # the pod was evicted or moved since this completion was scheduled
        self.state.apply(Release(i))
        self.queue.freed()
        if self.transfers is not None:
            self.transfers.stage_out(i, int(self.state.pod_node[i]), now)
        return True

    def _node(self, payload: int, now: float) -> bool:
        assert self.nodes is not None
        outcome = self.nodes.apply(self.state, payload, now, self.start_t)
        for pod in outcome.requeue:
            self.queue.add(pod)
            if self.transfers is not None and self.transfers.cancel(pod, now):
                self.nodes.disrupt.stale(pod)  # no completion was scheduled: the count goes
        if self.transfers is not None:
            self.transfers.links_changed(now)
        if outcome.freed:
            self.queue.freed()
        if outcome.recovered is not None and self.mover is not None:
            self.mover.recovered(outcome.recovered)
        return True

    def _sample(self, _: int, now: float) -> bool:
        state, meter = self.state, self.meter
        self.samples.append(sample(state, now, len(self.queue), meter))
        disrupt = self.nodes.disrupt if self.nodes is not None else None
        if disrupt is not None or meter is not None:
            self.samples[-1] |= tier_sample(state, meter, disrupt)
        observers = self.control.observers
        if observers.sampled:  # per-node metrics only when an observer takes them
            watts = cm.node_power_linear_w(state) if meter is None else meter.watts
            observers.sample(state, now, ex.twin_metrics(state, watts))
        return False

    def _energy_event(self, i: int, now: float) -> bool:
        meter = self.meter
        assert meter is not None
        if i != CARBON_TICK:
            meter.timer(i, now)
        elif len(self.engine) and np.isfinite(change := meter.carbon.next_change(now)):
            self.engine.at(change, Kind.ENERGY, CARBON_TICK)
        return False

    def _transfer(self, generation: int, now: float) -> bool:
        assert self.transfers is not None
        self.transfers.wake(generation, now)
        return False  # binds nothing and frees nothing: the pods whose inputs came in run

    def _inputs_in(self, now: float) -> None:
        """The pods whose inputs all came in start running now (or when their node is up)."""
        if self.transfers is None:
            return
        for i in self.transfers.take_ready():
            self.start_t[i] = max(float(self.start_t[i]), now)
            self._run(i)

    def _cycle(self, now: float) -> None:
        """One scheduling cycle over the pending pods worth a try."""
        ready = self.queue.ready(self.views)
        if not ready:
            return
        skip = lambda pod: self.queue.stale(pod.cls)  # noqa: E731 (a class that failed now)
        for i, outcome in self.control.schedule(ready, explain=False, skip=skip):
            if isinstance(outcome, Binding):
                self._started(i, outcome.node, now)
            else:
                self._unplaced(i, outcome)

    def _started(self, i: int, node: int, now: float) -> None:
        self.queue.remove(i)
        begin = now if self.meter is None else self.meter.start_on(node, now)
        self.start_t[i] = begin
        if self.nodes is not None:
            self.nodes.disrupt.rebound(i, now)
        if self.transfers is not None and self.transfers.stage_in(i, node, now):
            return  # it runs when its inputs are in (_inputs_in)
        self._run(i)

    def _run(self, i: int) -> None:
        if np.isfinite(self.pods.duration_s[i]):
            self.engine.at(float(self.start_t[i] + self.pods.duration_s[i]), Kind.COMPLETE, i)

    def _unplaced(self, i: int, outcome: Unschedulable) -> None:
        cls = self.views[i].cls
        if cls not in self._never_fits:
            self._never_fits[cls] = not filters.fits_empty_cluster(self.state, self.views[i])
        if outcome.reason == Reason.INVALID_PLACEMENT or self._never_fits[cls]:
            reason = self.control.explain(self.views[i]) if self._never_fits[cls] else outcome
            self.state.apply(Reject(i, reason.reason))  # could never run here: leaves the queue
            self.queue.remove(i)
        else:
            self.queue.failed(cls)

    def result(self) -> RunResult:
        """Reject what still waits (the trace ended), and the run's result."""
        pending_at_end = len(self.queue)
        for i in sorted(self.queue.pending):
            self.state.apply(Reject(i, Reason.STILL_PENDING_AT_END))
        self.control.finish()
        pods, meter = self.pods, self.meter
        summary = replay_summary(
            self.control, pods.arrival_s, pods.duration_s, self.start_t, self._energy_j
        )
        if self.nodes is not None:
            summary |= self.nodes.summary(pending_at_end)
        if self.mover is not None:
            summary |= self.mover.summary()
        if meter is not None:
            summary |= meter.summary() | self._deferral
        if self.transfers is not None:
            summary |= self.transfers.summary()
        if self.nodes is not None or meter is not None:
            summary |= deadlines(self.state, self.start_t, self._faults)
        return RunResult(
            scheduler=self.control.scheduler.name,
            seed=self.seed,
            trace=self.scenario.name,
            mode="replay",
            wall_seconds=round(time.perf_counter() - self.started, 4),
            curve=[],
            summary=summary,
            samples=self.samples,
            rewards=rewards(self.control),
        )
