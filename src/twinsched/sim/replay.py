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
from twinsched.model.events import Arrive, NodeDown, NodeUp, Phase, Reject, Release
from twinsched.model.run import RunResult
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters
from twinsched.scheduling.controller import Binding, SchedulerController
from twinsched.scheduling.framework import PodView, Reason
from twinsched.sim.clock import Clock
from twinsched.sim.energy import CARBON_TICK, EnergyMeter, deferred_arrivals, start_meter
from twinsched.sim.engine import Engine, Kind
from twinsched.sim.faults import Disruptions, fault_schedule
from twinsched.sim.links import LinkFaults, link_schedule, link_spans
from twinsched.sim.migration import DeschedulerArg, Migrations
from twinsched.sim.runs import RunOptions, SchedulerArg, rewards, scheduler_report
from twinsched.sim.runs import start as start_run
from twinsched.sim.runs import summary as run_summary
from twinsched.sim.timeline import tier_sample

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


def run_replay(
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
    started = time.perf_counter()
    pods = scenario.pods
    control = start_run(scenario, pods, scheduler, seed, **options)
    state, views = control.state, control.views
    observers = control.observers
    sampled = observers.sampled  # per-node metrics only when an observer takes them
    engine = Engine(clock)
    control.ctx.clock = engine.clock.now
    start_t = np.full(pods.n, np.nan)
    queue = PendingQueue()
    never_fits: dict[int, bool] = {}  # pod class -> cannot fit even on the empty cluster
    samples: list[dict[str, float]] = []
    energy_j, last_t, last_power = 0.0, 0.0, cm.power_w(state)
    arrival_s, meter, deferral = pods.arrival_s, None, dict[str, object]()
    if energy is not None:
        meter = start_meter(engine, state, energy, carbon, seed)
        control.ctx.grid = meter
        arrival_s, deferral = deferred_arrivals(pods, energy, meter.carbon, scenario.nodes)

    for i in np.argsort(arrival_s, kind="stable").tolist():
        engine.at(float(arrival_s[i]), Kind.ARRIVE, i)
    if len(pods.arrival_s):
        end = float(np.max(pods.arrival_s))
        for t in np.arange(0.0, end + sample_every_s, sample_every_s):
            engine.at(float(t), Kind.SAMPLE)
    disrupt = Disruptions() if faults is not None and faults.enabled else None
    links: LinkFaults | None = None
    if disrupt is not None and faults is not None:
        horizon = float(np.max(pods.arrival_s)) if pods.n else 0.0
        for t, node, up in fault_schedule(faults, scenario.nodes, horizon, seed):
            engine.at(t, Kind.NODE, 2 * node + up)
        if faults.links_enabled:  # link k's events come after the nodes' in Kind.NODE
            links = LinkFaults(link_spans(faults, scenario.nodes, horizon, seed), state)
            for t, k, up in link_schedule(links.spans):
                engine.at(t, Kind.NODE, 2 * (scenario.nodes.n + k) + up)
    mover = Migrations(descheduler, control, engine, start_t) if descheduler else None

    def cycle(now: float) -> None:
        ready = queue.ready(views)
        if not ready:
            return
        skip = lambda pod: queue.stale(pod.cls)  # noqa: E731 (a class that failed in this cycle)
        for i, outcome in control.schedule(ready, explain=False, skip=skip):
            if isinstance(outcome, Binding):
                queue.remove(i)
                start_t[i] = begin = now if meter is None else meter.start_on(outcome.node, now)
                if disrupt is not None:
                    disrupt.rebound(i, now)
                if np.isfinite(pods.duration_s[i]):
                    engine.at(begin + float(pods.duration_s[i]), Kind.COMPLETE, i)
                continue
            cls = views[i].cls
            if cls not in never_fits:
                never_fits[cls] = not filters.fits_empty_cluster(state, views[i])
            if outcome.reason == Reason.INVALID_PLACEMENT or never_fits[cls]:
                reason = control.explain(views[i]) if never_fits[cls] else outcome
                state.apply(Reject(i, reason.reason))  # could never run here: leaves the queue
                queue.remove(i)
            else:
                queue.failed(cls)

    def handle(kind: Kind, i: int) -> None:
        nonlocal energy_j, last_t, last_power
        now = engine.clock.now()
        energy_j += last_power * (now - last_t)
        last_t = now
        if meter is not None:
            meter.advance(now, workload=kind is not Kind.ENERGY)
        if kind is Kind.ENERGY:
            assert meter is not None
            if i != CARBON_TICK:
                meter.timer(i, now)
            elif len(engine) and np.isfinite(change := meter.carbon.next_change(now)):
                engine.at(change, Kind.ENERGY, CARBON_TICK)
            return
        if kind is Kind.ARRIVE:
            state.apply(Arrive(i))
            queue.add(i)
        elif kind is Kind.COMPLETE:
            if mover.stale(i, now) if mover else disrupt is not None and disrupt.stale(i):
                return  # the pod was evicted or moved since this completion was scheduled
            state.apply(Release(i))
            queue.freed()
        elif kind is Kind.NODE:
            _node_event(i)
        elif kind is Kind.SAMPLE:
            samples.append(_sample(state, now, len(queue), meter))
            if disrupt is not None or meter is not None:
                samples[-1] |= tier_sample(state, meter, disrupt)
            if sampled:
                watts = cm.node_power_linear_w(state) if meter is None else meter.watts
                observers.sample(state, now, ex.twin_metrics(state, watts))
            return
        cycle(now)
        if kind is Kind.NODE:
            observers.feed(state)  # a node's change reaches the observers at its own time
        if mover is not None and mover.step(now, queue.pending):
            queue.freed()  # the moves freed room where the pods left
            cycle(now)
        last_power = cm.power_w(state)
        if meter is not None:
            after = energy.power_off_after_s if energy is not None else None
            for node in meter.refresh(now):
                engine.at(now + (after or 0.0), Kind.ENERGY, node)

    def _node_event(payload: int) -> None:
        node, up = divmod(payload, 2)
        assert disrupt is not None
        now = engine.clock.now()
        if node >= scenario.nodes.n:  # a link fault starts or ends
            assert links is not None
            k = node - scenario.nodes.n
            for pod in links.change(state, k, bool(up), now, start_t, disrupt):
                queue.add(pod)
            queue.freed()  # latencies changed, and evicted pods freed room
            return
        if up:
            state.apply(NodeUp(node))
            queue.freed()  # its resources are back
            if mover is not None:
                mover.recovered(node)
            return
        state.apply(NodeDown(node))
        for pod in disrupt.evict(state, node, engine.clock.now(), start_t):
            queue.add(pod)

    engine.run(handle)
    pending_at_end = len(queue)
    for i in sorted(queue.pending):  # still waiting at the end of the trace
        state.apply(Reject(i, Reason.STILL_PENDING_AT_END))
    control.finish()
    return RunResult(
        scheduler=control.scheduler.name,
        seed=seed,
        trace=scenario.name,
        mode="replay",
        wall_seconds=round(time.perf_counter() - started, 4),
        curve=[],
        summary=_summary(control, pods.arrival_s, pods.duration_s, start_t, energy_j)
        | (disrupt.summary(pending_at_end) if disrupt is not None else {})
        | (links.summary() if links is not None else {})
        | (mover.summary() if mover is not None else {})
        | (meter.summary() | deferral if meter is not None else {})
        | (_deadlines(state, start_t, faults) if disrupt is not None or meter is not None else {}),
        samples=samples,
        rewards=rewards(control),
    )


def _summary(
    control: SchedulerController,
    arrival_s: np.ndarray,
    duration_s: np.ndarray,
    start_t: np.ndarray,
    energy_j: float,
) -> dict[str, object]:
    state = control.state
    started = ~np.isnan(start_t)
    waits = (start_t - arrival_s)[started]
    ran = started & np.isfinite(duration_s)
    completion = start_t[ran] + duration_s[ran] - arrival_s[ran]
    out = run_summary(state) | {
        "pods": state.pods.n,
        "started": int(started.sum()),
        "completed": int((state.phase == Phase.SUCCEEDED).sum()),
        "queue_wait_mean_s": round(float(waits.mean()), 3) if waits.size else 0.0,
        "queue_wait_p95_s": round(float(np.percentile(waits, 95)), 3) if waits.size else 0.0,
        "completion_mean_s": round(float(completion.mean()), 3) if ran.any() else 0.0,
        "energy_kwh": round(energy_j / 3.6e6, 3),
    }
    return out | scheduler_report(control)


def _deadlines(state: ClusterState, start_t: F64, faults: FaultSpec | None) -> dict[str, int]:
    """The jobs that missed their deadline (``docs/faults.md``), in runs with faults or
    energy accounting (where deferral may make them late); the slack is the faults' or the
    default one."""
    from twinsched.model.faults import DEFAULT_DEADLINE_SLACK

    slack = faults.deadline_slack if faults is not None else DEFAULT_DEADLINE_SLACK
    done = state.phase == Phase.SUCCEEDED
    end_s = np.where(done, start_t + state.pods.duration_s, np.nan)
    return cm.missed_deadlines(state.pods, end_s, slack)


def _sample(
    state: ClusterState, now: float, queued: int, meter: EnergyMeter | None
) -> dict[str, float]:
    out = {
        "time_s": now,
        "gpu_alloc_ratio_pct": round(cm.gpu_allocation_ratio(state), 4),
        "cpu_alloc_ratio_pct": round(cm.cpu_allocation_ratio(state), 4),
        "running": cm.running_pods(state),
        "pending": queued,
        "power_w": round(cm.power_w(state), 1),
    }
    if meter is not None:
        out["power_w"] = round(float(meter.watts.sum()), 1)
        out["nodes_off"] = int(meter.off.sum())
    return out
