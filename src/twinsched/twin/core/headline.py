"""The twin's headline figures: allocation, pods, power and carbon per tier. No web framework.

:func:`headline` turns one document into what an operator reads first, served by
``GET /api/v1/summary`` and shown at the top of ``/ui`` (the same numbers, tested):

* per nodepool (tier) and for the whole cluster: nodes, nodes up, CPU, memory and GPU
  allocated (requests of the running pods on the nodes over their capacity, down nodes
  included, as ``metrics/cluster.py`` counts a run's allocation), and power and carbon;
* pods: pending, and the pods that cannot be placed now (phase ``Unschedulable``, or
  ``Pending`` with no node that fits) counted by reason, the reason each has now
  (:func:`~twinsched.twin.core.dashboard.pod_reason`, one check per pod class), and the first
  :data:`UNSCHEDULABLE_SHOWN` of them listed.

**Power** per node is the node's own ``power_w`` metric when its feed reports one, else the
linear formula of ``metrics/cluster.py:power_w`` (idle + (peak - idle) x the mean of its CPU
and GPU allocation, the hardware's ``power_idle_w``/``power_peak_w`` or the cluster model's
defaults); a node that is down draws nothing. **Carbon** is that power weighed by the tier's
intensity at the twin's hour of the day, the synthetic profile of ``docs/energy.md`` (seed 0),
as the what-if's ``carbon_kg``: grams of CO2 per hour at the present draw.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from twinsched.model.carbon import HOUR_S, synthetic_carbon
from twinsched.model.cluster import nodes_from_columns
from twinsched.model.document import Pod, TwinDocument

# the dashboard's node columns and its one reason check (same package, same view of the twin)
from twinsched.twin.core.dashboard import (
    F64,
    MILLI,
    SCHEDULABLE,
    _allocate,
    _latency,
    _Nodes,
    _nodes,
    pod_reason,
)

UNSCHEDULABLE_SHOWN = 200
REJECTED_EARLIER = "RejectedEarlier"  # phase Unschedulable, though a node could take it now
DAY_H = 24


class Share(BaseModel):
    """Allocated over capacity of one resource."""

    allocated: float = Field(
        description="Requests of the running pods (milli-CPU, MiB, milli-GPU)."
    )
    capacity: float = Field(description="Capacity of the nodes, same unit.")
    pct: float = Field(description="allocated / capacity in %, 2 decimals (0 without capacity).")


class TierFigures(BaseModel):
    """The figures of one nodepool, or of the whole cluster (id ``all``)."""

    id: str
    nodes: int
    up: int = Field(description="Nodes Ready (cordoned ones included).")
    cpu: Share
    memory: Share
    gpu: Share
    power_w: float = Field(description="Watts drawn now (reported power_w, else the linear model).")
    power_reported: int = Field(description="Nodes whose power_w comes from their feed.")
    carbon_g_per_h: float = Field(description="Grams of CO2 per hour at the present draw.")


class UnschedulablePod(BaseModel):
    id: str
    job: str
    phase: str
    reason: str
    cpu_milli: int
    memory_mib: int
    gpu_count: int
    gpu_milli: int


class Unschedulables(BaseModel):
    total: int
    reasons: dict[str, int] = Field(description="Pods per reason, most frequent first.")
    pods: list[UnschedulablePod] = Field(description="The first ones (priority, then arrival).")


class Headline(BaseModel):
    """``GET /summary``: see :mod:`twinsched.twin.core.headline`."""

    time: float
    hour: int = Field(description="The twin's hour of the day that sets the carbon intensity.")
    tiers: list[TierFigures]
    total: TierFigures
    pending: int
    unschedulable: Unschedulables


def _power_w(nodes: _Nodes, doc: TwinDocument) -> tuple[F64, np.ndarray]:
    """Each node's watts and whether its feed reported them."""
    rows = [node for pool in doc.nodepools for node in pool.nodes]
    count = nodes.gpu_count
    model = nodes_from_columns(nodes.ids, nodes.cpu, nodes.mem, count, ["" for _ in rows])
    idle = np.array([np.nan if n.hardware.power_idle_w is None else n.hardware.power_idle_w
                     for n in rows], dtype=np.float64)  # fmt: skip
    peak = np.array([np.nan if n.hardware.power_peak_w is None else n.hardware.power_peak_w
                     for n in rows], dtype=np.float64)  # fmt: skip
    idle = np.where(np.isnan(idle), model.power_idle_w, idle)
    peak = np.where(np.isnan(peak), model.power_peak_w, peak)
    cpu = nodes.cpu_used / np.maximum(nodes.cpu, 1)
    gpu_cap = (count * MILLI).astype(np.float64)
    gpu = nodes.gpu_used.sum(axis=1) / np.maximum(gpu_cap, 1)
    use = np.where(gpu_cap > 0, (cpu + gpu) / 2.0, cpu)
    reported = np.array([n.metrics.get("power_w", np.nan) for n in rows], dtype=np.float64)
    given = ~np.isnan(reported)
    watts = np.where(given, reported, idle + (peak - idle) * use)
    return np.where(nodes.up, watts, 0.0), given


