"""The live mirror: a cluster's kube-state-metrics, read through Prometheus, into the twin.

Every ``interval`` seconds :class:`KsmMirror` evaluates one instant query per family
(``kube_node_*``, ``kube_pod_*``: :data:`QUERIES`, never one per node) plus the usage
queries of the Prometheus collector, reads them with the one reader
(:mod:`twinsched.traces.kube_state_metrics`), compares the view with the twin's current
document (:mod:`twinsched.twin.collectors.ksm_diff`) and writes only the differences through
the twin's own doors: ``replace`` (as ``PUT``) for new nodes, then ``apply`` (as ``PATCH``:
validated, recorded in the history, all or nothing). Nothing is kept between intervals but
counters, so a restarted mirror resumes from what the twin holds, without duplicates.

Bad input never stops it: unusable series are counted by reason (``counts``, on the twin's
``/metrics`` as ``twinsched_twin_mirror_rejected_total{reason}``) and logged with the series
(at most :data:`LOG_PER_POLL` lines a poll); a Prometheus that errors or times out is a
failed poll (``prometheus``), and the next interval tries again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from twinsched.errors import TwinschedError
from twinsched.traces.kube_state_metrics import FAMILIES, KsmView, read_view
from twinsched.twin.collectors.ksm_diff import Plan, plan_for
from twinsched.twin.collectors.prometheus import (
    DEFAULT_QUERIES,
    PrometheusCollector,
    query_result,
    to_patch,
)
from twinsched.twin.core.deltas import MetricsDelta, StatePatch

if TYPE_CHECKING:
    import httpx

    from twinsched.twin.core.service import TwinService

log = logging.getLogger(__name__)
LOG_PER_POLL = 20

#: One instant query per family; phases and conditions only where they hold (``== 1``).
QUERIES: dict[str, str] = {family: family for family in FAMILIES}
QUERIES["kube_pod_status_phase"] = "kube_pod_status_phase == 1"
QUERIES["kube_node_status_condition"] = 'kube_node_status_condition{condition="Ready"} == 1'


@dataclass
class MirrorStats:
    """Counters read by the twin's ``/metrics`` at scrape time."""

    polls: int = 0
    failed: int = 0
    writes: int = 0
    deltas: int = 0
    last_seconds: float = 0.0  # CPU seconds of the last poll's read + diff + write

    def __post_init__(self) -> None:
        self.rejected: Counter[str] = Counter()


class KsmMirror(PrometheusCollector):
    """Mirrors ``prometheus`` (base URL) into ``service`` every ``interval`` seconds."""

    def __init__(
        self,
        prometheus: str,
        service: TwinService,
        *,
        interval: float = 15.0,
        timeout: float = 5.0,
        usage: Mapping[str, str] | None = None,
        lag: float = 2.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(prometheus, lambda _: None, queries=DEFAULT_QUERIES if usage is None
                         else usage, interval=interval, timeout=timeout, retries=1,
                         max_failed_polls=2**62, transport=transport)  # fmt: skip
        self.service = service
        self.session_source = f"mirror {self.url}"[:200]  # the twin session it writes in
        self.stats = MirrorStats()
        # Queries are evaluated ``lag`` seconds in the past: a scrape that started before
        # the evaluation time but is still being ingested would otherwise show in some
        # families' answers and not in others (a view mixed from two scrapes).
        self.lag = lag

    def fetch(self, at: float) -> dict[str, list[Any]]:
        """The ``result`` list of every family's query at time ``at``."""
        out = {}
        for family, promql in QUERIES.items():
            reply = self._get(promql, at)
            out[family] = query_result(self._json(reply, family), family, self.url, "vector")
        return out

    def _get(self, promql: str, at: float) -> httpx.Response:
        import httpx

        from twinsched.twin.collectors.prometheus import PrometheusError

        try:
            reply = self._http.get("/api/v1/query", params={"query": promql, "time": f"{at:.3f}"})
        except httpx.HTTPError as exc:
            raise PrometheusError(f"{self.url}: {type(exc).__name__}: {exc}") from None
        if reply.status_code >= 500 or reply.status_code == 429:
            raise PrometheusError(f"{self.url}: query {promql!r} gave HTTP {reply.status_code}")
        return reply

    def mirror(self, answers: Mapping[str, list[Any]], at: float) -> Plan:
        """Read, compare and write one interval's answers (no HTTP); the plan written."""
        view = read_view(answers)
        doc = self.service.document()
        if not view.nodes and not view.skipped_nodes and any(p.nodes for p in doc.nodepools):
            # kube-state-metrics not scraped (its target down, its series stale): a gap
            # in the monitoring, not a cluster without nodes
            self.stats.rejected["no_series"] += 1
            log.warning("mirror: no kube_node_info series; nothing changed")
            return Plan()
        at = max(at, self.service.time)
        plan = plan_for(doc, view, at)
        self._count(view, plan)
        if plan.document is not None:
            plan.document.timestamp = at
            # the mirror's own session goes on (a restarted mirror's too); another feed's ends
            self.service.replace(plan.document, source=self.session_source, resume=True)
            self.stats.writes += 1
        if plan.deltas:
            self.service.apply(StatePatch(time=at, deltas=plan.deltas), source=self.session_source)
            self.stats.writes += 1
            self.stats.deltas += len(plan.deltas)
        return plan

    def _count(self, view: KsmView, plan: Plan) -> None:
        self.stats.rejected.update(view.counts)
        self.stats.rejected.update(plan.counts)
        for problem in [*view.problems, *plan.problems][:LOG_PER_POLL]:
            log.warning("mirror: %s in %s: %s", problem.reason, problem.family, problem.series)

    def usage_deltas(self, at: float, nodes: set[str]) -> list[MetricsDelta]:
        """The usage queries' values as metrics deltas, for nodes the twin has."""
        samples = [s for metric, promql in self.queries.items()
                   for s in self.query(metric, promql, at) if s.node in nodes]  # fmt: skip
        return [MetricsDelta.model_validate(d) for d in to_patch(samples, at)["deltas"]]

    def poll_once(self, at: float | None = None) -> dict[str, Any]:
        """One interval: fetch, mirror, then the usage metrics; a summary of what it did."""
        at = round(time.time() - self.lag if at is None else at, 3)
        answers = self.fetch(at)
        started = time.process_time()
        plan = self.mirror(answers, at)
        self.stats.last_seconds = time.process_time() - started
        nodes = set(self.service.read(lambda d: [n.id for p in d.nodepools for n in p.nodes]))
        usage = self.usage_deltas(at, nodes) if self.queries else []
        if usage:
            patch = StatePatch(time=max(at, self.service.time), deltas=usage)
            self.service.apply(patch, source=self.session_source)
        return {"time": at, "structure": plan.document is not None, "deltas": len(plan.deltas),
                "metrics": len(usage)}  # fmt: skip

    def run(self, stop: threading.Event) -> int:
        """Mirror every ``interval`` seconds until ``stop`` is set; a failed poll is counted
        and logged, and the next one tries again. Returns the polls made."""
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.poll_once()
            except TwinschedError as exc:
                self.stats.failed += 1
                self.stats.rejected["prometheus" if "Prometheus" in type(exc).__name__
                                    else "write"] += 1  # fmt: skip
                log.warning("mirror: poll %d failed: %s", self.stats.polls + 1, exc)
            self.stats.polls += 1
            stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
        return self.stats.polls

    def start(self) -> threading.Event:
        """Run in a daemon thread; set the returned event to stop it."""
        stop = threading.Event()
        threading.Thread(target=self.run, args=(stop,), name="ksm-mirror", daemon=True).start()
        return stop
