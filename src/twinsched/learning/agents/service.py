"""Agents as a service: run them on the wall clock, answer ``/healthz`` and ``/metrics``.

The HTTP side is the standard library's threading server (one small thread; nothing to
install but ``prometheus-client``, which the twin extra brings). Metrics are computed from
the agents' state when Prometheus scrapes (``twinsched_agent_*``, one ``agent`` label).
``/healthz`` answers 200 with each agent's counters while the runner is alive, 503 once it
has stopped.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from twinsched.extras import require
from twinsched.learning.agents.agent import AgentRunner
from twinsched.learning.agents.forecasting import ForecastRule
from twinsched.learning.agents.placement import Placed
from twinsched.learning.agents.supervised import SupervisedAgent
from twinsched.sim.clock import WallClock
from twinsched.twin.auth import Rule, TokenVerifier, verdict
from twinsched.twin.auth.policy import OPEN, Action
from twinsched.twin.auth.tls import TlsFiles

PREFIX = "twinsched_agent"
WHY = "the agent service's /metrics needs prometheus-client"
AGENT_RULES: dict[str, Rule] = {"/healthz": OPEN, "/metrics": Rule(Action.read)}  # its routes


@dataclass
class AgentService:
    """Supervised agents, run on the wall clock by :meth:`run`; :meth:`serve` starts the
    HTTP endpoint in a thread (port 0: any free port, see :attr:`port`)."""

    agents: list[SupervisedAgent]
    running: bool = False
    started: float = field(default_factory=time.time)
    verifier: TokenVerifier = field(default_factory=TokenVerifier)
    read_required: bool = False  # /metrics needs a token (docs/security.md)
    tls: TlsFiles | None = None
    _server: ThreadingHTTPServer | None = None

    def run(self, until: float = math.inf) -> None:
        """Fire the agents as their triggers say until ``until`` (epoch s) or an interrupt;
        the service answers until then even when no firing is due before it."""
        runner = AgentRunner(list(self.agents), WallClock(time.time()), keep_log=False)
        self.running = True
        try:
            runner.run(until)
            while (left := until - time.time()) > 0:  # the engine stops at its last event
                time.sleep(min(left, 3600.0))
        finally:
            self.running = False

    def serve(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Start answering ``/healthz`` and ``/metrics``; the port it listens on."""
        generate = require("prometheus_client", "twin", WHY)
        registry = generate.CollectorRegistry(auto_describe=False)
        registry.register(AgentCollector(self.agents))
        handler = type("Handler", (_Handler,), {"service": self, "registry": registry})
        context = self.tls.context() if self.tls is not None else None
        self._server = _Server((host, port), handler, context)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return int(self._server.server_address[1])

    def shutdown(self) -> None:
        """Stop the HTTP endpoint (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def health(self) -> dict[str, Any]:
        """``status`` ok/stopped and each agent's counters."""
        return {
            "status": "ok" if self.running else "stopped",
            "uptime_s": time.time() - self.started,
            "agents": {
                a.name: {
                    "firings": a.stats.firings,
                    "actions": a.stats.actions,
                    "errors": a.stats.errors,
                    "refused": a.stats.refused,
                    "clamped": a.stats.clamped,
                    "last_firing": _finite(a.stats.last_firing),
                    "last_replicas": _finite(a.stats.last_replicas),
                    "last_error": a.stats.last_error or None,
                }
                for a in self.agents
            },
        }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


class AgentCollector:
    """``twinsched_agent_*`` families from the agents' state, at scrape time."""

    def __init__(self, agents: list[SupervisedAgent]) -> None:
        self.agents = agents

    def collect(self) -> Iterator[Any]:
        core = require("prometheus_client.core", "twin", WHY)
        counters = {
            "firings": "Times the agent fired.",
            "actions": "Firings that changed the replicas.",
            "errors": "Firings that failed (see the log and /healthz).",
            "refused": "Actions refused by the actuator's limits (replicas, interval).",
            "clamped": "Actions whose change the actuator's max_step cut down.",
        }
        for name, doc in counters.items():
            family = core.CounterMetricFamily(f"{PREFIX}_{name}", doc, labels=["agent"])
            for agent in self.agents:
                family.add_metric([agent.name], getattr(agent.stats, name))
            yield family
        gauges = {
            "last_replicas": ("Replicas of the last action (NaN before one).", _replicas),
            "forecast": ("Peak of the last forecast over the horizon (forecast rules).", _peak),
            "last_firing_seconds": ("Time of the last firing (epoch s).", _last_firing),
        }
        for name, (doc, value) in gauges.items():
            gauge = core.GaugeMetricFamily(f"{PREFIX}_{name}", doc, labels=["agent"])
            for agent in self.agents:
                gauge.add_metric([agent.name], value(agent))
            yield gauge


def _replicas(agent: SupervisedAgent) -> float:
    return agent.stats.last_replicas


def _peak(agent: SupervisedAgent) -> float:
    rule = agent.rule.rule if isinstance(agent.rule, Placed) else agent.rule  # placed forecasts
    return rule.last_forecast if isinstance(rule, ForecastRule) else math.nan


def _last_firing(agent: SupervisedAgent) -> float:
    return agent.stats.last_firing


class _Server(ThreadingHTTPServer):
    """The threading server, with TLS when given a context: the handshake happens in the
    request's own thread, so a slow or broken client holds up no one else."""

    def __init__(self, address: tuple[str, int], handler: Any, context: Any) -> None:
        super().__init__(address, handler)
        self.context = context

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.context is None:
            super().finish_request(request, client_address)
            return
        try:
            wrapped = self.context.wrap_socket(request, server_side=True)
        except OSError:  # a failed handshake (ssl.SSLError is an OSError): nothing to answer
            return
        try:
            super().finish_request(wrapped, client_address)
        finally:
            wrapped.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a failed handshake or a dropped client is not the service's error."""


class _Handler(BaseHTTPRequestHandler):
    service: AgentService
    registry: Any

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        rule = AGENT_RULES.get(path)
        if rule is not None and (status := self._access(rule)) != 200:
            detail = ("missing or invalid bearer token" if status == 401
                      else "this token may not read every namespace's agents")  # fmt: skip
            bearer = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
            self._answer(
                status, json.dumps({"detail": detail}).encode(), "application/json", bearer
            )
        elif path == "/metrics":
            exposition = require("prometheus_client", "twin", WHY)
            self._answer(
                200, exposition.generate_latest(self.registry), exposition.CONTENT_TYPE_LATEST
            )
        elif path == "/healthz":
            health = self.service.health()
            code = 200 if health["status"] == "ok" else 503
            self._answer(code, json.dumps(health).encode(), "application/json")
        else:
            body = json.dumps({"detail": f"no route {path}; try /healthz or /metrics"})
            self._answer(404, body.encode(), "application/json")

    def _access(self, rule: Rule) -> int:
        """The guard's verdict (``twin/auth/policy.py``) for this request."""
        header = self.headers.get("Authorization")
        scheme, _, token = (header or "").partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else ""
        verifier = self.service.verifier
        principal = verifier.verify(token) if token and verifier.enabled else None
        return verdict(rule, principal, header is not None, None, enabled=verifier.enabled,
                       read_required=self.service.read_required)  # fmt: skip

    def _answer(
        self, code: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: scrapes every few seconds would flood the log."""
