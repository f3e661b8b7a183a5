"""Operations: Prometheus ``/metrics``, liveness ``/healthz``, readiness ``/readyz``."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool

from twinsched.twin.api.deps import Service, history_problem
from twinsched.twin.api.problems import ErrorBody, error_response
from twinsched.twin.api.schemas import Health

router = APIRouter(tags=["operations"])


@router.get(
    "/metrics",
    summary="Prometheus exposition",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
def get_metrics(request: Request) -> Response:
    """Twin state gauges (computed now) and service health, in the text format."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return Response(generate_latest(request.app.state.registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/healthz", response_model=Health, summary="Liveness")
def get_healthz(service: Service) -> Health:
    """The process answers."""
    return Health(status="ok", version=service.version)


@router.get(
    "/readyz",
    response_model=Health,
    summary="Readiness: the history can be written",
    responses={
        503: {"model": ErrorBody, "description": "The database is unreachable or the lease lost."}
    },
)
async def get_readyz(service: Service) -> Response | Health:
    """503 when the history cannot be written: the database is unreachable, or this twin
    lost its writer lease (another twin may be writing)."""
    problem = await run_in_threadpool(history_problem, service)
    if problem is not None:
        return error_response(503, problem)
    return Health(status="ready", version=service.version)
