"""``/healthz`` and ``/metrics`` of the controller over the twin (the standard library's
threading server; ``prometheus-client`` from the twin extra).

``/healthz`` answers 200 with the controller's counters while it holds its lease and
reaches the twin, 503 (same body) otherwise. ``/metrics`` has the ``twinsched_controller_*``
families, computed from the controller's state at scrape time.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from twinsched.extras import require
from twinsched.twin.controller.run import TwinController

PREFIX = "twinsched_controller"
WHY = "the controller's /metrics needs prometheus-client"
COUNTERS = {
    "binds": "Pods bound through the twin.",
    "batches": "PATCH batches of binds written.",
    "cycles": "Scheduling cycles run on the replica.",
    "reads": "Whole states read (start, changes not kept, failed write, reconnection).",
    "follows": "Answers of GET /changes applied.",
    "events": "Events the replica applied from the twin's changes.",
}


class ControllerCollector:
    """``twinsched_controller_*`` families from the controller, at scrape time."""

    def __init__(self, controller: TwinController) -> None:
        self.controller = controller

    def collect(self) -> Iterator[Any]:
        core = require("prometheus_client.core", "twin", WHY)
        c = self.controller
        for name, doc in COUNTERS.items():
            yield core.CounterMetricFamily(f"{PREFIX}_{name}", doc, value=getattr(c.stats, name))
        errors = core.CounterMetricFamily(f"{PREFIX}_errors", "Failed calls.", labels=["kind"])
        for kind, count in sorted(c.stats.errors.items()):
            errors.add_metric([kind], count)
        yield errors
        seconds = core.CounterMetricFamily(f"{PREFIX}_seconds", "Time spent.", labels=["step"])
        seconds.add_metric(["decide_cpu"], c.stats.decide_s)
        seconds.add_metric(["write"], c.stats.write_s)
        yield seconds
        replica = c.replica
        gauges = {
            "lease": ("1 while this controller holds its session's lease.", float(c.stats.lease)),
            "connected": ("1 while the twin answers.", float(c.stats.connected)),
            "pending": ("Pods waiting in the replica's queue.",
                        float(replica.pending()) if replica else float("nan")),
            "version": ("The twin version the replica holds.",
                        float(replica.version) if replica else float("nan")),
        }  # fmt: skip
        for name, (doc, value) in gauges.items():
            yield core.GaugeMetricFamily(f"{PREFIX}_{name}", doc, value=value)
        kinds = core.CounterMetricFamily(
            f"{PREFIX}_twin_disagreements", "What the mirror did not apply.", labels=["kind"]
        )
        for kind, count in sorted(replica.mirror.disagreements.counts.items() if replica else ()):
            kinds.add_metric([kind], count)
        yield kinds


def serve(controller: TwinController, host: str = "127.0.0.1", port: int = 0) -> Any:
    """Start answering ``/healthz`` and ``/metrics`` in a thread; the server (its
    ``server_address`` names the port; ``shutdown()`` stops it)."""
    exposition = require("prometheus_client", "twin", WHY)
    registry = exposition.CollectorRegistry(auto_describe=False)
    registry.register(ControllerCollector(controller))

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                body, kind = exposition.generate_latest(registry), exposition.CONTENT_TYPE_LATEST
                code = 200
            else:
                health = controller.health() if path == "/healthz" else None
                body = json.dumps(health or {"detail": f"no route {path}; try /healthz"}).encode()
                code = 404 if health is None else 200 if health["ok"] else 503
                kind = "application/json"
            self.send_response(code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: scrapes would flood the log."""

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
