"""An application as Kubernetes manifests, for the twinsched scheduler profile.

Each template becomes a ``Deployment`` (apps/v1; a rolling update with the spec's
``max_unavailable`` and no surge, as in the twin), or a ``Job`` (batch/v1) when it has a
deadline (``activeDeadlineSeconds``, which Kubernetes refuses on a Deployment's pods). Every
pod template sets ``schedulerName`` to the profile of ``deploy/kubernetes`` (``twinsched``:
kube-scheduler calls the scheduler service as an extender for it), the tier and node labels
as a ``nodeSelector``, and the requests (whole GPUs as ``nvidia.com/gpu``, with equal
limits; a GPU share, the data pool, the latency bound and the dependencies as annotations).
"""

from __future__ import annotations

from typing import Any

from twinsched.twin.apps.spec import AppSpec, PodTemplate

SCHEDULER_NAME = "twinsched"  # the profile in deploy/kubernetes/50-kube-scheduler.yaml
GPU_RESOURCE = "nvidia.com/gpu"
ANNOTATION = "twinsched.io/"


def manifests(spec: AppSpec, revision: int) -> list[dict[str, Any]]:
    """One workload per template, in dependency order."""
    return [_workload(spec, t, revision) for t in spec.order()]


def _labels(spec: AppSpec, template: PodTemplate) -> dict[str, str]:
    return {"app.kubernetes.io/name": spec.name, "app.kubernetes.io/component": template.name,
            "app.kubernetes.io/managed-by": "twinsched"}  # fmt: skip


def _annotations(template: PodTemplate, revision: int) -> dict[str, str]:
    out = {f"{ANNOTATION}revision": str(revision), f"{ANNOTATION}digest": template.digest()}
    if template.depends_on:
        out[f"{ANNOTATION}depends-on"] = ",".join(template.depends_on)
    if template.data_pool is not None:
        out[f"{ANNOTATION}data-pool"] = template.data_pool
    if template.max_latency_ms is not None:
        out[f"{ANNOTATION}max-latency-ms"] = f"{template.max_latency_ms:g}"
    r = template.requests
    if r.gpu_count and r.gpu_milli < 1000:
        out[f"{ANNOTATION}gpu-milli"] = str(r.gpu_milli)
    if r.gpu_models:
        out[f"{ANNOTATION}gpu-models"] = ",".join(r.gpu_models)
    if template.priority:
        out[f"{ANNOTATION}priority"] = str(template.priority)
    return out


def _pod_spec(template: PodTemplate) -> dict[str, Any]:
    r = template.requests
    requests: dict[str, Any] = {"cpu": f"{r.cpu_milli}m", "memory": f"{r.memory_mib}Mi"}
    resources: dict[str, Any] = {"requests": requests}
    if r.gpu_count:
        requests[GPU_RESOURCE] = str(r.gpu_count)
        resources["limits"] = {GPU_RESOURCE: str(r.gpu_count)}
    container = {"name": template.name, "image": template.image, "resources": resources}
    spec: dict[str, Any] = {"schedulerName": SCHEDULER_NAME, "containers": [container]}
    if template.labels():
        spec["nodeSelector"] = template.labels()
    return spec


def _workload(spec: AppSpec, template: PodTemplate, revision: int) -> dict[str, Any]:
    labels = _labels(spec, template)
    meta = {"name": f"{spec.name}-{template.name}"[:63].rstrip("-"), "namespace": spec.namespace,
            "labels": labels, "annotations": _annotations(template, revision)}  # fmt: skip
    pod = {"metadata": {"labels": labels, "annotations": _annotations(template, revision)},
           "spec": _pod_spec(template)}  # fmt: skip
    if template.deadline_s is not None:
        pod["spec"]["restartPolicy"] = "Never"
        deadline = max(1, round(template.deadline_s))
        job = {"completions": template.replicas, "parallelism": template.replicas,
               "activeDeadlineSeconds": deadline, "template": pod}  # fmt: skip
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": job}
    rolling = {"maxUnavailable": spec.strategy.max_unavailable, "maxSurge": 0}
    deployment = {"replicas": template.replicas, "selector": {"matchLabels": labels},
                  "strategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
                  "template": pod}  # fmt: skip
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": deployment}
