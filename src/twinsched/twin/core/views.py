"""Typed read-only views of a twin document: nodepools, nodes, links, jobs, pods.

Each ``*_views`` function takes the document (under the service's lock, see
:meth:`TwinService.read <twinsched.twin.core.service.TwinService.read>`) and returns copies,
so nothing it returns aliases the live state. Items are plain dicts shaped as the models
below (cheaper than building models that the HTTP layer would dump again).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, Field

from twinsched.model.document import Id, Link, Node, NodePool, Pod, TwinDocument


class NodeView(Node):
    """A node and the nodepool it belongs to."""

    nodepool: Id = Field(description="Nodepool id.")


class PodView(Pod):
    """A pod and the job it belongs to."""

    job: Id = Field(description="Job id.")


class JobView(BaseModel):
    """A job with its pod counts instead of its pods."""

    id: str = Field(description="Job id.")
    profile: dict[str, Any] | None = Field(None, description="Scheduler weights, if any.")
    pods: int = Field(description="Number of pods.")
    phases: dict[str, int] = Field(description="Pod count per phase.")


def nodepool_views(doc: TwinDocument) -> list[NodePool]:
    """Copies of the nodepools, nodes included."""
    return [p.model_copy(deep=True) for p in doc.nodepools]


def node_views(doc: TwinDocument, pool: str | None, status: str | None) -> list[dict[str, Any]]:
    """Nodes (shaped as :class:`NodeView`) with their nodepool id, optionally filtered."""
    return [
        {"nodepool": p.id, **n.model_dump()}
        for p in doc.nodepools
        if pool is None or p.id == pool
        for n in p.nodes
        if status is None or n.status == status
    ]


def link_views(doc: TwinDocument) -> list[Link]:
    """The links between nodepools."""
    return [link.model_copy() for link in doc.networks]


def job_views(doc: TwinDocument) -> list[dict[str, Any]]:
    """Jobs (shaped as :class:`JobView`) with pod counts per phase instead of their pods."""
    out = []
    for job in doc.jobs:
        phases: dict[str, int] = {}
        for pod in job.pods:
            phases[pod.phase] = phases.get(pod.phase, 0) + 1
        profile = job.profile.model_dump() if job.profile else None
        out.append({"id": job.id, "profile": profile, "pods": len(job.pods), "phases": phases})
    return out


def pod_views(
    doc: TwinDocument, phase: str | None, node: str | None, job: str | None
) -> Iterator[dict[str, Any]]:
    """Pods (shaped as :class:`PodView`) with their job id, filtered by phase, node and job."""
    for j in doc.jobs:
        if job is not None and j.id != job:
            continue
        for pod in j.pods:
            if (phase is None or pod.phase == phase) and (node is None or pod.node == node):
                yield {"job": j.id, **pod.model_dump()}
