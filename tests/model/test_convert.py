"""Scenario <-> twin document: exact round trips, state export, links and labels on import."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from tests.model.test_document import node, tiny
from tests.strategies import scenarios
from twinsched.model.cluster import Scenario
from twinsched.model.convert import document_to_scenario, scenario_to_document
from twinsched.model.document import DocumentError
from twinsched.model.events import Arrive, Bind, NodeDown, Reject, Release
from twinsched.model.schema import validate_document
from twinsched.model.state import ClusterState
from twinsched.traces.synthetic import continuum


def differences(a: Scenario, b: Scenario, *, skip: tuple[str, ...] = ()) -> list[str]:
    """Names of the columns that differ in value or dtype."""
    out = []
    for part in ("nodes", "pods", "links"):
        x, y = getattr(a, part), getattr(b, part)
        for f in fields(x):
            u, v = getattr(x, f.name), getattr(y, f.name)
            if f.name in skip:
                continue
            if isinstance(u, np.ndarray):
                same = u.dtype == v.dtype and u.shape == v.shape and np.array_equal(u, v)
            else:
                same = u == v
            if not same:
                out.append(f"{part}.{f.name}")
    return out


def test_round_trip_of_a_synthetic_scenario_is_exact() -> None:
    sc = continuum(7)
    back = document_to_scenario(scenario_to_document(sc), sc.name)
    assert differences(sc, back) == []
    assert back.labels.names == sc.labels.names and back.name == sc.name


def test_round_trip_through_json_text_is_exact() -> None:
    sc = continuum(3, edge_nodes=5, cloud_nodes=7, hpc_nodes=3, pods=150)
    text = scenario_to_document(sc).model_dump_json()
    back = document_to_scenario(validate_document(json.loads(text)), sc.name)
    assert differences(sc, back) == []


def test_document_to_scenario_to_document_is_stable() -> None:
    doc = validate_document(tiny())
    sc = document_to_scenario(doc, "tiny")
    again = scenario_to_document(sc, timestamp=doc.timestamp)
    assert document_to_scenario(again, "tiny").meta == sc.meta
    assert differences(document_to_scenario(again, "tiny"), sc) == []
    assert again.jobs[0].profile == doc.jobs[0].profile


def test_import_merges_pool_labels_and_fills_links() -> None:
    sc = document_to_scenario(validate_document(tiny()), "tiny")
    assert sc.nodes.pool_names == ("edge", "cloud")
    assert sc.labels.decode(int(sc.nodes.labels[0])) == ["arch=amd64", "tier=edge"]
    assert sc.labels.decode(int(sc.nodes.labels[4])) == ["arch=amd64"]
    # edge -> cloud given, cloud -> edge mirrored, intra-pool defaults
    assert sc.links.latency_ms.tolist() == [[0.0, 30.0], [30.0, 0.0]]
    assert sc.links.bandwidth_mbps.tolist() == [[10_000.0, 100.0], [100.0, 10_000.0]]
    assert sc.nodes.power_idle_w[2] == 100.0 + 2 * 30.0  # the default model of the node table
    assert sc.pods.job.tolist() == [0, 1, 1] and sc.pods.job_names == ("infer", "web")
    assert sc.pods.gpu_milli.tolist() == [500, 0, 0]
    assert sc.meta["job_profiles"] == {"infer": tiny()["jobs"][0]["profile"]}


def test_pools_without_a_link_are_unreachable() -> None:
    data = tiny()
    data["networks"] = []
    sc = document_to_scenario(validate_document(data), "tiny")
    assert sc.links.latency_ms[0, 1] == np.inf and sc.links.bandwidth_mbps[0, 1] == 0.0
    networks = scenario_to_document(sc).networks
    assert [(x.source, x.target) for x in networks] == [("edge", "edge"), ("cloud", "cloud")]


def test_a_gpu_model_no_node_has_is_kept_and_matches_no_node() -> None:
    """A pod asking for a model no node has (here only that one) does not make the document
    unreadable: the model is named after the nodes' ones, and no node passes for the pod."""
    from twinsched.scheduling.filters import model_in_mask

    data = tiny()
    data["jobs"][0]["pods"][0]["requests"]["gpu_models"] = ["H100"]
    data["jobs"][1]["pods"][0]["requests"]["gpu_models"] = ["T4", "H100"]
    sc = document_to_scenario(validate_document(data), "tiny")
    assert sc.nodes.gpu_models == ("T4", "H100")  # the nodes' models keep their indices
    only_h100, t4_or_h100 = (int(m) for m in sc.pods.model_mask[:2])
    assert only_h100 == 0b10 and t4_or_h100 == 0b11  # never 0 ("any model")
    assert not model_in_mask(sc.nodes.gpu_model, only_h100).any()
    back = scenario_to_document(sc)
    assert back.jobs[0].pods[0].requests.gpu_models == ["H100"]  # written back as it came


