"""Prometheus exposition: twin state computed at scrape time, and service health.

Each app has its own registry, so several apps can live in one process (tests).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from twinsched.model.document import TwinDocument
from twinsched.twin.api.deps import history_problem
from twinsched.twin.broker.messages import ConsumerStats
from twinsched.twin.core.service import TwinService

if TYPE_CHECKING:  # the mirror's module is imported by `twin serve --mirror`, not by every twin
    from twinsched.twin.collectors.ksm import MirrorStats

PREFIX = "twinsched_twin"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)


class StateCollector(Collector):
    """Gauges of the twin's state, read from the service when Prometheus scrapes."""

    def __init__(self, service: TwinService) -> None:
        self.service = service

    def collect(self) -> Iterator[Any]:
        """One family per figure; see the HELP strings."""
        service, stats = self.service, self.service.stats
        yield _gauge("ready", "1 when the history can be written (as /readyz), else 0.",
                     float(history_problem(service) is None))  # fmt: skip
        yield _gauge("state_version", "State version (accepted PATCH and PUT).", service.version)
        yield _gauge("state_time_seconds", "State time (document timestamp).", service.time)
        yield from service.read(_state_families)
        yield _gauge("history_pending_batches", "Batches waiting for a history write.",
                     stats.pending)  # fmt: skip
        yield _counter("history_patches", "Patches committed to the history.", stats.patches)
        yield _counter("history_samples", "Samples committed to the history.", stats.samples)
        yield _counter("history_write_seconds", "Time spent writing history.", stats.seconds)


BROKER_MESSAGES = {
    "received": "fetched from the stream (each delivery)",
    "redelivered": "deliveries after the first",
    "applied": "ingested into the twin",
    "duplicates": "dropped as already applied",
    "redelivered_later": "sent back: an earlier one of their stream was missing",
    "gaps": "applied after giving up on missing earlier ones",
}
BROKER_ERRORS = {"rejected": "rejected", "retried": "write", "fetch_errors": "fetch"}
DEAD_LETTER_REASONS = {
    "id": "no valid source or sequence number",
    "window": "numbered out of the window of its stream",
    "body": "not a valid batch",
    "delta": "a delta that cannot apply",
    "write": "writes kept failing with the database up",
}


class BrokerCollector(Collector):
    """The broker consumer's counters (``twin serve --broker``), read at scrape time from
    ``stats()``; only ``broker_enabled 0`` without a consumer."""

    def __init__(self, stats: Callable[[], ConsumerStats | None]) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Any]:
        """``broker_enabled``, ``broker_messages_total{event}``, ``broker_errors_total{kind}``,
        ``broker_dead_letters_total{reason}`` and ``broker_streams`` (streams applied)."""
        stats = self.stats()
        yield _gauge("broker_enabled", "1 when the twin consumes a broker.", stats is not None)
        if stats is None:
            return
        events = ", ".join(f"{k}: {v}" for k, v in BROKER_MESSAGES.items())
        messages = CounterMetricFamily(f"{PREFIX}_broker_messages", f"Broker messages by event "
                                       f"({events}).", labels=["event"])  # fmt: skip
        for event in BROKER_MESSAGES:
            messages.add_metric([event], getattr(stats, event))
        errors = CounterMetricFamily(
            f"{PREFIX}_broker_errors",
            "Broker errors: rejected (a message that can never apply), write (history "
            "write failed, left for redelivery), fetch (broker unreachable).",
            labels=["kind"],
        )
        for field, kind in BROKER_ERRORS.items():
            errors.add_metric([kind], getattr(stats, field))
        reasons = ", ".join(f"{k}: {v}" for k, v in DEAD_LETTER_REASONS.items())
        dead = CounterMetricFamily(f"{PREFIX}_broker_dead_letters", "Broker messages that can "
                                   f"never apply, terminated once, by reason ({reasons}).",
                                   labels=["reason"])  # fmt: skip
        for reason in DEAD_LETTER_REASONS:
            dead.add_metric([reason], stats.dead_letters.get(reason, 0))
        yield messages
        yield errors
        yield dead
        yield _gauge("broker_streams", "Publisher streams with a message applied.",
                     len(stats.last))  # fmt: skip


