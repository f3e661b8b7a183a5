"""The cluster as kube-state-metrics writes it: node and pod families, pure, no Prometheus here.

Names, labels and units follow kube-state-metrics' documentation (``docs/node-metrics.md``,
``docs/pod-metrics.md`` of kubernetes/kube-state-metrics, v2): resources with ``/`` and ``.``
turned into ``_`` (``nvidia.com/gpu`` -> ``nvidia_com_gpu``), node labels as
``label_<sanitised key>`` on ``kube_node_labels``, one ``kube_pod_status_phase`` series per
phase and one ``kube_node_status_condition`` series per status (1 for the current one, 0
for the others). The VTE exporter serves these in its ``kube-state-metrics`` format, so the
chain simulator -> Prometheus -> twin mirror (``twin/collectors/ksm.py``, reading with
``traces/kube_state_metrics.py``) runs as on a cluster.

What the VTE has that Kubernetes has not: the pods' jobs (written as ``kube_pod_owner``
with ``owner_kind="Job"``), the nodepool (the node label ``twinsched.io/nodepool``), the GPU
model (``nvidia.com/gpu.product``, as NVIDIA's GPU feature discovery labels it), and GPU
shares: a pod that asks for part of one GPU has ``nvidia_com_gpu`` below 1 (its milli-GPU
/ 1000), which Kubernetes itself would not allow for an extended resource.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from twinsched.metrics.exposition import BYTES_PER_MIB, Family
from twinsched.model.cluster import MILLI_PER_GPU
from twinsched.model.events import Phase
from twinsched.model.state import ClusterState
from twinsched.traces.kube_state_metrics import (
    DEFAULT_NAMESPACE,
    GPU_PRODUCT_LABEL,
    GPU_RESOURCE,
    POOL_LABEL,
)

CONTAINER = "main"
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
STATUSES = ("true", "false", "unknown")

#: The VTE's phase -> kube-state-metrics' phase; pods not arrived yet are not exposed, and a
#: pod the VTE gave up on (rejected) is ``Failed``.
KSM_PHASE = {
    Phase.PENDING: "Pending",
    Phase.RUNNING: "Running",
    Phase.SUCCEEDED: "Succeeded",
    Phase.UNSCHEDULABLE: "Failed",
}


def _family(name: str, help_: str, labels: tuple[str, ...], rows: Sequence[tuple[str, ...]],
            values: Sequence[float]) -> Family:  # fmt: skip
    return Family(name, help_, labels, tuple(rows), np.asarray(values, dtype=np.float64))


def node_families(state: ClusterState) -> list[Family]:
    """``kube_node_*``: info, labels, allocatable, the Ready condition, unschedulable."""
    nodes = state.nodes
    names, n = nodes.names, nodes.n
    pools = [nodes.pool_names[p] if p >= 0 else "" for p in nodes.pool.tolist()]
    models = [nodes.gpu_models[m] if m >= 0 else "" for m in nodes.gpu_model.tolist()]
    one = [1.0] * n
    alloc_rows, alloc_values = [], []
    for i, name in enumerate(names):
        alloc_rows += [(name, "cpu", "core"), (name, "memory", "byte")]
        alloc_values += [nodes.cpu_milli[i] / 1000.0, float(nodes.memory_mib[i] * BYTES_PER_MIB)]
        if nodes.gpu_count[i] > 0:
            alloc_rows.append((name, GPU_RESOURCE, "integer"))
            alloc_values.append(float(nodes.gpu_count[i]))
    up = state.up.tolist()
    cond_rows = [(name, "Ready", s) for name in names for s in STATUSES]
    cond_values = [float(s == ("true" if u else "false")) for u in up for s in STATUSES]
    return [
        _family("kube_node_info", "Information about a cluster node.", ("node",),
                [(name,) for name in names], one),
        _family("kube_node_labels", "Kubernetes labels converted to Prometheus labels.",
                ("node", POOL_LABEL, GPU_PRODUCT_LABEL),
                list(zip(names, pools, models, strict=True)), one),
        _family("kube_node_status_allocatable", "The allocatable for different resources of "
                "a node that are available for scheduling.", ("node", "resource", "unit"),
                alloc_rows, alloc_values),
        _family("kube_node_status_condition", "The condition of a cluster node.",
                ("node", "condition", "status"), cond_rows, cond_values),
        _family("kube_node_spec_unschedulable", "Whether a node can schedule new pods.",
                ("node",), [(name,) for name in names], [0.0] * n),
    ]  # fmt: skip


def _gpu_request(count: int, milli: int) -> float:
    """``nvidia_com_gpu`` of a pod: whole GPUs, or the share of one GPU (milli / 1000)."""
    return float(count) if milli >= MILLI_PER_GPU else count * milli / MILLI_PER_GPU


def pod_families(state: ClusterState) -> list[Family]:
    """``kube_pod_*``: info (with the node), phase, requests, owner, created, for every pod
    that has arrived; ``uid`` is the pod's index, stable for a run."""
    pods = state.pods
    shown = np.flatnonzero(state.phase != Phase.NOT_ARRIVED).tolist()
    phase, where = state.phase.tolist(), state.pod_node.tolist()
    names = state.nodes.names
    info, phases, requests, owners, created = [], [], [], [], []
    request_values: list[float] = []
    for i in shown:
        key = (DEFAULT_NAMESPACE, pods.names[i], str(i))
        node = names[where[i]] if where[i] >= 0 and phase[i] == Phase.RUNNING else ""
        info.append((*key, node))
        phases += [(*key, p) for p in PHASES]
        owners.append((*key, "Job", pods.job_names[pods.job[i]], "true"))
        created.append(key)
        requests += [(*key, CONTAINER, node, "cpu", "core"),
                     (*key, CONTAINER, node, "memory", "byte")]  # fmt: skip
        request_values += [pods.cpu_milli[i] / 1000.0, float(pods.memory_mib[i] * BYTES_PER_MIB)]
        if pods.gpu_count[i] > 0:
            requests.append((*key, CONTAINER, node, GPU_RESOURCE, "integer"))
            request_values.append(_gpu_request(int(pods.gpu_count[i]), int(pods.gpu_milli[i])))
    current = [KSM_PHASE[Phase(phase[i])] for i in shown]
    phase_values = [float(p == now) for now in current for p in PHASES]
    key_labels = ("namespace", "pod", "uid")
    return [
        _family("kube_pod_info", "Information about pod.", (*key_labels, "node"), info,
                [1.0] * len(info)),
        _family("kube_pod_status_phase", "The pods current phase.", (*key_labels, "phase"),
                phases, phase_values),
        _family("kube_pod_container_resource_requests", "The number of requested request "
                "resource by a container.", (*key_labels, "container", "node", "resource",
                "unit"), requests, request_values),
        _family("kube_pod_owner", "Information about the Pod's owner.", (*key_labels,
                "owner_kind", "owner_name", "owner_is_controller"), owners, [1.0] * len(owners)),
        _family("kube_pod_created", "Unix creation timestamp (here: the simulated arrival).",
                key_labels, created, pods.arrival_s[shown].tolist()),
    ]  # fmt: skip


def ksm_families(state: ClusterState) -> list[Family]:
    """Every kube-state-metrics family of one state, nodes first."""
    return [*node_families(state), *pod_families(state)]
