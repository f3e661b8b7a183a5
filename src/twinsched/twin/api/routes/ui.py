"""``/ui``: the live dashboard, a read-only page fed by server-sent events; ``/``: the landing.

``GET /ui`` is the page and ``/ui/static`` its script and style (package data of
``twin/api/ui/``, nothing from the internet). ``GET /ui/events`` streams:

* ``frame`` (once, at the start): the whole picture, :func:`twinsched.twin.core.dashboard.frame`
  plus the headline figures (:func:`twinsched.twin.core.headline.headline`, what
  ``GET /api/v1/summary`` answers), the session and its recent decisions;
* ``delta`` (each time the state's version changes, looked at every ``POLL_S``): only what
  changed since the version the page has (:mod:`twinsched.twin.api.routes.ui_delta`);
* ``status``: the twin's health, the wall-clock time of the last state change and the
  server's clock, when the health changes and at least every ``BEAT_S``.

An idle page thus receives a ``status`` of a few hundred bytes every ``BEAT_S``. Every event
carries the version it brings the page to as its ``id``, so a browser reconnecting (the stream
closes after ``STREAM_S``) sends it back as ``Last-Event-ID`` and gets only what changed
since. Frames are computed once per version whatever the number of viewers. With
``?session=N`` of a past session the stream shows that session's last state and decisions
(computed once). Every route here only reads; none takes a token.

**Staleness** is measured from the last change of the state (a new version), never from the
stream's beats: a feed that died leaves the page ageing. The time of each change is noted by
a watcher that looks at the version every ``POLL_S`` while the app runs (wrapped around the
app's lifespan), and by every stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import OrderedDict
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
from twinsched.twin.api.routes.landing import router as landing_router
from twinsched.twin.api.routes.ui_delta import diff
from twinsched.twin.core.dashboard import frame
from twinsched.twin.core.headline import headline
from twinsched.twin.core.service import TwinService

UI_FOLDER = Path(__file__).resolve().parent.parent / "ui"
POLL_S = 0.2
DECISIONS_SHOWN = 50
PAST_FRAMES = 8  # frames of past sessions kept (they do not change)
LIVE_FRAMES = 16  # recent live frames kept, to send a reconnecting page only the difference
HEALTH_S = 0.5  # one database ping for all viewers at most this often
BEAT_S = 15.0
STREAM_S = 300.0

router = APIRouter(include_in_schema=False)


def picture_of(doc: TwinDocument) -> dict[str, Any]:
    """The dashboard's frame of ``doc`` with its headline figures; queued pods carry their
    arrival instead of their wait (which changes with every state time, so a row would be
    sent again at each change: the page computes the wait)."""
    picture = {**frame(doc), "summary": headline(doc)}
    queue = picture["queue"]
    if queue["pods"]:
        arrival = {p.id: p.timestamps.arrival_s for job in doc.jobs for p in job.pods
                   if p.phase == "Pending"}  # fmt: skip
        rows = [{k: v for k, v in row.items() if k != "wait_s"} for row in queue["pods"]]
        queue["pods"] = [{**row, "arrival_s": arrival[row["id"]]} for row in rows]
    return picture


class DashboardFeed:
    """One app's frames, computed once per state version whatever the number of viewers,
    and the wall-clock time of the last state change."""

    def __init__(self, service: TwinService | None = None) -> None:
        self._lock = threading.Lock()
        self._live: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._past: dict[int, dict[str, Any]] = {}
        self._health: tuple[float, dict[str, Any]] = (-HEALTH_S, {})
        self._seen = service.version if service is not None else -1
        self.changed_at = time.time()  # the app's start when nothing changed since

    def observe(self, service: TwinService) -> float:
        """Note a change of version (now, at most ``POLL_S`` after it happened, while the
        watcher runs); the wall-clock time of the last change."""
        version = service.version
        if version != self._seen:
            self._seen, self.changed_at = version, time.time()
        return self.changed_at

    def frame_at(self, version: int) -> dict[str, Any] | None:
        """A live frame still kept, by its version."""
        with self._lock:
            return self._live.get(version)

    def current(self, service: TwinService, session: int | None = None) -> dict[str, Any]:
        """The frame of the service's current version (computed when it changed), or of a
        past ``session``'s last state, with the health."""
        return {**self.picture(service, session), "health": self.health(service)}

    def picture(self, service: TwinService, session: int | None = None) -> dict[str, Any]:
        """The frame without the health (what deltas are made of)."""
        with self._lock:
            live = service.session
            if session is not None and (live is None or session != live.id):
                return self._past_frame(service, session)
            version = service.version
            found = self._live.get(version)
            if found is None:
                found = service.read(picture_of)
                found["session"] = _session(service, None)
                found["decisions"] = _decisions(service, None)
                found["version"] = version
                self._live[version] = found
                while len(self._live) > LIVE_FRAMES:
                    self._live.popitem(last=False)
            return found

    def health(self, service: TwinService) -> dict[str, Any]:
        """Readiness and history counters, pinged at most every ``HEALTH_S`` for everyone."""
        with self._lock:
            checked, health = self._health
            if time.monotonic() - checked >= HEALTH_S:
                health = _health(service)
                self._health = (time.monotonic(), health)
            return health

    def _past_frame(self, service: TwinService, session: int) -> dict[str, Any]:
        picture = self._past.get(session)
        if picture is None:
            body = service.snapshot_json(None, session)
            doc = TwinDocument.model_validate_json(body) if body else TwinDocument()
            picture = {**picture_of(doc), "session": _session(service, session),
                       "decisions": _decisions(service, session),
                       "version": service.sessions.get(session).version}  # fmt: skip
            if len(self._past) >= PAST_FRAMES:
                self._past.pop(next(iter(self._past)))
            self._past[session] = picture
        return picture

    async def watch(self, service: TwinService) -> None:
        """Look at the version every ``POLL_S`` (run for the app's life)."""
        while True:
            self.observe(service)
            await asyncio.sleep(POLL_S)


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
    }


