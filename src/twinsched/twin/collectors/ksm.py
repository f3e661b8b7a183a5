"""The live mirror: a cluster's kube-state-metrics, read through Prometheus, into the twin.

Every ``interval`` seconds :class:`KsmMirror` asks Prometheus, in ONE instant query
(:data:`STATE_QUERY`: the ``kube_node_*`` families, ``kube_pod_info`` and
``kube_pod_status_phase``, each series tagged with its family by ``label_replace``), for the
cluster as it is now. One query is one view: Prometheus shows a query either all of a
scrape or none of it, so no view is mixed from two scrapes, and nothing needs to be read
in the past: the twin is at most one scrape behind. Pods the twin does not hold yet get a
second query for what is fixed for a pod's life (requests, owner, creation time), filtered
on their uids (:func:`details_query`). The one reader of these series is
:mod:`twinsched.traces.kube_state_metrics`; the comparison with the twin's current state
(a light summary read under its lock, no copy of the document) is
:mod:`twinsched.twin.collectors.ksm_diff`. Only the differences are written, through the
twin's own doors: ``replace`` (as ``PUT``) when nodes are new or changed, then ``apply``
(as ``PATCH``: validated, recorded in the history, all or nothing). Nothing is kept between
intervals but counters, so a restarted mirror resumes from what the twin holds, without
duplicates.

Bad input never stops it: unusable series are counted by reason (``stats.rejected``, on the
twin's ``/metrics`` as ``twinsched_twin_mirror_rejected_total{reason}``) and logged once
with the series (at most :data:`LOGGED_MAX` distinct ones); a Prometheus that errors or
times out is a failed poll counted by kind (``prometheus_unreachable``,
``prometheus_timeout``, ``prometheus_http``, ``prometheus_query``), logged when it starts
failing and when it answers again, and the next interval tries again.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from twinsched.errors import TwinschedError
from twinsched.traces.kube_state_metrics import (
    FAMILIES,
    NODE_FAMILIES,
    POD_DETAIL_FAMILIES,
    POD_STATE_FAMILIES,
    KsmView,
    Problem,
    finish,
    read_details,
    read_state,
)
from twinsched.twin.collectors.ksm_diff import (
    Plan,
    TwinSummary,
    changed_nodes,
    follow,
    plan_for,
    restructured,
    summarize,
    validated,
)
from twinsched.twin.collectors.ksm_write import write_deltas
from twinsched.twin.collectors.prometheus import (
    DEFAULT_QUERIES,
    PrometheusCollector,
    PrometheusError,
    query_result,
    to_patch,
)
from twinsched.twin.core.deltas import StatePatch

if TYPE_CHECKING:
    import httpx

    from twinsched.model.document import TwinDocument
    from twinsched.twin.core.service import TwinService

log = logging.getLogger(__name__)
MIRROR_SOURCE = "mirror"  # its sessions' source begins so: their GPU indices are made up
LOGGED_MAX = 10_000  # distinct bad series logged (each once); later ones are only counted
FAMILY_LABEL = "twinsched_family"
#: Families read only where they hold: the Ready condition and the current phase.
SELECT = {"kube_node_status_condition": ('condition="Ready"', " == 1"),
          "kube_pod_status_phase": ("", " == 1")}  # fmt: skip
#: Pod series projected on the labels the reader uses (``group``: the value is 1; ``max``
#: over one series: its value, NaN and negatives included): whatever a cluster adds
#: (``pod_ip``, ``created_by_*``, target labels) is not sent. ``instance`` keeps two
#: kube-state-metrics replicas apart (their series are counted as duplicates).
PROJECT = {
    "kube_pod_info": "group by (namespace, pod, uid, node, instance)",
    "kube_pod_status_phase": "group by (namespace, pod, uid, phase, instance)",
    "kube_pod_container_resource_requests":
        "max by (namespace, pod, uid, container, resource, instance)",
    "kube_pod_owner": "group by (namespace, pod, uid, owner_name, instance)",
    "kube_pod_created": "max by (namespace, pod, uid, instance)",
}  # fmt: skip
DETAILS_FILTERED_MAX = 2_000  # new pods named in the details query; more: read them all
SAFE_UID = re.compile(r"[A-Za-z0-9._-]+")  # Kubernetes uids are UUIDs


def union(families: Iterable[str], matchers: str = "") -> str:
    """One PromQL query for ``families``, each series tagged ``twinsched_family``."""
    parts = []
    for family in families:
        matcher, suffix = SELECT.get(family, ("", ""))
        inside = ",".join(m for m in (matcher, matchers) if m)
        expr = (f"{family}{{{inside}}}" if inside else family) + suffix
        if family in PROJECT:
            expr = f"{PROJECT[family]} ({expr})"
        parts.append(f'label_replace({expr}, "{FAMILY_LABEL}", "{family}", "__name__", ".*")')
    return " or ".join(parts)


STATE_QUERY = union(NODE_FAMILIES + POD_STATE_FAMILIES)


def details_query(uids: Iterable[str]) -> str:
    """Requests, owner, creation time (and ``kube_pod_info``, to see the pods are still
    there) of the pods with these uids; of every pod when they are many or not UUID-like."""
    wanted = sorted(set(uids))
    families = ("kube_pod_info", *POD_DETAIL_FAMILIES)
    if (
        not wanted
        or len(wanted) > DETAILS_FILTERED_MAX
        or not all(SAFE_UID.fullmatch(u) for u in wanted)
    ):
        return union(families)
    return union(families, f'uid=~"{"|".join(wanted)}"')


def by_family(result: Iterable[Any]) -> dict[str, list[Any]]:
    """The series of one union answer, by the family they were tagged with."""
    out: dict[str, list[Any]] = {family: [] for family in FAMILIES}
    for series in result:
        labels = series.get("metric") if isinstance(series, dict) else None
        bucket = out.get(labels.get(FAMILY_LABEL, "")) if isinstance(labels, dict) else None
        if bucket is not None:
            bucket.append(series)
    return out


def redacted(url: str) -> str:
    """``url`` without the user and password it may carry (``https://***@host/``)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


class FetchError(PrometheusError):
    """A query Prometheus did not answer: ``kind`` is ``unreachable``, ``timeout``,
    ``http`` (an HTTP error or not JSON) or ``query`` (Prometheus refused the query)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class MirrorStats:
    """Counters read by the twin's ``/metrics`` at scrape time."""

    polls: int = 0
    failed: int = 0
    writes: int = 0
    deltas: int = 0
    last_seconds: float = 0.0  # CPU seconds of the last poll (this thread's)
    seconds: float = 0.0  # CPU seconds of every poll
    rejected: Counter[str] = field(default_factory=Counter)


class KsmMirror(PrometheusCollector):
    """Mirrors ``prometheus`` (base URL) into ``service`` every ``interval`` seconds.

    ``token``: a bearer token sent to Prometheus (a proxy in front of it); user and password
    in the URL are sent as basic authentication."""

    def __init__(
        self,
        prometheus: str,
        service: TwinService,
        *,
        interval: float = 15.0,
        timeout: float = 5.0,
        usage: Mapping[str, str] | None = None,
        token: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(prometheus, lambda _: None, queries=DEFAULT_QUERIES if usage is None
                         else usage, interval=interval, timeout=timeout, retries=1,
                         max_failed_polls=2**62, transport=transport)  # fmt: skip
        if token:
            self._http.headers["Authorization"] = f"Bearer {token}"
        self.url = redacted(self.url)  # as shown in messages and logs; the client has it all
        self.service = service
        self.session_source = f"{MIRROR_SOURCE} {self.url}"[:200]  # its twin session's
        self.stats = MirrorStats()
        self._logged: set[tuple[str, str, str]] = set()
        self._failing = ""  # the kind of the failures in a row, "" when the last poll worked
        # The twin's summary and the version it holds for: reused while the twin's version
        # moved by the mirror's own writes only (a cache; a restarted mirror reads it again)
        self._known: tuple[TwinSummary, int] | None = None

    # -- Prometheus ------------------------------------------------------------------------
    def fetch(self, promql: str, at: float) -> dict[str, list[Any]]:
        """One instant query at time ``at``, its series by family."""
        import httpx
        import orjson

        try:
            reply = self._http.post("/api/v1/query", data={"query": promql, "time": f"{at:.3f}"})
        except httpx.TimeoutException as exc:
            raise FetchError("timeout", f"{self.url}: query timed out: {exc}") from None
        except httpx.HTTPError as exc:
            raise FetchError("unreachable", f"{self.url}: {type(exc).__name__}: {exc}") from None
        try:
            answer = orjson.loads(reply.content)
        except orjson.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict) or (reply.status_code >= 400 and "status" not in answer):
            raise FetchError("http", f"{self.url}: query gave HTTP {reply.status_code}: "
                             f"{reply.content[:200]!r}")  # fmt: skip
        try:
            return by_family(query_result(answer, "kube-state-metrics", self.url, "vector"))
        except PrometheusError as exc:
            raise FetchError("query", str(exc)) from None

    def read(self, at: float) -> tuple[KsmView, TwinSummary]:
        """The cluster at ``at`` (details read for the pods the twin does not hold) and the
        twin's summary it was compared with."""
        view = read_state(self.fetch(STATE_QUERY, at))
        known = self._summary()
        new = {pod_id for pod_id in view.pods if pod_id not in known.pods}
        if new:
            uids = [view.pods[pod_id].uid for pod_id in new]
            read_details(view, self.fetch(details_query(uids), at), new)
        return finish(view), known

    # -- the twin --------------------------------------------------------------------------
    def _summary(self) -> TwinSummary:
        if self._known is not None and self._known[1] == self.service.version:
            return self._known[0]
        service = self.service
        summary, version = service.read(lambda doc: (summarize(doc), service.version))
        self._known = summary, version
        return summary  # type: ignore[no-any-return]

    def _wrote(self, version: int, deltas: Sequence[Any] = ()) -> None:
        """The twin is at ``version`` after one write of the mirror's: the summary follows
        its ``deltas`` if nobody else wrote in between, else it is read again next time."""
        if self._known is None or self._known[1] != version - 1:
            self._known = None
            return
        follow(self._known[0], deltas)
        self._known = self._known[0], version

    def mirror(self, view: KsmView, known: TwinSummary, at: float) -> Plan:
        """Compare ``view`` with the twin (``known``) and write the differences."""
        plan = Plan()
        if not view.nodes and not view.skipped_nodes and known.nodes:
            # kube-state-metrics not scraped (its target down, its series stale): a gap
            # in the monitoring, not a cluster without nodes
            plan.refuse("no_series", "kube_node_info", "no series; nothing changed")
            self._count(view, plan)
            return plan
        at = max(at, self.service.time)
        changed_nodes(known, view, plan)
        if plan.nodes:
            pools = {name: view.nodes[name].pool for name in plan.nodes}
            known = self.service.read(lambda doc: self._restructure(doc, plan, pools, at))
            plan.structure = True
            self.stats.writes += 1
        plan_for(known, view, at, plan)
        plan.deltas, version = write_deltas(self.service, at, plan, self.session_source)
        if version is not None:
            self._wrote(version, plan.deltas)
        if plan.deltas:
            self.stats.writes += 1
            self.stats.deltas += len(plan.deltas)
        self._count(view, plan)
        return plan

    def _restructure(self, doc: TwinDocument, plan: Plan, pools: dict[str, str],
                     at: float) -> TwinSummary:  # fmt: skip
        # under the twin's lock (service.read): the new document shares objects with the
        # old one, which nobody holds once replaced in this same locked section
        new = restructured(doc, plan.nodes, pools, at)
        summary = summarize(new)
        # the mirror's own session goes on (a restarted mirror's too); another feed's ends
        version = self.service.replace(new, source=self.session_source, resume=True)
        self._known = summary, version
        return summary

    def _count(self, view: KsmView, plan: Plan) -> None:
        self.stats.rejected.update(view.counts)
        self.stats.rejected.update(plan.counts)
        self._log([*view.problems, *plan.problems])

    def _log(self, problems: Iterable[Problem]) -> None:
        """Log each distinct problem once (the first :data:`LOGGED_MAX`)."""
        for problem in problems:
            key = (problem.reason, problem.family, problem.series)
            if key in self._logged or len(self._logged) >= LOGGED_MAX:
                continue
            self._logged.add(key)
            log.warning("mirror: %s in %s: %s", problem.reason, problem.family, problem.series)

    def usage_deltas(self, at: float, nodes: set[str]) -> list[Any]:
        """The usage queries' values as metrics deltas, for nodes the twin has."""
        samples = [s for metric, promql in self.queries.items()
                   for s in self.query(metric, promql, at) if s.node in nodes]  # fmt: skip
        plan = Plan()
        deltas = validated(to_patch(samples, at)["deltas"], plan)
        self._count(KsmView(), plan)
        return deltas

    def poll_once(self, at: float | None = None) -> dict[str, Any]:
        """One interval: read, mirror, then the usage metrics; a summary of what it did."""
        started = time.thread_time()
        at = round(time.time() if at is None else at, 3)
        view, known = self.read(at)
        plan = self.mirror(view, known, at)
        usage = []
        if self.queries:
            nodes = set(self.service.read(lambda d: [n.id for p in d.nodepools for n in p.nodes]))
            usage = self.usage_deltas(at, nodes)
        if usage:
            patch = StatePatch(time=max(at, self.service.time), deltas=usage)
            done = self.service.apply(patch, source=self.session_source)
            self._wrote(done.version)
        self.stats.last_seconds = time.thread_time() - started
        self.stats.seconds += self.stats.last_seconds
        return {"time": at, "structure": plan.structure, "deltas": len(plan.deltas),
                "metrics": len(usage)}  # fmt: skip

    def _failed(self, kind: str, problem: str) -> None:
        self.stats.failed += 1
        self.stats.rejected[kind] += 1
        if self._failing != kind:
            log.warning("mirror: poll %d failed (%s): %s", self.stats.polls + 1, kind, problem)
        self._failing = kind

    def run(self, stop: threading.Event) -> int:
        """Mirror every ``interval`` seconds until ``stop`` is set; a failed poll is counted
        and logged, and the next one tries again. Returns the polls made."""
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.poll_once()
            except FetchError as exc:
                self._failed(f"prometheus_{exc.kind}", str(exc))
            except TwinschedError as exc:
                self._failed("write", str(exc))
            except Exception as exc:  # a bug: counted and logged, the twin keeps serving
                if self._failing != "internal":
                    log.exception("mirror: poll %d failed", self.stats.polls + 1)
                self._failed("internal", repr(exc))
            else:
                if self._failing:
                    log.warning("mirror: poll %d worked again", self.stats.polls + 1)
                self._failing = ""
            self.stats.polls += 1
            stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
        return self.stats.polls

    def start(self) -> threading.Event:
        """Run in a daemon thread; set the returned event to stop it."""
        stop = threading.Event()
        threading.Thread(target=self.run, args=(stop,), name="ksm-mirror", daemon=True).start()
        return stop
