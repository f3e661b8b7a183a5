"""Read-only views of the current state: nodepools, nodes, links, jobs, pods (with filters)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from twinsched.model.document import Link, NodePool, PodPhase
from twinsched.twin.api.deps import Service
from twinsched.twin.api.problems import ERROR_RESPONSES
from twinsched.twin.core import views
from twinsched.twin.core.deltas import NodeStatus
from twinsched.twin.core.views import JobView, NodeView, PodView

router = APIRouter(tags=["views"], responses=ERROR_RESPONSES)


@router.get("/nodepools", response_model=list[NodePool], summary="Nodepools and their nodes")
def get_nodepools(service: Service) -> Any:
    """Every nodepool with its nodes."""
    return service.read(views.nodepool_views)


@router.get("/nodes", response_model=list[NodeView], summary="Nodes, optionally filtered")
def get_nodes(
    service: Service,
    nodepool: Annotated[str | None, Query(description="Only this nodepool.")] = None,
    status: Annotated[NodeStatus | None, Query(description="Only nodes with this status.")] = None,
) -> Any:
    """Every node with its nodepool id."""
    return service.read(lambda doc: views.node_views(doc, nodepool, status))


@router.get("/links", response_model=list[Link], summary="Links between nodepools")
def get_links(service: Service) -> Any:
    """The network: latency and bandwidth between nodepools."""
    return service.read(views.link_views)


@router.get("/jobs", response_model=list[JobView], summary="Jobs with pod counts per phase")
def get_jobs(service: Service) -> Any:
    """Every job with its profile and pod counts."""
    return service.read(views.job_views)


@router.get("/pods", response_model=list[PodView], summary="Pods, optionally filtered")
def get_pods(
    service: Service,
    phase: Annotated[PodPhase | None, Query(description="Only pods in this phase.")] = None,
    node: Annotated[str | None, Query(description="Only pods bound to this node.")] = None,
    job: Annotated[str | None, Query(description="Only pods of this job.")] = None,
) -> Any:
    """Every pod with its job id, e.g. ``/pods?phase=Pending`` for the queue."""
    return service.read(lambda doc: list(views.pod_views(doc, phase, node, job)))
