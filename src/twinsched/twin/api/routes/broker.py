"""``GET /broker``: what the twin's broker consumer has applied (``twin serve --broker``).

A publisher that must read its own writes (``run --twin URL --broker URL``) polls it with
``source=`` until its message's number is there. The consumer lives on ``app.state.broker``
(none: ``enabled`` is false).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from twinsched.twin.api.deps import Service
from twinsched.twin.api.problems import ERROR_RESPONSES
from twinsched.twin.broker.messages import ConsumerStats

router = APIRouter(tags=["broker"])
SOURCES_SHOWN = 100


class BrokerStatus(BaseModel):
    """The broker consumer's counters and the last message applied per publisher stream."""

    enabled: bool = Field(description="Whether this twin consumes a broker.")
    url: str | None = Field(None, description="The broker URL (without password).")
    received: int = Field(0, description="Deliveries fetched from the stream.")
    redelivered: int = Field(0, description="Of those, deliveries after the first.")
    applied: int = Field(0, description="Messages applied.")
    duplicates: int = Field(0, description="Messages dropped as already applied.")
    rejected: int = Field(0, description="Messages that could never apply (logged).")
    dead_letters: dict[str, int] = Field(
        default_factory=dict,
        description="Of those, how many per reason (id, window, body, delta, write).",
    )
    redelivered_later: int = Field(0, description="Sent back: an earlier one was missing.")
    gaps: int = Field(0, description="Applied after giving up on missing earlier ones.")
    retried: int = Field(0, description="Writes that failed and were left for redelivery.")
    fetch_errors: int = Field(0, description="Fetches that failed (broker unreachable).")
    sources: dict[str, int] = Field(
        default_factory=dict,
        description=f"Last number applied per stream: the one asked for, else the first "
        f"{SOURCES_SHOWN} by name.",
    )
    version: int = Field(description="State version.")
    time: float = Field(description="State time.")


@router.get(
    "/broker",
    response_model=BrokerStatus,
    responses=ERROR_RESPONSES,
    summary="Broker consumer status",
)
def get_broker(
    request: Request,
    service: Service,
    source: Annotated[
        str | None, Query(max_length=1024, description="Only this publisher stream.")
    ] = None,
) -> BrokerStatus:
    """Counters of the broker consumer and how far each publisher stream is applied."""
    consumer = getattr(request.app.state, "broker", None)
    stats = getattr(consumer, "stats", None)
    now = {"version": service.version, "time": service.time}
    if not isinstance(stats, ConsumerStats):
        return BrokerStatus(enabled=False, **now)
    last = dict(stats.last)
    if source is not None:
        shown = {source: last[source]} if source in last else {}
    else:
        shown = {k: last[k] for k in sorted(last)[:SOURCES_SHOWN]}
    return BrokerStatus(
        enabled=True,
        url=str(getattr(consumer, "url", "")),
        received=stats.received,
        redelivered=stats.redelivered,
        applied=stats.applied,
        duplicates=stats.duplicates,
        rejected=stats.rejected,
        dead_letters=dict(stats.dead_letters),
        redelivered_later=stats.redelivered_later,
        gaps=stats.gaps,
        retried=stats.retried,
        fetch_errors=stats.fetch_errors,
        sources=shown,
        **now,
    )
