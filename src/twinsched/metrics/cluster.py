"""Allocation, unscheduled pods, power: pure functions of the state arrays."""

from __future__ import annotations

from collections import Counter

import numpy as np

from twinsched.model.cluster import F64, MILLI_PER_GPU, Pods, Scenario
from twinsched.model.events import Phase
from twinsched.model.state import ClusterState


def pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def gpu_allocation_ratio(state: ClusterState) -> float:
    """Allocated milli-GPU over all milli-GPU, in %."""
    return pct(state.allocated_gpu_milli, state.nodes.total_gpu_milli)


def cpu_allocation_ratio(state: ClusterState) -> float:
    return pct(
        float((state.nodes.cpu_milli - state.cpu_free).sum()), float(state.nodes.cpu_milli.sum())
    )


def memory_allocation_ratio(state: ClusterState) -> float:
    return pct(
        float((state.nodes.memory_mib - state.mem_free).sum()), float(state.nodes.memory_mib.sum())
    )


def unscheduled_by_reason(state: ClusterState) -> dict[str, int]:
    """Pods that could not be placed, counted by reason."""
    return dict(Counter(state.reasons.values()).most_common())


def node_utilisation(state: ClusterState) -> F64:
    """Per node: mean of CPU and GPU used fractions (CPU alone on nodes without GPUs)."""
    nd = state.nodes
    cpu = 1.0 - state.cpu_free / np.maximum(nd.cpu_milli, 1)
    gpu_cap = nd.gpu_count * MILLI_PER_GPU
    gpu = 1.0 - state.gpu_idle / np.maximum(gpu_cap, 1)  # gpu_left's row sums, kept by apply
    return np.where(gpu_cap > 0, (cpu + gpu) / 2.0, cpu)


def power_w(state: ClusterState) -> float:
    """Cluster power: per node idle + (peak - idle) x utilisation, nodes that are up."""
    nd = state.nodes
    per_node = nd.power_idle_w + (nd.power_peak_w - nd.power_idle_w) * node_utilisation(state)
    return float(per_node[state.up].sum())


def node_power_linear_w(state: ClusterState) -> F64:
    """Per node, the watts of :func:`power_w`'s linear formula (0 for nodes that are down)."""
    nd = state.nodes
    per_node = nd.power_idle_w + (nd.power_peak_w - nd.power_idle_w) * node_utilisation(state)
    out: F64 = np.where(state.up, per_node, 0.0)
    return out


def missed_deadlines(pods: Pods, end_s: F64, slack: float) -> dict[str, int]:
    """Jobs with a deadline (every pod with a finite run time), and those that missed it:
    a job's deadline is its first arrival plus ``slack`` x its longest run time; it is missed
    when a pod ended later, or never ended (``end_s`` nan)."""
    jobs = int(pods.job.max(initial=-1)) + 1
    first = np.full(jobs, np.inf)
    np.minimum.at(first, pods.job, pods.arrival_s)
    longest = np.zeros(jobs)
    np.maximum.at(longest, pods.job, pods.duration_s)
    last_end = np.full(jobs, -np.inf)
    np.maximum.at(last_end, pods.job, np.where(np.isnan(end_s), np.inf, end_s))
    has = np.isfinite(longest) & np.isin(np.arange(jobs), pods.job)
    missed = has & (last_end > first + slack * longest + 1e-9)
    return {"deadline_jobs": int(has.sum()), "missed_deadlines": int(missed.sum())}


def running_pods(state: ClusterState) -> int:
    return int((state.phase == Phase.RUNNING).sum())


def offered_load_pct(scenario: Scenario, span_s: float) -> dict[str, float]:
    """The workload's own GPU and CPU demand (request x run time of every pod) over the
    capacity of ``span_s`` seconds, in %: with no wait and no rejection, a replay's time-mean
    allocation over the same span is this (Little's law), whatever the scheduler."""
    pods, nodes = scenario.pods, scenario.nodes
    run = np.where(np.isfinite(pods.duration_s), pods.duration_s, 0.0)
    demand = {
        "gpu": float((pods.gpu_request * run).sum()),
        "cpu": float((pods.cpu_milli * run).sum()),
    }
    capacity = {"gpu": nodes.total_gpu_milli * span_s, "cpu": float(nodes.cpu_milli.sum()) * span_s}
    return {k: pct(demand[k], capacity[k]) for k in demand}
