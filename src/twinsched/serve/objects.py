"""A scenario's nodes and pods written as ``v1.Node`` and ``v1.Pod`` objects (JSON dicts).

What the driver sends to the service and what the tests read back: reading these objects
with :mod:`twinsched.serve.convert` gives the scenario's requests and rules again.
"""

from __future__ import annotations

from typing import Any

from twinsched.model.cluster import MILLI_PER_GPU, LabelVocabulary, Nodes, Pods
from twinsched.serve.convert import Names

READY = [{"type": "Ready", "status": "True"}]


def _label_dict(labels: list[str]) -> dict[str, str]:
    out = {}
    for label in labels:
        key, _, value = label.partition("=")
        out[key] = value
    return out


def node_objects(nodes: Nodes, vocab: LabelVocabulary, names: Names) -> list[dict[str, Any]]:
    """Every node as a ``v1.Node``: allocatable CPU, memory and GPUs, labels, GPU model."""
    out = []
    for n in range(nodes.n):
        labels = _label_dict(vocab.decode(int(nodes.labels[n])))
        model = int(nodes.gpu_model[n])
        if model >= 0:
            labels[names.gpu_model_label] = nodes.gpu_models[model]
        alloc = {"cpu": f"{int(nodes.cpu_milli[n])}m", "memory": f"{int(nodes.memory_mib[n])}Mi"}
        if nodes.gpu_count[n]:
            alloc[names.gpu_resource] = str(int(nodes.gpu_count[n]))
        out.append({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": nodes.names[n], "labels": labels, "resourceVersion": "1"},
            "status": {"allocatable": alloc, "capacity": alloc, "conditions": READY},
        })  # fmt: skip
    return out


def pod_name(name: str) -> str:
    """A Kubernetes-valid pod name (``Pods.take`` marks repeats with ``~k``)."""
    return name.replace("~", "-r").replace("_", "-").lower()


def pod_objects(
    pods: Pods, vocab: LabelVocabulary, gpu_models: tuple[str, ...], names: Names
) -> list[dict[str, Any]]:
    """Every pod as a ``v1.Pod``: one container's requests, selectors, affinity, priority."""
    out = []
    for i in range(pods.n):
        requests = {"cpu": f"{int(pods.cpu_milli[i])}m", "memory": f"{int(pods.memory_mib[i])}Mi"}
        count, milli = int(pods.gpu_count[i]), int(pods.gpu_milli[i])
        if count and (milli < MILLI_PER_GPU):
            requests[names.gpu_share_resource] = str(milli)
            if count > 1:
                requests[names.gpu_resource] = str(count)
        elif count:
            requests[names.gpu_resource] = str(count)
        spec: dict[str, Any] = {
            "schedulerName": "twinsched",
            "containers": [{"name": "main", "image": "busybox", "resources": {
                "requests": requests, "limits": {k: v for k, v in requests.items()
                                                 if k not in ("cpu", "memory")}}}],
            "priority": int(pods.priority[i]),
            "nodeSelector": _label_dict(vocab.decode(int(pods.required_labels[i]))),
        }  # fmt: skip
        expressions = []
        mask = int(pods.model_mask[i])
        if mask:
            models = [m for k, m in enumerate(gpu_models) if mask >> k & 1]
            expressions.append({"key": names.gpu_model_label, "operator": "In", "values": models})
        for label in vocab.decode(int(pods.rejected_labels[i])):
            key, _, value = label.partition("=")
            expressions.append({"key": key, "operator": "NotIn", "values": [value]})
        preferred = [
            {"weight": 1, "preference": {"matchExpressions": [
                {"key": k, "operator": "In", "values": [v]}]}}
            for k, v in _label_dict(vocab.decode(int(pods.preferred_labels[i]))).items()
        ]  # fmt: skip
        if expressions or preferred:
            affinity: dict[str, Any] = {}
            if expressions:
                affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
                    "nodeSelectorTerms": [{"matchExpressions": expressions}]}  # fmt: skip
            if preferred:
                affinity["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
            spec["affinity"] = {"nodeAffinity": affinity}
        name = pod_name(pods.names[i])
        out.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": spec, "status": {"phase": "Pending"},
        })  # fmt: skip
    return out
