"""``GET /changes`` and the controller lease, on the real app (SQLite history).

The ring keeps the scheduling deltas of every accepted batch; a follower that applies them
to the state it read holds what ``GET /state`` shows; a ``since`` the ring does not cover is
410, never a 5xx; the ring stays within its bound.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.twin.conftest import AUTH, SyncASGI, make_client, tiny_document
from twinsched.store.history.store import MessageId
from twinsched.twin.core.changes import ChangeLog, ChangesGone
from twinsched.twin.core.deltas import NodeDelta, PodDelta
from twinsched.twin.core.leases import LeaseHeld, Leases
from twinsched.twin.core.settings import TwinSettings

PENDING = {"requests": {"cpu_milli": 100, "memory_mib": 64}, "timestamps": {"arrival_s": 1.0}}


def _patch(client: SyncASGI, time: float, deltas: list[dict[str, object]]) -> int:
    answer = client.patch("/api/v1/state", json={"time": time, "deltas": deltas}, headers=AUTH)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["version"])


def test_changes_after_a_version_in_order_without_metrics(client: SyncASGI) -> None:
    start = int(client.get("/api/v1/changes", params={"since": 1}).json()["version"])
    assert start == 1  # the PUT
    v2 = _patch(client, 1.0, [
        {"op": "metrics", "node": "n1", "values": {"cpu_util": 0.5}},
        {"op": "pod", "pod": "p1", "phase": "Running", "node": "n1", "scheduler": "fgd"},
    ])  # fmt: skip
    _patch(client, 2.0, [{"op": "metrics", "node": "n2", "values": {"cpu_util": 0.1}}])
    v4 = _patch(client, 3.0, [
        {"op": "pod_add", "job": "j2", "pod": {"id": "p3", **PENDING}},
        {"op": "node", "node": "n2", "status": "NotReady"},
    ])  # fmt: skip
    body = client.get("/api/v1/changes", params={"since": start}).json()
    assert body["version"] == v4 and body["more"] is False
    assert [c["version"] for c in body["changes"]] == [v2, v4]  # the metrics-only batch: none
    first = body["changes"][0]["deltas"]
    assert first == [{"op": "pod", "pod": "p1", "phase": "Running", "node": "n1", "gpus": [],
                      "scheduler": "fgd"}]  # fmt: skip
    added = body["changes"][1]["deltas"][0]
    assert added["op"] == "pod_add" and added["pod"]["id"] == "p3"
    assert body["changes"][1]["source"] is None  # over HTTP
    assert client.get("/api/v1/changes", params={"since": v4}).json()["changes"] == []
    limited = client.get("/api/v1/changes", params={"since": start, "limit": 1}).json()
    assert limited["version"] == v2 and limited["more"] is True


def test_a_since_not_kept_is_410_and_a_put_starts_over(client: SyncASGI) -> None:
    v = _patch(client, 1.0, [{"op": "pod", "pod": "p1", "phase": "Running", "node": "n1"}])
    ahead = client.get("/api/v1/changes", params={"since": v + 5})
    assert ahead.status_code == 410 and "GET /state" in ahead.json()["detail"]
    put = client.put("/api/v1/state", content=tiny_document().model_dump_json(), headers=AUTH)
    after = int(put.json()["version"])
    gone = client.get("/api/v1/changes", params={"since": v})
    assert gone.status_code == 410
    assert client.get("/api/v1/changes", params={"since": after}).json()["changes"] == []
    for bad in ({"since": -1}, {"since": "x"}, {"since": 0, "wait": 31}, {"since": 0, "limit": 0}):
        assert client.get("/api/v1/changes", params=bad).status_code == 422


def test_a_long_poll_answers_when_nothing_changes(client: SyncASGI) -> None:
    version = int(client.get("/api/v1/changes", params={"since": 1}).json()["version"])
    body = client.get("/api/v1/changes", params={"since": version, "wait": 0.05}).json()
    assert body == {"version": version, "time": 0.0, "more": False, "changes": []}


def test_a_restarted_twin_follows_on_from_its_history(settings: TwinSettings) -> None:
    twin = make_client(settings, tiny_document())
    v = _patch(twin, 1.0, [{"op": "pod", "pod": "p1", "phase": "Running", "node": "n1"}])
    twin.close()
    again = SyncASGI(make_client(settings).app)
    try:
        assert again.get("/api/v1/changes", params={"since": v}).json()["changes"] == []
        assert again.get("/api/v1/changes", params={"since": v - 1}).status_code == 410
    finally:
        again.close()


def test_the_ring_is_bounded() -> None:
    log = ChangeLog(0, max_deltas=10)
    for v in range(1, 31):
        log.record(v, float(v), [PodDelta(op="pod", pod=f"p{v}", phase="Pending")])
    assert log.stats() == {"changes": 10, "deltas": 10, "oldest": 20}
    version, _, changes = log.since(20)
    assert version == 30 and [c.version for c in changes] == list(range(21, 31))
    try:
        log.since(19)
    except ChangesGone as exc:
        assert exc.oldest == 20
    else:
        raise AssertionError("a since older than the ring must be refused")
    log.record(31, 31.0, [NodeDelta(op="node", node="n1", status="Ready")] * 25)
    assert log.stats()["changes"] == 1  # one batch larger than the bound is still kept whole
    assert json.loads(log.answer(30, 10))["changes"][0]["version"] == 31


def test_one_controller_lease_per_session(client: SyncASGI) -> None:
    url = "/api/v1/leases/controller"
    first = client.put(url, json={"holder": "a", "ttl_s": 5}, headers=AUTH)
    assert first.status_code == 200 and first.json()["holder"] == "a"
    other = client.put(url, json={"holder": "b", "ttl_s": 5}, headers=AUTH)
    assert other.status_code == 409 and "'a'" in other.json()["detail"]
    assert client.put(url, json={"holder": "b", "ttl_s": 5}, params={"session": "s2"},
                      headers=AUTH).status_code == 200  # fmt: skip
    assert client.put(url, json={"holder": "a", "ttl_s": 0.5}, headers=AUTH).status_code == 422
    assert client.put(url, json={"holder": "a", "ttl_s": 5}).status_code == 401
    assert client.request("DELETE", url, params={"holder": "a"}, headers=AUTH).status_code == 204
    assert client.put(url, json={"holder": "b", "ttl_s": 5}, headers=AUTH).status_code == 200


def test_an_expired_lease_goes_to_the_next_holder(tmp_path: Path) -> None:
    now = [0.0]
    leases = Leases(clock=lambda: now[0])
    leases.take("live", "a", 2.0)
    try:
        leases.take("live", "b", 2.0)
    except LeaseHeld as exc:
        assert "'a'" in str(exc)
    else:
        raise AssertionError("a held lease must be refused to another holder")
    now[0] = 2.5  # a killed controller no longer renews it
    assert leases.take("live", "b", 2.0).holder == "b"
    assert [lease.holder for lease in leases.held()] == ["b"]


def test_a_publisher_asks_for_the_changes_of_others() -> None:
    log = ChangeLog(0)
    log.record(1, 1.0, [PodDelta(op="pod", pod="p1", phase="Pending")], MessageId("vte", 1))
    log.record(2, 2.0, [NodeDelta(op="node", node="n1", status="NotReady")])
    log.record(3, 3.0, [PodDelta(op="pod", pod="p2", phase="Pending")], [MessageId("vte", 2)])
    body = json.loads(log.answer(0, 10, exclude="vte"))
    assert [c["version"] for c in body["changes"]] == [2] and body["version"] == 3
    assert [c["source"] for c in json.loads(log.answer(0, 10))["changes"]] == ["vte", None, "vte"]
