"""``GET /healthz``, ``/readyz`` and ``/metrics``: probes and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from twinsched.serve.deps import service_of
from twinsched.twin.api.problems import error_response

router = APIRouter()


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "No nodes known yet."}})
def readyz(request: Request) -> Response:
    if not service_of(request).cluster.ready:
        return error_response(503, "no nodes known yet: POST /nodes or send Nodes")
    return JSONResponse({"status": "ready"})


@router.get("/metrics", response_class=PlainTextResponse)
def metrics_(request: Request) -> Response:
    registry = service_of(request).metrics.registry
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
