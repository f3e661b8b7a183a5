"""Prometheus in: poll a Prometheus server's query API and feed node metrics to the twin.

Every ``interval`` seconds the collector evaluates one PromQL query per twin metric at one
common time (``GET /api/v1/query``), keeps the vector samples that carry a ``node`` label,
and hands the twin one batch in the body format of ``PATCH /api/v1/state``::

    {"time": 12.0, "deltas": [{"op": "metrics", "node": "n1", "time": 12.0,
                               "values": {"cpu_util": 0.5}}]}

Parsing and batching are pure functions (tested on recorded answers); HTTP is at the edge,
with bounded retries and errors that name the server.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from twinsched.errors import TwinschedError
from twinsched.extras import needs
from twinsched.metrics import exposition as ex
from twinsched.twin import WHY

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

Sink = Callable[[dict[str, Any]], None]
NODE_LABEL = "node"

#: Twin metric name -> PromQL over the VTE exporter's metrics (``twinsched.sim.exporter``).
#: Utilisations are in [0, 1], as in the twin document; nodes without a resource get none.
DEFAULT_QUERIES: dict[str, str] = {
    "cpu_util": f"{ex.CPU_ALLOCATED} / ({ex.CPU_CAPACITY} > 0)",
    "memory_util": f"{ex.MEMORY_ALLOCATED} / ({ex.MEMORY_CAPACITY} > 0)",
    "gpu_util": f"{ex.GPU_MILLI_ALLOCATED} / 1000 / ({ex.GPU_CAPACITY} > 0)",
    "gpu_allocated": ex.GPU_ALLOCATED,
    "pods_running": ex.PODS_RUNNING,
    "up": ex.NODE_UP,
}


class PrometheusError(TwinschedError):
    """Prometheus could not be reached or refused a query; the message names the URL."""


class TwinSinkError(TwinschedError):
    """The twin could not be reached or refused a batch; the message names the URL."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One value of one twin metric on one node, at Prometheus' evaluation time."""

    node: str
    metric: str
    time: float
    value: float


# -- pure core --------------------------------------------------------------------------------
def query_result(answer: Mapping[str, Any], metric: str, source: str, expected: str) -> list[Any]:
    """The ``result`` list of a Prometheus query answer whose ``resultType`` is ``expected``
    (``vector`` for an instant query, ``matrix`` for a range query); a failed query or
    another type is a :class:`PrometheusError` naming ``source`` and ``metric``."""
    what = "query" if expected == "vector" else "range query"
    if answer.get("status") != "success":
        kind, why = answer.get("errorType", "error"), answer.get("error", "no message")
        raise PrometheusError(f"{source}: {what} for '{metric}' failed: {kind}: {why}")
    data = answer.get("data")
    if not isinstance(data, Mapping) or data.get("resultType") != expected:
        got = data.get("resultType") if isinstance(data, Mapping) else type(data).__name__
        raise PrometheusError(f"{source}: {what} for '{metric}' gave {got}, expected a {expected}")
    result = data.get("result", [])
    return list(result) if isinstance(result, list) else []


def parse_vector(
    answer: Mapping[str, Any], metric: str, source: str = "Prometheus"
) -> list[Sample]:
    """The samples of an instant-query answer, as twin ``metric`` values per node.

    Series without a ``node`` label and values that are not finite (``NaN``, ``+Inf``) are
    left out; a failed query or a result that is not an instant vector is an error.
    """
    out = []
    for series in query_result(answer, metric, source, "vector"):
        node = series.get("metric", {}).get(NODE_LABEL)
        stamp, raw = series.get("value", (None, None))
        value, stamp = point(stamp, raw, f"{source}: query for '{metric}'", node)
        if node and math.isfinite(value):
            out.append(Sample(str(node), metric, stamp, value))
    return out


def point(stamp: object, raw: object, where: str, node: object) -> tuple[float, float]:
    """A series point as (value, time); a value or time that is no number is an error."""
    try:
        return float(raw), float(stamp)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise PrometheusError(f"{where}: value {raw!r} of node {node} is not a number") from None


def to_patch(samples: list[Sample], at: float) -> dict[str, Any]:
    """One ``PATCH /api/v1/state`` body: a metrics delta per node, nodes in name order.

    A node's delta time is its latest sample's time; when two series give the same metric
    for a node (two scrape jobs), the later one in the list wins.
    """
    values: dict[str, dict[str, float]] = {}
    times: dict[str, float] = {}
    for s in samples:
        values.setdefault(s.node, {})[s.metric] = s.value
        times[s.node] = max(times.get(s.node, s.time), s.time)
    deltas = [
        {"op": "metrics", "node": node, "time": times[node], "values": values[node]}
        for node in sorted(values)
    ]
    return {"time": at, "deltas": deltas}


