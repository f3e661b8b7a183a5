"""The virtual training environment's two run modes.

* ``fillup``: the FGD study's protocol. Pods arrive one per tick in a seeded order, are
  placed or dropped for good, and never leave. The curve is read at integer arrived %.
* ``replay``: pods arrive at their trace times and leave after their run times; pods that
  do not fit wait in the queue and are retried whenever a node changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from twinsched.metrics import cluster as cm
from twinsched.metrics.curves import read_at_integers
from twinsched.metrics.fragmentation import typical_pods
from twinsched.model.cluster import Scenario
from twinsched.model.events import Arrive, Bind, Phase, Reject, Release
from twinsched.model.run import RunResult
from twinsched.model.state import ClusterState
from twinsched.scheduling import filters, registry
from twinsched.scheduling.controller import SchedulerController, queue_order
from twinsched.scheduling.framework import (
    BatchScheduler,
    Decision,
    Placement,
    RunContext,
    Scheduler,
)
from twinsched.sim.clock import Clock
from twinsched.sim.engine import Engine, Kind
from twinsched.sim.fillup import TARGET_PCT, fillup_order
from twinsched.sim.tracker import FragmentationTracker

Progress = Callable[[int, int], None]


def _scheduler(spec: str | Scheduler) -> Scheduler:
    return registry.create(spec) if isinstance(spec, str) else spec


def run_fillup(
    scenario: Scenario,
    scheduler: str | Scheduler,
    seed: int,
    *,
    target_pct: float = TARGET_PCT,
    validate: bool = False,
    progress: Progress | None = None,
    clock: Clock | None = None,
) -> RunResult:
    """One fill-up run; deterministic in (scenario, scheduler, seed)."""
    started = time.perf_counter()
    sched = _scheduler(scheduler)
    workload = scenario.pods
    order = fillup_order(workload, scenario.nodes.total_gpu_milli, seed, target_pct)
    pods = workload.take(order)
    state = ClusterState(scenario.nodes, pods, scenario.links, validate=validate)
    ctx = RunContext.create(scenario, seed, workload)
    control = SchedulerController(state, sched, ctx)
    frag = FragmentationTracker(state, pods.n, typical_pods(workload))
    request = pods.gpu_request
    total = max(scenario.nodes.total_gpu_milli, 1)
    cols = {k: np.zeros(pods.n) for k in ("arrived", "alloc")}
    arrived = 0

    window = sched.window if isinstance(sched, BatchScheduler) else 1

    def settle(i: int, decision: Decision) -> None:
        nonlocal arrived
        if isinstance(decision, Placement):
            state.apply(Bind(i, decision.node, decision.gpus))
            frag.record(i, decision.node)
        else:
            state.apply(Reject(i, decision.reason))
            frag.record(i, None)
        arrived += int(request[i])
        cols["arrived"][i] = 100.0 * arrived / total
        cols["alloc"][i] = 100.0 * state.allocated_gpu_milli / total
        if progress is not None and (i % 500 == 0 or i == pods.n - 1):
            progress(i + 1, pods.n)

    def handle(kind: Kind, start: int) -> None:
        """Pods ``start .. start + window - 1`` arrive together and are decided together."""
        batch = list(range(start, min(start + window, pods.n)))
        for i in batch:
            state.apply(Arrive(i))
        if window == 1:
            settle(start, control.decide(start))
            return
        for i, raw in zip(batch, control.decide_batch(batch), strict=True):
            settle(i, control.confirm(i, raw))

    engine = Engine(clock)
    for start in range(0, pods.n, window):
        engine.at(float(start), Kind.ARRIVE, start)
    engine.run(handle)
    frag_ratio, frag_amount = frag.series()
    curve = read_at_integers(
        cols["arrived"],
        {
            "gpu_alloc_ratio_pct": cols["alloc"],
            "gpu_frag_ratio_pct": frag_ratio,
            "gpu_frag_amount_pct": frag_amount,
        },
        upto=round(target_pct),
    )
    final_frag = float(frag_amount[-1]) if pods.n else 0.0
    summary = _summary(state) | {"pods": pods.n, "final_frag_amount_pct": round(final_frag, 4)}
    summary |= _scheduler_report(sched, control)
    timings = getattr(sched, "timings", None)
    return RunResult(
        scheduler=sched.name,
        seed=seed,
        trace=scenario.name,
        mode="fillup",
        wall_seconds=round(time.perf_counter() - started, 4),
        curve=curve,
        summary=summary,
        timings=timings() if callable(timings) else {},
    )


def _scheduler_report(sched: Scheduler, control: SchedulerController) -> dict[str, object]:
    """Fallbacks the controller made, and the scheduler's own statistics if it keeps any."""
    out: dict[str, object] = {}
    if control.fallbacks:
        out["fallbacks"] = dict(control.fallbacks)
    stats = getattr(sched, "stats", None)
    if callable(stats):
        out["scheduler_stats"] = stats()
    return out


def _summary(state: ClusterState) -> dict[str, object]:
    return {
        "gpu_alloc_ratio_pct": round(cm.gpu_allocation_ratio(state), 4),
        "cpu_alloc_ratio_pct": round(cm.cpu_allocation_ratio(state), 4),
        "memory_alloc_ratio_pct": round(cm.memory_allocation_ratio(state), 4),
        "running": cm.running_pods(state),
        "unscheduled": sum(cm.unscheduled_by_reason(state).values()),
        "unscheduled_by_reason": cm.unscheduled_by_reason(state),
        "power_w": round(cm.power_w(state), 1),
    }


