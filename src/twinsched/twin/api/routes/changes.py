"""``GET /changes``: the scheduling changes after a version; ``/leases/controller``: one
controller per session (``twin/core/changes.py``, ``twin/core/leases.py``).

A follower (``scheduler run --twin``, ``run --twin``) reads ``GET /state`` once, then asks
for the changes since the version it holds, waiting up to ``wait`` s for one (a long poll):
a 410 says the twin no longer has them, and the follower reads the state once again.
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from pydantic import BaseModel, Field

from twinsched.model.document import Id
from twinsched.twin.api.deps import Service, WriteAccess
from twinsched.twin.api.problems import (
    ERROR_RESPONSES,
    WRITE_RESPONSES,
    ErrorBody,
    error_response,
)
from twinsched.twin.core.changes import ChangesGone
from twinsched.twin.core.leases import MAX_TTL_S, MIN_TTL_S, LeaseHeld, Leases

router = APIRouter(tags=["changes"])
MAX_WAIT_S = 30.0
MAX_LIMIT = 100_000
WAIT = "Seconds to wait for a change after `since` when there is none (a long poll)."
POLL_S = 0.005  # a waiting request looks at the twin's version this often
SESSION = "live"  # the lease of the twin's live session


class ChangesAnswer(BaseModel):
    """The changes after ``since``, oldest first, and the version they bring the state to."""

    version: int = Field(description="The state version these changes bring a follower to.")
    time: float = Field(description="The state time at that version.")
    more: bool = Field(description="More changes follow (the answer stopped at `limit`).")
    changes: list[dict[str, object]] = Field(
        description="Per accepted batch: `version`, `time`, `source` (the broker stream, "
        "null over HTTP) and its `deltas` (`pod`, `pod_add`, `node`; metrics left out)."
    )


@router.get(
    "/changes",
    summary="The scheduling changes after a version",
    response_model=ChangesAnswer,
    responses={
        410: {"model": ErrorBody, "description": "Not kept: read GET /state and follow on."},
        **ERROR_RESPONSES,
    },
)
async def get_changes(
    service: Service,
    since: Annotated[int, Query(ge=0, le=2**62, description="The version the follower holds.")],
    wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S, allow_inf_nan=False, description=WAIT)] = 0.0,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Changes at most.")] = 10_000,
    exclude: Annotated[
        str | None,
        Query(min_length=1, max_length=512, description="Leave out this broker stream's."),
    ] = None,
) -> Response:
    """Pods added, changed or removed and node changes after version ``since`` (410 when
    this twin no longer keeps them: older than its ring, from before a PUT, or ahead of it)."""
    log = service.changes
    deadline = time.monotonic() + wait
    while log.version == since and time.monotonic() < deadline:
        await asyncio.sleep(POLL_S)
    try:
        body = log.answer(since, limit, exclude)
    except ChangesGone as exc:
        return error_response(410, str(exc), [("since", f"not kept (kept after {exc.oldest})")])
    return Response(body, media_type="application/json")


class LeaseRequest(BaseModel):
    """Who asks for the lease, and for how long."""

    holder: Id = Field(description="The controller's name (host, pid, a random suffix).")
    ttl_s: float = Field(ge=MIN_TTL_S, le=MAX_TTL_S, description="Seconds it holds it.")


class LeaseAnswer(BaseModel):
    """The lease granted."""

    session: str
    holder: str
    held_s: float = Field(description="Seconds it has been held by this holder.")
    expires_in_s: float = Field(description="Seconds left unless renewed.")


def _leases(request: Request) -> Leases:
    leases = getattr(request.app.state, "leases", None)
    if leases is None:
        leases = request.app.state.leases = Leases()
    assert isinstance(leases, Leases)
    return leases


Session = Annotated[str, Query(min_length=1, max_length=253, description="The session.")]


@router.put(
    "/leases/controller",
    summary="Take or renew the session's controller lease",
    dependencies=[WriteAccess],
    response_model=LeaseAnswer,
    responses={409: {"model": ErrorBody, "description": "Another holder has it."},
               **WRITE_RESPONSES},
)  # fmt: skip
async def take_lease(request: Request, body: LeaseRequest, session: Session = SESSION) -> Response:
    """One controller per session: 409 while another holder's lease runs."""
    leases = _leases(request)
    try:
        lease = leases.take(session, body.holder, body.ttl_s)
    except LeaseHeld as exc:
        return error_response(409, str(exc), [("holder", "another controller holds the lease")])
    now = leases.clock()
    answer = LeaseAnswer(session=session, holder=lease.holder, held_s=now - lease.since,
                         expires_in_s=lease.until - now)  # fmt: skip
    return Response(answer.model_dump_json(), media_type="application/json")


@router.delete(
    "/leases/controller",
    summary="Give the session's controller lease back",
    dependencies=[WriteAccess],
    status_code=204,
    responses=WRITE_RESPONSES,
)
async def release_lease(
    request: Request,
    holder: Annotated[str, Query(min_length=1, max_length=253)],
    session: Session = SESSION,
) -> Response:
    """Release it if ``holder`` has it (nothing happens otherwise)."""
    _leases(request).release(session, holder)
    return Response(status_code=204)
