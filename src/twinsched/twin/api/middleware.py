"""Pure ASGI middleware (cheaper than BaseHTTPMiddleware): body size limit, request metrics."""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from twinsched.twin.api.metrics import HttpMetrics


class BodyTooLargeError(Exception):
    """Raised from ``receive`` when a streamed body passes the limit."""


class BodyLimit:
    """Answer 413 (JSON) to bodies over ``max_bytes``, declared or streamed; ``paths`` gives
    some paths a lower limit of their own (a route whose work grows with its body)."""

    def __init__(self, app: ASGIApp, max_bytes: int, paths: dict[str, int] | None = None) -> None:
        self.app, self.max_bytes, self.paths = app, max_bytes, paths or {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        most = min(self.max_bytes, self.paths.get(scope["path"], self.max_bytes))
        declared = _content_length(scope)
        if declared is not None and declared > most:
            await self._reject(send, most)
            return
        seen = 0
        started = over = False

        async def limited_receive() -> Message:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > most:
                    over = True
                    raise BodyTooLargeError
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if over:  # the app caught the error (FastAPI: "cannot parse the body"): 413
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await self._reject(send, most)
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLargeError:
            if started:
                raise
            await self._reject(send, most)

    async def _reject(self, send: Send, most: int) -> None:
        detail = f"request body larger than {most} bytes (the limit of this route)"
        body = json.dumps({"detail": detail, "errors": [{"path": "body", "problem": detail}]})
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body.encode()})


def _content_length(scope: Scope) -> int | None:
    for key, value in scope["headers"]:
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class RequestMetrics:
    """Count requests and their latency by route template (not raw path: bounded labels)."""

    def __init__(self, app: ASGIApp, metrics: HttpMetrics, prefix: str = "") -> None:
        self.app, self.metrics, self.prefix = app, metrics, prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            route: Any = scope.get("route")
            template = getattr(route, "path_format", None) or "unmatched"
            if scope["path"].startswith(self.prefix + "/") and not template.startswith(self.prefix):
                template = self.prefix + template  # routes of included routers lack it
            self.metrics.observe(scope["method"], template, status, time.perf_counter() - started)
