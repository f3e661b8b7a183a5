"""The twin holds data sets: a pod added with an unknown one is refused naming the field,
nothing applied; one it knows is kept with the pod (issue 40, docs/data.md)."""

from __future__ import annotations

import pytest

from tests.twin.conftest import tiny_document
from twinsched.model.schema import parse_document
from twinsched.twin.core.deltas import StatePatch
from twinsched.twin.core.service import DeltaError, TwinService

NEW = {"id": "p9", "requests": {"cpu_milli": 1, "memory_mib": 1},
       "timestamps": {"arrival_s": 1.0}}  # fmt: skip


def _with_data() -> TwinService:
    raw = tiny_document().model_dump(mode="json")
    raw["data"] = {"datasets": [{"id": "d", "size_bytes": 10, "replicas": [{"pool": "edge"}]}]}
    return TwinService(parse_document(raw))


def _add(twin: TwinService, pod: dict[str, object]) -> None:
    twin.apply(StatePatch.model_validate({"time": 1.0, "deltas": [
        {"op": "pod_add", "job": "j1", "pod": pod}]}))  # fmt: skip


def test_a_pod_reading_an_unknown_data_set_is_refused_and_nothing_applied() -> None:
    for twin in (TwinService(tiny_document()), _with_data()):
        before = twin.state_json()
        with pytest.raises(DeltaError, match=r"deltas\[0\]\.pod\.reads\[0\]: unknown data set 'x'"):
            _add(twin, {**NEW, "reads": ["x"]})
        assert twin.state_json() == before


def test_a_pod_reading_and_writing_known_data_sets_is_kept() -> None:
    twin = _with_data()
    _add(twin, {**NEW, "reads": ["d"], "writes": ["d"]})
    pod = twin.document().jobs[0].pods[-1]
    assert (pod.id, pod.reads, pod.writes) == ("p9", ["d"], ["d"])
