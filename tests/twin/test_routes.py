"""The HTTP routes in process: state, deltas, views, errors, limits, auth."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.twin.conftest import AUTH, SyncASGI, tiny_document

API = "/api/v1"


def _patch(client: SyncASGI, body: dict[str, Any], headers: dict[str, str] = AUTH) -> Any:
    return client.patch(f"{API}/state", json=body, headers=headers)


def test_get_state_is_the_document(client: SyncASGI) -> None:
    answer = client.get(f"{API}/state")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == json.loads(tiny_document().model_dump_json())
    assert answer.headers["etag"] == '"v1"'
    again = client.get(f"{API}/state", headers={"If-None-Match": '"v1"'})
    assert (again.status_code, again.content) == (304, b"")
    packed = client.get(f"{API}/state", headers={"Accept-Encoding": "gzip"})
    assert packed.headers["content-encoding"] == "gzip"
    assert packed.content == answer.content  # httpx decompresses


def test_patch_applies_every_kind_of_delta(client: SyncASGI) -> None:
    new_pod = {"id": "p3", "requests": {"cpu_milli": 1, "memory_mib": 1, "gpu_count": 1,
               "gpu_milli": 500}, "timestamps": {"arrival_s": 3.0}}  # fmt: skip
    body = {
        "time": 12.0,
        "deltas": [
            {"op": "metrics", "node": "n1", "values": {"cpu_util": 0.5, "gpu_util": 0.25}},
            {"op": "metrics", "node": "n1", "time": 11.0, "values": {"cpu_util": 0.4}},
            {"op": "pod", "pod": "p1", "phase": "Running", "node": "n1", "start_s": 10.0},
            {"op": "pod_add", "job": "j2", "pod": new_pod},
            {"op": "pod", "pod": "p3", "phase": "Running", "node": "g1", "gpus": [1]},
            {"op": "node", "node": "n2", "status": "NotReady"},
        ],
    }
    answer = _patch(client, body)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"applied": 6, "samples": 3, "version": 2, "time": 12.0, "session": 1}
    state = client.get(f"{API}/state").json()
    assert state["timestamp"] == 12.0
    edge = state["nodepools"][0]["nodes"]
    assert edge[0]["metrics"] == {"cpu_util": 0.4, "gpu_util": 0.25}  # latest in batch order
    assert edge[1]["status"] == "NotReady"
    p1 = state["jobs"][0]["pods"][0]
    assert (p1["phase"], p1["node"], p1["timestamps"]["start_s"]) == ("Running", "n1", 10.0)
    assert state["jobs"][1]["id"] == "j2"
    assert state["jobs"][1]["pods"][0] | {"requests": None} == {
        **new_pod, "requests": None, "phase": "Running", "node": "g1", "gpus": [1],
        "policies": {"required": [], "rejected": [], "preferred": [], "retracted": []},
        "priority": 0, "data_pool": None, "max_latency_ms": None, "scheduler": None,
        "fallback": False,
        "timestamps": {"arrival_s": 3.0, "start_s": None, "duration_s": None},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("delta", "path", "words"),
    [
        ({"op": "metrics", "node": "nx", "values": {"a": 1}}, "deltas[1].node", "unknown node"),
        ({"op": "pod", "pod": "px", "phase": "Pending"}, "deltas[1].pod", "unknown pod"),
        ({"op": "pod", "pod": "p1", "phase": "Running"}, "deltas[1].node", "required"),
        ({"op": "pod", "pod": "p1", "phase": "Running", "node": "n9"}, "deltas[1].node", "unknown"),
        ({"op": "pod", "pod": "p1", "phase": "Pending", "node": "n1"}, "deltas[1].node", "null"),
        ({"op": "node", "node": "n1", "status": "Gone"}, "deltas[1].status", "Input should be"),
        ({"op": "metrics", "node": "n1", "values": {"a": "x"}}, "deltas[1].values.a", "number"),
        ({"op": "jump"}, "deltas[1]", "tag 'jump'"),
        ({"op": "pod_add", "job": "j1", "pod": {"id": "p2"}}, "deltas[1].pod.requests", "required"),
    ],
)
def test_a_bad_delta_rejects_the_whole_batch(
    client: SyncASGI, delta: dict[str, Any], path: str, words: str
) -> None:
    before = client.get(f"{API}/state").content
    good = {"op": "metrics", "node": "n1", "values": {"cpu_util": 0.9}}
    answer = _patch(client, {"time": 1.0, "deltas": [good, delta]})
    assert answer.status_code == 422
    error = answer.json()
    assert error["errors"][0]["path"] == path, error
    assert words in error["detail"], error
    assert error["detail"].startswith(path)
    assert client.get(f"{API}/state").content == before
    assert client.get(f"{API}/history", params={"metric": "cpu_util"}).json()["series"] == []


def test_pod_gpu_binding_is_checked_against_the_node(client: SyncASGI) -> None:
    delta = {"op": "pod", "pod": "p1", "phase": "Running", "node": "n1", "gpus": [0]}
    answer = _patch(client, {"time": 1.0, "deltas": [delta]})
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["path"] == "deltas[0].gpus"


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda d: d["nodepools"][1]["nodes"][0]["hardware"].pop("gpu_model"),
         "nodepools[1].nodes[0].hardware.gpu_model"),
        (lambda d: d["nodepools"][0]["nodes"][1].update(status="Broken"),
         "nodepools[0].nodes[1].status"),
        (lambda d: d["jobs"][0]["pods"][1].update(node="nope", phase="Running"),
         "jobs[0].pods[1].node"),
        (lambda d: d["networks"][0].update(latency_ms=-1), "networks[0].latency_ms"),
        (lambda d: d.update(extra=1), "extra"),
    ],
)  # fmt: skip
def test_put_names_the_bad_field(client: SyncASGI, edit: Any, path: str) -> None:
    data = json.loads(tiny_document().model_dump_json())
    edit(data)
    answer = client.put(f"{API}/state", json=data, headers=AUTH)
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["path"] == path
    assert answer.json()["detail"].startswith(path)


@pytest.mark.parametrize("body", [b"{", b"[]", b"\xff\xfe", b"null"])
def test_put_and_patch_reject_bodies_that_are_not_objects(client: SyncASGI, body: bytes) -> None:
    for method in ("PUT", "PATCH"):
        answer = client.request(method, f"{API}/state", content=body, headers=AUTH)
        assert answer.status_code == 422, (method, body, answer.text)
        assert answer.json()["detail"]


def test_put_replaces_and_bumps_the_version(client: SyncASGI) -> None:
    doc = tiny_document().model_copy(update={"timestamp": 50.0, "jobs": []})
    answer = client.put(f"{API}/state", content=doc.model_dump_json(), headers=AUTH)
    assert answer.json() == {"version": 2, "time": 50.0, "session": 2}  # a PUT: a new session
    assert client.get(f"{API}/jobs").json() == []


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": "Basic abc"}],
)
def test_writes_need_the_bearer_token(client: SyncASGI, headers: dict[str, str]) -> None:
    body = {"time": 1.0, "deltas": []}
    for answer in (
        client.patch(f"{API}/state", json=body, headers=headers),
        client.put(f"{API}/state", content=tiny_document().model_dump_json(), headers=headers),
        client.post(f"{API}/admin/compact", headers=headers),
    ):
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == "Bearer"
        assert "bearer token" in answer.json()["detail"]
    assert client.get(f"{API}/state").json()["timestamp"] == 0.0  # reads stay open


def test_body_size_limit_gives_413(client: SyncASGI) -> None:
    big = {"time": 1.0, "deltas": [{"op": "node", "node": "n1", "status": "Ready"}] * 2000}
    answer = _patch(client, big)
    assert answer.status_code == 413
    assert "larger than 65536 bytes" in answer.json()["detail"]

    async def chunks() -> Any:  # no content-length: counted while streaming
        for _ in range(100):
            yield b" " * 1000

    answer = client.patch(f"{API}/state", content=chunks(), headers=AUTH)
    assert answer.status_code == 413


def test_views_and_filters(client: SyncASGI) -> None:
    _patch(client, {"time": 1.0, "deltas": [
        {"op": "pod", "pod": "p2", "phase": "Running", "node": "n2"},
        {"op": "node", "node": "n1", "status": "NotReady"}]})  # fmt: skip
    assert [p["id"] for p in client.get(f"{API}/nodepools").json()] == ["edge", "cloud"]
    nodes = client.get(f"{API}/nodes", params={"status": "NotReady"}).json()
    assert [(n["id"], n["nodepool"]) for n in nodes] == [("n1", "edge")]
    assert len(client.get(f"{API}/nodes", params={"nodepool": "cloud"}).json()) == 1
    assert client.get(f"{API}/links").json()[0]["latency_ms"] == 20
    assert client.get(f"{API}/jobs").json() == [
        {"id": "j1", "profile": None, "pods": 2, "phases": {"Pending": 1, "Running": 1}}
    ]
    pending = client.get(f"{API}/pods", params={"phase": "Pending"}).json()
    assert [(p["id"], p["job"]) for p in pending] == [("p1", "j1")]
    assert [p["id"] for p in client.get(f"{API}/pods", params={"node": "n2"}).json()] == ["p2"]
    answer = client.get(f"{API}/pods", params={"phase": "Sleeping"})
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["path"] == "query.phase"


def test_state_at_a_past_time(client: SyncASGI) -> None:
    for t, value in ((10.0, 0.1), (20.0, 0.2), (30.0, 0.3)):
        body = {"time": t, "deltas": [{"op": "metrics", "node": "n1", "values": {"u": value}}]}
        assert _patch(client, body).status_code == 200

    def u_at(at: float) -> Any:
        doc = client.get(f"{API}/state", params={"at": at}).json()
        return doc["timestamp"], doc["nodepools"][0]["nodes"][0]["metrics"].get("u")

    assert u_at(5.0) == (0.0, None)
    assert u_at(10.0) == (10.0, 0.1)
    assert u_at(25.0) == (20.0, 0.2)
    assert u_at(1000.0) == (30.0, 0.3)
    client.put(f"{API}/state", content=tiny_document().model_dump_json(), headers=AUTH)
    answer = client.get(f"{API}/state", params={"at": -1})
    assert answer.status_code == 422


def test_metrics_health_and_openapi(client: SyncASGI) -> None:
    _patch(client, {"time": 3.0, "deltas": [{"op": "metrics", "node": "g1", "values": {"x": 2}}]})
    text = client.get("/metrics").text
    assert 'twinsched_twin_node_metric{metric="x",node="g1"} 2.0' in text
    assert 'twinsched_twin_nodes{nodepool="edge",status="Ready"} 2.0' in text
    assert 'twinsched_twin_pods{phase="Pending"} 2.0' in text
    assert "twinsched_twin_state_version 2.0" in text
    assert "twinsched_twin_history_samples_total 1.0" in text
    assert (
        'twinsched_twin_http_requests_total{method="PATCH",route="/api/v1/state",status="200"}'
        in text
    )
    assert client.get(f"{API}/metrics").status_code == 200
    assert client.get(f"{API}/healthz").json() == {"status": "ok", "version": 2}
    assert client.get("/readyz").json() == {"status": "ready", "version": 2}
    spec = client.get("/openapi.json").json()
    patch = spec["paths"]["/api/v1/state"]["patch"]
    assert set(patch["responses"]) >= {"200", "401", "413", "422"}
    assert spec["components"]["schemas"]["StatePatch"]["examples"]
    assert "TwinDocument" in spec["components"]["schemas"]
    assert patch["security"] == [{"HTTPBearer": []}]
