"""Prometheus out: the VTE's simulated node metrics on ``/metrics``.

Metrics are computed from the state at scrape time, never pushed (Dask's habit): the
collector reads :class:`LiveState` and turns :mod:`twinsched.metrics.exposition` families
into ``prometheus_client`` ones. A run paced by :class:`PacedClock` holds the state's lock
except while it waits for the wall clock, so a scrape always sees the state between two
events, never half of one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING

from twinsched.errors import TwinschedError
from twinsched.extras import needs
from twinsched.metrics.exposition import Family, clock_family, families
from twinsched.model.events import Event
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import RunContext
from twinsched.sim.clock import Clock, WallClock
from twinsched.sim.ksm import ksm_families

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client.metrics_core import Metric

WHY = "the Prometheus exporter needs prometheus-client"
FORMATS = ("twinsched", "kube-state-metrics")


class LiveState:
    """The state of the run in progress (or a fixed one), safe to read from a scrape thread.

    Pass it to a run as an observer (``run_fillup(..., observers=[live])``): the run hands
    over its state when it starts. ``format="kube-state-metrics"`` also exposes the cluster
    as kube-state-metrics' node and pod families (:mod:`twinsched.sim.ksm`).
    """

    def __init__(
        self,
        state: ClusterState | None = None,
        clock: Clock | None = None,
        format: str = "twinsched",
    ) -> None:
        if format not in FORMATS:
            raise TwinschedError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
        self.lock = threading.Lock()
        self.state = state
        self.clock = clock
        self.format = format

    # -- a run observer: the run hands over its state when it starts -------------------------
    def on_start(self, state: ClusterState, ctx: RunContext) -> None:
        """Read this run's state from now on (the run is built; its lock is held)."""
        self.state = state

    def on_events(self, state: ClusterState, events: Sequence[Event]) -> None:
        return None  # scrapes read the state itself, at scrape time

    def on_end(self, state: ClusterState) -> None:
        return None

    @contextmanager
    def running(self) -> Iterator[None]:
        """Hold the lock for a run; a :class:`PacedClock` lets go of it while it waits."""
        with self.lock:
            yield

    def families(self) -> list[Family]:
        """The metric families of the state now (none before a run has a state)."""
        with self.lock:
            out = families(self.state) if self.state is not None else []
            if self.state is not None and self.format == "kube-state-metrics":
                out = [*ksm_families(self.state), *out]
            if self.clock is not None:
                out.append(clock_family(self.clock.now()))
        return out


class PacedClock(WallClock):
    """A wall clock that releases a :class:`LiveState`'s lock while it sleeps.

    Use it inside ``live.running()``: the run then changes the state only while holding
    the lock, and scrapes read it while the run waits for its next event.
    """

    def __init__(self, live: LiveState, start: float = 0.0, speed: float = 1.0) -> None:
        if speed <= 0:
            raise TwinschedError(f"speed must be > 0 simulated seconds per second, got {speed}")
        super().__init__(start, speed)
        self._live = live
        live.clock = self

    def advance_to(self, t: float) -> None:
        self._live.lock.release()
        try:
            super().advance_to(t)
        finally:
            self._live.lock.acquire()


def _as_prometheus(family: Family) -> Metric:
    from prometheus_client.core import GaugeMetricFamily

    out = GaugeMetricFamily(family.name, family.help, labels=family.label_names)
    for row, value in zip(family.rows, family.values.tolist(), strict=True):
        out.add_metric(row, value)
    return out


class StateCollector:
    """A ``prometheus_client`` collector over a :class:`LiveState`."""

    def __init__(self, live: LiveState) -> None:
        self.live = live

    def collect(self) -> Iterator[Metric]:
        """Called by ``prometheus_client`` on every scrape."""
        for family in self.live.families():
            yield _as_prometheus(family)


class MetricsExporter:
    """Serves ``/metrics`` for a :class:`LiveState` from a background thread; stoppable.

    ``port=0`` picks a free port (read :attr:`port` after :meth:`start`).
    """

    def __init__(self, live: LiveState, port: int = 0, host: str = "127.0.0.1") -> None:
        self.live, self.host, self._port = live, host, port
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_port if self._server is not None else self._port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def start(self) -> MetricsExporter:
        """Start serving; raises a :class:`TwinschedError` when the port is taken."""
        with needs("twin", WHY):
            from prometheus_client import CollectorRegistry, start_http_server
        registry = CollectorRegistry(auto_describe=False)
        registry.register(StateCollector(self.live))
        try:
            self._server, self._thread = start_http_server(self._port, self.host, registry)
        except OSError as exc:
            where = f"{self.host}:{self._port}"
            raise TwinschedError(f"cannot serve metrics on {where}: {exc}") from exc
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> MetricsExporter:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
