"""Lower bounds on any schedule's makespan, and what a schedule costs (data moved, energy)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twinsched.workflows.dag import DAG
from twinsched.workflows.placement import Schedule
from twinsched.workflows.platform import Platform


@dataclass(frozen=True)
class LowerBounds:
    """Two bounds no schedule can beat; ``value`` is the larger."""

    critical_path_s: float  # longest chain of work at the fastest speed, transfers free
    work_s: float  # total core-seconds of work over the platform's speed-weighted cores

    @property
    def value(self) -> float:
        return max(self.critical_path_s, self.work_s)


def lower_bounds(dag: DAG, platform: Platform) -> LowerBounds:
    """Critical path (fastest eligible speed per task, no transfers) and work over capacity."""
    classes, eligible = platform.eligibility(dag)
    fastest = np.where(eligible, platform.speed, 0.0).max(axis=1, initial=0.0)
    duration = dag.work_s / np.where(fastest > 0, fastest, np.inf)[classes]
    off, pars, _ = dag._parents_csr
    off_l, pars_l, dur = off.tolist(), pars.tolist(), duration.tolist()
    end = [0.0] * dag.n
    for t in dag.topological_order.tolist():
        begin = max((end[p] for p in pars_l[off_l[t] : off_l[t + 1]]), default=0.0)
        end[t] = begin + dur[t]
    cores = np.array([c.cores for c in dag.constraints], dtype=np.float64)
    work = float((dag.work_s * cores).sum()) / platform.capacity
    return LowerBounds(max(end, default=0.0), work)


@dataclass(frozen=True)
class Costs:
    """What a schedule moves and burns."""

    moved_between_nodes_bytes: float  # edges between different nodes, plus external data
    moved_between_tiers_bytes: float  # the part of it that crosses a tier-to-tier link
    energy_kwh: float  # nodes that run a task are on for the makespan


def costs(dag: DAG, platform: Platform, schedule: Schedule) -> Costs:
    """Bytes moved over the network and energy of a built schedule.

    Energy: every node that runs at least one task draws idle power for the whole makespan
    plus, per task, its share of cores times (peak - idle) while it runs; unused nodes are off.
    """
    if not schedule.ok:
        return Costs(0.0, 0.0, 0.0)
    node, tier = schedule.node, platform.tier
    split = node[dag.parent] != node[dag.child]
    cross = tier[node[dag.parent]] != tier[node[dag.child]]
    between_nodes = float(dag.size_bytes[split].sum())
    between_tiers = float(dag.size_bytes[cross].sum())
    for d in (*dag.inputs, *dag.outputs):
        between_nodes += d.size_bytes
        if tier[node[d.task]] != platform.tier_index(d.location):
            between_tiers += d.size_bytes
    used = np.unique(node)
    idle = float(platform.power_idle_w[used].sum()) * schedule.makespan
    cores = np.array([c.cores for c in dag.constraints], dtype=np.float64)
    share = cores / platform.cores[node]
    dynamic = (platform.power_peak_w - platform.power_idle_w)[node]
    busy = float((share * dynamic * (schedule.finish - schedule.start)).sum())
    return Costs(between_nodes, between_tiers, (idle + busy) / 3.6e6)
