"""History on SQLite and PostgreSQL: samples, window aggregation, restore, compaction."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.twin.conftest import AUTH, TOKEN, make_client, tiny_document
from twinsched.store.db import dispose
from twinsched.store.history import HistoryStore, Window, compact, read_window
from twinsched.twin.core.deltas import StatePatch
from twinsched.twin.core.service import TwinService
from twinsched.twin.core.settings import TwinSettings


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest) -> Iterator[HistoryStore]:
    url = request.getfixturevalue("history_url" if request.param == "sqlite" else "pg_url")
    yield HistoryStore(url)
    dispose(url)


def _metrics(time: float, **values_by_node: dict[str, float]) -> StatePatch:
    deltas = [{"op": "metrics", "node": n, "values": v} for n, v in values_by_node.items()]
    return StatePatch.model_validate({"time": time, "deltas": deltas})


def _fill(service: TwinService) -> None:
    """n1: u = t/10 at t = 0, 5, ..., 55; n2: u = 1 at the same times."""
    for k in range(12):
        service.apply(_metrics(5.0 * k, n1={"u": k / 2}, n2={"u": 1.0, "v": -1.0}))


def _series(store: HistoryStore, **window: object) -> dict[str, tuple[list[float], list[float]]]:
    series, _ = read_window(store.engine, Window(metric="u", **window))  # type: ignore[arg-type]
    return {s.node: (s.times, s.values) for s in series}


def test_window_aggregation_in_sql(store: HistoryStore) -> None:
    service = TwinService(tiny_document(), store)
    _fill(service)
    raw = _series(store, node="n1", start=10.0, end=20.0)
    assert raw == {"n1": ([10.0, 15.0, 20.0], [1.0, 1.5, 2.0])}
    mean = _series(store, step=20.0)
    assert mean["n1"] == ([0.0, 20.0, 40.0], [0.75, 2.75, 4.75])
    assert mean["n2"] == ([0.0, 20.0, 40.0], [1.0, 1.0, 1.0])
    assert _series(store, node="n1", step=20.0, agg="max") == {
        "n1": ([0.0, 20.0, 40.0], [1.5, 3.5, 5.5])
    }
    assert _series(store, node="n1", step=20.0, agg="last", start=5.0, end=44.0) == {
        "n1": ([0.0, 20.0, 40.0], [1.5, 3.5, 4.0])
    }
    series, truncated = read_window(store.engine, Window(metric="u", limit=5))
    assert truncated
    assert sum(len(s.times) for s in series) == 5


def test_restore_rebuilds_the_latest_state_and_any_past_one(store: HistoryStore) -> None:
    service = TwinService(tiny_document(), store, snapshot_every=7)
    service.replace(tiny_document())
    _fill(service)
    pod = {"op": "pod", "pod": "p1", "phase": "Running", "node": "g1"}
    service.apply(StatePatch.model_validate({"time": 60.0, "deltas": [pod]}))
    restored = TwinService.restore(store)
    assert restored.version == service.version == 14
    assert restored.state_json() == service.state_json()
    at_20 = TwinService(tiny_document())
    _fill_until = [_metrics(5.0 * k, n1={"u": k / 2}, n2={"u": 1.0, "v": -1.0}) for k in range(5)]
    for patch in _fill_until:
        at_20.apply(patch)
    assert service.snapshot_json(22.0) == at_20.state_json()


def test_compact_drops_old_history_and_downsamples(store: HistoryStore) -> None:
    service = TwinService(tiny_document(), store, snapshot_every=5)
    service.replace(tiny_document())
    _fill(service)  # samples at 0..55, now = 55
    result = compact(store.engine, retention_s=45.0, downsample_after_s=20.0, step=10.0)
    assert result.now == 55.0
    # retention cut-off 55 - 45 = 10; samples at t = 0, 5 of (n1,u), (n2,u), (n2,v) go
    assert result.dropped_samples == 2 * 3
    # downsampling cut-off floor((55 - 20) / 10) * 10 = 30: buckets [10, 20) and [20, 30)
    assert (result.downsampled_samples, result.written_buckets) == (3 * 4, 3 * 2)
    assert result.dropped_changes == 3  # patches before the snapshot at t = 10
    n1 = _series(store, node="n1")["n1"]
    assert n1 == ([10.0, 20.0, 30.0, 35.0, 40.0, 45.0, 50.0, 55.0],
                  [1.25, 2.25, 3.0, 3.5, 4.0, 4.5, 5.0, 5.5])  # fmt: skip
    again = compact(store.engine, retention_s=45.0, downsample_after_s=20.0, step=10.0)
    assert (again.dropped_samples, again.downsampled_samples, again.dropped_changes) == (0, 0, 0)
    assert TwinService.restore(store).state_json() == service.state_json()


def test_the_http_service_on_postgresql(pg_url: str) -> None:
    settings = TwinSettings(token=TOKEN, db=pg_url)
    twin = make_client(settings, tiny_document())
    for t in range(6):
        body = {"time": float(t), "deltas": [{"op": "metrics", "node": "g1", "values": {"u": t}}]}
        assert twin.patch("/api/v1/state", json=body, headers=AUTH).status_code == 200
    query = {"metric": "u", "step": 3.0, "agg": "max"}
    history = twin.get("/api/v1/history", params=query).json()
    assert history["series"] == [{"node": "g1", "times": [0.0, 3.0], "values": [2.0, 5.0]}]
    state = twin.get("/api/v1/state").content
    twin.close()
    dispose(pg_url)
    restarted = make_client(settings)
    assert restarted.get("/api/v1/state").content == state
    assert restarted.get("/readyz").json() == {"status": "ready", "version": 7}
    restarted.close()