def _share(allocated: float, capacity: float) -> Share:
    pct = round(100.0 * allocated / capacity, 2) if capacity > 0 else 0.0
    return Share(allocated=round(allocated, 3), capacity=round(capacity, 3), pct=pct)


def _tier(
    name: str, nodes: _Nodes, at: np.ndarray, watts: F64, given: Any, g_kwh: F64
) -> TierFigures:
    gpu_cap = float((nodes.gpu_count[at] * MILLI).sum())
    return TierFigures(
        id=name,
        nodes=int(at.sum()),
        up=int(nodes.up[at].sum()),
        cpu=_share(float(nodes.cpu_used[at].sum()), float(nodes.cpu[at].sum())),
        memory=_share(float(nodes.mem_used[at].sum()), float(nodes.mem[at].sum())),
        gpu=_share(float(nodes.gpu_used[at].sum()), gpu_cap),
        power_w=round(float(watts[at].sum()), 3),
        power_reported=int(given[at].sum()),
        carbon_g_per_h=round(float((watts[at] / 1000.0 * g_kwh[at]).sum()), 3),
    )


def _class_key(pod: Pod) -> tuple[Any, ...]:
    """What a pod's reason depends on besides the state: pods alike share one check."""
    r, p = pod.requests, pod.policies
    return (r.cpu_milli, r.memory_mib, r.gpu_count, r.gpu_milli, tuple(r.gpu_models),
            tuple(p.required), tuple(p.rejected), pod.data_pool, pod.max_latency_ms)  # fmt: skip


def headline(doc: TwinDocument, shown: int = UNSCHEDULABLE_SHOWN) -> dict[str, Any]:
    """The headline figures of ``doc`` (shaped as :class:`Headline`)."""
    nodes, index = _nodes(doc)
    running = [pod for job in doc.jobs for pod in job.pods if pod.phase == "Running"]
    _allocate(nodes, index, running)
    watts, given = _power_w(nodes, doc)
    hour = int(doc.timestamp // HOUR_S) % DAY_H
    intensity = synthetic_carbon(max(1, len(doc.nodepools)), 0, DAY_H).g_per_kwh[:, hour]
    g_kwh = intensity[nodes.pool] if len(nodes.ids) else np.zeros(0)
    tiers = [_tier(pool.id, nodes, nodes.pool == p, watts, given, g_kwh)
             for p, pool in enumerate(doc.nodepools)]  # fmt: skip
    total = _tier("all", nodes, np.ones(len(nodes.ids), dtype=bool), watts, given, g_kwh)
    latency, pools = _latency(doc), {pool.id: i for i, pool in enumerate(doc.nodepools)}
    memo: dict[tuple[Any, ...], str] = {}
    stuck: list[tuple[str, Pod, str]] = []
    pending = 0
    for job in doc.jobs:
        for pod in job.pods:
            if pod.phase not in ("Pending", "Unschedulable"):
                continue
            pending += pod.phase == "Pending"
            key = _class_key(pod)
            reason = memo.get(key)
            if reason is None:
                reason = memo[key] = pod_reason(nodes, latency, pools, pod)
            if pod.phase == "Unschedulable" and reason == SCHEDULABLE:
                stuck.append((job.id, pod, REJECTED_EARLIER))
            elif reason != SCHEDULABLE:
                stuck.append((job.id, pod, reason))
    stuck.sort(key=lambda jpr: (-jpr[1].priority, jpr[1].timestamps.arrival_s))
    reasons = dict(Counter(r for _, _, r in stuck).most_common())
    listed = [_listed(job, pod, reason) for job, pod, reason in stuck[:shown]]
    return {
        "time": doc.timestamp,
        "hour": hour,
        "tiers": [t.model_dump() for t in tiers],
        "total": total.model_dump(),
        "pending": pending,
        "unschedulable": {"total": len(stuck), "reasons": reasons, "pods": listed},
    }


def _listed(job: str, pod: Pod, reason: str) -> dict[str, Any]:
    r = pod.requests
    return {"id": pod.id, "job": job, "phase": pod.phase, "reason": reason,
            "cpu_milli": r.cpu_milli, "memory_mib": r.memory_mib, "gpu_count": r.gpu_count,
            "gpu_milli": r.gpu_milli}  # fmt: skip
