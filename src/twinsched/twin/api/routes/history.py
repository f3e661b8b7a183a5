"""``/history``: window aggregation over one session's samples; ``/sessions``: the sessions;
``/admin/compact``: retention and downsampling, per session."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from fastapi.concurrency import run_in_threadpool

from twinsched.model.ids import ID_PATTERN, MAX_ID_LENGTH
from twinsched.store.history import Window, compact, read_window
from twinsched.store.history.query import Aggregation
from twinsched.twin.api.deps import Service, Settings, WriteAccess
from twinsched.twin.api.problems import ERROR_RESPONSES, WRITE_RESPONSES
from twinsched.twin.api.routes.decisions import UNKNOWN_SESSION, SessionQuery
from twinsched.twin.api.schemas import (
    CompactView,
    HistoryView,
    SeriesView,
    SessionsView,
    SessionView,
)
from twinsched.twin.core.deltas import MAX_METRIC_LENGTH, MAX_TIME

router = APIRouter(tags=["history"])

TimeQuery = Query(ge=0, le=MAX_TIME, allow_inf_nan=False)


@router.get(
    "/history",
    response_model=HistoryView,
    responses={**ERROR_RESPONSES, **UNKNOWN_SESSION},
    summary="Metric history",
)
async def get_history(
    service: Service,
    metric: Annotated[
        str,
        Query(
            min_length=1,
            max_length=MAX_METRIC_LENGTH,
            pattern=ID_PATTERN,
            description="Metric name, e.g. cpu_util.",
        ),
    ],
    node: Annotated[
        str | None,
        Query(max_length=MAX_ID_LENGTH, pattern=ID_PATTERN, description="Only this node."),
    ] = None,
    start: Annotated[float | None, TimeQuery] = None,
    end: Annotated[float | None, TimeQuery] = None,
    step: Annotated[
        float | None,
        Query(ge=1e-3, le=MAX_TIME, allow_inf_nan=False, description="Bucket width (s)."),
    ] = None,
    agg: Annotated[Aggregation, Query(description="Per-bucket aggregation.")] = "mean",
    limit: Annotated[int, Query(ge=1, le=1_000_000, description="Most rows returned.")] = 100_000,
    session: SessionQuery = None,
) -> HistoryView:
    """Samples of one metric of one session (default: the live one) between ``start`` and
    ``end``, averaged (or max, or last) over buckets of ``step`` seconds aligned on
    multiples of ``step``. Times are the session's (simulated or Unix)."""
    if service.history is None:
        raise HTTPException(422, "this twin keeps no history")
    if session is None and service.session is None:
        return HistoryView(metric=metric, step=step, agg=agg, truncated=False, series=[])
    number = service.sessions.get(session).id
    window = Window(metric, node, start, end, step, agg, limit, number)
    series, truncated = await run_in_threadpool(read_window, service.history.engine, window)
    return HistoryView(
        session=number,
        metric=metric,
        step=step,
        agg=agg,
        truncated=truncated,
        series=[SeriesView(node=s.node, times=s.times, values=s.values) for s in series],
    )


@router.get("/sessions", response_model=SessionsView, summary="The twin's sessions")
async def get_sessions(service: Service) -> SessionsView:
    """Every session, oldest first: who feeds it, its timebase, where it starts. The twin's
    current state (``/state`` and the views) is the live session's."""
    live = service.session
    known = sorted(service.sessions.known.values(), key=lambda s: s.id)
    views = [SessionView(**vars(s), live=live is not None and s.id == live.id) for s in known]
    return SessionsView(live=live.id if live is not None else None, sessions=views)


@router.post(
    "/admin/compact",
    response_model=CompactView,
    dependencies=[WriteAccess],
    responses={**WRITE_RESPONSES, **UNKNOWN_SESSION},
    summary="Apply retention and downsampling now",
)
async def post_compact(
    service: Service, settings: Settings, session: SessionQuery = None
) -> CompactView:
    """Drop history older than the retention and downsample old samples (settings), in
    every session (or one), each on its own time; a session whose samples mix timebases
    is left untouched and named in ``refused``."""
    if service.history is None:
        raise HTTPException(422, "this twin keeps no history")
    if session is not None:
        service.sessions.get(session)  # 404 when unknown
    result = await run_in_threadpool(
        compact,
        service.history.engine,
        retention_s=settings.retention_s,
        downsample_after_s=settings.downsample_after_s,
        step=settings.downsample_step_s,
        session=session,
    )
    return CompactView(**vars(result))
