"""What the live dashboard (``/ui``) shows, computed from the twin's document. No web framework.

:func:`frame` turns one document into a compact, JSON-ready picture: the nodepools (tiers)
and the links between them, per node the allocated share of CPU, memory and GPUs (from the
requests of the pods running there) and the milli-GPU used on each GPU, the pod counts per
phase, and the head of the pending queue (priority, then arrival) with each pod's reason.
Node columns are parallel lists, so a frame for 1,000 nodes stays a few tens of kilobytes.

The reason of a pending pod is the filter that rejects the most nodes, in the scheduling
framework's codes (:class:`~twinsched.scheduling.framework.Reason`), checked on the twin's
view: node down or cordoned (``spec.unschedulable``: not ``up`` in the cluster model, as
``serve/convert.py`` reads a Kubernetes node), GPU model, required and rejected labels,
latency to the pod's data, CPU, memory, GPUs. A pod that some node could take now is
``Schedulable`` (waiting for a cycle).

The recent decisions shown beside a frame are the twin's own, kept per session with who made
them (``TwinService.decisions``), so a page opened after a run still shows the run's.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from twinsched.model.document import Pod, TwinDocument
from twinsched.scheduling.framework import Reason

MILLI = 1000
QUEUE_LIMIT = 100
SCHEDULABLE = "Schedulable"
PHASES = ("NotArrived", "Pending", "Running", "Succeeded", "Unschedulable")
F64 = NDArray[np.float64]


@dataclass
class _Nodes:
    """Node columns of one document, in nodepool order."""

    ids: list[str]
    pool: NDArray[np.int64]
    up: NDArray[np.bool_]
    cordoned: NDArray[np.bool_]
    cpu: F64  # capacities
    mem: F64
    gpu_count: NDArray[np.int64]
    gpu_model: list[str | None]
    labels: list[set[str]]
    cpu_used: F64 = field(init=False)
    mem_used: F64 = field(init=False)
    gpu_used: F64 = field(init=False)  # (nodes, most GPUs) milli-GPU in use

    def __post_init__(self) -> None:
        n, most = len(self.ids), int(self.gpu_count.max(initial=0))
        self.cpu_used, self.mem_used = np.zeros(n), np.zeros(n)
        self.gpu_used = np.zeros((n, most))


def _nodes(doc: TwinDocument) -> tuple[_Nodes, dict[str, int]]:
    rows = [(p, node) for p, pool in enumerate(doc.nodepools) for node in pool.nodes]
    hw = [node.hardware for _, node in rows]
    nodes = _Nodes(
        ids=[node.id for _, node in rows],
        pool=np.array([p for p, _ in rows], dtype=np.int64),
        up=np.array([node.status == "Ready" for _, node in rows], dtype=bool),
        cordoned=np.array([node.unschedulable for _, node in rows], dtype=bool),
        cpu=np.array([h.cpu_milli for h in hw], dtype=np.float64),
        mem=np.array([h.memory_mib for h in hw], dtype=np.float64),
        gpu_count=np.array([h.gpu_count for h in hw], dtype=np.int64),
        gpu_model=[h.gpu_model for h in hw],
        labels=[{f"{k}={v}" for k, v in node.labels.items()} for _, node in rows],
    )
    return nodes, {node_id: i for i, node_id in enumerate(nodes.ids)}


def _latency(doc: TwinDocument) -> F64:
    """Pool-to-pool latency (ms); 0 within a pool, infinite where no link is given."""
    pools = {pool.id: i for i, pool in enumerate(doc.nodepools)}
    latency = np.full((len(pools), len(pools)), np.inf)
    np.fill_diagonal(latency, 0.0)
    for link in doc.networks:
        a, b = pools.get(link.source), pools.get(link.target)
        if a is not None and b is not None:
            latency[a, b] = latency[b, a] = min(latency[a, b], link.latency_ms)
    return latency


def _allocate(nodes: _Nodes, index: dict[str, int], running: list[Pod]) -> None:
    """Add the requests of the running pods to their nodes' use (vectorised)."""
    bound = [(index[p.node], p) for p in running if p.node in index]
    if not bound:
        return
    at = np.array([n for n, _ in bound], dtype=np.int64)
    np.add.at(nodes.cpu_used, at, [p.requests.cpu_milli for _, p in bound])
    np.add.at(nodes.mem_used, at, [p.requests.memory_mib for _, p in bound])
    most = nodes.gpu_used.shape[1]
    shares = [(n, g, p.requests.gpu_milli) for n, p in bound for g in p.gpus if g < most]
    if shares:
        n, g, milli = (np.array(column) for column in zip(*shares, strict=True))
        np.add.at(nodes.gpu_used, (n, g), milli)


def _share(used: F64, capacity: F64) -> list[float]:
    """Used over capacity in [0, 1], rounded to 3 places (0 where there is no capacity)."""
    ratio = np.divide(used, capacity, out=np.zeros_like(used), where=capacity > 0)
    return np.round(np.clip(ratio, 0.0, 1.0), 3).tolist()  # type: ignore[no-any-return]


