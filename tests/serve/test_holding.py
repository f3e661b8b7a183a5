"""Node updates never drop running pods' bindings (issue 31, class 1).

A pod runs where it was bound whatever the next node list says: tainted ``NoSchedule``,
shrunk, or missing for a while. New binds see its resources as used; an over-commit that a
shrink imposes is reported and never made worse; a node that disappears keeps its pods and
gets them back when it returns. Every cluster here checks its invariants after each change
(``validate=True``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.serve.test_protocol import AUTH, TOKEN, node, pod
from tests.twin.conftest import SyncASGI
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import Names
from twinsched.serve.journal import Journal

GPU = "nvidia.com/gpu"


def service(journal: Path | None = None) -> tuple[ServiceCluster, SyncASGI]:
    cluster = ServiceCluster("fgd", capacity=8, validate=True,
                             journal=Journal(journal) if journal else None)  # fmt: skip
    return cluster, SyncASGI(create_app(cluster, Names(), TOKEN))


def tainted(n: dict[str, Any]) -> dict[str, Any]:
    return {**n, "spec": {"taints": [{"key": "maint", "value": "x", "effect": "NoSchedule"}]}}


def post_nodes(client: SyncASGI, items: list[dict[str, Any]]) -> dict[str, Any]:
    answer = client.post("/nodes", json={"items": items}, headers=AUTH)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def bind(client: SyncASGI, name: str, node_name: str, gpus: str = "1") -> str:
    """Filter the pod (so the service knows it), then bind it to ``node_name``."""
    p = pod(name, cpu="100m", **{GPU: gpus})
    client.post("/filter", json={"Pod": p, "NodeNames": [node_name]})
    body = {"PodName": name, "PodNamespace": "ns", "PodUID": f"u-{name}", "Node": node_name}
    error: str = client.post("/bind", json=body, headers=AUTH).json()["Error"]
    return error


def used_gpus(cluster: ServiceCluster) -> dict[str, int]:
    out: dict[str, int] = {}
    for node_name, gpus in cluster.bindings().values():
        out[node_name] = out.get(node_name, 0) + len(gpus)
    return out


def test_a_taint_and_back_does_not_double_book() -> None:
    """The issue's example: 8 pods on two 4-GPU nodes, the nodes re-posted with a
    NoSchedule taint and then without: 8 more binds must be refused (before: accepted)."""
    cluster, client = service()
    nodes = [node("a", 4), node("b", 4)]
    post_nodes(client, nodes)
    assert all(not bind(client, f"p{k}", "ab"[k % 2]) for k in range(8))
    post_nodes(client, [tainted(n) for n in nodes])
    assert len(cluster.bindings()) == 8  # still running where they run
    post_nodes(client, nodes)
    refused = [bind(client, f"q{k}", "ab"[k % 2]) for k in range(8)]
    assert all("cannot go there" in e for e in refused), refused
    assert used_gpus(cluster) == {"a": 4, "b": 4}
    client.close()


def test_a_shrink_is_reported_never_made_worse_and_heals() -> None:
    cluster, client = service()
    post_nodes(client, [node("a", 4)])
    assert all(not bind(client, f"p{k}", "a") for k in range(4))
    answer = post_nodes(client, [node("a", 2)])
    assert "GPUs 4 > 2" in answer["overcommitted"]["a"], answer
    assert len(cluster.bindings()) == 4
    assert "cannot go there" in bind(client, "late", "a")  # no new pod on it
    for k in range(3):  # 4 -> 1 pods: fits the 2 GPUs again once the high GPUs are free
        client.request("DELETE", "/pods/ns/x", params={"uid": f"u-p{3 - k}"}, headers=AUTH)
    assert "a" not in cluster.overcommitted
    assert not bind(client, "new", "a")
    assert "cannot go there" in bind(client, "newer", "a")
    assert used_gpus(cluster) == {"a": 2}
    client.close()


def test_a_missing_node_keeps_its_pods_and_gets_them_back(tmp_path: Path) -> None:
    """A node left out of an update holds its running pods (reported missing, no new pod)
    across a restart from the journal; when it returns they are on it again."""
    path = tmp_path / "state.jsonl"
    cluster, client = service(path)
    post_nodes(client, [node("a", 4), node("b", 4)])
    assert all(not bind(client, f"p{k}", "a") for k in range(3))
    answer = post_nodes(client, [node("b", 4)])
    assert "3 running pods held" in answer["missing"]["a"]
    assert "cannot go there" in bind(client, "late", "a")
    before = cluster.bindings()
    client.close()
    assert cluster.journal is not None
    cluster.journal.close()

    again, client = service(path)
    assert again.bindings() == before and "a" in again.missing
    post_nodes(client, [node("a", 4), node("b", 4)])  # it returns
    assert not again.missing and again.bindings() == before
    assert not bind(client, "fits", "a")
    assert "cannot go there" in bind(client, "beyond", "a")
    assert used_gpus(again) == {"a": 4}
    client.close()


def test_duplicate_node_names_are_refused_naming_the_name() -> None:
    cluster, client = service()
    answer = client.post("/nodes", json={"items": [node("a", 4), node("a", 8)]}, headers=AUTH)
    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("items[1].metadata.name: duplicate node name 'a'")
    assert not cluster.ready
    client.close()
