"""Run a scheduled workflow for real as Ray tasks (``pip install 'twinsched[workflows]'``).

Each task becomes one Ray task, submitted in the schedule's order. Its constraint maps to
Ray resources (``num_cpus`` = cores, ``num_gpus`` = GPUs) and the scheduler's placement to
a custom resource per tier, ``twinsched-tier-<name>``, so on a cluster whose nodes declare
their tier (``ray start --resources '{"twinsched-tier-edge": 1000}'``) a task can only run
in the tier it was placed in. A local cluster started here declares every tier on the one
local node, with enough logical CPUs and GPUs for the largest task. Futures become Ray
object references, so Ray moves the data; tasks built from WfCommons files, which have no
Python function, sleep instead: their simulated run time (work over the planned node's
speed) times ``time_scale``. Every task records its wall
start and end and the resources Ray gave it, next to the simulated times.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from twinsched.errors import TwinschedError
from twinsched.extras import require
from twinsched.workflows.api import Future, TaskCall
from twinsched.workflows.dag import DAG
from twinsched.workflows.placement import Schedule
from twinsched.workflows.platform import Platform

TIER_RESOURCE = "twinsched-tier-{}"
TIER_SHARE = 0.001  # of a tier resource per task: many tasks share a tier


@dataclass(frozen=True)
class TaskRecord:
    """What happened to one task on Ray, next to what the simulation planned."""

    name: str
    tier: str  # planned tier
    assigned_tier: str  # tier resource Ray actually granted
    started_s: float  # wall seconds since the first task started
    ended_s: float
    simulated_start_s: float
    simulated_finish_s: float


@dataclass(frozen=True)
class RayRun:
    """Results by task name, and one record per task."""

    results: dict[str, Any]
    records: list[TaskRecord]

    @property
    def measured_makespan_s(self) -> float:
        return max((r.ended_s for r in self.records), default=0.0)


@dataclass(frozen=True)
class _Slot:
    """Where a future stood in a call's arguments: the k-th upstream record, output i."""

    k: int
    index: int


def _import_ray() -> Any:
    return require("ray", "workflows", "Ray is not installed")


def run_on_ray(
    dag: DAG,
    schedule: Schedule,
    platform: Platform,
    calls: Sequence[TaskCall] | None = None,
    *,
    address: str | None = None,
    time_scale: float = 0.0,
) -> RayRun:
    """Execute ``dag`` as placed by ``schedule``; starts (and stops) a local Ray cluster
    unless ``address`` names a running one. ``calls`` are the recorded Python calls of a
    :class:`~twinsched.workflows.api.Workflow`; without them every task sleeps."""
    if not schedule.ok:
        raise TwinschedError(f"cannot execute an unschedulable workflow: {schedule.reason}")
    if calls is not None and len(calls) != dag.n:
        raise TwinschedError(f"{len(calls)} recorded calls for {dag.n} tasks")
    ray = _import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        _start(ray, dag, platform, address)
    try:
        return _submit(ray, dag, schedule, platform, calls, time_scale)
    finally:
        if started_here:
            ray.shutdown()


def _start(ray: Any, dag: DAG, platform: Platform, address: str | None) -> None:
    if address:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
        return
    cores = max([c.cores for c in dag.constraints] + [os.cpu_count() or 1])
    gpus = max([c.gpus for c in dag.constraints] + [0])
    tiers = {TIER_RESOURCE.format(name): 1.0 for name in platform.tier_names}
    ray.init(
        num_cpus=cores,
        num_gpus=gpus,
        resources=tiers,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )


def _submit(
    ray: Any,
    dag: DAG,
    schedule: Schedule,
    platform: Platform,
    calls: Sequence[TaskCall] | None,
    time_scale: float,
) -> RayRun:
    remote = ray.remote(_execute)
    refs: dict[int, Any] = {}
    for t in schedule.order.tolist():
        c = dag.constraints[t]
        tier = platform.tier_names[platform.tier[int(schedule.node[t])]]
        upstream: list[Any] = []
        if calls is not None:
            call = calls[t]
            function: Callable[..., Any] = call.function
            args = _replace(call.args, refs, upstream)
            kwargs = _replace(call.kwargs, refs, upstream)
            returns = call.options.returns
        else:
            planned = float(schedule.finish[t] - schedule.start[t])  # work / node speed
            function, args, kwargs, returns = _sleep, (planned * time_scale,), {}, 1
            upstream = [refs[int(p)] for p in dag.parents(t).tolist()]  # order only
        options = {
            "num_cpus": c.cores,
            "num_gpus": c.gpus,
            "resources": {TIER_RESOURCE.format(tier): TIER_SHARE},
        }
        refs[t] = remote.options(**options).remote(function, args, kwargs, returns, *upstream)
    order = list(range(dag.n))
    outputs = ray.get([refs[t] for t in order])
    first = min((out[1] for out in outputs), default=0.0)
    records, results = [], {}
    for t, (values, began, ended, assigned) in zip(order, outputs, strict=True):
        granted = [k for k in assigned if k.startswith(TIER_RESOURCE.format(""))]
        records.append(
            TaskRecord(
                name=dag.names[t],
                tier=platform.tier_names[platform.tier[int(schedule.node[t])]],
                assigned_tier=granted[0][len(TIER_RESOURCE.format("")) :] if granted else "",
                started_s=began - first,
                ended_s=ended - first,
                simulated_start_s=float(schedule.start[t]),
                simulated_finish_s=float(schedule.finish[t]),
            )
        )
        results[dag.names[t]] = values[0] if len(values) == 1 else values
    return RayRun(results, records)


def _replace(value: Any, refs: dict[int, Any], upstream: list[Any]) -> Any:
    """``value`` with every Future turned into a slot over ``upstream`` (one level deep)."""
    if isinstance(value, Future):
        upstream.append(refs[value.task])
        return _Slot(len(upstream) - 1, value.index)
    if isinstance(value, tuple | list):
        items = [_replace(v, refs, upstream) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return {k: _replace(v, refs, upstream) for k, v in value.items()}
    return value


def _fill(value: Any, records: tuple[Any, ...]) -> Any:
    if isinstance(value, _Slot):
        return records[value.k][0][value.index]
    if isinstance(value, tuple | list):
        items = [_fill(v, records) for v in value]
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return {k: _fill(v, records) for k, v in value.items()}
    return value


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def _execute(
    function: Callable[..., Any],
    args: Any,
    kwargs: Any,
    returns: int,
    *records: Any,
) -> tuple[tuple[Any, ...], float, float, dict[str, float]]:
    """Runs inside a Ray worker: upstream records arrive resolved, as top-level arguments."""
    ray = _import_ray()

    began = time.time()
    value = function(*_fill(args, records), **_fill(kwargs, records))
    ended = time.time()
    values = tuple(value) if returns > 1 else (value,)
    if len(values) != returns:
        raise TwinschedError(f"{function.__name__} returned {len(values)} values, not {returns}")
    assigned = dict(ray.get_runtime_context().get_assigned_resources())
    return values, began, ended, assigned
