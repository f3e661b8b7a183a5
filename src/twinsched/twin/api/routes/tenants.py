"""Namespaced routes (a token of the namespace may use them) and the audit log (admins).

``GET /namespaces`` counts the pods per namespace (the whole cluster's: ``*`` tokens);
``GET /namespaces/{namespace}/pods`` lists one namespace's pods, ``POST`` the same path adds
a pending pod to it (its id and its job's must be in the namespace, ``NS/NAME``, or without a
``/`` for ``default``); ``GET /audit`` reads the append-only log of writes. Who may call
what is the access guard's (``twin/auth``), decided before these handlers run.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from twinsched.model.document import Id, Pod
from twinsched.twin.api.deps import Service
from twinsched.twin.api.problems import ERROR_RESPONSES, error_response
from twinsched.twin.core.deltas import PatchResult, PodAddDelta, StatePatch
from twinsched.twin.core.tenancy import namespace_counts, namespace_of, namespace_pods
from twinsched.twin.core.views import PodView

router = APIRouter(tags=["tenants"], responses=ERROR_RESPONSES)
Namespace = Annotated[
    str,
    Path(
        min_length=1,
        max_length=63,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="A namespace (DNS-1123 label).",
    ),
]


class NewPod(BaseModel):
    """A pod to add, pending, to a job of the namespace (the job is made if new)."""

    job: Id = Field(description="Job id, in the namespace (NS/NAME; no '/' for default).")
    pod: Pod = Field(description="The pod, its id in the namespace.")


class AuditView(BaseModel):
    """One write request: who, what, when, and the status it got."""

    id: int
    time: float = Field(description="Unix seconds.")
    who: str = Field(description="Token name, 'anonymous' or 'invalid token'.")
    token_id: str | None
    role: str | None
    method: str
    path: str
    namespace: str | None
    status: int


@router.get("/namespaces", summary="Pods per namespace")
def get_namespaces(service: Service) -> dict[str, int]:
    """Every namespace that has pods, with its pod count."""
    counts: dict[str, int] = service.read(namespace_counts)
    return counts


@router.get("/namespaces/{namespace}/pods", response_model=list[PodView],
            summary="The pods of one namespace")  # fmt: skip
def get_namespace_pods(service: Service, namespace: Namespace) -> Any:
    """The namespace's pods with their job ids (nothing of any other namespace)."""
    return service.read(lambda doc: list(namespace_pods(doc, namespace)))


@router.post("/namespaces/{namespace}/pods", response_model=PatchResult,
             summary="Add a pending pod to one namespace")  # fmt: skip
async def post_namespace_pod(service: Service, namespace: Namespace, body: NewPod) -> Any:
    """Add ``body.pod`` (pending) to job ``body.job``; both ids must be in ``namespace``."""
    for field, value in (("job", body.job), ("pod.id", body.pod.id)):
        if namespace_of(value) != namespace:
            message = (
                f"{field}: {value!r} is in namespace {namespace_of(value)!r}, not {namespace!r}"
            )
            return error_response(422, message, [(field, "in another namespace")])
    pod = body.pod.model_copy(update={"phase": "Pending", "node": None, "gpus": []})
    patch = StatePatch(time=service.time, deltas=[PodAddDelta(op="pod_add", job=body.job, pod=pod)])
    return await run_in_threadpool(lambda: service.apply(patch, source=f"namespace {namespace}"))


@router.get("/audit", response_model=list[AuditView], summary="The audit log of writes (admin)")
async def get_audit(
    request: Request,
    after: Annotated[int, Query(ge=0, lt=2**63, description="Entries after this id.")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000, description="At most this many.")] = 100,
) -> Any:
    """Every write request in order: who (token name and id, role), what (method, path,
    namespace), when, and the status it got. Append-only: nothing is ever changed."""
    entries = await run_in_threadpool(request.app.state.audit.read, after, limit)
    return [entry.__dict__ for entry in entries]
