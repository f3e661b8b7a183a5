"""The core without HTTP: one door, all-or-nothing batches, batch-local references."""

from __future__ import annotations

from typing import Any

import pytest

from tests.twin.conftest import tiny_document
from twinsched.store.history import HistoryStore
from twinsched.twin.core.deltas import StatePatch
from twinsched.twin.core.service import DeltaError, TwinService


def _patch(time: float, *deltas: dict[str, Any]) -> StatePatch:
    return StatePatch.model_validate({"time": time, "deltas": list(deltas)})


NEW = {"id": "p9", "requests": {"cpu_milli": 1, "memory_mib": 1},
       "timestamps": {"arrival_s": 1.0}}  # fmt: skip


def test_later_deltas_see_pods_added_earlier_in_the_batch() -> None:
    twin = TwinService(tiny_document())
    result = twin.apply(
        _patch(
            2.0,
            {"op": "pod_add", "job": "j1", "pod": NEW},
            {"op": "pod", "pod": "p9", "phase": "Running", "node": "n2"},
            {"op": "pod", "pod": "p9", "phase": "Succeeded", "node": "n2"},
        )
    )
    assert (result.applied, result.version) == (3, 1)
    pods = twin.document().jobs[0].pods
    assert [(p.id, p.phase, p.node) for p in pods][-1] == ("p9", "Succeeded", "n2")
    with pytest.raises(DeltaError, match=r"deltas\[0\]\.pod\.id: duplicate pod id 'p9'"):
        twin.apply(_patch(3.0, {"op": "pod_add", "job": "j1", "pod": NEW}))


def test_a_rejected_batch_changes_nothing_and_writes_nothing(history_url: str) -> None:
    store = HistoryStore(history_url)
    twin = TwinService(tiny_document(), store)
    before = twin.state_json()
    with pytest.raises(DeltaError, match=r"deltas\[2\]\.node: unknown node 'zz'"):
        twin.apply(
            _patch(
                5.0,
                {"op": "metrics", "node": "n1", "values": {"u": 1.0}},
                {"op": "pod_add", "job": "new-job", "pod": NEW},
                {"op": "node", "node": "zz", "status": "NotReady"},
            )
        )
    assert twin.state_json() == before
    assert (twin.version, store.latest_version()) == (0, 0)
    assert [j.id for j in twin.document().jobs] == ["j1"]


def test_pod_add_checks_bindings_and_data_pools() -> None:
    twin = TwinService(tiny_document())
    bad_pool = {**NEW, "data_pool": "mars"}
    with pytest.raises(DeltaError, match=r"deltas\[0\]\.pod\.data_pool: unknown nodepool"):
        twin.apply(_patch(1.0, {"op": "pod_add", "job": "j1", "pod": bad_pool}))
    start_early = {"op": "pod", "pod": "p1", "phase": "Running", "node": "n1", "start_s": 0.0}
    twin.apply(_patch(1.0, start_early))
    late = {"op": "pod", "pod": "p9", "phase": "Running", "node": "n1", "start_s": 0.5}
    twin.apply(_patch(1.0, {"op": "pod_add", "job": "j1", "pod": NEW}))
    with pytest.raises(DeltaError, match=r"deltas\[0\]\.start_s: must be >= arrival_s"):
        twin.apply(_patch(2.0, late))


def test_state_json_is_cached_per_version() -> None:
    twin = TwinService(tiny_document())
    first = twin.state_json()
    assert twin.state_json() is first
    assert twin.cached_state_json() is first
    twin.apply(_patch(1.0, {"op": "node", "node": "n1", "status": "NotReady"}))
    assert twin.cached_state_json() is None
    assert twin.state_json() != first


def test_pod_deltas_carry_who_bound_the_pod() -> None:
    twin = TwinService(tiny_document())
    bound = {"op": "pod", "pod": "p1", "phase": "Running", "node": "n1"}
    twin.apply(_patch(1.0, {**bound, "scheduler": "fgd", "fallback": True}, {**bound, "pod": "p2"}))
    p1, p2 = twin.document().jobs[0].pods
    assert (p1.scheduler, p1.fallback, p2.scheduler, p2.fallback) == ("fgd", True, None, False)
    twin.apply(_patch(2.0, {**bound, "phase": "Succeeded"}))  # no scheduler given: kept
    assert twin.document().jobs[0].pods[0].scheduler == "fgd"
    twin.apply(_patch(3.0, {"op": "pod", "pod": "p1", "phase": "Pending"}))  # unbound: cleared
    p1 = twin.document().jobs[0].pods[0]
    assert (p1.scheduler, p1.fallback) == (None, False)
    with pytest.raises(DeltaError, match=r"deltas\[0\]\.fallback: needs the scheduler"):
        twin.apply(_patch(4.0, {**bound, "pod": "p1", "fallback": True}))


def test_node_deltas_cordon_without_touching_the_status() -> None:
    twin = TwinService(tiny_document())
    twin.apply(_patch(1.0, {"op": "node", "node": "n1", "unschedulable": True}))
    n1 = twin.document().nodepools[0].nodes[0]
    assert (n1.status, n1.unschedulable) == ("Ready", True)
    twin.apply(_patch(2.0, {"op": "node", "node": "n1", "status": "NotReady"}))  # an old client
    n1 = twin.document().nodepools[0].nodes[0]
    assert (n1.status, n1.unschedulable) == ("NotReady", True)
    twin.apply(_patch(3.0, {"op": "node", "node": "n1", "unschedulable": False}))
    assert not twin.document().nodepools[0].nodes[0].unschedulable
