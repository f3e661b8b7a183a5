"""The aggregator service (``twinsched flow aggregate``): the learner behind HTTP, its
evaluator following the twin in a thread (the standard library's server: it starts fast).

- ``POST /choose`` ``{"pod": NAME, "context": C}``: the member to bind for the pod,
  ``{"arm": A, "member": M}``; the choice stays open until the evaluator rewards it;
- ``GET /healthz``: the learner's counts (choices, rewards per arm, reward curve) and the
  evaluator's (binds seen and scored, allocation).

Bad bodies answer 400 with what is wrong; unknown paths 404.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from twinsched.errors import TwinschedError
from twinsched.twin.flow.evaluator import Evaluator
from twinsched.twin.flow.learner import Learner

MAX_BODY = 64 * 1024


def health(learner: Learner, evaluator: Evaluator) -> dict[str, Any]:
    """What ``GET /healthz`` answers (``ok`` false, with why, once the evaluator stopped)."""
    return {"ok": not evaluator.failed, "failed": evaluator.failed, "learner": learner.stats(),
            "evaluator": evaluator.stats.summary()}  # fmt: skip


def choose(learner: Learner, body: bytes) -> dict[str, Any]:
    """Answer a ``POST /choose`` body, or raise :class:`TwinschedError` naming the field."""
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise TwinschedError(f"body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise TwinschedError("body must be an object with 'pod' and 'context'")
    pod, context = data.get("pod"), data.get("context")
    if not isinstance(pod, str) or not pod:
        raise TwinschedError("'pod' must be a non-empty string")
    if not isinstance(context, int) or isinstance(context, bool):
        raise TwinschedError(f"'context' must be an integer in 0..{learner.contexts - 1}")
    arm = learner.choose(pod, context)
    return {"arm": arm, "member": learner.members[arm]}


def serve(
    learner: Learner, evaluator: Evaluator, host: str = "127.0.0.1", port: int = 0
) -> ThreadingHTTPServer:
    """Answer in a thread; the server (``server_address``; ``shutdown()`` stops it)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the controller asks once per pod

        def setup(self) -> None:
            super().setup()  # headers and body go out in two writes: no Nagle delay on them
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] == "/healthz":
                answer = health(learner, evaluator)
                self._answer(200 if answer["ok"] else 503, answer)
            else:
                self._answer(404, {"detail": f"no route {self.path}; try /healthz"})

        def do_POST(self) -> None:
            given = self.headers.get("Content-Length") or "0"
            length = int(given) if given.isdigit() else -1
            if not 0 <= length <= MAX_BODY:
                self.close_connection = True  # the body is not read: the connection ends
                detail = f"Content-Length must be 0..{MAX_BODY}, got {given!r}"
                self._answer(413 if length > MAX_BODY else 400, {"detail": detail})
                return
            body = self.rfile.read(length)
            if self.path != "/choose":
                self._answer(404, {"detail": f"no route {self.path}; try POST /choose"})
                return
            try:
                self._answer(200, choose(learner, body))
            except TwinschedError as exc:
                self._answer(400, {"detail": str(exc)})

        def _answer(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: one request per pod would flood the log."""

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
