"""``/history``: window aggregation over stored samples; ``/admin/compact``: retention."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query
from fastapi.concurrency import run_in_threadpool

from twinsched.model.ids import ID_PATTERN, MAX_ID_LENGTH
from twinsched.store.history import Window, compact, read_window
from twinsched.store.history.query import Aggregation
from twinsched.twin.api.deps import Service, Settings, WriteAccess
from twinsched.twin.api.problems import ERROR_RESPONSES, WRITE_RESPONSES
from twinsched.twin.api.schemas import CompactView, HistoryView, SeriesView
from twinsched.twin.core.deltas import MAX_METRIC_LENGTH, MAX_TIME

router = APIRouter(tags=["history"])

TimeQuery = Query(ge=0, le=MAX_TIME, allow_inf_nan=False)


@router.get(
    "/history", response_model=HistoryView, responses=ERROR_RESPONSES, summary="Metric history"
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
) -> HistoryView:
    """Samples of one metric between ``start`` and ``end``, averaged (or max, or last)
    over buckets of ``step`` seconds aligned on multiples of ``step``."""
    if service.history is None:
        raise HTTPException(422, "this twin keeps no history")
    window = Window(metric, node, start, end, step, agg, limit)
    series, truncated = await run_in_threadpool(read_window, service.history.engine, window)
    return HistoryView(
        metric=metric,
        step=step,
        agg=agg,
        truncated=truncated,
        series=[SeriesView(node=s.node, times=s.times, values=s.values) for s in series],
    )


@router.post(
    "/admin/compact",
    response_model=CompactView,
    dependencies=[WriteAccess],
    responses=WRITE_RESPONSES,
    summary="Apply retention and downsampling now",
)
async def post_compact(service: Service, settings: Settings) -> CompactView:
    """Drop history older than the retention and downsample old samples (settings)."""
    if service.history is None:
        raise HTTPException(422, "this twin keeps no history")
    result = await run_in_threadpool(
        compact,
        service.history.engine,
        retention_s=settings.retention_s,
        downsample_after_s=settings.downsample_after_s,
        step=settings.downsample_step_s,
    )
    return CompactView(**vars(result))
