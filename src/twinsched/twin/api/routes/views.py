"""Read-only views of the current state: nodepools, nodes, links, jobs, pods (with filters),
and the headline figures (``/summary``, what ``/ui`` shows at its top)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Query

from twinsched.model.document import Link, NodePool, PodPhase, TwinDocument
from twinsched.twin.api.deps import Service
from twinsched.twin.api.problems import ERROR_RESPONSES
from twinsched.twin.core import views
from twinsched.twin.core.deltas import NodeStatus
from twinsched.twin.core.headline import Headline, headline
from twinsched.twin.core.views import JobView, NodeView, PodView

router = APIRouter(tags=["views"], responses=ERROR_RESPONSES)


def _whole(
    name: str, model: Any, view: Callable[[TwinDocument], Any], summary: str, doc: str
) -> None:
    """``GET /<name>``: one view of the whole document, no filters."""

    def handler(service: Service) -> Any:
        return service.read(view)

    handler.__doc__ = doc
    router.add_api_route(
        f"/{name}", handler, methods=["GET"], response_model=list[model], summary=summary,
        name=f"get_{name}",
    )  # fmt: skip


_whole("nodepools", NodePool, views.nodepool_views, "Nodepools and their nodes",
       "Every nodepool with its nodes.")  # fmt: skip
_whole("links", Link, views.link_views, "Links between nodepools",
       "The network: latency and bandwidth between nodepools.")  # fmt: skip
_whole("jobs", JobView, views.job_views, "Jobs with pod counts per phase",
       "Every job with its profile and pod counts.")  # fmt: skip


@router.get("/nodes", response_model=list[NodeView], summary="Nodes, optionally filtered")
def get_nodes(
    service: Service,
    nodepool: Annotated[str | None, Query(description="Only this nodepool.")] = None,
    status: Annotated[NodeStatus | None, Query(description="Only nodes with this status.")] = None,
) -> Any:
    """Every node with its nodepool id."""
    return service.read(lambda doc: views.node_views(doc, nodepool, status))


@router.get("/pods", response_model=list[PodView], summary="Pods, optionally filtered")
def get_pods(
    service: Service,
    phase: Annotated[PodPhase | None, Query(description="Only pods in this phase.")] = None,
    node: Annotated[str | None, Query(description="Only pods bound to this node.")] = None,
    job: Annotated[str | None, Query(description="Only pods of this job.")] = None,
) -> Any:
    """Every pod with its job id, e.g. ``/pods?phase=Pending`` for the queue."""
    return service.read(lambda doc: list(views.pod_views(doc, phase, node, job)))


@router.get("/summary", response_model=Headline, summary="Headline figures per tier")
def get_summary(service: Service) -> Any:
    """Allocation per resource and tier, pending and unschedulable pods (with reasons and
    the first ones listed), power and carbon: see ``twin/core/headline.py``."""
    return service.read(headline)
