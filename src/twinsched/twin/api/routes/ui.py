"""``/ui``: the live dashboard, a read-only page fed by server-sent events.

``GET /ui`` is the page and ``/ui/static`` its script and style (package data of
``twin/api/ui/``, nothing from the internet). ``GET /ui/events`` streams one JSON frame
(:func:`twinsched.twin.core.dashboard.frame`, plus the recent decisions and the twin's health)
whenever the state's version changes, checked every ``POLL_S``, and at least every
``HEARTBEAT_S`` otherwise. Every route here only reads; none takes a token. The stream
closes after ``STREAM_S`` (the browser reconnects at once) so a shutdown never waits long.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles

from twinsched.model.document import TwinDocument
from twinsched.twin.api.deps import Service, history_problem
from twinsched.twin.api.docs import LOCAL_ONLY
from twinsched.twin.core.dashboard import DecisionLog, frame
from twinsched.twin.core.service import TwinService

UI_FOLDER = Path(__file__).resolve().parent.parent / "ui"
POLL_S = 0.2
HEARTBEAT_S = 1.0
STREAM_S = 300.0

router = APIRouter(include_in_schema=False)


class DashboardFeed:
    """One app's frames, computed once per state version whatever the number of viewers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._decisions = DecisionLog()
        self._version = -1
        self._frame: dict[str, Any] = {}
        self._health: tuple[float, dict[str, Any]] = (-HEARTBEAT_S, {})

    def current(self, service: TwinService) -> dict[str, Any]:
        """The frame of the service's current version (computed when it changed)."""
        with self._lock:
            if service.version != self._version:
                version = service.version
                self._frame = service.read(self._compute)
                self._version = version
            checked, health = self._health
            if time.monotonic() - checked >= HEARTBEAT_S / 2:  # one database ping for all viewers
                health = _health(service)
                self._health = (time.monotonic(), health)
            return {**self._frame, "version": self._version, "health": health}

    def _compute(self, doc: TwinDocument) -> dict[str, Any]:
        picture = frame(doc)
        picture["decisions"] = self._decisions.update(doc)
        return picture


def _health(service: TwinService) -> dict[str, Any]:
    """Readiness as ``/readyz`` sees it, and the history writer's counters."""
    problem = history_problem(service)
    stats = service.stats
    return {
        "ready": problem is None,
        "problem": problem or "",
        "history": service.history is not None,
        "pending_batches": stats.pending,
        "patches": stats.patches,
        "samples": stats.samples,
        "sent_at": time.time(),
    }


def install_ui(app: FastAPI) -> None:
    """Mount the dashboard's page, assets and event stream on ``app``."""
    app.state.dashboard = DashboardFeed()
    app.include_router(router)
    app.mount("/ui/static", StaticFiles(directory=UI_FOLDER), name="ui-static")


@router.get("/ui")
async def get_ui() -> FileResponse:
    """The dashboard page."""
    page = UI_FOLDER / "index.html"
    return FileResponse(
        page, media_type="text/html", headers={"Content-Security-Policy": LOCAL_ONLY}
    )


@router.get("/ui/events")
async def get_ui_events(request: Request, service: Service) -> StreamingResponse:
    """Server-sent events: one ``frame`` event per state change, a heartbeat at least every
    second."""
    feed: DashboardFeed = request.app.state.dashboard
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    events = _events(request, feed, service)
    return StreamingResponse(events, media_type="text/event-stream", headers=headers)


async def _events(
    request: Request, feed: DashboardFeed, service: TwinService
) -> AsyncIterator[str]:
    yield "retry: 500\n\n"
    started = last_sent = time.monotonic()
    sent_version = -1
    while time.monotonic() - started < STREAM_S:
        now = time.monotonic()
        if service.version != sent_version or now - last_sent >= HEARTBEAT_S:
            picture = await run_in_threadpool(feed.current, service)
            sent_version, last_sent = picture["version"], now
            yield f"event: frame\ndata: {json.dumps(picture, separators=(',', ':'))}\n\n"
        if await request.is_disconnected():
            return
        await asyncio.sleep(POLL_S)
