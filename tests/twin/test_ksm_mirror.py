"""Bad input to the live mirror: a real HTTP server speaking Prometheus' query API answers
crafted series to ``twin serve --mirror`` (a real twin process).

Missing labels, NaN and negative quantities, unknown resources, duplicate and conflicting
pods, then HTTP 500, a query error and a timeout: each is counted on the twin's ``/metrics``
(``twinsched_twin_mirror_rejected_total{reason}``), logged with the series, never stored;
the twin answers no 5xx and the mirror goes on (a pod that vanishes is released, a new one
is mirrored after the errors).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx

from tests.twin.conftest import TOKEN
from tests.twin.ksm_answers import vector
from tests.twin.process import running_twin
from twinsched.twin.collectors.ksm import QUERIES

GIB = 2**30


def s(labels: dict[str, str], value: str | float) -> dict[str, Any]:
    return {"metric": labels, "value": [1.0, str(value)]}


def node(name: str) -> dict[str, str]:
    return {"node": name}


def pod(name: str, uid: str = "", **more: str) -> dict[str, str]:
    return {"namespace": "default", "pod": name, "uid": uid or f"u-{name}", **more}


def good(pods: tuple[str, ...] = ("p1", "p2")) -> dict[str, list[dict[str, Any]]]:
    """Two nodes, p1 Running on n1, the others Pending."""
    req = "kube_pod_container_resource_requests"
    out: dict[str, list[dict[str, Any]]] = {
        "kube_node_info": [s(node("n1"), 1), s(node("n2"), 1)],
        "kube_node_labels": [s(node("n1"), 1), s(node("n2"), 1)],
        "kube_node_status_allocatable": [
            s({**node(n), "resource": r, "unit": u}, v)
            for n in ("n1", "n2")
            for r, u, v in (("cpu", "core", 8), ("memory", "byte", 16 * GIB))
        ],
        "kube_node_status_condition": [
            s({**node(n), "condition": "Ready", "status": "true"}, 1) for n in ("n1", "n2")
        ],
        "kube_node_spec_unschedulable": [s(node("n1"), 0), s(node("n2"), 0)],
        "kube_pod_info": [],
        "kube_pod_status_phase": [],
        req: [],
        "kube_pod_owner": [],
        "kube_pod_created": [],
    }
    for name in pods:
        running = name == "p1"
        out["kube_pod_info"].append(s(pod(name, node="n1" if running else ""), 1))
        phase = "Running" if running else "Pending"
        out["kube_pod_status_phase"].append(s(pod(name, phase=phase), 1))
        for r, u, v in (("cpu", "core", 0.5), ("memory", "byte", GIB)):
            out[req].append(s(pod(name, container="c", resource=r, unit=u), v))
        out["kube_pod_created"].append(s(pod(name), 1.0))
    return out


def bad() -> dict[str, list[dict[str, Any]]]:
    """``good()`` plus one series of each kind of bad input."""
    out = good(("p1", "p2", "p3", "p4"))
    req = "kube_pod_container_resource_requests"
    out["kube_node_info"].append(s(node("n3"), 1))
    out["kube_node_status_allocatable"] += [
        s({**node("n3"), "resource": "cpu", "unit": "core"}, "NaN"),  # NaN: n3 never stored
        s({**node("n3"), "resource": "memory", "unit": "byte"}, GIB),
        s({**node("n1"), "resource": "example_com_foo", "unit": "integer"}, 2),  # unknown
    ]
    out["kube_pod_info"] += [
        s({"namespace": "default", "uid": "x", "node": "n1"}, 1),  # no pod label
        s(pod("p1", node="n1"), 1),  # duplicate of p1's series
        s(pod("p4", uid="other"), 1),  # p4 with two uids: conflict
    ]
    out[req].append(s(pod("p3", container="c", resource="memory", unit="byte"), -5))  # negative
    return out


class Crafted:
    """What the server answers now: ``mode`` is ``answers``, ``500``, ``error`` or ``slow``."""

    def __init__(self) -> None:
        self.answers = good()
        self.mode = "answers"
        self.queries = 0

    def reply(self, promql: str) -> tuple[int, bytes]:
        self.queries += 1
        if self.mode == "500":
            return 500, b"internal error"
        if self.mode == "error":
            body = {"status": "error", "errorType": "bad_data", "error": "parse error"}
            return 400, json.dumps(body).encode()
        if self.mode == "slow":
            time.sleep(6.0)  # past the mirror's 5 s timeout
        family = next((f for f, q in QUERIES.items() if q == promql), None)
        return 200, json.dumps(vector(self.answers.get(family, []) if family else [])).encode()


@contextmanager
def crafted_prometheus(crafted: Crafted) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            promql = parse_qs(urlparse(self.path).query).get("query", [""])[0]
            status, body = crafted.reply(promql)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

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
    text = httpx.get(f"{url}/metrics", timeout=10).text
    out = {}
    for line in text.splitlines():
        if line.startswith("twinsched_twin_mirror_rejected_total{"):
            reason = line.split('reason="', 1)[1].split('"', 1)[0]
            out[reason] = float(line.rsplit(" ", 1)[1])
    return out


def state(url: str) -> tuple[dict[str, tuple[str, str | None]], set[str]]:
    answer = httpx.get(f"{url}/api/v1/state", timeout=10)
    assert answer.status_code == 200
    doc = answer.json()
    pods = {p["id"]: (p["phase"], p["node"]) for j in doc["jobs"] for p in j["pods"]}
    return pods, {n["id"] for p in doc["nodepools"] for n in p["nodes"]}


def wait_for(check: Any, what: str, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"not within {within} s: {what}"
        time.sleep(0.2)


def test_bad_series_and_a_failing_prometheus_are_counted_never_stored(tmp_path: Path) -> None:
    crafted = Crafted()
    crafted.answers = bad()
    with (
        crafted_prometheus(crafted) as prom,
        running_twin(tmp_path, TOKEN, "--mirror", prom, "--mirror-interval", "0.5") as twin,
    ):
        wait_for(lambda: "conflict" in rejected(twin.url), "bad series counted")
        pods, nodes = state(twin.url)
        assert pods == {"p1": ("Running", "n1"), "p2": ("Pending", None)}  # p3, p4 never
        assert nodes == {"n1", "n2"}  # n3 (NaN CPU) never stored
        counts = rejected(twin.url)
        for reason in ("missing_label", "bad_value", "unknown_resource", "duplicate",
                       "conflict"):  # fmt: skip
            assert counts.get(reason, 0) >= 1, (reason, counts)
        log = (tmp_path / "twin.log").read_text()
        assert "bad_value" in log and "'value': [1.0, '-5']" in log  # logged with the series

        crafted.answers = good(("p2",))  # p1 vanishes: released
        wait_for(lambda: state(twin.url)[0]["p1"][0] == "Succeeded", "p1 released")
        for mode in ("500", "error", "slow"):
            before = rejected(twin.url).get("prometheus", 0)
            crafted.mode = mode
            wait_for(lambda b=before: rejected(twin.url).get("prometheus", 0) > b, mode)
            assert httpx.get(f"{twin.url}/api/v1/state", timeout=10).status_code == 200
        crafted.mode = "answers"
        crafted.answers = good(("p2", "p5"))  # the mirror goes on
        wait_for(lambda: "p5" in state(twin.url)[0], "p5 mirrored after the errors")
        pods, _ = state(twin.url)
        assert pods["p5"] == ("Pending", None) and pods["p1"][0] == "Succeeded"
