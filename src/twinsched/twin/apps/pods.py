"""An application's pods in the twin: their ids, the twin pods a template makes, who is who.

A pod's id is ``NAMESPACE/APP/TEMPLATE-DIGEST-SERIAL`` and its job ``app/NAMESPACE/APP``:
the digest (:meth:`PodTemplate.digest`) says which version of its template it runs, the
serial (counted per app, never reused) keeps ids unique across revisions. Names are DNS
labels, so ``/`` splits an id unambiguously (:func:`parse_pod_id`).
"""

from __future__ import annotations

from dataclasses import dataclass

from twinsched.model.document import Pod, Policies, Requests, Timestamps, TwinDocument
from twinsched.twin.apps.spec import PodTemplate

JOB_PREFIX = "app/"
LIVE = ("Pending", "Running")


def job_id(namespace: str, name: str) -> str:
    return f"{JOB_PREFIX}{namespace}/{name}"


def pod_id(namespace: str, name: str, template: PodTemplate, serial: int) -> str:
    return f"{namespace}/{name}/{template.name}-{template.digest()}-{serial}"


@dataclass(frozen=True)
class AppPod:
    """One pod of an application as the twin has it."""

    id: str
    template: str
    digest: str
    serial: int
    phase: str
    node: str | None

    @property
    def running(self) -> bool:
        return self.phase == "Running"


def parse_pod_id(pod: str) -> tuple[str, str, str, str, int] | None:
    """``(namespace, app, template, digest, serial)`` of an app's pod id, None otherwise."""
    parts = pod.split("/")
    if len(parts) != 3:
        return None
    head, _, serial = parts[2].rpartition("-")
    template, _, digest = head.rpartition("-")
    if not template or len(digest) != 8 or not serial.isdigit():
        return None
    return parts[0], parts[1], template, digest, int(serial)


def twin_pod(pod: str, template: PodTemplate, at: float) -> Pod:
    """The pending twin pod of ``template`` named ``pod``, arriving at ``at``."""
    required = [f"{k}={v}" for k, v in sorted(template.labels().items())]
    return Pod(
        id=pod,
        requests=Requests.model_validate(template.requests.model_dump()),
        policies=Policies(required=required),
        priority=template.priority,
        phase="Pending",
        timestamps=Timestamps(arrival_s=at, duration_s=template.deadline_s),
        data_pool=template.data_pool,
        max_latency_ms=template.max_latency_ms,
    )


def app_pods(doc: TwinDocument, namespace: str, name: str) -> list[AppPod]:
    """Every pod of the app in ``doc`` (any phase), in the order the twin holds them."""
    job = job_id(namespace, name)
    out: list[AppPod] = []
    for found in doc.jobs:
        if found.id != job:
            continue
        for pod in found.pods:
            parsed = parse_pod_id(pod.id)
            if parsed is None or parsed[:2] != (namespace, name):
                continue
            out.append(AppPod(pod.id, parsed[2], parsed[3], parsed[4], pod.phase, pod.node))
    return out
