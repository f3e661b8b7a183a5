"""``GET /explain`` (the last decisions the service can explain) and ``GET /explain/{pod}``
(why it chose what it chose for that pod; ``?to=NODE``: what that node would change).
A token, when the service has one: explanations name pods and nodes."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import JSONResponse

from twinsched.errors import TwinschedError
from twinsched.serve.deps import AUTH, Authorized, service_of
from twinsched.serve.explanations import NotExplained, explain_pod, recent_decisions
from twinsched.twin.api.problems import ErrorBody, error_response

router = APIRouter(dependencies=[Authorized], responses=AUTH)
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "Not among the last decisions, or its state is gone."},
    409: {"model": ErrorBody, "description": "No nodes known yet."},
}


@router.get("/explain", summary="The decisions the service can explain, latest first")
def explained(request: Request) -> dict[str, Any]:
    """Pod key and name of each recent decision, and where the pod is bound now."""
    return {"decisions": recent_decisions(service_of(request).cluster)}


@router.get("/explain/{pod:path}", responses=NOT_FOUND, summary="Why this pod, this node")
def explain(
    request: Request,
    pod: Annotated[str, Path(max_length=512, description="UID, else namespace/name.")],
    top: Annotated[int, Query(ge=1, le=100)] = 5,
    to: Annotated[str | None, Query(max_length=253, description="What if this node?")] = None,
) -> Response:
    """Filters, ranked candidates and their score terms, runner-up and margin, tie-break,
    fallback and a composite's part, on the state the decision saw."""
    cluster = service_of(request).cluster
    if not cluster.ready:
        return error_response(409, "no nodes known yet: POST /nodes or send Nodes")
    try:
        return JSONResponse(explain_pod(cluster, pod, top, to).to_dict())
    except NotExplained as exc:
        return error_response(404, str(exc))
    except TwinschedError as exc:  # e.g. a pod slot the state rejects on the way back
        return error_response(404, f"pod {pod!r} cannot be explained: {exc}")
