"""Protocol contract: JSON written in the Go shapes, as kube-scheduler sends it.

Keys in any capitalisation, optional fields left out, unknown fields added, empty node
lists, pods with no GPU; answers carry the Go names; a body the service cannot read gets a
400 naming the field, never a 5xx.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.twin.conftest import SyncASGI
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names

TOKEN = "serve-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def node(name: str, gpus: int = 0, **extra: Any) -> dict[str, Any]:
    alloc: dict[str, Any] = {"cpu": "8", "memory": "32Gi"}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    return {"metadata": {"name": name, "labels": {"zone": "a"}}, "status": {"allocatable": alloc},
            **extra}  # fmt: skip


NODES = [
    node("cpu-1"),
    node("gpu-1", 2),
    node("tainted", 4, spec={"taints": [{"key": "gpu", "value": "x", "effect": "NoSchedule"}]}),
    node("down", 4, status={"allocatable": {"cpu": "8", "memory": "32Gi",
                                            "nvidia.com/gpu": "4"},
                            "conditions": [{"type": "Ready", "status": "False"}]}),
]  # fmt: skip


def pod(name: str, **requests: str) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": requests}}
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}"},
            "spec": {"containers": [container]}}  # fmt: skip


@pytest.fixture
def client() -> Iterator[SyncASGI]:
    c = SyncASGI(create_app(ServiceCluster("fgd", capacity=4), Names(), TOKEN))
    yield c
    c.close()


@pytest.fixture
def ready(client: SyncASGI) -> SyncASGI:
    assert client.post("/nodes", json={"items": NODES}, headers=AUTH).status_code == 200
    return client


NAMES = [n["metadata"]["name"] for n in NODES]


@pytest.mark.parametrize("keys", [("Pod", "NodeNames"), ("pod", "nodenames"), ("POD", "nodeNames")])
def test_any_capitalisation_is_read_and_answers_use_go_names(
    ready: SyncASGI, keys: tuple[str, str]
) -> None:
    body = {keys[0]: pod("p", cpu="1", memory="1Gi"), keys[1]: NAMES, "Unknown": 1}
    answer = ready.post("/filter", json=body)
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert set(result) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes",
                           "Error"}  # fmt: skip
    assert result["NodeNames"] == ["cpu-1", "gpu-1"]  # no GPU asked: tainted and down fail
    assert result["FailedNodes"] == {"tainted": "NodeHasRejectedLabel", "down": "NodeDown"}


def test_gpu_pod_fails_on_cpu_nodes_with_a_reason(ready: SyncASGI) -> None:
    body = {"Pod": pod("g", cpu="1", **{"nvidia.com/gpu": "1"}), "NodeNames": NAMES}
    result = ready.post("/filter", json=body).json()
    assert result["NodeNames"] == ["gpu-1"]
    assert result["FailedNodes"]["cpu-1"] == "GpuModelMismatch"
    scores = ready.post("/prioritize", json={"Pod": body["Pod"], "NodeNames": ["gpu-1"]}).json()
    assert scores == [{"Host": "gpu-1", "Score": 10}]


def test_toleration_and_selector(ready: SyncASGI) -> None:
    p = pod("t", cpu="1")
    p["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    p["spec"]["nodeSelector"] = {"zone": "a"}
    result = ready.post("/filter", json={"Pod": p, "NodeNames": NAMES}).json()
    assert result["NodeNames"] == ["cpu-1", "gpu-1", "tainted"]
    p["spec"]["nodeSelector"] = {"zone": "b"}
    p["metadata"]["uid"] = "u-t2"
    result = ready.post("/filter", json={"Pod": p, "NodeNames": NAMES}).json()
    assert result["NodeNames"] == []


def test_full_node_objects_are_answered_as_sent(ready: SyncASGI) -> None:
    items = [{**n, "extraField": {"kept": True}} for n in NODES]
    body = {"pod": pod("f", cpu="500m"), "nodes": {"items": items}}
    result = ready.post("/filter", json=body).json()
    assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == ["cpu-1", "gpu-1"]
    assert result["Nodes"]["items"][0]["extraField"] == {"kept": True}
    assert result["NodeNames"] is None


def test_node_objects_of_filter_calls_change_no_state(ready: SyncASGI) -> None:
    """Anyone can call filter: its nodes are answered, never stored (found by the probe:
    a node inflated to 64 GPUs, every node marked NotReady, all journalled)."""
    cluster = ready_cluster(ready)
    assert cluster.table is not None
    before = list(cluster.table.rows)
    inflated = node("cpu-1", 64)
    inflated["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    down = [{**n, "status": {**n["status"], "conditions": [{"type": "Ready", "status": "False"}]}}
            for n in NODES[1:2]]  # fmt: skip
    gpu_pod = pod("g", cpu="1", **{"nvidia.com/gpu": "1"})
    items = [inflated, *down, node("stranger", 8)]
    for verb in ("filter", "prioritize"):
        assert ready.post(f"/{verb}", json={"Pod": gpu_pod, "Nodes": {"items": items}}).is_success
    assert cluster.table.rows == before
    result = ready.post("/filter", json={"Pod": gpu_pod, "NodeNames": NAMES}).json()
    assert result["NodeNames"] == ["gpu-1"]  # still 0 GPUs on cpu-1, gpu-1 still ready
    answer = ready.post("/filter", json={"Pod": gpu_pod, "Nodes": {"items": items}}).json()
    assert "unknown" in answer["FailedNodes"]["stranger"]


def test_empty_node_lists(ready: SyncASGI) -> None:
    for body in ({"Pod": pod("e"), "NodeNames": []}, {"Pod": pod("e"), "Nodes": {"items": []}},
                 {"Pod": pod("e")}):  # fmt: skip
        answer = ready.post("/filter", json=body)
        assert answer.status_code == 200 and not answer.json()["Error"], answer.text
        assert ready.post("/prioritize", json=body).json() == []


def test_minimal_pod_and_unknown_nodes(ready: SyncASGI) -> None:
    body = {"Pod": {"metadata": {"name": "bare"}}, "NodeNames": ["cpu-1", "nowhere"]}
    result = ready.post("/filter", json=body).json()
    assert result["NodeNames"] == ["cpu-1"]
    assert "unknown" in result["FailedNodes"]["nowhere"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"NodeNames": []}, "Pod"),
        ({"Pod": {"spec": {}}, "NodeNames": []}, "Pod.metadata"),
        ({"Pod": pod("b", cpu="lots"), "NodeNames": []},
         "Pod.spec.containers[0].resources.requests.cpu"),
        ({"Pod": pod("b", memory="-1Gi"), "NodeNames": []},
         "Pod.spec.containers[0].resources.requests.memory"),
        ({"Pod": pod("b", **{"twinsched.io/gpu-milli": "1500"}), "NodeNames": []},
         "Pod.spec.containers[].resources.requests[twinsched.io/gpu-milli]"),
        ({"Pod": pod("b", **{"nvidia.com/gpu": "0.5"}), "NodeNames": []},
         "Pod.spec.containers[].resources.requests[nvidia.com/gpu]"),
        ({"Pod": pod("b"), "NodeNames": "cpu-1"}, "NodeNames"),
        ({"Pod": pod("b"), "Nodes": {"items": [{"metadata": {"name": "x"},
          "status": {"allocatable": {"cpu": "1O"}}}]}}, "Nodes.items[0].status.allocatable.cpu"),
        ({"Pod": pod("b"), "Nodes": {"items": [{"status": {}}]}}, "Nodes.items[0].metadata"),
    ],
)  # fmt: skip
def test_bad_bodies_get_400_naming_the_field(
    ready: SyncASGI, body: dict[str, Any], field: str
) -> None:
    for verb in ("filter", "prioritize"):
        answer = ready.post(f"/{verb}", json=body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["detail"].startswith(field), answer.json()


def test_unsupported_affinity_is_a_400_naming_the_operator(ready: SyncASGI) -> None:
    p = pod("a")
    term = {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}
    required = {"nodeSelectorTerms": [term]}
    p["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
    }
    answer = ready.post("/filter", json={"Pod": p, "NodeNames": NAMES})
    assert answer.status_code == 400
    assert "nodeSelectorTerms[0].matchExpressions[0].operator" in answer.json()["detail"]


def test_not_json_is_a_400(ready: SyncASGI) -> None:
    headers = {"content-type": "application/json"}
    answer = ready.post("/filter", content=b"{nope", headers=headers)
    assert answer.status_code == 400


def test_bind_needs_the_token_and_checks_the_node(ready: SyncASGI) -> None:
    p = pod("b", cpu="6", **{"nvidia.com/gpu": "2"})
    ready.post("/filter", json={"Pod": p, "NodeNames": NAMES})
    bind = {"PodName": "b", "PodNamespace": "ns", "PodUID": "u-b", "Node": "gpu-1"}
    assert ready.post("/bind", json=bind).status_code == 401
    assert ready.post("/bind", json=bind, headers=AUTH).json() == {"Error": ""}
    assert ready.post("/bind", json=bind, headers=AUTH).json() == {"Error": ""}  # idempotent
    other = {**bind, "Node": "cpu-1"}
    assert "already bound" in ready.post("/bind", json=other, headers=AUTH).json()["Error"]
    p2 = pod("c", cpu="1", **{"nvidia.com/gpu": "1"})
    ready.post("/filter", json={"Pod": p2, "NodeNames": NAMES})
    full = {"PodName": "c", "PodNamespace": "ns", "PodUID": "u-c", "Node": "gpu-1"}
    assert "cannot go there" in ready.post("/bind", json=full, headers=AUTH).json()["Error"]
    unknown = {"PodName": "zz", "Node": "gpu-1"}
    assert "unknown pod" in ready.post("/bind", json=unknown, headers=AUTH).json()["Error"]


def test_pods_beyond_capacity_keep_their_bindings(ready: SyncASGI) -> None:
    bound = []
    for k in range(9):  # capacity 4: the table is rebuilt twice
        p = pod(f"m{k}", cpu="100m", **{"twinsched.io/gpu-milli": "200"})
        passing = ready.post("/filter", json={"Pod": p, "NodeNames": NAMES}).json()["NodeNames"]
        best = ready.post("/prioritize", json={"Pod": p, "NodeNames": passing}).json()
        bind = {"PodName": f"m{k}", "PodNamespace": "ns", "PodUID": f"u-m{k}",
                "Node": best[0]["Host"]}  # fmt: skip
        assert ready.post("/bind", json=bind, headers=AUTH).json() == {"Error": ""}
        bound.append(best[0]["Host"])
    cluster = ready_cluster(ready)
    assert {k: v[0] for k, v in cluster.bindings().items()} == {
        f"u-m{k}": n for k, n in enumerate(bound)
    }
    cluster.control.state.check_invariants()  # type: ignore[union-attr]


def ready_cluster(client: SyncASGI) -> ServiceCluster:
    app = client._client._transport.app  # type: ignore[attr-defined]
    cluster = app.state.cluster
    assert isinstance(cluster, ServiceCluster)
    return cluster


def test_probes_and_metrics(client: SyncASGI) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 503
    client.post("/nodes", json={"items": NODES}, headers=AUTH)
    assert client.get("/readyz").status_code == 200
    p = pod("x", cpu="1")
    client.post("/filter", json={"Pod": p, "NodeNames": NAMES})
    client.post("/prioritize", json={"Pod": p, "NodeNames": ["cpu-1"]})
    text = client.get("/metrics").text
    for family in ('twinsched_scheduler_calls_total{verb="filter"} 1.0',
                   'twinsched_scheduler_call_seconds_bucket{le="0.005",verb="prioritize"}',
                   'twinsched_scheduler_decisions_total{outcome="placed"} 1.0',
                   "twinsched_scheduler_fallbacks_total 0.0"):  # fmt: skip
        assert family in text, family


def test_pod_updates_place_and_release(ready: SyncASGI) -> None:
    """Pods bound by someone else take resources; ended or deleted pods give them back."""
    elsewhere = pod("other", cpu="1", **{"nvidia.com/gpu": "2"})
    elsewhere["spec"]["nodeName"] = "gpu-1"
    assert ready.post("/pods", json=elsewhere).status_code == 401
    assert ready.post("/pods", json=elsewhere, headers=AUTH).json() == {"error": ""}
    want = {"Pod": pod("next", cpu="1", **{"nvidia.com/gpu": "1"}), "NodeNames": NAMES}
    assert ready.post("/filter", json=want).json()["NodeNames"] == []  # gpu-1 is full now
    elsewhere["status"] = {"phase": "Succeeded"}
    assert ready.post("/pods", json=elsewhere, headers=AUTH).json() == {"error": ""}
    assert ready.post("/filter", json=want).json()["NodeNames"] == ["gpu-1"]
    again = pod("third", cpu="1", **{"nvidia.com/gpu": "2"})
    again["spec"]["nodeName"] = "gpu-1"
    ready.post("/pods", json=again, headers=AUTH)
    assert ready.post("/filter", json=want).json()["NodeNames"] == []
    gone = ready.request("DELETE", "/pods/ns/third", params={"uid": "u-third"}, headers=AUTH)
    assert gone.json() == {"released": True}
    assert ready.post("/filter", json=want).json()["NodeNames"] == ["gpu-1"]


def test_nodes_the_held_pods_cannot_use_are_refused_and_change_nothing(ready: SyncASGI) -> None:
    """Pods selecting 10 labels, then nodes with 60 taints: more than 64 labels for the new
    table. A 400, and the nodes, pods and bindings stay as they were (found by the fuzzer:
    the table was half rebuilt, the bindings lost)."""
    for k in range(10):
        p = pod(f"sel{k}", cpu="1")
        p["spec"]["nodeSelector"] = {f"k{k}": "v"}
        ready.post("/filter", json={"Pod": p, "NodeNames": NAMES})
    p = pod("runs", cpu="1", **{"nvidia.com/gpu": "1"})
    ready.post("/filter", json={"Pod": p, "NodeNames": NAMES})
    bind = {"PodName": "runs", "PodNamespace": "ns", "PodUID": "u-runs", "Node": "gpu-1"}
    assert ready.post("/bind", json=bind, headers=AUTH).json() == {"Error": ""}
    cluster = ready.app.state.cluster
    before = (cluster.bindings(), len(cluster.slot), cluster.table.index)
    taints = [{"key": f"t{k}", "value": "x", "effect": "NoSchedule"} for k in range(60)]
    answer = ready.post("/nodes", json={"items": [*NODES, node("many", spec={"taints": taints})]},
                        headers=AUTH)  # fmt: skip
    assert answer.status_code == 400, answer.text
    assert answer.json()["detail"].startswith("items: ") and "64" in answer.json()["detail"]
    assert (cluster.bindings(), len(cluster.slot), cluster.table.index) == before
    again = ready.post("/filter", json={"Pod": pod("next", cpu="1"), "NodeNames": NAMES})
    assert again.json()["NodeNames"] == ["cpu-1", "gpu-1"]
