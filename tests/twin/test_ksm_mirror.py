"""Bad input to the live mirror, to a real twin process (``twin serve --mirror``).

Hostile series go the whole way: two small HTTP servers (two "kube-state-metrics replicas")
expose them in the exposition format, Debian's Prometheus scrapes both, the twin mirrors
through PromQL. Missing labels, NaN and negative quantities, unknown resources and phases,
duplicate and conflicting pods, a running pod without a node, a node beyond the twin's
ranges: each counted on ``/metrics`` (``twinsched_twin_mirror_rejected_total{reason}``),
logged once with the series, never stored, and the mirror goes on (a pod that vanishes is
released, a new one mirrored). Then a server speaking Prometheus' query API answers HTTP
500, a query error, no JSON, a dropped connection and nothing within the timeout: each
failed poll is counted by kind, the twin answers no 5xx, and the mirror goes on; every query
carries the bearer token of ``TWINSCHED_TWIN_MIRROR_TOKEN``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from tests.twin.conftest import TOKEN
from tests.twin.process import running_twin
from tests.twin.test_prometheus_chain import prometheus

GIB = 2**30
Series = tuple[str, dict[str, str], str]  # name, labels, value as exposed
# The twin is polled every 0.2 s: through one client (a new one costs tens of ms of CPU)
HTTP = httpx.Client(timeout=10)


@pytest.fixture(scope="module", autouse=True)
def _close_http() -> Iterator[None]:
    yield
    HTTP.close()


def node_series(name: str, cpu: str = "8") -> list[Series]:
    return [
        ("kube_node_info", {"node": name}, "1"),
        ("kube_node_labels", {"node": name}, "1"),
        ("kube_node_status_allocatable", {"node": name, "resource": "cpu", "unit": "core"}, cpu),
        ("kube_node_status_allocatable",
         {"node": name, "resource": "memory", "unit": "byte"}, str(16 * GIB)),
        ("kube_node_status_condition", {"node": name, "condition": "Ready", "status": "true"},
         "1"),
        ("kube_node_spec_unschedulable", {"node": name}, "0"),
    ]  # fmt: skip


def pod_series(name: str, phase: str = "Pending", node: str = "", uid: str = "") -> list[Series]:
    key = {"namespace": "default", "pod": name, "uid": uid or f"u-{name}"}
    req = "kube_pod_container_resource_requests"
    return [
        ("kube_pod_info", {**key, "node": node}, "1"),
        ("kube_pod_status_phase", {**key, "phase": phase}, "1"),
        ("kube_pod_status_phase", {**key, "phase": "Failed"}, "0"),
        (req, {**key, "container": "c", "resource": "cpu", "unit": "core"}, "0.5"),
        (req, {**key, "container": "c", "resource": "memory", "unit": "byte"}, str(GIB)),
        ("kube_pod_owner", {**key, "owner_kind": "Job", "owner_name": f"job-{name}"}, "1"),
        ("kube_pod_created", key, "1000"),
    ]


def good(pods: tuple[str, ...] = ("p1", "p2")) -> list[Series]:
    """Nodes n1 and n2; p1 Running on n1, the other pods Pending."""
    out = [*node_series("n1"), *node_series("n2")]
    for name in pods:
        out += pod_series(name, "Running", "n1") if name == "p1" else pod_series(name)
    return out


def hostile() -> list[Series]:
    """``good()`` plus one series (or object) of each kind of bad input."""
    req = "kube_pod_container_resource_requests"
    out = good(("p1", "p2", "p3", "p4", "p6", "p7"))
    out += [s for s in node_series("n3") if s[2] != "8"]
    out.append(("kube_node_status_allocatable",
                {"node": "n3", "resource": "cpu", "unit": "core"}, "NaN"))  # fmt: skip
    out.append(("kube_node_status_allocatable",
                {"node": "n1", "resource": "example_com_foo", "unit": "integer"}, "2"))  # fmt: skip
    out += node_series("n4", cpu="1e12")  # beyond the twin's range of CPU
    out.append(("kube_pod_info", {"namespace": "default", "uid": "x", "node": "n1"}, "1"))
    out.append((req, {"namespace": "default", "pod": "p3", "uid": "u-p3", "container": "c",
                      "resource": "nvidia_com_gpu", "unit": "integer"}, "-5"))  # fmt: skip
    out.append(("kube_pod_info", {"namespace": "default", "pod": "p4", "uid": "other"}, "1"))
    for pod, phase in (("p6", "Unknown"), ("p7", "Running")):  # p7: running on no node
        out = [s for s in out if not (s[1].get("pod") == pod and s[0] == "kube_pod_status_phase")]
        key = {"namespace": "default", "pod": pod, "uid": f"u-{pod}"}
        out.append(("kube_pod_status_phase", {**key, "phase": phase}, "1"))
    return out


def exposition(series: list[Series]) -> bytes:
    lines = []
    for name, labels, value in series:
        inside = ",".join(f'{k}="{v}"' for k, v in labels.items())
        lines.append(f"{name}{{{inside}}} {value}")
    return ("\n".join(lines) + "\n").encode()


@contextmanager
def http_server(answer: Callable[[str, bytes, Any], tuple[int, bytes]]) -> Iterator[str]:
    """A loopback HTTP server: ``answer(path, body, headers)`` gives each request's status
    and body."""

    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            status, body = answer(self.path, self.rfile.read(size), self.headers)
            if status == 0:  # drop the connection without an answer
                self.close_connection = True
                return
            try:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the mirror gave up waiting (the slow mode)

        do_GET = do_POST = _reply

        def log_message(self, *_: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def rejected(url: str) -> dict[str, float]:
    answer = HTTP.get(f"{url}/metrics")
    assert answer.status_code == 200
    out = {}
    for line in answer.text.splitlines():
        if line.startswith("twinsched_twin_mirror_rejected_total{"):
            reason = line.split('reason="', 1)[1].split('"', 1)[0]
            out[reason] = float(line.rsplit(" ", 1)[1])
    return out


def state(url: str) -> tuple[dict[str, tuple[str, str | None]], set[str]]:
    answer = HTTP.get(f"{url}/api/v1/state")
    assert answer.status_code == 200
    doc = answer.json()
    pods = {p["id"]: (p["phase"], p["node"]) for j in doc["jobs"] for p in j["pods"]}
    return pods, {n["id"] for p in doc["nodepools"] for n in p["nodes"]}


def wait_for(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"not within {within} s: {what}"
        time.sleep(0.2)


KINDS = ("missing_label", "bad_value", "unknown_resource", "duplicate", "conflict",
         "unknown_phase", "incomplete", "invalid")  # fmt: skip


def test_hostile_series_through_prometheus_are_counted_never_stored(tmp_path: Path) -> None:
    exposed = {"a": exposition(hostile()), "b": exposition(pod_series("p1", "Running", "n1")[:1])}
    replica_a = http_server(lambda *_: (200, exposed["a"]))
    replica_b = http_server(lambda *_: (200, exposed["b"]))
    with replica_a as a, replica_b as b:
        ports = [int(url.rsplit(":", 1)[1]) for url in (a, b)]
        with (
            prometheus(tmp_path, *ports) as prom,
            running_twin(tmp_path, TOKEN, "--mirror", prom, "--mirror-interval", "0.5") as twin,
        ):
            wait_for(lambda: all(rejected(twin.url).get(k, 0) >= 3 for k in KINDS),
                     "every kind counted, three polls")  # fmt: skip
            pods, nodes = state(twin.url)
            assert pods == {"p1": ("Running", "n1"), "p2": ("Pending", None)}
            assert nodes == {"n1", "n2"}  # n3 (NaN CPU) and n4 (out of range) never stored
            log = (tmp_path / "twin.log").read_text()
            nan = re.findall(r"bad_value in kube_node_status_allocatable: .*'node': 'n3'.* = "
                             r"'NaN'", log)  # fmt: skip
            assert len(nan) == 1, nan  # logged once with the series, though read every poll
            assert "'pod': 'p3'" in log and "= '-5'" in log

            exposed["a"] = exposition(good(("p2", "p5")))  # p1 vanishes, p5 arrives
            exposed["b"] = b""
            # until replica b's next scrape, its p1 (no phase) keeps p1 as seen, not gone
            wait_for(lambda: state(twin.url)[0].get("p1") == ("Succeeded", "n1"), "p1 released")
            pods, _ = state(twin.url)
            assert pods == {"p1": ("Succeeded", "n1"), "p2": ("Pending", None),
                            "p5": ("Pending", None)}  # fmt: skip


class QueryApi:
    """Prometheus' query API, crafted: ``mode`` is ``answers``, ``500``, ``error``,
    ``garbage`` (not JSON), ``drop`` (no answer) or ``slow`` (past the mirror's 5 s, once:
    then ``answers``)."""

    def __init__(self, series: list[Series]) -> None:
        self.series, self.mode = series, "answers"
        self.authorization: set[str] = set()

    def __call__(self, path: str, body: bytes, headers: Any) -> tuple[int, bytes]:
        self.authorization.add(headers.get("Authorization", ""))
        query = parse_qs(body.decode()).get("query", [""])[0]
        if self.mode == "500":
            return 500, b"internal error"
        if self.mode == "error":
            return 400, json.dumps({"status": "error", "errorType": "bad_data",
                                    "error": "parse error"}).encode()  # fmt: skip
        if self.mode == "garbage":
            return 200, b"<html>a proxy's login page</html>"
        if self.mode == "drop":
            return 0, b""
        if self.mode == "slow":  # once: the poll that follows the timeout is answered
            self.mode = "answers"
            time.sleep(6.0)
        families = set(re.findall(r'"twinsched_family", "(\w+)"', query))
        result = [{"metric": {**labels, "twinsched_family": name}, "value": [1.0, value]}
                  for name, labels, value in self.series if name in families]  # fmt: skip
        data = {"resultType": "vector", "result": result}
        return 200, json.dumps({"status": "success", "data": data}).encode()


def test_a_failing_prometheus_is_counted_by_kind_and_the_mirror_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWINSCHED_TWIN_MIRROR_TOKEN", "prometheus-proxy-token")
    api = QueryApi(good())
    with (
        http_server(api) as prom,
        running_twin(tmp_path, TOKEN, "--mirror", prom, "--mirror-interval", "0.3") as twin,
    ):
        wait_for(lambda: "p2" in state(twin.url)[0], "mirrored")
        kinds = {"500": "http", "error": "query", "garbage": "http", "drop": "unreachable",
                 "slow": "timeout"}  # fmt: skip
        for mode, kind in kinds.items():
            before = rejected(twin.url).get(f"prometheus_{kind}", 0)
            api.mode = mode
            wait_for(lambda b=before, k=kind: rejected(twin.url).get(f"prometheus_{k}", 0) > b,
                     mode)  # fmt: skip
            assert state(twin.url)[0] == {"p1": ("Running", "n1"), "p2": ("Pending", None)}
        api.series, api.mode = good(("p2", "p5")), "answers"
        wait_for(lambda: "p5" in state(twin.url)[0], "p5 mirrored after the errors")
        assert state(twin.url)[0]["p1"] == ("Succeeded", "n1")
        # the twin says so after the poll that mirrored p5: its line may follow a moment later
        wait_for(lambda: "worked again" in (tmp_path / "twin.log").read_text(), "worked again")
        log = (tmp_path / "twin.log").read_text()
        assert log.count("(prometheus_timeout)") == 1
    assert api.authorization == {"Bearer prometheus-proxy-token"}  # on every query
    assert "prometheus-proxy-token" not in log
