"""Cluster state as metric families for Prometheus: pure, no Prometheus library here.

Each node family has one sample per node, labelled ``node`` and ``nodepool``. Units follow
Prometheus' habit of base units: CPU in cores, memory in bytes; GPU shares stay in milli-GPU
(the unit schedulers reason in). The exporter (``twinsched.sim.exporter``) turns these into
``prometheus_client`` families at scrape time; the collector
(``twinsched.twin.collectors.prometheus``) queries them back by the names below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from twinsched.model.cluster import F64, MILLI_PER_GPU
from twinsched.model.events import Phase
from twinsched.model.state import ClusterState

CPU_CAPACITY = "twinsched_node_cpu_capacity_cores"
CPU_ALLOCATED = "twinsched_node_cpu_allocated_cores"
MEMORY_CAPACITY = "twinsched_node_memory_capacity_bytes"
MEMORY_ALLOCATED = "twinsched_node_memory_allocated_bytes"
GPU_CAPACITY = "twinsched_node_gpu_capacity"
GPU_ALLOCATED = "twinsched_node_gpu_allocated"
GPU_MILLI_ALLOCATED = "twinsched_node_gpu_milli_allocated"
PODS_RUNNING = "twinsched_node_pods_running"
NODE_UP = "twinsched_node_up"
PODS_BY_PHASE = "twinsched_pods"
SIM_TIME = "twinsched_sim_time_seconds"

NODE_LABELS = ("node", "nodepool")
BYTES_PER_MIB = 1024 * 1024


@dataclass(frozen=True)
class Family:
    """One metric family: a name, a help text and one value per row of label values."""

    name: str
    help: str
    label_names: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    values: F64
    kind: Literal["gauge"] = "gauge"

    def samples(self) -> list[tuple[dict[str, str], float]]:
        """``(labels, value)`` pairs, in row order."""
        return [
            (dict(zip(self.label_names, row, strict=True)), value)
            for row, value in zip(self.rows, self.values.tolist(), strict=True)
        ]


def node_rows(state: ClusterState) -> tuple[tuple[str, ...], ...]:
    """``(node, nodepool)`` label values of every node, in node order."""
    nodes = state.nodes
    pools = nodes.pool_names
    return tuple(
        (name, pools[p] if 0 <= p < len(pools) else "")
        for name, p in zip(nodes.names, nodes.pool.tolist(), strict=True)
    )


def _floats(values: npt.ArrayLike) -> F64:
    return np.asarray(values, dtype=np.float64)


def node_values(state: ClusterState) -> dict[str, F64]:
    """Per-node values of every node family, by metric name (vectorised over nodes)."""
    nodes = state.nodes
    gpu_used = np.where(state.gpu_exists, MILLI_PER_GPU - state.gpu_left, 0)
    running = state.phase == Phase.RUNNING
    pods_per_node = np.bincount(state.pod_node[running], minlength=nodes.n)
    return {
        CPU_CAPACITY: _floats(nodes.cpu_milli) / 1000.0,
        CPU_ALLOCATED: _floats(nodes.cpu_milli - state.cpu_free) / 1000.0,
        MEMORY_CAPACITY: _floats(nodes.memory_mib) * BYTES_PER_MIB,
        MEMORY_ALLOCATED: _floats(nodes.memory_mib - state.mem_free) * BYTES_PER_MIB,
        GPU_CAPACITY: _floats(nodes.gpu_count),
        GPU_ALLOCATED: _floats((gpu_used > 0).sum(axis=1)),
        GPU_MILLI_ALLOCATED: _floats(gpu_used.sum(axis=1)),
        PODS_RUNNING: _floats(pods_per_node),
        NODE_UP: _floats(state.up),
    }


def _ratio(used: F64, capacity: F64) -> F64:
    out = np.full(len(capacity), np.nan)
    np.divide(used, capacity, out=out, where=capacity > 0)
    return out


def twin_metrics(state: ClusterState, power_w: F64) -> dict[str, F64]:
    """Per node, the metrics a twin keeps, with the names and definitions of the Prometheus
    collector's default queries: ``cpu_util``, ``memory_util``, ``gpu_util`` (allocated
    shares in [0, 1]; NaN for a node without that resource: no sample), ``gpu_allocated``,
    ``pods_running``, ``up``; and ``power_w``, the node's watts."""
    v = node_values(state)
    return {
        "cpu_util": _ratio(v[CPU_ALLOCATED], v[CPU_CAPACITY]),
        "memory_util": _ratio(v[MEMORY_ALLOCATED], v[MEMORY_CAPACITY]),
        "gpu_util": _ratio(v[GPU_MILLI_ALLOCATED] / MILLI_PER_GPU, v[GPU_CAPACITY]),
        "gpu_allocated": v[GPU_ALLOCATED],
        "pods_running": v[PODS_RUNNING],
        "up": v[NODE_UP],
        "power_w": power_w,
    }


NODE_HELP: dict[str, str] = {
    CPU_CAPACITY: "CPU capacity of the node, in cores.",
    CPU_ALLOCATED: "CPU requested by the pods running on the node, in cores.",
    MEMORY_CAPACITY: "Memory capacity of the node, in bytes.",
    MEMORY_ALLOCATED: "Memory requested by the pods running on the node, in bytes.",
    GPU_CAPACITY: "Number of GPUs of the node.",
    GPU_ALLOCATED: "GPUs of the node with at least part of them allocated.",
    GPU_MILLI_ALLOCATED: "Allocated GPU shares on the node, in milli-GPU (1000 = one GPU).",
    PODS_RUNNING: "Pods running on the node.",
    NODE_UP: "1 when the node is up, 0 when it is down.",
}


def node_families(state: ClusterState) -> list[Family]:
    """One family per node metric, one sample per node."""
    rows = node_rows(state)
    return [
        Family(name, NODE_HELP[name], NODE_LABELS, rows, values)
        for name, values in node_values(state).items()
    ]


def pod_phase_family(state: ClusterState) -> Family:
    """Pods of the workload counted by phase (phases with no pod count 0)."""
    counts = np.bincount(state.phase, minlength=len(Phase))
    phases = tuple((p.name.lower(),) for p in Phase)
    values = np.array([counts[p.value] for p in Phase], dtype=np.float64)
    return Family(PODS_BY_PHASE, "Pods of the workload by phase.", ("phase",), phases, values)


def families(state: ClusterState) -> list[Family]:
    """Everything the exporter exposes about one state."""
    return [*node_families(state), pod_phase_family(state)]


def clock_family(now: float) -> Family:
    """The simulated time of a run in progress."""
    values = np.array([now], dtype=np.float64)
    return Family(SIM_TIME, "Simulated time of the run, in seconds.", (), ((),), values)
