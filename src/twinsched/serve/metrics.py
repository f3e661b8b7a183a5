"""The service's Prometheus families: calls and latency per verb, decisions, fallbacks, binds."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from twinsched.model.mirror import KINDS
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.source import StateSource

PREFIX = "twinsched_scheduler"
BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)


class ServiceMetrics:
    """One registry per app (several apps can live in one process: tests)."""

    def __init__(self, cluster: ServiceCluster) -> None:
        self.registry = reg = CollectorRegistry()
        self.calls = Counter(f"{PREFIX}_calls", "Extender calls per verb.", ["verb"], registry=reg)
        self.latency = Histogram(f"{PREFIX}_call_seconds", "Extender call latency per verb.",
                                 ["verb"], buckets=BUCKETS, registry=reg)  # fmt: skip
        self.decisions = Counter(f"{PREFIX}_decisions", "Prioritize decisions per outcome.",
                                 ["outcome"], registry=reg)  # fmt: skip
        self.fallbacks = Counter(f"{PREFIX}_fallbacks", "Decisions the fallback heuristic made.",
                                 registry=reg)  # fmt: skip
        self.filters = Counter(f"{PREFIX}_filter_results", "Filter answers: some node passes or "
                               "none.", ["result"], registry=reg)  # fmt: skip
        self.binds = Counter(f"{PREFIX}_binds", "Bind answers per result.", ["result"],
                             registry=reg)  # fmt: skip
        self._fallbacks_seen = cluster.fallbacks()
        held = Gauge(f"{PREFIX}_nodes_held", "Nodes that take no new pod although declared "
                     "ready: over-committed by a shrink, or missing from the node list while "
                     "pods run there.", ["why"], registry=reg)  # fmt: skip
        held.labels("overcommitted").set_function(lambda: len(cluster.overcommitted))
        held.labels("missing").set_function(lambda: len(cluster.missing))
        Gauge(f"{PREFIX}_tentative_pods", "Pods seen only in filter or prioritize calls "
              "(forgotten after a while).", registry=reg).set_function(
            lambda: len(cluster.tentative))  # fmt: skip
        if cluster.source is not None:
            reg.register(Disagreements(cluster.source))

    def observe(self, verb: str, seconds: float) -> None:
        self.calls.labels(verb).inc()
        self.latency.labels(verb).observe(seconds)

    def filtered(self, some: bool) -> None:
        self.filters.labels("some" if some else "none").inc()

    def decided(self, cluster: ServiceCluster, placed: bool) -> None:
        self.decisions.labels("placed" if placed else "unschedulable").inc()
        now = cluster.fallbacks()
        if now > self._fallbacks_seen:
            self.fallbacks.inc(now - self._fallbacks_seen)
        self._fallbacks_seen = now

    def bound(self, ok: bool) -> None:
        self.binds.labels("ok" if ok else "error").inc()


class Disagreements(Collector):
    """``twinsched_scheduler_twin_disagreements_total{kind}``: what the state source (the
    twin's mirror) could not apply, per kind, every kind shown (0 until one is counted)."""

    def __init__(self, source: StateSource) -> None:
        self.source = source

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            f"{PREFIX}_twin_disagreements",
            "What the twin said that the service's state could not take (never applied, "
            "never replaced), per kind.",
            labels=["kind"],
        )
        counts = self.source.disagreement_counts()
        for kind in KINDS:
            family.add_metric([kind], counts.get(kind, 0))
        yield family