def run_replay(
    scenario: Scenario,
    scheduler: str | Scheduler,
    seed: int,
    *,
    sample_every_s: float = 3600.0,
    validate: bool = False,
    progress: Progress | None = None,
    clock: Clock | None = None,
) -> RunResult:
    """Pods arrive at ``arrival_s`` and complete ``duration_s`` after they start."""
    started = time.perf_counter()
    sched = _scheduler(scheduler)
    pods = scenario.pods
    state = ClusterState(scenario.nodes, pods, scenario.links, validate=validate)
    ctx = RunContext.create(scenario, seed)
    control = SchedulerController(state, sched, ctx)
    engine = Engine(clock)
    start_t = np.full(pods.n, np.nan)
    pending: set[int] = set()
    # A failed pod can only fit again after resources were freed (binds only take), so a
    # class that failed is skipped until the next release: exact, and far fewer retries.
    failed_at: dict[int, int] = {}  # pod class -> value of `frees` when it last failed
    frees = 0
    never_fits: dict[int, bool] = {}  # pod class -> cannot fit even on the empty cluster
    samples: list[dict[str, float]] = []
    energy_j, last_t, last_power = 0.0, 0.0, cm.power_w(state)
    done = 0

    for i in np.argsort(pods.arrival_s, kind="stable").tolist():
        engine.at(float(pods.arrival_s[i]), Kind.ARRIVE, i)
    if len(pods.arrival_s):
        end = float(np.max(pods.arrival_s))
        for t in np.arange(0.0, end + sample_every_s, sample_every_s):
            engine.at(float(t), Kind.SAMPLE)

    def try_queue(now: float) -> None:
        views = control.views
        ready = [i for i in pending if failed_at.get(views[i].cls) != frees]
        if not ready:
            return
        for i in queue_order(state, np.array(ready, dtype=np.int64)).tolist():
            cls = views[i].cls
            if failed_at.get(cls) == frees:
                continue  # same class already failed and nothing was freed since
            decision = control.decide(i, explain=False)
            if isinstance(decision, Placement):
                state.apply(Bind(i, decision.node, decision.gpus))
                pending.discard(i)
                start_t[i] = now
                if np.isfinite(pods.duration_s[i]):
                    engine.at(now + float(pods.duration_s[i]), Kind.COMPLETE, i)
                continue
            if cls not in never_fits:
                never_fits[cls] = not filters.fits_empty_cluster(state, control.views[i])
            if decision.reason == "InvalidPlacement" or never_fits[cls]:
                reason = control.explain(control.views[i]) if never_fits[cls] else decision
                state.apply(Reject(i, reason.reason))  # could never run here: leaves the queue
                pending.discard(i)
            else:
                failed_at[cls] = frees

    def handle(kind: Kind, i: int) -> None:
        nonlocal energy_j, last_t, last_power, done, frees
        now = engine.clock.now()
        energy_j += last_power * (now - last_t)
        last_t = now
        if kind is Kind.ARRIVE:
            state.apply(Arrive(i))
            pending.add(i)
            done += 1
            if progress is not None and done % 500 == 0:
                progress(done, pods.n)
        elif kind is Kind.COMPLETE:
            state.apply(Release(i))
            frees += 1
        elif kind is Kind.SAMPLE:
            samples.append(_sample(state, now, len(pending)))
            return
        try_queue(now)
        last_power = cm.power_w(state)

    engine.run(handle)
    for i in sorted(pending):  # still waiting at the end of the trace
        state.apply(Reject(i, "StillPendingAtEnd"))
    if progress is not None:
        progress(pods.n, pods.n)
    waits = (start_t - pods.arrival_s)[~np.isnan(start_t)]
    ran = ~np.isnan(start_t) & np.isfinite(pods.duration_s)
    summary = _summary(state) | {
        "pods": pods.n,
        "started": int((~np.isnan(start_t)).sum()),
        "completed": int((state.phase == Phase.SUCCEEDED).sum()),
        "queue_wait_mean_s": round(float(waits.mean()), 3) if waits.size else 0.0,
        "queue_wait_p95_s": round(float(np.percentile(waits, 95)), 3) if waits.size else 0.0,
        "completion_mean_s": round(
            float((start_t[ran] + pods.duration_s[ran] - pods.arrival_s[ran]).mean()), 3
        )
        if ran.any()
        else 0.0,
        "energy_kwh": round(energy_j / 3.6e6, 3),
    }
    summary |= _scheduler_report(sched, control)
    return RunResult(
        scheduler=sched.name,
        seed=seed,
        trace=scenario.name,
        mode="replay",
        wall_seconds=round(time.perf_counter() - started, 4),
        curve=[],
        summary=summary,
        samples=samples,
    )


def _sample(state: ClusterState, now: float, queued: int) -> dict[str, float]:
    return {
        "time_s": now,
        "gpu_alloc_ratio_pct": round(cm.gpu_allocation_ratio(state), 4),
        "cpu_alloc_ratio_pct": round(cm.cpu_allocation_ratio(state), 4),
        "running": cm.running_pods(state),
        "pending": queued,
        "power_w": round(cm.power_w(state), 1),
    }
