"""What fill-up and replay runs share: the run's set-up (one prologue) and its summary figures."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypedDict, Unpack

from twinsched.metrics import cluster as cm
from twinsched.model.cluster import Pods, Scenario
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.controller import QueueSort, SchedulerController
from twinsched.scheduling.framework import DEFAULT_FALLBACK, RunContext, Scheduler
from twinsched.scheduling.observers import Observers, ProgressObserver, RunObserver

SchedulerArg = str | Scheduler
Progress = Callable[[int, int], None]


class RunOptions(TypedDict, total=False):
    """The keywords every run takes (:class:`~twinsched.sim.fillup.FillupRun`,
    :func:`~twinsched.sim.fillup.run_fillup`, :func:`~twinsched.sim.replay.run_replay`).

    - ``validate`` (default False): check the state's invariants after every event;
    - ``fallback`` (default ``"fgd"``): the scheduler that answers when the run's scheduler
      gives no valid decision; ``None``: such a pod is unschedulable;
    - ``observers`` (default none): :class:`RunObserver` instances fed the run's events;
    - ``progress`` (default none): called with (decided, total) pods every 500 decisions.
    """

    validate: bool
    fallback: SchedulerArg | None
    observers: Sequence[RunObserver]
    progress: Progress | None


def resolve(spec: SchedulerArg | None) -> Scheduler | None:
    """A scheduler instance from a registered name (or the instance itself)."""
    return registry.create(spec) if isinstance(spec, str) else spec


def start(
    scenario: Scenario,
    pods: Pods,
    scheduler: SchedulerArg,
    seed: int,
    *,
    queue_sort: QueueSort | None = None,
    workload: Pods | None = None,
    **options: Unpack[RunOptions],
) -> SchedulerController:
    """The state of a run over ``pods`` (the scenario's, or a fill-up's arrivals drawn from
    them) and the controller that owns its scheduling cycle. ``workload`` is what the
    schedulers' context knows as the whole workload (default: the scenario's pods; the
    scheduler service passes the trace it stands in for). ``queue_sort``: the order a cycle
    tries the pending pods in (default: the scheduler's own where it has one, else
    :func:`~twinsched.scheduling.controller.queue_order`)."""
    sched = resolve(scheduler)
    assert sched is not None
    validate = options.get("validate", False)
    state = ClusterState(scenario.nodes, pods, scenario.links, validate=validate)
    ctx = RunContext.create(scenario, seed, workload)  # the context knows the whole workload
    fallback = resolve(options.get("fallback", DEFAULT_FALLBACK))
    observers = list(options.get("observers", ()))
    progress = options.get("progress")
    if progress is not None:
        observers.append(ProgressObserver(progress, pods.n))
    return SchedulerController(state, sched, ctx, fallback, queue_sort, Observers(observers))


def summary(state: ClusterState) -> dict[str, object]:
    """Allocation, running and unscheduled pods and power of the state now."""
    return {
        "gpu_alloc_ratio_pct": round(cm.gpu_allocation_ratio(state), 4),
        "cpu_alloc_ratio_pct": round(cm.cpu_allocation_ratio(state), 4),
        "memory_alloc_ratio_pct": round(cm.memory_allocation_ratio(state), 4),
        "running": cm.running_pods(state),
        "unscheduled": sum(cm.unscheduled_by_reason(state).values()),
        "unscheduled_by_reason": cm.unscheduled_by_reason(state),
        "power_w": round(cm.power_w(state), 1),
    }


def scheduler_report(control: SchedulerController) -> dict[str, object]:
    """Fallbacks the controller made, and the scheduler's own statistics if it keeps any."""
    out: dict[str, object] = {}
    if control.fallbacks:
        out["fallbacks"] = dict(control.fallbacks)
    stats = getattr(control.scheduler, "stats", None)
    if callable(stats):
        out["scheduler_stats"] = stats()
    return out


def rewards(control: SchedulerController) -> dict[str, Any]:
    """The scheduler's per-decision reward table, if it keeps one (ensembles, bandits)."""
    fn = getattr(control.scheduler, "rewards", None)
    return fn() if callable(fn) else {}


def timings(control: SchedulerController) -> dict[str, Any]:
    """The scheduler's wall-clock timings, if it keeps any."""
    fn = getattr(control.scheduler, "timings", None)
    return fn() if callable(fn) else {}
