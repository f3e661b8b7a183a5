"""``/ui``: the live dashboard, a read-only page fed by server-sent events.

``GET /ui`` is the page and ``/ui/static`` its script and style (package data of
``twin/api/ui/``, nothing from the internet). ``GET /ui/events`` streams one JSON frame
(:func:`twinsched.twin.core.dashboard.frame`, plus the session, its recent decisions as the
twin keeps them, and the twin's health) whenever the state's version changes, checked every
``POLL_S``, and at least every ``HEARTBEAT_S`` otherwise. With ``?session=N`` of a past
session it shows that session's last state and decisions (computed once). Every route
here only reads; none takes a token. The stream closes after ``STREAM_S`` (the browser
reconnects at once) so a shutdown never waits long.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import FileResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles

from twinsched.model.document import TwinDocument
from twinsched.twin.api.deps import Service, history_problem
from twinsched.twin.api.docs import LOCAL_ONLY
from twinsched.twin.core.dashboard import frame
from twinsched.twin.core.service import TwinService

UI_FOLDER = Path(__file__).resolve().parent.parent / "ui"
POLL_S = 0.2
DECISIONS_SHOWN = 50
PAST_FRAMES = 8  # frames of past sessions kept (they do not change)
HEARTBEAT_S = 1.0
STREAM_S = 300.0

router = APIRouter(include_in_schema=False)


class DashboardFeed:
    """One app's frames, computed once per state version whatever the number of viewers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version = -1
        self._frame: dict[str, Any] = {}
        self._past: dict[int, dict[str, Any]] = {}
        self._health: tuple[float, dict[str, Any]] = (-HEARTBEAT_S, {})

    def current(self, service: TwinService, session: int | None = None) -> dict[str, Any]:
        """The frame of the service's current version (computed when it changed), or of a
        past ``session``'s last state."""
        with self._lock:
            live = service.session
            if session is not None and (live is None or session != live.id):
                picture = self._past_frame(service, session)
            else:
                if service.version != self._version:
                    version = service.version
                    self._frame = service.read(frame)
                    self._frame["session"] = _session(service, None)
                    self._frame["decisions"] = _decisions(service, None)
                    self._version = version
                picture = {**self._frame, "version": self._version}
            checked, health = self._health
            if time.monotonic() - checked >= HEARTBEAT_S / 2:  # one database ping for all viewers
                health = _health(service)
                self._health = (time.monotonic(), health)
            return {**picture, "health": health}

    def _past_frame(self, service: TwinService, session: int) -> dict[str, Any]:
        picture = self._past.get(session)
        if picture is None:
            body = service.snapshot_json(None, session)
            doc = TwinDocument.model_validate_json(body) if body else TwinDocument()
            picture = {**frame(doc), "session": _session(service, session),
                       "decisions": _decisions(service, session),
                       "version": service.sessions.get(session).version}  # fmt: skip
            if len(self._past) >= PAST_FRAMES:
                self._past.pop(next(iter(self._past)))
            self._past[session] = picture
        return picture


def _session(service: TwinService, number: int | None) -> dict[str, Any] | None:
    """The session a frame shows (None: the twin has none yet)."""
    if number is None and service.session is None:
        return None
    found = service.sessions.get(number)
    live = service.session
    return {"id": found.id, "source": found.source, "timebase": found.timebase,
            "live": live is not None and live.id == found.id}  # fmt: skip


def _decisions(service: TwinService, number: int | None) -> list[dict[str, Any]]:
    """The newest decisions the twin keeps for the session, newest first."""
    if number is None and service.session is None:
        return []
    return [d.view() for d in service.decisions(number, DECISIONS_SHOWN)]


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
async def get_ui_events(
    request: Request,
    service: Service,
    session: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
) -> StreamingResponse:
    """Server-sent events: one ``frame`` event per state change, a heartbeat at least every
    second; of a past ``session`` when given (404 when unknown)."""
    feed: DashboardFeed = request.app.state.dashboard
    if session is not None:
        service.sessions.get(session)  # 404 before the stream starts
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    events = _events(request, feed, service, session)
    return StreamingResponse(events, media_type="text/event-stream", headers=headers)


async def _events(
    request: Request, feed: DashboardFeed, service: TwinService, session: int | None
) -> AsyncIterator[str]:
    yield "retry: 500\n\n"
    started = last_sent = time.monotonic()
    sent_version = -1
    while time.monotonic() - started < STREAM_S:
        now = time.monotonic()
        if service.version != sent_version or now - last_sent >= HEARTBEAT_S:
            picture = await run_in_threadpool(feed.current, service, session)
            sent_version, last_sent = picture["version"], now
            yield f"event: frame\ndata: {json.dumps(picture, separators=(',', ':'))}\n\n"
        if await request.is_disconnected():
            return
        await asyncio.sleep(POLL_S)
