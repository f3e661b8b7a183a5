"""Data sets in the model: the section's round trips through the twin document and the
store, and bad input refused naming the field, nothing stored (issue 40, docs/data.md)."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from tests.data_builders import GB, one_set, three_pools
from twinsched.model.convert import document_to_scenario, scenario_to_document
from twinsched.model.data import DataError, DataSpec, parse_data
from twinsched.model.datasets import data_model, transfer_cost, with_data
from twinsched.model.document import DocumentError
from twinsched.model.schema import validate_document

ACCESS = {"p0": {"reads": ["d", "e"]}, "p1": {"writes": ["e"]}}


def two_sets(**more: Any) -> dict[str, Any]:
    data = one_set(
        access=copy.deepcopy(ACCESS), pool_storage_bytes={"a": 4 * GB}, reroute=True, **more
    )
    data["datasets"].append(
        {"id": "e", "size_bytes": 5 * 10**8, "replicas": [{"node": "nc"}, {"pool": "a"}]}
    )
    return data


def test_the_section_round_trips_through_the_twin_document() -> None:
    scenario = three_pools(2, two_sets())
    doc = scenario_to_document(scenario)
    assert doc.jobs[0].pods[0].reads == ["d", "e"]  # the pods carry their accesses
    assert doc.data is not None and doc.data.access == {}
    again = document_to_scenario(validate_document(doc.model_dump(mode="json")), scenario.name)
    assert again.meta["data"] == scenario.meta["data"]


def test_a_document_without_data_reads_as_before() -> None:
    scenario = three_pools(1, one_set())
    bare = replace(scenario, meta={})
    doc = scenario_to_document(bare)
    assert doc.data is None and doc.jobs[0].pods[0].reads == []
    assert "data" not in document_to_scenario(doc, "x").meta
    assert data_model(bare) is None


def test_a_twin_document_refuses_unknown_data_sets_and_bad_sizes() -> None:
    doc = scenario_to_document(three_pools(2, two_sets())).model_dump(mode="json")
    doc["jobs"][1]["pods"][0]["writes"] = ["missing"]
    with pytest.raises(DocumentError, match=r"jobs\[1\]\.pods\[0\]\.writes\[0\]: unknown data set"):
        validate_document(doc)
    doc["jobs"][1]["pods"][0]["writes"] = []
    doc["data"]["datasets"][0]["size_bytes"] = -1
    with pytest.raises(DocumentError, match=r"data\.datasets\[0\]\.size_bytes"):
        validate_document(doc)
    doc["data"]["datasets"][0]["size_bytes"] = 1
    doc["data"]["datasets"][0]["replicas"] = []
    with pytest.raises(DocumentError, match=r"data\.datasets\[0\]\.replicas: a data set needs"):
        validate_document(doc)


def test_parse_data_names_the_field() -> None:
    with pytest.raises(DataError, match=r"data\.energy_j_per_gb"):
        parse_data(one_set(energy_j_per_gb=-1.0))
    with pytest.raises(DataError, match=r"data\.datasets\[0\]\.replicas\[0\]\.pool: a replica"):
        parse_data({"datasets": [{"id": "d", "size_bytes": 1, "replicas": [{}]}]})


def test_transfer_cost_prices_a_read_from_the_nearest_replica() -> None:
    model = data_model(three_pools(2, two_sets()))
    assert model is not None
    # d on pool a; nb in pool b: 10^9 bytes over 100 Mbit/s
    assert transfer_cost(model, 1, "d") == (80.0, GB, 20_000.0)
    assert transfer_cost(model, 0, "d") == (0.0, 0, 0.0)  # na holds it (pool a)
    # e on node nc (pool c) and pool a: from c at 1000 Mbit/s, 4 s
    assert transfer_cost(model, 1, "e") == (4.0, 5 * 10**8, 10_000.0)
    cut = model.base_bandwidth_mbps.copy()
    cut[0, 1] = cut[1, 0] = 0.0
    # reroute: a -> c -> b at min(50, 1000) Mbit/s
    assert transfer_cost(model, 1, "d", cut).seconds == pytest.approx(160.0)
    with pytest.raises(DataError, match=r"unknown data set 'x'; known: d, e"):
        transfer_cost(model, 1, "x")


def test_fill_up_copies_of_a_pod_keep_its_accesses() -> None:
    scenario = three_pools(2, two_sets())
    model = data_model(scenario, scenario.pods.take(np.array([0, 0, 1])))
    assert model is not None
    assert [model.reads(i).tolist() for i in range(3)] == [[0, 1], [0, 1], []]
    assert model.writes(2).tolist() == [1]


def test_with_data_refuses_a_section_naming_unknown_pods() -> None:
    with pytest.raises(DataError, match=r"data\.access\['ghost'\]: unknown pod"):
        with_data(three_pools(1, one_set()), DataSpec.model_validate(one_set(access={"ghost": {}})))