def install_ui(app: FastAPI) -> None:
    """Mount the landing page, the dashboard's page, assets and event stream on ``app``, and
    the watcher of state changes around its lifespan."""
    service: TwinService = app.state.service
    feed = app.state.dashboard = DashboardFeed(service)
    app.include_router(landing_router)
    app.include_router(router)
    app.mount("/ui/static", StaticFiles(directory=UI_FOLDER), name="ui-static")
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(instance: Any) -> AsyncIterator[Any]:
        task = asyncio.create_task(feed.watch(service))
        try:
            async with inner(instance) as state:
                yield state
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    app.router.lifespan_context = lifespan


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
    """Server-sent events: a ``frame``, then a ``delta`` per state change and a ``status`` at
    least every ``BEAT_S``; of a past ``session`` when given (404 when unknown)."""
    feed: DashboardFeed = request.app.state.dashboard
    if session is not None:
        service.sessions.get(session)  # 404 before the stream starts
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    since = _event_version(request.headers.get("last-event-id", ""), session)
    events = _events(request, feed, service, session, since)
    return StreamingResponse(events, media_type="text/event-stream", headers=headers)


def _event_id(session: int | None, version: int) -> str:
    return f"{'live' if session is None else session}:{version}"


def _event_version(last: str, session: int | None) -> int | None:
    """The version a reconnecting page has, from its ``Last-Event-ID`` (None: unknown)."""
    key, _, version = last.partition(":")
    if key != ("live" if session is None else str(session)) or not version.isdigit():
        return None
    return int(version)


def _event(kind: str, body: dict[str, Any], event_id: str | None = None) -> str:
    head = f"event: {kind}\n" + (f"id: {event_id}\n" if event_id else "")
    return f"{head}data: {json.dumps(body, separators=(',', ':'))}\n\n"


async def _events(
    request: Request,
    feed: DashboardFeed,
    service: TwinService,
    session: int | None,
    since: int | None,
) -> AsyncIterator[str]:
    yield "retry: 500\n\n"
    started = time.monotonic()
    shown: dict[str, Any] | None = None  # the picture the page has
    if since is not None:
        shown = feed.frame_at(since) if session is None else None
        if shown is None:
            picture = await run_in_threadpool(feed.picture, service, session)
            shown = picture if picture["version"] == since else None
    status: dict[str, Any] = {}
    beat = -BEAT_S
    while time.monotonic() - started < STREAM_S:
        if shown is None or service.version != shown["version"]:  # a past one's stays
            picture = await run_in_threadpool(feed.picture, service, session)
            if shown is None:
                yield _event("frame", picture, _event_id(session, picture["version"]))
            elif picture["version"] != shown["version"]:
                change = diff(shown, picture)
                yield _event("delta", change, _event_id(session, picture["version"]))
            shown = picture
        health = await run_in_threadpool(feed.health, service)
        now = {"health": health, "changed_at": feed.observe(service)}
        if now != status or time.monotonic() - beat >= BEAT_S:
            status, beat = now, time.monotonic()
            yield _event("status", {**now, "now": time.time(), "version": service.version})
        if await request.is_disconnected():
            return
        await asyncio.sleep(POLL_S)
