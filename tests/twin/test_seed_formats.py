"""The DECICE deliverables' own documents (docs/seed-formats.md) read, report and round-trip.

The fixtures in ``tests/twin/seeds/`` are the documents of ``docs/seed-formats.md``: the D2.2
output document is the doc's JSON block verbatim; the training row is Table 3's example
column; the NodePool schema is the published schema (trailing comma included) with the
properties the doc lists, and the NodePool node carries Table 3's node values. The first
tests check that they still equal the doc, so they cannot drift.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from tests.twin.conftest import AUTH, SyncASGI, make_client
from twinsched.model.document import TwinDocument
from twinsched.traces.decice.d22_export import to_d22
from twinsched.traces.jsontext import TRAILING_COMMAS, parse_text
from twinsched.twin.api.schemas import D22Document
from twinsched.twin.core.settings import TwinSettings
from twinsched.twin.harmonize import HarmonizeResult, harmonize

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "seed-formats.md"
SHARED_DOC = ROOT.parent / "shared" / "docs" / "seed-formats.md"
SEEDS = Path(__file__).parent / "seeds"
FIXTURES = ("d22.json", "nodepool_node.json", "training.json")


def seed(name: str) -> str:
    return (SEEDS / name).read_text()


def table_example() -> dict[str, str]:
    """Table 3 of the doc: parameter -> example, as written."""
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| ([^|]+) \|$", DOC.read_text(), re.M)
    return {name: example.strip() for name, example in rows}


def as_written(value: Any) -> str:
    return str(value)


# -- the fixtures are the doc's documents -----------------------------------------------------


def test_repo_copy_of_the_doc_equals_the_shared_one() -> None:
    if not SHARED_DOC.exists():
        pytest.skip("no ../shared/docs/seed-formats.md next to this checkout")
    assert DOC.read_text() == SHARED_DOC.read_text()


def test_d22_fixture_is_the_docs_json_block() -> None:
    blocks = re.findall(r"```json\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1
    assert seed("d22.json") == blocks[0]


def test_training_fixture_is_table_3s_example() -> None:
    (row,) = json.loads(seed("training.json"))
    assert {key: as_written(value) for key, value in row.items()} == table_example()


def test_nodepool_schema_fixture_is_the_described_schema() -> None:
    text = seed("nodepool.schema.json")
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # the published trailing comma is kept
    schema, note = parse_text(text)
    assert note == TRAILING_COMMAS
    described = re.findall(r"`(\w+)` \((string|number)", DOC.read_text().split("## 2.")[1])
    assert schema["title"] == "Json Schema for NodePool"
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert schema["required"] == [name for name, _ in described]
    assert {k: v["type"] for k, v in schema["properties"].items()} == dict(described)


def test_nodepool_node_fixture_is_valid_and_carries_table_3s_node() -> None:
    schema, _ = parse_text(seed("nodepool.schema.json"))
    node = json.loads(seed("nodepool_node.json"))
    Draft7Validator(schema).validate(node)
    example = table_example()
    assert node["id"] == example["node_id"]
    assert {k: as_written(v) for k, v in node.items() if k != "id"} == {
        k: example[k] for k in ("cpu_cores", "memory", "cpu_load", "memory_load")
    }


# -- each is read, with every assumed default reported ------------------------------------------


@pytest.fixture
def twin(settings: TwinSettings) -> Iterator[SyncASGI]:
    client = make_client(settings)
    yield client
    client.close()


def post(twin: SyncASGI, payload: Any, source: str = "auto") -> HarmonizeResult:
    answer = twin.post("/api/v1/harmonize", json={"source": source, "payload": payload})
    assert answer.status_code == 200, answer.text
    return HarmonizeResult.model_validate(answer.json())


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("as_text", [False, True])
@pytest.mark.parametrize("source", ["auto", "decice"])
def test_every_seed_harmonizes_in_every_mode(
    twin: SyncASGI, name: str, as_text: bool, source: str
) -> None:
    payload = seed(name) if as_text else json.loads(seed(name))
    result = post(twin, payload, source)
    assert result.source == "decice"
    assert result.document.nodepools


def test_d22_defaults_and_missing_nodepools_are_reported(twin: SyncASGI) -> None:
    result = post(twin, json.loads(seed("d22.json")))
    doc = result.document
    assert [p.id for p in doc.nodepools] == ["1", "3"]
    node = doc.nodepools[0].nodes[0]
    assert node.labels == {"Node 1": ""}
    assert node.metrics == {"cpu_util": 0.8, "memory_util": 0.67}
    assert (node.hardware.cpu_milli, node.hardware.memory_mib) == (4000, 8192)
    assert doc.timestamp == 1698349103.0  # 2023-10-26 19:38:23 read as UTC
    (job,) = doc.jobs
    assert job.profile is not None and job.profile.weights[0].model_weight == 0.5
    (pod,) = job.pods
    assert pod.id == "1-0"
    assert pod.policies.required == ["required_label 1="]
    assert pod.policies.retracted == ["retracted_label 4="]
    assert doc.networks == []
    assert {(d.path, d.reason) for d in result.dropped} == {
        (
            "networks[0].network.nodepool_b_id",
            "network dropped: unknown nodepool '2'",
        ),
        (
            "networks[1].network.nodepool_b_id",
            "network dropped: unknown nodepool '4'",
        ),
    }
    notes = " | ".join(result.notes)
    for words in (
        "lastUpdated without a zone",
        "pods without an id",
        "<job id>-<index>",
        "pods without requests",
        "memory_in_mb is taken as MiB",
        "percent",
    ):
        assert words in notes


def test_training_fields_are_all_read(twin: SyncASGI) -> None:
    result = post(twin, json.loads(seed("training.json")))
    (pool,) = result.document.nodepools
    (node,) = pool.nodes
    assert node.id == "r8015356-n976057"
    assert (node.hardware.cpu_milli, node.hardware.memory_mib) == (48000, 393216)
    assert node.metrics == {"cpu_util": pytest.approx(0.0362), "memory_util": 0.0408}
    (pod,) = result.document.jobs[0].pods
    assert result.document.jobs[0].id == "74426695482326"
    assert pod.requests.memory_mib == 15360
    assert pod.requests.cpu_milli == 5000
    assert pod.timestamps.duration_s == 415
    assert (pod.phase, pod.node) == ("Succeeded", "r8015356-n976057")
    notes = " | ".join(result.notes)
    assert "mem_req are MB" in notes and "Succeeded pods" in notes and "no time" in notes


def test_nodepool_node_and_a_pool_of_them(twin: SyncASGI) -> None:
    node = json.loads(seed("nodepool_node.json"))
    other = {**node, "id": "n2", "cpu_load": 50}
    result = post(twin, [node, other])
    (pool,) = result.document.nodepools
    assert pool.id == "decice"
    assert [n.id for n in pool.nodes] == ["r8015356-n976057", "n2"]
    assert pool.nodes[1].metrics["cpu_util"] == 0.5
    assert any("one pool named 'decice'" in n for n in result.notes)


def test_trailing_comma_is_read_and_reported(twin: SyncASGI) -> None:
    text = seed("nodepool_node.json").replace("4.08}", "4.08,}")
    result = post(twin, text)
    assert result.notes[0] == TRAILING_COMMAS
    assert result.document.nodepools[0].nodes[0].hardware.memory_mib == 393216


def test_bad_values_are_dropped_with_their_path(twin: SyncASGI) -> None:
    d22 = json.loads(seed("d22.json"))
    pools = d22["nodepools"]
    pools[0]["nodepool"]["nodes"][0]["node"]["hardware"]["cpu_cores"] = "many"
    pools[0]["nodepool"]["nodes"][1]["node"]["metrics"]["cpu-usage-percent"] = 150
    pools[1]["nodepool"]["labels"].append(42)
    d22["jobs"][0]["job"]["pods"].append({"pod": {"info": {"requests": {"memory_mib": -1}}}})
    d22["networks"].append("not a network")
    got = {d.path: d.reason for d in post(twin, d22).dropped}
    assert got["nodepools[0].nodepool.nodes[0].node.hardware.cpu_cores"].startswith(
        "node dropped: non-numeric value 'many'"
    )
    assert got['nodepools[0].nodepool.nodes[1].node.metrics["cpu-usage-percent"]'] == (
        "150 is outside [0, 100] %"
    )
    assert "nodepools[1].nodepool.labels[2]" in got
    assert got["jobs[0].job.pods[1].pod"].startswith("pod dropped:")
    assert got["networks[2]"] == "network dropped: not an object"
    rows = json.loads(seed("training.json"))
    rows += [{**rows[0], "job_id": "j2", "mem_req": -5}, {**rows[0], "memory": None}]
    got = {d.path: d.reason for d in post(twin, rows).dropped}
    assert got["[1].mem_req"].startswith("job row dropped: -5 is outside")
    assert got["[2].memory"] == "row dropped: memory is required"
    node = {**json.loads(seed("nodepool_node.json")), "cpu_cores": 0}
    got = {d.path: d.reason for d in post(twin, node).dropped}
    assert got == {"cpu_cores": "node dropped: must be > 0"}


# -- import -> twin -> export -> import gives the same twin ------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_round_trip_through_the_twin_and_the_d22_export(twin: SyncASGI, name: str) -> None:
    first = post(twin, json.loads(seed(name))).document
    put = twin.put("/api/v1/state", content=first.model_dump_json(), headers=AUTH)
    assert put.status_code == 200, put.text
    exported = twin.get("/api/v1/state", params={"format": "decice-d22"})
    assert exported.status_code == 200, exported.text
    D22Document.model_validate(exported.json())
    again = post(twin, exported.json())
    assert again.dropped == []
    assert again.document == first
    assert TwinDocument.model_validate_json(twin.get("/api/v1/state").content) == first
    past = twin.get("/api/v1/state", params={"format": "decice-d22", "at": first.timestamp})
    assert past.status_code == 200 and past.json() == exported.json()


def test_export_of_a_time_before_the_state_is_404(twin: SyncASGI) -> None:
    document = post(twin, json.loads(seed("d22.json"))).document
    twin.put("/api/v1/state", content=document.model_dump_json(), headers=AUTH)
    answer = twin.get("/api/v1/state", params={"format": "decice-d22", "at": 1})
    assert answer.status_code == 404
    bad = twin.get("/api/v1/state", params={"format": "d23"})
    assert bad.status_code == 422


def test_export_keeps_the_d22_shape() -> None:
    document = harmonize(seed("d22.json")).document
    out = to_d22(document)
    assert out["lastUpdated"] == "2023-10-26 19:38:23"
    node = out["nodepools"][0]["nodepool"]["nodes"][0]["node"]
    assert node["labels"] == ["Node 1"]
    assert node["metrics"] == {"cpu-usage-percent": 80, "memory-usage-percent": 67}
    assert node["hardware"] == {"cpu_cores": 4, "memory_in_mb": 8192}
    policy = out["jobs"][0]["job"]["pods"][0]["pod"]["policies"][0]["policy"]
    assert policy["required_labels"] == ["required_label 1"]
    assert out["jobs"][0]["profile"]["weights"] == [
        {"weight": {"model_name": "model1", "model_weight": 0.5}}
    ]
