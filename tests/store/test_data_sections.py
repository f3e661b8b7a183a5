"""The data section through the store: it round-trips, and a bad one is refused naming the
field with nothing stored, on SQLite and PostgreSQL (issue 40, docs/data.md)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from tests.data_builders import GB, three_pools
from tests.model.test_data import two_sets
from twinsched.model.data import DataError
from twinsched.model.datasets import data_model
from twinsched.model.ranges import MAX_DATASET_BYTES
from twinsched.store import list_scenarios, load_scenario, save_scenarios
from twinsched.store.db import StoreError


def test_the_section_round_trips_through_the_store(db: str) -> None:
    scenario = replace(three_pools(2, two_sets()), name="with-data")
    save_scenarios([scenario], source="test", db=db)
    loaded = load_scenario("with-data", db)
    assert loaded.meta["data"] == scenario.meta["data"]
    a, b = data_model(scenario), data_model(loaded)
    assert a is not None and b is not None
    assert np.array_equal(a.read_idx, b.read_idx) and a.ids == b.ids


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d["datasets"][0].update(size_bytes=0), r"data\.datasets\[0\]\.size_bytes"),
        (lambda d: d["datasets"][0].update(size_bytes=MAX_DATASET_BYTES + 1),
         r"data\.datasets\[0\]\.size_bytes"),
        (lambda d: d["datasets"][0].update(replicas=[]),
         r"data\.datasets\[0\]\.replicas: a data set needs at least one replica"),
        (lambda d: d["access"]["p0"].update(reads=["nope"]),
         r"data\.access\['p0'\]\.reads\[0\]: unknown data set 'nope'"),
        (lambda d: d["datasets"][1]["replicas"].append({"pool": "z"}),
         r"data\.datasets\[1\]\.replicas\[2\]\.pool: unknown nodepool 'z'"),
        (lambda d: d["pool_storage_bytes"].update(a=GB),
         r"data\.pool_storage_bytes\['a'\]: replicas of 1500000000 bytes exceed"),
        (lambda d: d["datasets"].append(dict(d["datasets"][0])),
         r"data\.datasets\[2\]\.id: duplicate data set id 'd'"),
    ],
)  # fmt: skip
def test_bad_input_names_the_field_and_nothing_is_stored(change: Any, path: str, db: str) -> None:
    good = replace(three_pools(2, two_sets()), name="good")
    save_scenarios([good], source="test", db=db)
    before = [(i.name, i.version, i.checksum) for i in list_scenarios(db)]
    raw = two_sets()
    change(raw)
    bad = replace(good, name="bad", meta={**good.meta, "data": raw})
    with pytest.raises(StoreError, match=path):
        save_scenarios([replace(good, name="other"), bad], source="test", db=db)
    assert [(i.name, i.version, i.checksum) for i in list_scenarios(db)] == before
    with pytest.raises(DataError, match=path):
        data_model(bad)
