"""A loopback stand-in for the Kubernetes API server: apps/v1 Deployments only.

Debian (bookworm) packages no ``kube-apiserver`` (only kubectl and the Python clients), so
the Kubernetes actuator's tests drive the official ``kubernetes`` client against this server
instead. It implements what the actuator touches, as the API server does:

* ``POST   /apis/apps/v1/namespaces/{ns}/deployments``        create (201; 409 if it exists)
* ``GET    /apis/apps/v1/namespaces/{ns}/deployments/{name}`` read (404 if missing)
* ``PATCH  /apis/apps/v1/namespaces/{ns}/deployments/{name}`` with
  ``application/strategic-merge-patch+json`` (maps merge, ``null`` deletes a key, a map with
  ``"$patch": "replace"`` replaces; scalars and lists replace, list merge keys such as
  containers by name are not implemented) or ``application/merge-patch+json`` (RFC 7386);
  any other content type is 415. ``spec.replicas`` must be an integer >= 0 (422).

Every request is logged as ``(method, path, content type, body)``; errors are ``Status``
objects, so the client raises its own ``ApiException``.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PATH = re.compile(r"^/apis/apps/v1/namespaces/([a-z0-9-]+)/deployments(?:/([a-z0-9.-]+))?$")
STRATEGIC = "application/strategic-merge-patch+json"
MERGE = "application/merge-patch+json"


def merge(original: Any, patch: Any, *, strategic: bool) -> Any:
    """RFC 7386 JSON merge patch; ``strategic``: Kubernetes strategic merge for maps and
    scalars (the same, plus the ``"$patch": "replace"`` directive; no list merge keys)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if strategic and patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    merged = copy.deepcopy(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge(merged.get(key), value, strategic=strategic)
    return merged


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    """A ``v1.Status`` failure, as the API server answers errors."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}  # fmt: skip


class FakeApiServer:
    """Deployments in memory, served on 127.0.0.1 (a free port) from a thread."""

    def __init__(self) -> None:
        self.deployments: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: list[tuple[str, str, str, Any]] = []
        self._version = 0
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> FakeApiServer:
        self._thread.start()
        return self

    def _serve(self) -> None:
        self._http.serve_forever(poll_interval=0.02)  # a quick shutdown

    def __exit__(self, *_: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)

    def handle(self, method: str, path: str, ctype: str, body: Any) -> tuple[int, dict[str, Any]]:
        """One request: (status code, JSON answer)."""
        with self._lock:
            self.requests.append((method, path, ctype, body))
            match = PATH.match(path.split("?")[0])
            if match is None:
                return 404, status(404, "NotFound", f"the server could not find {path}")
            namespace, name = match.groups()
            if method == "POST" and name is None:
                return self._create(namespace, body)
            key = (namespace, name or "")
            if key not in self.deployments:
                message = f'deployments.apps "{name}" not found'
                return 404, status(404, "NotFound", message)
            if method == "GET":
                return 200, self.deployments[key]
            if method == "PATCH":
                return self._patch(key, ctype, body)
            return 405, status(405, "MethodNotAllowed", f"{method} is not supported here")

    def _create(self, namespace: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        name = body["metadata"]["name"]
        if (namespace, name) in self.deployments:
            return 409, status(409, "AlreadyExists", f'deployments.apps "{name}" already exists')
        stored = copy.deepcopy(body)
        stored["metadata"] |= {"namespace": namespace, "generation": 1, "uid": f"uid-{name}"}
        self.deployments[(namespace, name)] = self._versioned(stored)
        return 201, stored

    def _patch(self, key: tuple[str, str], ctype: str, body: Any) -> tuple[int, dict[str, Any]]:
        if ctype not in (STRATEGIC, MERGE) or not isinstance(body, dict):
            message = f"the body of the request was in an unknown format ({ctype})"
            return 415, status(415, "UnsupportedMediaType", message)
        patched = merge(self.deployments[key], body, strategic=ctype == STRATEGIC)
        replicas = patched.get("spec", {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            message = f"spec.replicas: Invalid value: {replicas!r}: must be an integer >= 0"
            return 422, status(422, "Invalid", message)
        patched["metadata"]["generation"] += 1
        self.deployments[key] = self._versioned(patched)
        return 200, patched

    def _versioned(self, deployment: dict[str, Any]) -> dict[str, Any]:
        self._version += 1
        deployment["metadata"]["resourceVersion"] = str(self._version)
        return deployment


def _handler(server: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            code, answer = server.handle(self.command, self.path, ctype, body)
            data = json.dumps(answer).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
