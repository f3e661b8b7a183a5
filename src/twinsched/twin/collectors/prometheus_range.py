"""Datasets from Prometheus: PromQL range queries into the twin's dataset table.

``collect_range`` evaluates each ``NAME=PROMQL`` query over ``[start, end]`` every ``step``
seconds (``GET /api/v1/query_range``) and keeps the series that carry a ``node`` label, as
rows ``(time, node, metric, value)`` (:mod:`twinsched.traces.twin_dataset`). The range is
aligned as the harmonisation aligns samples: evaluation times are multiples of ``step``
from time 0 (the start is rounded down, the end up), so a dataset from Prometheus and one
exported from the twin with the same ``--step`` fall on the same grid. Long ranges are cut
into queries of at most ``MAX_POINTS`` points (Prometheus refuses more than 11,000).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from twinsched.extras import needs
from twinsched.traces.twin_dataset import COLUMNS
from twinsched.twin import WHY
from twinsched.twin.collectors.prometheus import NODE_LABEL, PrometheusError, point, query_result

if TYPE_CHECKING:
    import httpx

MAX_POINTS = 10_000


def aligned(start: float, end: float, step: float) -> tuple[float, float]:
    """``[start, end]`` widened to multiples of ``step``."""
    return math.floor(start / step) * step, math.ceil(end / step) * step


def parse_matrix(answer: Mapping[str, Any], metric: str, source: str) -> list[dict[str, Any]]:
    """The rows of a range-query answer: one per point of each series with a ``node``
    label; points that are not finite numbers (NaN, Inf) are left out."""
    rows = []
    for series in query_result(answer, metric, source, "matrix"):
        node = series.get("metric", {}).get(NODE_LABEL)
        if not node:
            continue
        for stamp, raw in series.get("values", []):
            value, time = point(stamp, raw, f"{source}: '{metric}'", node)
            if math.isfinite(value):
                rows.append({"time": time, "node": str(node), "metric": metric, "value": value})
    return rows


def collect_range(
    prometheus: str,
    queries: Mapping[str, str],
    start: float,
    end: float,
    step: float,
    *,
    timeout: float = 30.0,
    transport: httpx.BaseTransport | None = None,
) -> pd.DataFrame:
    """Every query over the aligned range, as one dataset table sorted by metric, node, time."""
    with needs("twin", WHY):
        import httpx
    first, last = aligned(start, end, step)
    url = prometheus.rstrip("/")
    rows: list[dict[str, Any]] = []
    with httpx.Client(base_url=url, timeout=timeout, transport=transport) as http:
        for metric, promql in queries.items():
            at = first
            while at <= last:
                stop = min(last, at + (MAX_POINTS - 1) * step)
                params: dict[str, str | float] = {
                    "query": promql,
                    "start": at,
                    "end": stop,
                    "step": step,
                }
                try:
                    reply = http.get("/api/v1/query_range", params=params)
                    answer = reply.json()
                except (httpx.HTTPError, ValueError) as exc:
                    raise PrometheusError(
                        f"cannot query Prometheus at {url}: {type(exc).__name__}: {exc}"
                    ) from None
                rows.extend(parse_matrix(answer, metric, url))
                at = stop + step
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    return frame.sort_values(["metric", "node", "time"], kind="stable", ignore_index=True)
