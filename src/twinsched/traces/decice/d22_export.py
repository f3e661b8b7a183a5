"""``to_d22``: a twin document written as the DECICE twin deliverable's output document (D2.2).

The shape :mod:`twinsched.traces.decice.d22` reads (``docs/harmonize.md``), with what D2.2
has no field for (pod ids, ``info.requests``, ``status``, ``node_id``, network latency and
bandwidth) in extra keys that reader takes back: reading ``to_d22(doc)`` gives ``doc``.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from twinsched.model.document import Job, Node, Pod, TwinDocument
from twinsched.traces.decice.d22 import PERCENT_METRICS

TWIN_METRICS = {twin: d22 for d22, twin in PERCENT_METRICS.items()}


def to_d22(doc: TwinDocument) -> dict[str, Any]:
    """The twin document in the D2.2 shape (with the extra keys the reader takes back)."""
    return {
        "lastUpdated": datetime.fromtimestamp(doc.timestamp, UTC)
        .replace(tzinfo=None)
        .isoformat(sep=" "),
        "nodepools": [
            {
                "nodepool": {
                    "id": pool.id,
                    "labels": _label_list(pool.labels),
                    "nodes": [{"node": _node_out(node)} for node in pool.nodes],
                }
            }
            for pool in doc.nodepools
        ],
        "networks": [
            {
                "network": {
                    "nodepool_a_id": link.source,
                    "nodepool_b_id": link.target,
                    "latency_ms": link.latency_ms,
                    "bandwidth_mbps": link.bandwidth_mbps,
                }
            }
            for link in doc.networks
        ],
        "jobs": [_job_out(job) for job in doc.jobs],
    }


def _label_list(labels: Mapping[str, str]) -> list[str]:
    return [f"{k}={v}" if v != "" else k for k, v in labels.items()]


def _node_out(node: Node) -> dict[str, Any]:
    metrics = {
        TWIN_METRICS.get(k, k): round(v * 100, 9) if k in TWIN_METRICS else v
        for k, v in node.metrics.items()
    }
    hardware: dict[str, Any] = {
        "cpu_cores": node.hardware.cpu_milli / 1000,
        "memory_in_mb": node.hardware.memory_mib,
    }
    if node.hardware.gpu_count:
        hardware["gpu_count"] = node.hardware.gpu_count
    return {
        "id": node.id,
        "labels": _label_list(node.labels),
        "metrics": metrics,
        "hardware": hardware,
        "status": node.status,
    }


def _job_out(job: Job) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if job.profile is not None:
        weights = [{"weight": w.model_dump()} for w in job.profile.weights]
        out["profile"] = {"name": job.profile.name, "weights": weights}
    out["job"] = {"id": job.id, "pods": [{"pod": _pod_out(pod)} for pod in job.pods]}
    return out


def _pod_out(pod: Pod) -> dict[str, Any]:
    stamps = pod.timestamps
    info: dict[str, Any] = {
        "requests": pod.requests.model_dump(exclude={"gpu_models"}),
        "arrival_s": stamps.arrival_s,
        "priority": pod.priority,
    }
    if stamps.duration_s is not None:
        info["duration_s"] = stamps.duration_s
    policy = {
        f"{kind}_labels": [
            label.removesuffix("=") if label.endswith("=") else label for label in labels
        ]
        for kind, labels in pod.policies.model_dump().items()
    }
    out: dict[str, Any] = {
        "id": pod.id,
        "info": info,
        "status": pod.phase,
        "policies": [{"policy": policy}],
    }
    if pod.node is not None:
        out["node_id"] = pod.node
    if stamps.start_s is not None:
        out["running_since"] = stamps.start_s
    return out
