"""A replay's figures: its summary, missed deadlines and the time-line samples."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from twinsched.metrics import cluster as cm
from twinsched.model.cluster import F64
from twinsched.model.events import Phase
from twinsched.model.state import ClusterState
from twinsched.scheduling.controller import SchedulerController
from twinsched.sim.energy import EnergyMeter
from twinsched.sim.runs import scheduler_report
from twinsched.sim.runs import summary as run_summary

if TYPE_CHECKING:
    from twinsched.model.faults import FaultSpec


def replay_summary(
    control: SchedulerController,
    arrival_s: np.ndarray,
    duration_s: np.ndarray,
    start_t: np.ndarray,
    energy_j: float,
) -> dict[str, object]:
    """Allocation, starts, completions, queue wait, completion time and energy of a replay,
    with the scheduler's own report."""
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


def deadlines(state: ClusterState, start_t: F64, faults: FaultSpec | None) -> dict[str, int]:
    """The jobs that missed their deadline (``docs/faults.md``), in runs with faults or
    energy accounting (where deferral may make them late); the slack is the faults' or the
    default one."""
    from twinsched.model.faults import DEFAULT_DEADLINE_SLACK

    slack = faults.deadline_slack if faults is not None else DEFAULT_DEADLINE_SLACK
    done = state.phase == Phase.SUCCEEDED
    end_s = np.where(done, start_t + state.pods.duration_s, np.nan)
    return cm.missed_deadlines(state.pods, end_s, slack)


def sample(
    state: ClusterState, now: float, queued: int, meter: EnergyMeter | None
) -> dict[str, float]:
    """One point of the replay's time line: allocation, running, pending and power now."""
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