# -- effects ----------------------------------------------------------------------------------
class _Closing:
    """A context manager that calls ``close()`` on the way out."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class PrometheusCollector(_Closing):
    """Polls ``prometheus`` (base URL) with ``queries`` and hands each batch to ``sink``."""

    def __init__(
        self,
        prometheus: str,
        sink: Sink,
        *,
        queries: Mapping[str, str] | None = None,
        interval: float = 15.0,
        timeout: float = 5.0,
        retries: int = 3,
        backoff: float = 0.5,
        max_failed_polls: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        with needs("twin", WHY):
            import httpx
        if interval <= 0 or retries < 1 or max_failed_polls < 1:
            raise TwinschedError("interval must be > 0, retries and max_failed_polls >= 1")
        self.url = prometheus.rstrip("/")
        self.sink = sink
        self.queries = dict(DEFAULT_QUERIES if queries is None else queries)
        self.interval, self.retries, self.backoff = interval, retries, backoff
        self.max_failed_polls = max_failed_polls
        self._http = httpx.Client(base_url=self.url, timeout=timeout, transport=transport)

    def query(self, metric: str, promql: str, at: float) -> list[Sample]:
        """Evaluate one query at time ``at``, retrying when Prometheus is down or busy."""
        import httpx

        params = {"query": promql, "time": f"{at:.3f}"}
        for attempt in range(1, self.retries + 1):
            try:
                reply = self._http.get("/api/v1/query", params=params)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if reply.status_code < 500 and reply.status_code != 429:
                    return parse_vector(self._json(reply, metric), metric, self.url)
                problem = f"HTTP {reply.status_code}"
            if attempt < self.retries:
                time.sleep(self.backoff * attempt)
        raise PrometheusError(
            f"cannot query Prometheus at {self.url} ({problem}, {self.retries} attempts); "
            "is it running?"
        )

    def _json(self, reply: httpx.Response, metric: str) -> Mapping[str, Any]:
        try:
            answer = reply.json()
        except ValueError:
            answer = None
        if not isinstance(answer, Mapping):
            raise PrometheusError(
                f"{self.url}: query for '{metric}' gave HTTP {reply.status_code}, not JSON: "
                f"{reply.text[:200]!r}; is this a Prometheus server?"
            )
        return answer

    def poll_once(self, at: float | None = None) -> dict[str, Any]:
        """Run every query at one time, send the batch to the sink (if any node), return it."""
        at = round(time.time() if at is None else at, 3)
        samples = [
            s for metric, promql in self.queries.items() for s in self.query(metric, promql, at)
        ]
        body = to_patch(samples, at)
        if body["deltas"]:
            self.sink(body)
        return body

    def run(self, stop: threading.Event) -> int:
        """Poll every ``interval`` seconds until ``stop`` is set; returns the polls made.

        A poll that fails is logged and the loop goes on; ``max_failed_polls`` failures in
        a row raise the last error.
        """
        polls = failed = 0
        while not stop.is_set():
            started = time.monotonic()
            try:
                body = self.poll_once()
            except TwinschedError as exc:
                failed += 1
                if failed >= self.max_failed_polls:
                    raise
                log.warning("poll %d failed (%d in a row): %s", polls + 1, failed, exc)
            else:
                failed = 0
                log.info("poll %d: %d nodes", polls + 1, len(body["deltas"]))
            polls += 1
            stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
        return polls

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()


class HttpTwinSink(_Closing):
    """Sends each batch to a twin service: ``PATCH {twin}/api/v1/state`` with a bearer token."""

    def __init__(
        self,
        twin: str,
        token: str,
        *,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        with needs("twin", WHY):
            from twinsched.twin.client import TwinClient
        self.url = twin.rstrip("/")
        self._client = TwinClient(self.url, token or None, timeout=timeout, transport=transport)

    def __call__(self, body: dict[str, Any]) -> None:
        from twinsched.twin.client import TwinClientError

        try:
            self._client.patch_json(json.dumps(body).encode())
        except TwinClientError as exc:
            if exc.status == 0:
                raise TwinSinkError(f"cannot reach the twin at {self.url}: {exc.detail}") from None
            raise TwinSinkError(
                f"the twin at {self.url} refused the batch: HTTP {exc.status}: {exc.detail}"
            ) from None

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()
