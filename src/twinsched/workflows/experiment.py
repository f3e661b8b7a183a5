"""Run workflow schedulers over instances: makespans, bounds, ratios, data moved and energy.

A run is a pure function of (instance, platform, scheduler): two runs with the same inputs
give identical results. A :class:`WorkflowSpec` names one instance's runs as data, so a batch
of them goes through the experiments' executors (:func:`run_workflows`) like any other batch.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from twinsched.experiments.executors import Executor, run_batch
from twinsched.workflows import registry
from twinsched.workflows.bounds import LowerBounds, costs, lower_bounds
from twinsched.workflows.dag import DAG
from twinsched.workflows.placement import Schedule
from twinsched.workflows.platform import Platform, platform_named
from twinsched.workflows.simulate import simulate
from twinsched.workflows.wfcommons import load_instance

GB = 1e9


@dataclass(frozen=True)
class WorkflowRun:
    """One scheduler on one instance."""

    instance: str
    scheduler: str
    makespan_s: float
    ratio: float  # makespan over the larger lower bound
    moved_between_tiers_gb: float
    moved_between_nodes_gb: float
    energy_kwh: float
    schedule_seconds: float  # wall time the scheduler took
    reason: str = ""
    chosen: str = ""  # for portfolio: the heuristic it kept


@dataclass(frozen=True)
class InstanceResult:
    """Every scheduler on one instance, with the instance's lower bounds."""

    instance: str
    tasks: int
    edges: int
    bounds: LowerBounds
    runs: list[WorkflowRun]
    schedules: dict[str, Schedule] = field(repr=False, default_factory=dict)
    dag: DAG | None = field(repr=False, default=None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "instance": self.instance,
            "tasks": self.tasks,
            "edges": self.edges,
            "lower_bound_s": self.bounds.value,
            "critical_path_s": self.bounds.critical_path_s,
            "work_bound_s": self.bounds.work_s,
            "runs": [asdict(r) for r in self.runs],
        }


def run_instance(dag: DAG, platform: Platform, schedulers: Sequence[str]) -> InstanceResult:
    """Schedule ``dag`` on ``platform`` with every named scheduler."""
    bounds = lower_bounds(dag, platform)
    runs, schedules = [], {}
    for name in schedulers:
        scheduler = registry.create(name)
        began = time.perf_counter()
        schedule = scheduler.schedule(dag, platform)
        elapsed = time.perf_counter() - began
        if schedule.ok and schedule.meta.get("model") != "controller":
            # Replays it in the event engine and checks it. A plan made in the controller's
            # model (heft-data) is checked by the replay through the controller instead.
            simulate(dag, platform, schedule)
        spent = costs(dag, platform, schedule)
        chosen = schedule.meta.get("chosen", "")
        runs.append(
            WorkflowRun(
                instance=dag.name,
                scheduler=name,
                makespan_s=schedule.makespan,
                ratio=schedule.makespan / bounds.value if bounds.value > 0 else 1.0,
                moved_between_tiers_gb=spent.moved_between_tiers_bytes / GB,
                moved_between_nodes_gb=spent.moved_between_nodes_bytes / GB,
                energy_kwh=spent.energy_kwh,
                schedule_seconds=elapsed,
                reason=schedule.reason,
                chosen=str(chosen),
            )
        )
        schedules[name] = schedule
    return InstanceResult(dag.name, dag.n, int(dag.parent.size), bounds, runs, schedules, dag)


@dataclass(frozen=True)
class WorkflowSpec:
    """Everything that determines one instance's runs; plain data, so it pickles and records."""

    instance: str  # the WfCommons instance file
    schedulers: tuple[str, ...]
    platform: str = "three-tier"  # a name in platform.PLATFORMS
    inputs_at: str = "cloud"  # the tier holding the instance's input files


def run_workflow(spec: WorkflowSpec) -> InstanceResult:
    """Load the instance and schedule it with every scheduler of ``spec``."""
    dag = load_instance(Path(spec.instance), inputs_at=spec.inputs_at)
    return run_instance(dag, platform_named(spec.platform), spec.schedulers)


def run_workflows(
    specs: Sequence[WorkflowSpec], jobs: int = 1, executor: Executor | None = None
) -> Iterator[tuple[int, InstanceResult]]:
    """Yield (index, result) as instances finish: on ``executor``, or ``jobs`` local processes."""
    return run_batch(run_workflow, specs, jobs, executor)


def cost_rows(results: Sequence[InstanceResult], scheduler: str) -> list[dict[str, Any]]:
    """One row per instance for one scheduler: makespan, data moved, energy, choice."""
    rows = []
    for res in results:
        for run in res.runs:
            if run.scheduler == scheduler:
                rows.append(
                    {
                        "instance": res.instance,
                        "makespan s": round(run.makespan_s, 1),
                        "GB across tiers": round(run.moved_between_tiers_gb, 3),
                        "GB between nodes": round(run.moved_between_nodes_gb, 3),
                        "energy kWh": round(run.energy_kwh, 4),
                        "chosen": run.chosen or scheduler,
                        "schedule ms": round(1000 * run.schedule_seconds, 1),
                    }
                )
    return rows


def table_rows(results: Sequence[InstanceResult]) -> list[dict[str, Any]]:
    """One row per instance: tasks, bounds, then ``makespan (ratio)`` per scheduler.

    CP is the critical-path bound, work/cap total work over capacity, LB the larger of them.
    """
    rows = []
    for res in results:
        row: dict[str, Any] = {
            "instance": res.instance,
            "tasks": res.tasks,
            "CP s": round(res.bounds.critical_path_s, 1),
            "work/cap s": round(res.bounds.work_s, 1),
            "LB s": round(res.bounds.value, 1),
        }
        for run in res.runs:
            row[run.scheduler] = (
                f"{run.makespan_s:.1f} ({run.ratio:.2f})" if not run.reason else "unschedulable"
            )
        rows.append(row)
    return rows
