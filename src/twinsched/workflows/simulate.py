"""Replay a schedule in the discrete-event engine, checking it as it goes.

:func:`simulate` pushes every task's start and completion into
:class:`twinsched.sim.engine.Engine` (completions first at equal times, so freed cores are
reusable at once) and, at each start, checks what a real run needs: every parent has
completed, its data had time to cross the link from the parent's node, and the node has
enough free cores and GPUs. A broken schedule raises :class:`~twinsched.errors.InvariantError`
(always a bug in a scheduler); a good one yields the makespan and per-node busy time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twinsched.errors import InvariantError
from twinsched.model.cluster import F64, I64
from twinsched.sim.engine import Engine, Kind
from twinsched.workflows.dag import DAG
from twinsched.workflows.placement import Schedule, external_ready
from twinsched.workflows.platform import Platform

EPS = 1e-6


@dataclass(frozen=True)
class Simulation:
    """What the replay measured."""

    makespan_s: float
    busy_core_s: F64  # per node: core-seconds of work run
    peak_cores: I64  # per node: most cores in use at once


def simulate(dag: DAG, platform: Platform, schedule: Schedule) -> Simulation:
    """Run ``schedule`` event by event; InvariantError at the first violated rule."""
    if not schedule.ok:
        raise InvariantError(f"cannot simulate an unschedulable schedule: {schedule.reason}")
    engine = Engine()
    for t in range(dag.n):
        engine.at(float(schedule.start[t]), Kind.ARRIVE, t)
        engine.at(float(schedule.finish[t]), Kind.COMPLETE, t)
    arrive, _ = external_ready(dag, platform)
    node, tier = schedule.node, platform.tier
    cores = np.array([c.cores for c in dag.constraints], dtype=np.int64)
    gpus = np.array([c.gpus for c in dag.constraints], dtype=np.int64)
    used_cores = np.zeros(platform.n, dtype=np.int64)
    used_gpus = np.zeros(platform.n, dtype=np.int64)
    peak = np.zeros(platform.n, dtype=np.int64)
    completed = np.zeros(dag.n, dtype=bool)
    completed_at = np.zeros(dag.n)

    def handle(kind: Kind, t: int) -> None:
        now = engine.clock.now()
        n = int(node[t])
        if kind is Kind.COMPLETE:
            used_cores[n] -= cores[t]
            used_gpus[n] -= gpus[t]
            completed[t], completed_at[t] = True, now
            return
        _check_inputs(dag, platform, t, n, now, completed, completed_at, node)
        if now + EPS < arrive[t, tier[n]]:
            raise InvariantError(f"{dag.names[t]} starts before its external inputs arrive")
        used_cores[n] += cores[t]
        used_gpus[n] += gpus[t]
        if used_cores[n] > platform.cores[n] or used_gpus[n] > platform.gpus[n]:
            raise InvariantError(f"{dag.names[t]} over-commits {platform.node_names[n]}")
        peak[n] = max(peak[n], used_cores[n])

    engine.run(handle)
    busy: F64 = np.bincount(
        node, weights=cores * (schedule.finish - schedule.start), minlength=platform.n
    ).astype(np.float64)
    return Simulation(float(schedule.done.max(initial=0.0)), busy, peak)


def _check_inputs(
    dag: DAG,
    platform: Platform,
    t: int,
    n: int,
    now: float,
    completed: np.ndarray,
    completed_at: F64,
    node: I64,
) -> None:
    for edge in dag.in_edges(t).tolist():
        p = int(dag.parent[edge])
        if not completed[p]:
            raise InvariantError(f"{dag.names[t]} starts before its parent {dag.names[p]} ends")
        src = int(node[p])
        lag = 0.0
        if src != n:
            lag = float(
                platform.transfer_s(dag.size_bytes[edge], platform.tier[src], platform.tier[n])
            )
        if now + EPS < completed_at[p] + lag:
            raise InvariantError(f"{dag.names[t]} starts before data from {dag.names[p]} arrives")
