"""``GET /decisions/{seq}/explain``: why a decision the twin keeps bound its pod there."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path, Query
from fastapi.concurrency import run_in_threadpool

from twinsched.twin.api.deps import Service
from twinsched.twin.api.problems import ERROR_RESPONSES, ErrorBody
from twinsched.twin.api.routes.decisions import UNKNOWN_SESSION, SessionQuery

router = APIRouter(tags=["history"])
NOT_EXPLAINED: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "Not kept, or its state or scheduler is gone."}
}


@router.get(
    "/decisions/{seq}/explain",
    responses={**ERROR_RESPONSES, **UNKNOWN_SESSION, **NOT_EXPLAINED},
    summary="Why this decision bound its pod there",
)
async def explain_decision(
    service: Service,
    seq: Annotated[int, Path(ge=1, le=2**63 - 1, description="The decision's number.")],
    session: SessionQuery = None,
    top: Annotated[int, Query(ge=1, le=100, description="Candidates shown.")] = 5,
    to: Annotated[str | None, Query(max_length=253, description="What if this node?")] = None,
) -> dict[str, Any]:
    """Filters, ranked candidates and their score terms, runner-up, margin, tie-break,
    fallback and a composite's part, on the state the decision saw (docs/explain.md)."""
    if session is not None:
        service.sessions.get(session)  # an unknown session: 404 naming the known ones

    def answer() -> dict[str, Any]:
        # here: the explainer imports the schedulers, which a twin needs only to explain
        from twinsched.twin.core.explain import NotExplained, explain_kept

        try:
            return explain_kept(service, seq, session, top=top, to=to).to_dict()
        except NotExplained as exc:
            raise HTTPException(404, str(exc)) from None

    return await run_in_threadpool(answer)
