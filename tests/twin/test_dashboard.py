"""The dashboard's frames from a document: node use, GPU shares, queue reasons (the decisions
beside them are the twin's own: tests/twin/test_decisions.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.twin.conftest import tiny_document
from twinsched.model.document import TwinDocument
from twinsched.model.schema import parse_document
from twinsched.twin.core.dashboard import SCHEDULABLE, frame


def _with(doc: TwinDocument, **pods: dict[str, Any]) -> TwinDocument:
    """``doc`` with pods of job j1 changed (phase, node, gpus, requests...)."""
    data = doc.model_dump()
    for pod in data["jobs"][0]["pods"]:
        pod.update(pods.get(pod["id"], {}))
    return parse_document(data)


def test_node_use_and_gpu_shares_come_from_running_pods() -> None:
    gpu = {"cpu_milli": 4000, "memory_mib": 4096, "gpu_count": 1, "gpu_milli": 250}
    doc = _with(tiny_document(), p1={"phase": "Running", "node": "g1", "gpus": [1],
                                     "requests": gpu})  # fmt: skip
    picture = frame(doc)
    nodes = picture["nodes"]
    assert nodes["id"] == ["n1", "n2", "g1"] and nodes["pool"] == [0, 0, 1]
    assert nodes["cpu"] == [0.0, 0.0, 0.5] and nodes["mem"] == [0.0, 0.0, 0.25]
    assert nodes["gpus"] == [[], [], [0, 250]] and nodes["gpu"] == [0.0, 0.0, 0.125]
    assert picture["phases"]["Running"] == 1 and picture["phases"]["Pending"] == 1
    assert picture["pods"] == 2
    assert picture["links"] == [["edge", "cloud", 20.0, 1000.0]]
    assert picture["pools"] == [{"id": "edge", "nodes": 2}, {"id": "cloud", "nodes": 1}]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({}, SCHEDULABLE),
        ({"requests": {"cpu_milli": 9000, "memory_mib": 1}}, "InsufficientCPU"),
        ({"requests": {"cpu_milli": 1, "memory_mib": 99999}}, "InsufficientMemory"),
        ({"requests": {"cpu_milli": 1, "memory_mib": 1, "gpu_count": 3, "gpu_milli": 1000}},
         "InsufficientGPU"),
        ({"policies": {"required": ["zone=mars"]}}, "NodeLabelsMismatch"),
    ],
)  # fmt: skip
def test_pending_pod_reason(change: dict[str, Any], reason: str) -> None:
    picture = frame(_with(tiny_document(), p2=change))
    queue = {p["id"]: p for p in picture["queue"]["pods"]}
    assert queue["p2"]["reason"] == reason


def test_down_nodes_and_queue_order() -> None:
    data = tiny_document().model_dump()
    for pool in data["nodepools"]:
        for node in pool["nodes"]:
            node["status"] = "NotReady"
    data["jobs"][0]["pods"][1]["priority"] = 5
    picture = frame(parse_document(data))
    assert picture["nodes"]["up"] == [0, 0, 0]
    assert [p["id"] for p in picture["queue"]["pods"]] == ["p2", "p1"]  # priority first
    assert {p["reason"] for p in picture["queue"]["pods"]} == {"NodeDown"}
    assert picture["queue"]["total"] == 2


def test_cordoned_nodes_take_no_new_pods_and_are_not_down() -> None:
    data = tiny_document().model_dump()
    for node in data["nodepools"][0]["nodes"]:
        node["unschedulable"] = True
    data["jobs"][0]["pods"][0].update(phase="Running", node="n1")  # keeps running there
    picture = frame(parse_document(data))
    assert picture["nodes"]["cordoned"] == [1, 1, 0] and picture["nodes"]["up"] == [1, 1, 1]
    assert picture["nodes"]["cpu"][0] > 0
    queue = {p["id"]: p for p in picture["queue"]["pods"]}
    assert queue["p2"]["reason"] == SCHEDULABLE  # g1 is neither down nor cordoned
    data["nodepools"][1]["nodes"][0]["unschedulable"] = True
    picture = frame(parse_document(data))
    assert picture["queue"]["pods"][0]["reason"] == "NodeDown"