def test_models_beyond_the_64_bit_set_are_named() -> None:
    from twinsched.model.cluster import MAX_GPU_MODELS

    data = tiny()
    extra = [node(f"x{k}", gpus=1, model=f"m{k:02}") for k in range(MAX_GPU_MODELS - 1)]
    data["nodepools"][1]["nodes"] += extra  # with T4: all 64 bits name node models
    data["jobs"][0]["pods"][0]["requests"]["gpu_models"] = ["H100"]
    with pytest.raises(DocumentError, match=r"^jobs\[0\]\.pods\[0\]\.requests\.gpu_models"):
        document_to_scenario(validate_document(data), "tiny")
    data["jobs"][0]["pods"][0]["requests"]["gpu_models"] = ["T4", "H100"]  # T4 says enough
    assert int(document_to_scenario(validate_document(data), "t").pods.model_mask[0]) == 1


def pod_where(sc: Scenario, **want: Any) -> int:
    match = np.ones(sc.pods.n, dtype=bool)
    for column, value in want.items():
        match &= getattr(sc.pods, column) == value
    return int(np.flatnonzero(match)[0])


def test_state_export_has_phases_bindings_and_free_gpus() -> None:
    sc = continuum(1, edge_nodes=4, cloud_nodes=6, hpc_nodes=2, pods=80)
    hpc = int(np.flatnonzero(sc.nodes.pool == 2)[0])
    share = pod_where(sc, gpu_count=1, gpu_milli=500)
    done = pod_where(sc, gpu_count=0, data_pool=-1)
    state = ClusterState(sc.nodes, sc.pods, sc.links, validate=True)
    for event in (Arrive(share), Bind(share, hpc, (2,)), Arrive(done), Bind(done, hpc)):
        state.apply(event)
    state.apply(Release(done))
    state.apply(Arrive(0) if share and done else Arrive(2))
    state.apply(NodeDown(0))
    rejected = int(np.flatnonzero(state.phase == 0)[0])
    state.apply(Reject(rejected, "test"))

    doc = scenario_to_document(sc, state, timestamp=60.0)
    pods = {p.id: p for job in doc.jobs for p in job.pods}
    node = doc.nodepools[2].nodes[0]
    assert node.id == sc.nodes.names[hpc]
    assert node.hardware.gpu_milli_free == [1000, 1000, 500] + [1000] * (
        node.hardware.gpu_count - 3
    )
    assert node.metrics["gpu_util"] == pytest.approx(500 / (1000 * node.hardware.gpu_count))
    assert 0 < node.metrics["cpu_util"] < 1
    running = pods[sc.pods.names[share]]
    assert (running.phase, running.node, running.gpus) == ("Running", node.id, [2])
    assert pods[sc.pods.names[done]].phase == "Succeeded"
    assert pods[sc.pods.names[rejected]].phase == "Unschedulable"
    assert pods[sc.pods.names[rejected]].node is None
    assert doc.nodepools[0].nodes[0].status == "NotReady" and doc.timestamp == 60.0
    validate_document(json.loads(doc.model_dump_json()))


def representable(sc: Scenario) -> Scenario:
    """Drop what the twin format cannot say: two values of one label key on a node, and
    GPU models that no node has."""
    keep = []
    for mask in sc.nodes.labels.tolist():
        seen: dict[str, int] = {}
        for label in sc.labels.decode(mask):
            seen.setdefault(label.split("=")[0], sc.labels.bit(label))
        keep.append(sum(1 << b for b in seen.values()))
    models = np.uint64((1 << len(sc.nodes.gpu_models)) - 1)
    nodes = replace(sc.nodes, labels=np.array(keep, dtype=np.uint64))
    return replace(sc, nodes=nodes, pods=replace(sc.pods, model_mask=sc.pods.model_mask & models))


@settings(max_examples=15, deadline=None)
@given(scenarios())
def test_round_trip_of_random_scenarios_keeps_every_column(drawn: Scenario) -> None:
    sc = representable(drawn)
    back = document_to_scenario(scenario_to_document(sc), sc.name)
    labels = (
        "labels",
        "required_labels",
        "rejected_labels",
        "preferred_labels",
        "retracted_labels",
    )
    assert differences(sc, back, skip=labels) == []
    for part, column in [("nodes", "labels")] + [("pods", c) for c in labels[1:]]:
        before, after = getattr(getattr(sc, part), column), getattr(getattr(back, part), column)
        for a, b in zip(before.tolist(), after.tolist(), strict=True):
            assert sorted(sc.labels.decode(a)) == sorted(back.labels.decode(b))
