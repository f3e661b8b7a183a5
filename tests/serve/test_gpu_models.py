"""GPU models as a 64-bit set (issue 31, class 4): never a wrong placement, never a 500.

A pod's allowed models are a ``uint64`` bitset over the node table's models, and bit 63 means
"none of the cluster's models". With 64 models the 64th shared that bit, so a pod asking for
a model no node has was placed on the 64th model's node; with more, ``1 << 64`` overflowed
the column (a 500). The service now holds at most 63 models (a 400 naming the bound), and a
pod asking only for models no node has passes no node, with a reason, and cannot be bound.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.serve.process import refused_start
from tests.serve.test_protocol import AUTH, TOKEN, node, pod
from tests.twin.conftest import SyncASGI
from twinsched.serve.app import create_app
from twinsched.serve.cluster import ServiceCluster
from twinsched.serve.convert import MAX_MODELS, Names

LABEL = Names().gpu_model_label


def model_nodes(models: int) -> list[dict[str, Any]]:
    """One 1-GPU node per model ``m00``, ``m01``, ..."""
    out = []
    for k in range(models):
        n = node(f"n{k:02d}", 1)
        n["metadata"]["labels"][LABEL] = f"m{k:02d}"
        out.append(n)
    return out


def gpu_pod(name: str, *models: str) -> dict[str, Any]:
    p = pod(name, **{"nvidia.com/gpu": "1"})
    if len(models) == 1:
        p["spec"]["nodeSelector"] = {LABEL: models[0]}
    else:
        term = {"matchExpressions": [{"key": LABEL, "operator": "In", "values": list(models)}]}
        required = {"nodeSelectorTerms": [term]}
        affinity = {"requiredDuringSchedulingIgnoredDuringExecution": required}
        p["spec"]["affinity"] = {"nodeAffinity": affinity}
    return p


def service(models: int, nodes_from_calls: bool = False) -> tuple[SyncASGI, list[str]]:
    cluster = ServiceCluster("fgd", capacity=8)
    client = SyncASGI(create_app(cluster, Names(), TOKEN, nodes_from_calls=nodes_from_calls))
    nodes = model_nodes(models)
    assert client.post("/nodes", json={"items": nodes}, headers=AUTH).status_code == 200
    return client, [n["metadata"]["name"] for n in nodes]


@pytest.mark.parametrize("models", [1, 2, 62, MAX_MODELS])
@pytest.mark.parametrize("asks", [("nowhere",), ("nowhere", "elsewhere")])
def test_a_pod_asking_for_a_model_no_node_has_is_never_placed(
    models: int, asks: tuple[str, ...]
) -> None:
    client, names = service(models)
    try:
        p = gpu_pod("lost", *asks)
        answer = client.post("/filter", json={"Pod": p, "NodeNames": names}).json()
        assert answer["NodeNames"] == [] and not answer["Error"]
        assert set(answer["FailedNodes"].values()) == {"GpuModelMismatch"}, answer
        assert client.post("/prioritize", json={"Pod": p, "NodeNames": names}).json() == []
        bind = {"PodName": "lost", "PodNamespace": "ns", "PodUID": "u-lost", "Node": names[-1]}
        assert client.post("/bind", json=bind, headers=AUTH).json()["Error"]
    finally:
        client.close()


def test_every_model_selects_its_own_node_only() -> None:
    client, names = service(MAX_MODELS)
    try:
        for k in range(MAX_MODELS):
            p = gpu_pod(f"p{k}", f"m{k:02d}")
            answer = client.post("/filter", json={"Pod": p, "NodeNames": names}).json()
            assert answer["NodeNames"] == [f"n{k:02d}"], (k, answer)
            chosen = client.post("/prioritize", json={"Pod": p, "NodeNames": names}).json()
            assert chosen == [{"Host": f"n{k:02d}", "Score": 10}]
        p = gpu_pod("two", "m00", "nowhere", f"m{MAX_MODELS - 1:02d}")
        answer = client.post("/filter", json={"Pod": p, "NodeNames": names}).json()
        assert answer["NodeNames"] == ["n00", f"n{MAX_MODELS - 1:02d}"]
    finally:
        client.close()


@pytest.mark.parametrize("models", [MAX_MODELS + 1, 66, 200])
def test_more_models_than_the_service_holds_are_a_400_and_change_nothing(models: int) -> None:
    client, names = service(MAX_MODELS, nodes_from_calls=True)
    try:
        too_many = model_nodes(models)
        answer = client.post("/nodes", json={"items": too_many}, headers=AUTH)
        assert answer.status_code == 400, answer.text
        assert f"{models} distinct GPU models" in answer.text and "at most 63" in answer.text
        extra = too_many[MAX_MODELS:]  # a filter call's Nodes, merged (--nodes-from-calls)
        answer = client.post("/filter", json={"Pod": gpu_pod("x", "nowhere"),
                                              "Nodes": {"items": extra}})  # fmt: skip
        assert answer.status_code == 400 and "at most 63" in answer.text, answer.text
        p = gpu_pod("p", f"m{MAX_MODELS - 1:02d}")  # the old table still serves
        answer = client.post("/filter", json={"Pod": p, "NodeNames": names}).json()
        assert answer["NodeNames"] == [f"n{MAX_MODELS - 1:02d}"]
    finally:
        client.close()


def test_serve_nodes_file_with_too_many_models_is_a_clear_error(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.json"
    nodes.write_text(f'{{"items": {model_nodes(64)}}}'.replace("'", '"'))
    said = refused_start("--nodes", str(nodes))
    assert "64 distinct GPU models" in said and "at most 63" in said, said