class MirrorCollector(Collector):
    """The live mirror's counters (``twin serve --mirror``); nothing without a mirror."""

    def __init__(self, stats: Callable[[], MirrorStats | None]) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Any]:
        """``mirror_polls_total``, ``mirror_failed_polls_total``, ``mirror_deltas_total``,
        ``mirror_rejected_total{reason}``, ``mirror_cpu_seconds_total`` and
        ``mirror_last_poll_cpu_seconds``."""
        stats = self.stats()
        if stats is None:
            return
        yield _counter("mirror_polls", "Mirror polls (each interval).", stats.polls)
        yield _counter(
            "mirror_failed_polls",
            "Mirror polls that failed (Prometheus unreachable, erroring or timing out; a "
            "write refused): by kind in mirror_rejected_total (prometheus_*, write, internal).",
            stats.failed,
        )
        yield _counter("mirror_deltas", "Deltas the mirror wrote to the twin.", stats.deltas)
        rejected = CounterMetricFamily(f"{PREFIX}_mirror_rejected", "Series or polls the "
                                       "mirror did not use, by reason (docs/twin.md).",
                                       labels=["reason"])  # fmt: skip
        for reason, count in sorted(dict(stats.rejected).items()):  # a copy: the mirror writes
            rejected.add_metric([reason], count)
        yield rejected
        yield _counter("mirror_cpu_seconds", "CPU seconds of the mirror's polls (its thread: "
                       "queries, reading, comparison, writes).", stats.seconds)  # fmt: skip
        yield _gauge("mirror_last_poll_cpu_seconds", "CPU seconds of the last poll (the "
                     "mirror's thread).", stats.last_seconds)  # fmt: skip


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(f"{PREFIX}_{name}", doc, value=value)


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(f"{PREFIX}_{name}", doc, value=value)


def _state_families(doc: TwinDocument) -> list[Any]:
    nodes = GaugeMetricFamily(
        f"{PREFIX}_nodes", "Nodes per nodepool and status.", labels=["nodepool", "status"]
    )
    gpus = GaugeMetricFamily(f"{PREFIX}_gpus", "GPUs per nodepool.", labels=["nodepool"])
    values = GaugeMetricFamily(
        f"{PREFIX}_node_metric", "Latest metric value of a node.", labels=["node", "metric"]
    )
    info = GaugeMetricFamily(f"{PREFIX}_node_info", "1 per node, with its nodepool (joins node "
                             "metrics to tiers).", labels=["node", "nodepool"])  # fmt: skip
    for pool in doc.nodepools:
        counts = {"Ready": 0, "NotReady": 0}
        for node in pool.nodes:
            counts[node.status] += 1
            info.add_metric([node.id, pool.id], 1)
            for metric, value in node.metrics.items():
                values.add_metric([node.id, metric], value)
        for status, count in counts.items():
            nodes.add_metric([pool.id, status], count)
        gpus.add_metric([pool.id], sum(n.hardware.gpu_count for n in pool.nodes))
    pods = GaugeMetricFamily(f"{PREFIX}_pods", "Pods per phase.", labels=["phase"])
    phases = dict.fromkeys(("NotArrived", "Pending", "Running", "Succeeded", "Unschedulable"), 0)
    for job in doc.jobs:
        for pod in job.pods:
            phases[pod.phase] += 1
    for phase, count in phases.items():
        pods.add_metric([phase], count)
    jobs = GaugeMetricFamily(f"{PREFIX}_jobs", "Jobs.", value=len(doc.jobs))
    return [nodes, gpus, values, info, pods, jobs]


class HttpMetrics:
    """Request counts and latency per method, route template and status."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            f"{PREFIX}_http_requests",
            "HTTP requests answered.",
            ["method", "route", "status"],
            registry=registry,
        )
        self.latency = Histogram(
            f"{PREFIX}_http_request_duration_seconds",
            "HTTP request latency.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)


def registry_for(
    service: TwinService,
    broker: Callable[[], ConsumerStats | None] = lambda: None,
    mirror: Callable[[], MirrorStats | None] = lambda: None,
) -> tuple[CollectorRegistry, HttpMetrics]:
    """A fresh registry with the state collector, the broker consumer's and the mirror's
    counters (``broker`` and ``mirror`` give their stats, None without one) and the HTTP
    metrics."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StateCollector(service))
    registry.register(BrokerCollector(broker))
    registry.register(MirrorCollector(mirror))
    return registry, HttpMetrics(registry)
