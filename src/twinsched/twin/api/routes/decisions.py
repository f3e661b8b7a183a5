"""``/decisions``: the bindings written to the twin, with who made them, kept per session."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.concurrency import run_in_threadpool

from twinsched.twin.api.deps import Service
from twinsched.twin.api.problems import ERROR_RESPONSES, ErrorBody
from twinsched.twin.api.schemas import DecisionsView, DecisionView
from twinsched.twin.core.sessions import MAX_KEPT

router = APIRouter(tags=["history"])

SessionQuery = Annotated[
    int | None,
    Query(ge=1, le=2**31 - 1, description="Session number (default: the live session)."),
]
UNKNOWN_SESSION: dict[int | str, dict[str, object]] = {
    404: {"model": ErrorBody, "description": "No session has this number."}
}


@router.get(
    "/decisions",
    response_model=DecisionsView,
    responses={**ERROR_RESPONSES, **UNKNOWN_SESSION},
    summary="Decisions kept, newest first",
)
async def get_decisions(
    service: Service,
    session: SessionQuery = None,
    limit: Annotated[int, Query(ge=1, le=MAX_KEPT, description="Most decisions returned.")] = 100,
) -> DecisionsView:
    """The newest bindings of a session (the twin keeps its newest ``DECISIONS_KEPT``):
    pod, node, GPUs, and the scheduler, fallback flag and model version written with them."""
    if session is None and service.session is None:
        return DecisionsView(session=None, decisions=[])
    found = service.sessions.get(session)
    kept = await run_in_threadpool(service.decisions, found.id, limit)
    return DecisionsView(session=found.id, decisions=[DecisionView(**d.view()) for d in kept])