def pod_reason(nodes: _Nodes, latency: F64, pools: dict[str, int], pod: Pod) -> str:
    """The filter that rejects the most nodes first, or ``Schedulable`` when a node fits."""
    req = pod.requests
    left = np.ones(len(nodes.ids), dtype=bool)
    counts: dict[str, int] = {}

    def rule(reason: Reason, passes: NDArray[np.bool_]) -> None:
        rejected = left & ~passes
        if rejected.any():
            counts[reason.value] = int(rejected.sum())
            left[rejected] = False

    rule(Reason.NODE_DOWN, nodes.up & ~nodes.cordoned)  # as the cluster model: no new pods
    if req.gpu_count and req.gpu_models:
        rule(Reason.GPU_MODEL_MISMATCH, np.array([m in req.gpu_models for m in nodes.gpu_model]))
    if pod.policies.required:
        need = set(pod.policies.required)
        rule(Reason.NODE_LABELS_MISMATCH, np.array([need <= have for have in nodes.labels]))
    if pod.policies.rejected:
        bad = set(pod.policies.rejected)
        rule(Reason.NODE_HAS_REJECTED_LABEL, np.array([not bad & have for have in nodes.labels]))
    data = pools.get(pod.data_pool or "")
    if data is not None and pod.max_latency_ms is not None:
        rule(Reason.LATENCY_TOO_HIGH, latency[nodes.pool, data] <= pod.max_latency_ms)
    rule(Reason.INSUFFICIENT_CPU, nodes.cpu - nodes.cpu_used >= req.cpu_milli)
    rule(Reason.INSUFFICIENT_MEMORY, nodes.mem - nodes.mem_used >= req.memory_mib)
    if req.gpu_count:
        real = np.arange(nodes.gpu_used.shape[1])[None, :] < nodes.gpu_count[:, None]
        free = real & (MILLI - nodes.gpu_used >= req.gpu_milli)
        rule(Reason.INSUFFICIENT_GPU, free.sum(axis=1) >= req.gpu_count)
    if left.any() or not counts:
        return SCHEDULABLE
    return max(counts, key=lambda reason: counts[reason])


def frame(doc: TwinDocument, queue_limit: int = QUEUE_LIMIT) -> dict[str, Any]:
    """The dashboard's picture of ``doc`` (see the module docstring)."""
    nodes, index = _nodes(doc)
    phases = dict.fromkeys(PHASES, 0)
    pending: list[tuple[str, Pod]] = []
    running: list[Pod] = []
    for job in doc.jobs:
        for pod in job.pods:
            phases[pod.phase] += 1
            if pod.phase == "Running":
                running.append(pod)
            elif pod.phase == "Pending":
                pending.append((job.id, pod))
    _allocate(nodes, index, running)
    head = heapq.nsmallest(
        queue_limit, pending, key=lambda jp: (-jp[1].priority, jp[1].timestamps.arrival_s)
    )
    latency = _latency(doc)
    pools = {pool.id: i for i, pool in enumerate(doc.nodepools)}
    gpus = nodes.gpu_used.astype(np.int64)
    return {
        "time": doc.timestamp,
        "pools": [{"id": pool.id, "nodes": len(pool.nodes)} for pool in doc.nodepools],
        "links": [
            [link.source, link.target, link.latency_ms, link.bandwidth_mbps]
            for link in doc.networks
        ],
        "nodes": {
            "id": nodes.ids,
            "pool": nodes.pool.tolist(),
            "up": nodes.up.astype(int).tolist(),
            "cordoned": nodes.cordoned.astype(int).tolist(),
            "cpu": _share(nodes.cpu_used, nodes.cpu),
            "mem": _share(nodes.mem_used, nodes.mem),
            "gpu": _share(nodes.gpu_used.sum(axis=1), (nodes.gpu_count * MILLI).astype(np.float64)),
            "gpus": [gpus[n, : nodes.gpu_count[n]].tolist() for n in range(len(nodes.ids))],
        },
        "phases": phases,
        "pods": sum(phases.values()),
        "queue": {
            "total": len(pending),
            "pods": [_queued(nodes, latency, pools, job, pod, doc.timestamp) for job, pod in head],
        },
    }


def _queued(
    nodes: _Nodes, latency: F64, pools: dict[str, int], job: str, pod: Pod, now: float
) -> dict[str, Any]:
    req = pod.requests
    return {
        "id": pod.id,
        "job": job,
        "priority": pod.priority,
        "cpu": req.cpu_milli,
        "mem": req.memory_mib,
        "gpu": req.gpu_count,
        "gpu_milli": req.gpu_milli,
        "wait_s": round(max(0.0, now - pod.timestamps.arrival_s), 3),
        "reason": pod_reason(nodes, latency, pools, pod),
    }
