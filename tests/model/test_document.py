"""The twin JSON format: shipped schema in sync, valid documents accepted, bad ones named."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from twinsched.errors import TwinschedError
from twinsched.model.convert import scenario_to_document
from twinsched.model.document import DRAFT_07, DocumentError, TwinDocument
from twinsched.model.schema import (
    format_path,
    load_schema,
    shipped_schema_path,
    twin_json_schema,
    validate_document,
    write_schema,
)
from twinsched.traces.synthetic import continuum

Doc = dict[str, Any]


def node(name: str, cpu: int = 8000, gpus: int = 0, model: str | None = None) -> Doc:
    hardware: Doc = {"cpu_milli": cpu, "memory_mib": 16384, "gpu_count": gpus}
    if model:
        hardware["gpu_model"] = model
    return {"id": name, "labels": {"arch": "amd64"}, "hardware": hardware}


def pod(name: str, gpus: int = 0, milli: int = 0) -> Doc:
    requests = {"cpu_milli": 1000, "memory_mib": 1024, "gpu_count": gpus, "gpu_milli": milli}
    return {"id": name, "requests": requests, "timestamps": {"arrival_s": 0.0}}


def tiny() -> Doc:
    """Two pools, five nodes (one with two T4s), one link each way, two jobs."""
    return {
        "schema_version": "twinsched/twin-v1",
        "timestamp": 12.5,
        "nodepools": [
            {
                "id": "edge",
                "labels": {"tier": "edge"},
                "nodes": [node("e0"), node("e1"), node("e2", gpus=2, model="T4"), node("e3")],
            },
            {"id": "cloud", "nodes": [node("c0", cpu=32000)]},
        ],
        "networks": [
            {"source": "edge", "target": "cloud", "latency_ms": 30.0, "bandwidth_mbps": 100.0}
        ],
        "jobs": [
            {
                "id": "infer",
                "profile": {"name": "fast", "weights": [{"model_name": "fgd", "model_weight": 1}]},
                "pods": [pod("infer-0", gpus=1, milli=500)],
            },
            {"id": "web", "pods": [pod("web-0"), pod("web-1")]},
        ],
    }


def test_shipped_schema_is_the_generated_one() -> None:
    assert load_schema() == twin_json_schema(), "run: python -m twinsched.model.schema"
    text = shipped_schema_path().read_text(encoding="utf-8")
    assert text == json.dumps(twin_json_schema(), indent=2) + "\n"


def test_write_schema_writes_the_generated_schema(tmp_path: Path) -> None:
    path = write_schema(tmp_path / "twin.json")
    assert json.loads(path.read_text(encoding="utf-8")) == twin_json_schema()


def test_schema_is_draft_07() -> None:
    schema = load_schema()
    Draft7Validator.check_schema(schema)
    assert schema["$schema"] == DRAFT_07 and schema["$id"].endswith("twin-v1")
    text = json.dumps(schema)
    assert "$defs" not in text and "#/definitions/Pod" in text
    assert schema["definitions"]["Hardware"]["properties"]["cpu_milli"]["description"]


def test_converted_document_passes_the_schema_and_the_models() -> None:
    doc = scenario_to_document(continuum(seed=5, edge_nodes=4, cloud_nodes=6, hpc_nodes=2, pods=60))
    data = json.loads(doc.model_dump_json())
    Draft7Validator(load_schema()).validate(data)
    assert validate_document(data) == doc


def test_a_hand_written_document_gets_defaults() -> None:
    doc = validate_document(tiny())
    hardware = doc.nodepools[0].nodes[2].hardware
    assert hardware.gpu_milli_free == [1000, 1000]
    assert doc.jobs[1].pods[0].phase == "Pending" and doc.jobs[1].pods[0].policies.required == []
    Draft7Validator(load_schema()).validate(tiny())


def _set(path: str, value: Any) -> Callable[[Doc], None]:
    """A mutation: ``path`` in dotted form with numeric parts for list items."""

    def mutate(doc: Doc) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        target: Any = doc
        for part in parents:
            target = target[part]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value

    return mutate


BAD = [
    (
        "nodepools.0.nodes.3.hardware.cpu_milli",
        0,
        "nodepools[0].nodes[3].hardware.cpu_milli: must be > 0",
    ),
    (
        "nodepools.0.nodes.1.hardware.memory_mib",
        KeyError,
        "nodepools[0].nodes[1].hardware.memory_mib: is required",
    ),
    ("nodepools.0.nodes.0.colour", "red", "nodepools[0].nodes[0].colour: unknown field"),
    (
        "nodepools.0.nodes.2.hardware.gpu_milli_free",
        [1000],
        "nodepools[0].nodes[2].hardware.gpu_milli_free: has 1 entries, gpu_count is 2",
    ),
    (
        "nodepools.0.nodes.2.hardware.gpu_model",
        KeyError,
        "nodepools[0].nodes[2].hardware.gpu_model: required when gpu_count > 0",
    ),
    (
        "nodepools.0.nodes.0.hardware.power_peak_w",
        -1.0,
        "nodepools[0].nodes[0].hardware.power_peak_w: must be >= 0",
    ),
    (
        "nodepools.0.nodes.0.labels",
        {"a=b": "c"},
        "nodepools[0].nodes[0].labels: 'a=b' does not match",
    ),
    ("nodepools.1.nodes.0.id", "e1", "nodepools[1].nodes[0].id: duplicate node id 'e1'"),
    ("nodepools.1.id", "edge", "nodepools[1].id: duplicate nodepool id 'edge'"),
    ("networks.0.target", "moon", "networks[0].target: unknown nodepool 'moon'"),
    ("networks.0.bandwidth_mbps", 0, "networks[0].bandwidth_mbps: must be > 0"),
    (
        "jobs.0.pods.0.requests.gpu_milli",
        0,
        "jobs[0].pods[0].requests.gpu_milli: must be > 0 when gpu_count > 0",
    ),
    (
        "jobs.0.pods.0.requests.gpu_milli",
        1500,
        "jobs[0].pods[0].requests.gpu_milli: must be <= 1000",
    ),
    ("jobs.0.pods.0.phase", "Running", "jobs[0].pods[0].node: required when phase is Running"),
    ("jobs.0.pods.0.phase", "Lost", "jobs[0].pods[0].phase: must be one of"),
    ("jobs.0.pods.0.node", "e1", "jobs[0].pods[0].node: must be null when phase is Pending"),
    ("jobs.0.pods.0.data_pool", "moon", "jobs[0].pods[0].data_pool: unknown nodepool 'moon'"),
    (
        "jobs.0.pods.0.policies",
        {"required": ["gpu"]},
        "jobs[0].pods[0].policies.required[0]: 'gpu' does not match",
    ),
    (
        "jobs.0.profile.weights.0.model_weight",
        -2,
        "jobs[0].profile.weights[0].model_weight: must be >= 0",
    ),
    ("jobs.1.pods.1.id", "web-0", "jobs[1].pods[1].id: duplicate pod id 'web-0'"),
    (
        "jobs.1.pods.0.timestamps",
        {"arrival_s": 5.0, "start_s": 1.0},
        "jobs[1].pods[0].timestamps.start_s: must be >= arrival_s",
    ),
    ("schema_version", "twinsched/twin-v0", "schema_version: must be 'twinsched/twin-v1'"),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD, ids=[b[2].split(":")[0] for b in BAD])
def test_bad_documents_name_the_path(path: str, value: Any, message: str) -> None:
    doc = copy.deepcopy(tiny())
    _set(path, value)(doc)
    with pytest.raises(DocumentError) as caught:
        validate_document(doc)
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, TwinschedError)


def test_running_pod_on_missing_gpu_is_named() -> None:
    doc = tiny()
    doc["jobs"][0]["pods"][0].update(phase="Running", node="e2", gpus=[2])
    with pytest.raises(DocumentError, match=r"^jobs\[0\]\.pods\[0\]\.gpus: GPU index out of range"):
        validate_document(doc)
    doc["jobs"][0]["pods"][0].update(node="ghost", gpus=[0])
    with pytest.raises(DocumentError, match=r"^jobs\[0\]\.pods\[0\]\.node: unknown node 'ghost'"):
        validate_document(doc)


def test_every_problem_is_kept_first_one_in_the_message() -> None:
    doc = tiny()
    doc["nodepools"][0]["nodes"][1]["hardware"]["cpu_milli"] = -1
    doc["nodepools"][0]["nodes"][0]["hardware"]["cpu_milli"] = 0
    with pytest.raises(DocumentError) as caught:
        validate_document(doc)
    paths = [path for path, _ in caught.value.problems]
    assert paths[:2] == [
        "nodepools[0].nodes[0].hardware.cpu_milli",
        "nodepools[0].nodes[1].hardware.cpu_milli",
    ]
    assert str(caught.value).endswith("(and 1 more)")


def test_non_object_and_non_finite_input_is_rejected() -> None:
    with pytest.raises(DocumentError, match=r"^document: must be of type object"):
        validate_document([])  # type: ignore[arg-type]
    doc = tiny()
    doc["networks"][0]["latency_ms"] = float("inf")
    with pytest.raises(DocumentError, match=r"^networks\[0\]\.latency_ms"):
        validate_document(doc)


def test_format_path() -> None:
    assert format_path(("nodepools", 0, "nodes", 3, "id")) == "nodepools[0].nodes[3].id"
    assert format_path(()) == "document"
    assert format_path(("labels", "a=b", "[key]")) == 'labels["a=b"][key]'


def test_model_round_trips_through_json() -> None:
    doc = validate_document(tiny())
    assert TwinDocument.model_validate_json(doc.model_dump_json()) == doc


def test_the_id_pattern_refuses_exactly_the_unprintable_categories() -> None:
    import re
    import unicodedata

    from twinsched.model.document import ID_PATTERN

    pattern = re.compile(ID_PATTERN)
    unprintable = {"Cc", "Cf", "Zl", "Zp"}
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue  # surrogates are no characters of a JSON text
        char = chr(code)
        refused = unicodedata.category(char) in unprintable
        assert (pattern.fullmatch(f"a{char}b") is None) == refused, hex(code)
