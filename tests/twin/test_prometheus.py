"""The Prometheus collector on recorded answers of Prometheus 2.42 (Debian), no network."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from twinsched.cli.collectors import app
from twinsched.twin.collectors.prometheus import (
    DEFAULT_QUERIES,
    HttpTwinSink,
    PrometheusCollector,
    PrometheusError,
    Sample,
    TwinSinkError,
    parse_vector,
    to_patch,
)

T = 1795363062.97
LABELS = {"instance": "127.0.0.1:19464", "job": "vte", "nodepool": "cloud"}
VECTOR = {
    "status": "success",
    "data": {
        "resultType": "vector",
        "result": [
            {"metric": {**LABELS, "node": "cloud-000"}, "value": [T, "0.25"]},
            {"metric": {**LABELS, "node": "cloud-001"}, "value": [T, "0"]},
            {"metric": {**LABELS, "node": "cloud-002"}, "value": [T, "NaN"]},
            {"metric": {**LABELS}, "value": [T, "3"]},  # no node label
        ],
    },
}
BAD_QUERY = {
    "status": "error",
    "errorType": "bad_data",
    "error": 'invalid parameter "query": 1:5: parse error: unclosed left parenthesis',
}
MATRIX = {"status": "success", "data": {"resultType": "matrix", "result": []}}
SCALAR = {"status": "success", "data": {"resultType": "scalar", "result": [T, "1"]}}


def test_parse_vector_keeps_finite_values_with_a_node() -> None:
    assert parse_vector(VECTOR, "cpu_util") == [
        Sample("cloud-000", "cpu_util", T, 0.25),
        Sample("cloud-001", "cpu_util", T, 0.0),
    ]


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (BAD_QUERY, "query for 'cpu_util' failed: bad_data: invalid parameter"),
        (MATRIX, "gave matrix, expected a vector"),
        (SCALAR, "gave scalar, expected a vector"),
    ],
)
def test_parse_vector_errors_name_the_metric(answer: dict[str, Any], message: str) -> None:
    with pytest.raises(PrometheusError, match=message):
        parse_vector(answer, "cpu_util", "http://prom:9090")


def test_parse_vector_rejects_a_value_that_is_not_a_number() -> None:
    broken = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"node": "n1"}, "value": [T, "lots"]}]}}  # fmt: skip
    with pytest.raises(PrometheusError, match="value 'lots' of node n1 is not a number"):
        parse_vector(broken, "cpu_util")


def test_to_patch_is_the_twin_patch_format() -> None:
    samples = [
        Sample("n2", "cpu_util", 11.0, 0.1),
        Sample("n1", "cpu_util", 12.0, 0.5),
        Sample("n1", "gpu_util", 12.0, 0.25),
    ]
    assert to_patch(samples, 12.0) == {
        "time": 12.0,
        "deltas": [
            {"op": "metrics", "node": "n1", "time": 12.0,
             "values": {"cpu_util": 0.5, "gpu_util": 0.25}},
            {"op": "metrics", "node": "n2", "time": 11.0, "values": {"cpu_util": 0.1}},
        ],
    }  # fmt: skip


def _prometheus(answers: dict[str, Any], calls: list[httpx.Request]) -> httpx.MockTransport:
    """A fake Prometheus answering each PromQL text from ``answers`` (a list: in turn)."""

    def handle(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        answer = answers[request.url.params["query"]]
        if isinstance(answer, list):
            answer = answer.pop(0)
        if isinstance(answer, int):
            return httpx.Response(answer, text="busy")
        return httpx.Response(400 if answer["status"] == "error" else 200, json=answer)

    return httpx.MockTransport(handle)


def test_poll_once_queries_at_one_time_and_sends_one_batch() -> None:
    calls: list[httpx.Request] = []
    sent: list[dict[str, Any]] = []
    queries = {"cpu_util": "a", "pods_running": "b"}
    pods = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"node": "cloud-000"}, "value": [T, "2"]}]}}  # fmt: skip
    collector = PrometheusCollector(
        "http://prom:9090/", sent.append, queries=queries,
        transport=_prometheus({"a": VECTOR, "b": pods}, calls),
    )  # fmt: skip
    body = collector.poll_once(at=T)
    assert sent == [body]
    assert body == {
        "time": T,
        "deltas": [
            {"op": "metrics", "node": "cloud-000", "time": T,
             "values": {"cpu_util": 0.25, "pods_running": 2.0}},
            {"op": "metrics", "node": "cloud-001", "time": T, "values": {"cpu_util": 0.0}},
        ],
    }  # fmt: skip
    assert [c.url.path for c in calls] == ["/api/v1/query"] * 2
    assert {c.url.params["time"] for c in calls} == {f"{T:.3f}"}


def test_busy_prometheus_is_retried_then_answers() -> None:
    calls: list[httpx.Request] = []
    collector = PrometheusCollector(
        "http://prom:9090", [].append, queries={"cpu_util": "a"}, backoff=0.0,
        transport=_prometheus({"a": [503, 503, VECTOR]}, calls),
    )  # fmt: skip
    assert len(collector.poll_once()["deltas"]) == 2 and len(calls) == 3


def test_bad_query_is_not_retried_and_names_the_url() -> None:
    calls: list[httpx.Request] = []
    collector = PrometheusCollector(
        "http://prom:9090", [].append, queries={"cpu_util": "sum("}, backoff=0.0,
        transport=_prometheus({"sum(": BAD_QUERY}, calls),
    )  # fmt: skip
    with pytest.raises(PrometheusError, match=r"http://prom:9090: query for 'cpu_util' failed"):
        collector.poll_once()
    assert len(calls) == 1


def test_a_server_that_is_not_prometheus() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, text="404 page not found")

    collector = PrometheusCollector(
        "http://web:80", [].append, transport=httpx.MockTransport(handle)
    )
    with pytest.raises(PrometheusError, match=r"HTTP 404, not JSON.*is this a Prometheus server"):
        collector.poll_once()


def _closed_port() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_prometheus_down_is_a_clear_error_after_bounded_retries() -> None:
    url = _closed_port()
    collector = PrometheusCollector(url, [].append, retries=2, backoff=0.0, timeout=2)
    with pytest.raises(PrometheusError, match=f"cannot query Prometheus at {url} .*2 attempts"):
        collector.poll_once()


def test_run_polls_until_stopped_and_gives_up_after_failed_polls() -> None:
    calls: list[httpx.Request] = []
    sent: list[dict[str, Any]] = []
    stop = threading.Event()

    def sink(body: dict[str, Any]) -> None:
        sent.append(body)
        if len(sent) == 3:
            stop.set()

    answers = {"a": [VECTOR, VECTOR, VECTOR]}
    collector = PrometheusCollector(
        "http://prom:9090", sink, queries={"cpu_util": "a"}, interval=0.01,
        transport=_prometheus(answers, calls),
    )  # fmt: skip
    assert collector.run(stop) == 3 and len(sent) == 3
    failing = PrometheusCollector(
        "http://prom:9090", sink, queries={"cpu_util": "a"}, interval=0.01, retries=1,
        max_failed_polls=2, transport=_prometheus({"a": [500, 500]}, calls),
    )  # fmt: skip
    with pytest.raises(PrometheusError, match="HTTP 500, 1 attempts"):
        failing.run(threading.Event())


def test_default_queries_cover_the_twin_utilisations() -> None:
    assert {"cpu_util", "memory_util", "gpu_util"} <= set(DEFAULT_QUERIES)
    assert all("twinsched_node_" in q for q in DEFAULT_QUERIES.values())


def test_http_sink_patches_the_state_with_the_token() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"applied": 1, "samples": 1, "version": 2, "time": 1.0})

    body = to_patch([Sample("n1", "cpu_util", 1.0, 0.5)], 1.0)
    HttpTwinSink(
        "http://twin:8000/", "s3cret-token-0123456", transport=httpx.MockTransport(handle)
    )(body)
    (request,) = seen
    assert request.method == "PATCH" and str(request.url) == "http://twin:8000/api/v1/state"
    assert request.headers["authorization"] == "Bearer s3cret-token-0123456"
    import json

    assert json.loads(request.content) == body


def test_http_sink_errors_name_the_twin() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"detail": "missing or wrong bearer token"})

    sink = HttpTwinSink("http://twin:8000", "x", transport=httpx.MockTransport(refuse))
    with pytest.raises(TwinSinkError, match=r"twin at http://twin:8000 refused.*HTTP 401.*bearer"):
        sink({"time": 0.0, "deltas": []})
    url = _closed_port()
    with pytest.raises(TwinSinkError, match=f"cannot reach the twin at {url}"):
        HttpTwinSink(url, "x", timeout=2)({"time": 0.0, "deltas": []})


def test_cli_collect_reports_prometheus_down_without_a_traceback() -> None:
    url = _closed_port()
    result = CliRunner().invoke(
        app, ["collect", "--prometheus", url, "--twin", _closed_port(), "--once"]
    )
    assert result.exit_code == 2
    assert f"cannot query Prometheus at {url}" in result.output
    assert "Traceback" not in result.output


def test_cli_collect_rejects_a_malformed_query() -> None:
    result = CliRunner().invoke(app, ["collect", "--query", "cpu_util", "--once"])
    assert result.exit_code == 2 and "NAME=PROMQL" in result.output
