"""``prometheus``: Prometheus HTTP API query results as node metric samples.

Accepted: one response ``{"status": "success", "data": {"resultType": "vector" | "matrix",
"result": [...]}}``, an object of named responses ``{"cpu_util": response, ...}`` (the name
is the metric, for queries whose series have no ``__name__``), or an array of responses.
The node of a series is its first label of ``node``, ``nodename``, ``kubernetes_node``,
``hostname``, ``instance`` (without ``:port``). The document is the base document (or an
empty one) with each node's latest samples written into its metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from twinsched.model.document import TwinDocument
from twinsched.model.schema import format_path
from twinsched.traces._values import number
from twinsched.traces.conversion import Conversion, HarmonizeError, Path, Sample

NODE_LABELS = ("node", "nodename", "kubernetes_node", "hostname", "instance")
RESULT_TYPES = ("vector", "matrix")


def is_response(value: Any) -> bool:
    """Whether ``value`` looks like one Prometheus query response."""
    return (
        isinstance(value, Mapping) and "status" in value and ("data" in value or "error" in value)
    )


def from_prometheus(payload: Any, base: TwinDocument | None) -> Conversion:
    """Samples of every series; the document is the base (or empty) document."""
    data = base.model_dump(mode="json") if base is not None else {"nodepools": []}
    out = Conversion(data)
    if is_response(payload):
        _response(out, payload, (), None)
    elif isinstance(payload, Mapping) and payload:
        for name, response in payload.items():
            if not is_response(response):
                raise HarmonizeError((name,), "must be a Prometheus query response")
            _response(out, response, (name,), name)
    elif isinstance(payload, list) and payload:
        for i, response in enumerate(payload):
            if not is_response(response):
                raise HarmonizeError((i,), "must be a Prometheus query response")
            _response(out, response, (i,), None)
    else:
        raise HarmonizeError(
            (), "expected a Prometheus query response, or an object or array of them"
        )
    return out


def _response(out: Conversion, response: Mapping[str, Any], at: Path, name: str | None) -> None:
    if response.get("status") != "success":
        kind, error = response.get("errorType", "error"), response.get("error", "")
        out.drop(at, f"query failed ({response.get('status')!r}): {kind}: {error}".rstrip(": "))
        return
    for warning in response.get("warnings") or []:
        out.note(f"Prometheus warning at {format_path(at) if at else 'payload'}: {warning}")
    data = response.get("data")
    if not isinstance(data, Mapping):
        raise HarmonizeError((*at, "data"), "must be an object with resultType and result")
    kind = data.get("resultType")
    if kind not in RESULT_TYPES:
        if kind in ("scalar", "string"):
            out.drop((*at, "data"), f"resultType '{kind}' has no series")
            return
        raise HarmonizeError((*at, "data", "resultType"), f"must be one of {list(RESULT_TYPES)}")
    result = data.get("result")
    if not isinstance(result, list):
        raise HarmonizeError((*at, "data", "result"), "must be an array of series")
    for i, series in enumerate(result):
        _series(out, series, (*at, "data", "result", i), name, kind)


def _series(out: Conversion, series: Any, at: Path, name: str | None, kind: str) -> None:
    if not isinstance(series, Mapping) or not isinstance(series.get("metric", {}), Mapping):
        out.drop(at, "a series must be an object with a 'metric' object")
        return
    labels = series.get("metric", {})
    metric = name or labels.get("__name__")
    if not metric:
        out.drop((*at, "metric"), "no metric name: no __name__ label (name the query instead)")
        return
    node = next((str(labels[k]) for k in NODE_LABELS if labels.get(k)), None)
    if node is None:
        out.drop((*at, "metric"), f"no node label (one of {', '.join(NODE_LABELS)})")
        return
    if node == labels.get("instance") and ":" in node and not node.startswith("["):
        node = node.rsplit(":", 1)[0]
    if "histogram" in series or "histograms" in series:
        out.drop(at, "native histograms are not node metrics")
    points = [series.get("value")] if kind == "vector" else series.get("values")
    if not isinstance(points, list):
        out.drop(at, f"no {'value' if kind == 'vector' else 'values'}")
        return
    for k, point in enumerate(points):
        where = at + (("value",) if kind == "vector" else ("values", k))
        if not (isinstance(point, list) and len(point) == 2):
            out.drop(where, 'a sample must be [timestamp, "value"]')
            continue
        try:
            t, value = number(point[0]), number(point[1])
        except ValueError as exc:
            out.drop(where, str(exc))
            continue
        out.samples.append(Sample(node, metric, t, value, where))
