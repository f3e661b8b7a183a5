"""Decisions kept with provenance: every binding written to the twin, with its scheduler,
fallback flag and model version, kept per session in the history (newest ``DECISIONS_KEPT``),
served by ``GET /decisions`` and shown by ``/ui`` to a page opened after the run. Bad
session numbers are refused (404 unknown, 409 no longer live, 422 not a number) and store
nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from tests.twin.conftest import AUTH, TOKEN, SyncASGI, make_client, tiny_document
from twinsched.store.db import dispose
from twinsched.store.history.tables import decisions
from twinsched.twin.core.settings import TwinSettings

API = "/api/v1"


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest) -> Iterator[str]:
    url = str(request.getfixturevalue("history_url" if request.param == "sqlite" else "pg_url"))
    yield url
    dispose(url)


def _bind(twin: SyncASGI, t: float, pod: str, node: str, **who: Any) -> Any:
    delta = {"op": "pod", "pod": pod, "phase": "Running", "node": node, **who}
    return twin.patch(f"{API}/state", json={"time": t, "deltas": [delta]}, headers=AUTH)


def _release(twin: SyncASGI, t: float, pod: str) -> None:
    delta = {"op": "pod", "pod": pod, "phase": "Pending"}
    answer = twin.patch(f"{API}/state", json={"time": t, "deltas": [delta]}, headers=AUTH)
    assert answer.status_code == 200, answer.text


def _decisions(twin: SyncASGI, **params: Any) -> list[dict[str, Any]]:
    answer = twin.get(f"{API}/decisions", params=params)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["decisions"])


def test_bindings_are_kept_with_who_made_them_across_a_restart(db: str) -> None:
    settings = TwinSettings(token=TOKEN, db=db)
    twin = make_client(settings, tiny_document())
    assert _bind(twin, 1.0, "p1", "g1", scheduler="ai:placer@3").status_code == 200
    assert _bind(twin, 2.0, "p2", "n1", scheduler="fgd", fallback=True).status_code == 200
    assert _bind(twin, 3.0, "p2", "n1", scheduler="fgd").status_code == 200  # no move: none
    _release(twin, 4.0, "p1")
    assert _bind(twin, 5.0, "p1", "n2", model_version="mine@7").status_code == 200
    twin.close()
    twin = make_client(settings)  # restarted: the decisions come from the history
    kept = _decisions(twin)
    assert [(d["seq"], d["pod"], d["node"], d["gpus"], d["scheduler"], d["fallback"],
             d["model_version"]) for d in kept] == [
        (3, "p1", "n2", [], None, False, "mine@7"),
        (2, "p2", "n1", [], "fgd", True, None),
        (1, "p1", "g1", [], "ai:placer@3", False, "placer@3"),  # from the scheduler's name
    ]  # fmt: skip
    assert [d["time"] for d in kept] == [5.0, 2.0, 1.0]
    assert _decisions(twin, limit=1) == kept[:1]
    first = kept[0]["session"]
    doc = tiny_document()
    assert twin.put(f"{API}/state", content=doc.model_dump_json(), headers=AUTH).status_code == 200
    assert _decisions(twin) == []  # a new session: its own decisions
    assert _decisions(twin, session=first) == kept  # the older one's, from the history
    twin.close()


def test_decisions_kept_are_bounded_per_session(history_url: str) -> None:
    twin = make_client(TwinSettings(token=TOKEN, db=history_url, decisions_kept=8), tiny_document())
    for k in range(40):
        _release(twin, 2.0 * k, "p1")
        assert _bind(twin, 2.0 * k + 1, "p1", "n1" if k % 2 else "n2").status_code == 200
    kept = _decisions(twin, limit=100)
    assert [d["seq"] for d in kept] == list(range(40, 32, -1))  # the newest 8
    engine = sa.create_engine(history_url)
    with engine.connect() as conn:
        stored = conn.execute(sa.select(sa.func.count()).select_from(decisions)).scalar()
    engine.dispose()
    assert stored is not None and 8 <= stored <= 9  # pruned every 8 // 8 = 1 decision
    twin.close()


BAD = [
    ({"session": 0}, 422, "session"),
    ({"session": "abc"}, 422, "session"),
    ({"session": -1}, 422, "session"),
    ({"session": 99}, 404, "unknown session 99 (sessions: 1)"),
    ({"limit": 0}, 422, "limit"),
    ({"limit": 10**6}, 422, "limit"),
]


@pytest.mark.parametrize(("params", "status", "says"), BAD)
def test_bad_session_or_limit_is_refused(
    client: SyncASGI, params: dict[str, Any], status: int, says: str
) -> None:
    answer = client.get(f"{API}/decisions", params=params)
    assert answer.status_code == status, answer.text
    assert says in answer.json()["detail"]
    for route in ("/history?metric=u", "/state?at=1"):
        again = client.get(f"{API}{route}", params={"session": params.get("session", 99)})
        assert again.status_code in (404, 422)


def test_writes_to_a_session_that_is_not_live_store_nothing(client: SyncASGI) -> None:
    version = client.get("/readyz").json()["version"]
    body = {"time": 1.0, "deltas": [{"op": "pod", "pod": "p1", "phase": "Running", "node": "n1"}]}
    for params, status in (({"session": 99}, 404), ({"session": "x"}, 422), ({"session": 0}, 422)):
        answer = client.patch(f"{API}/state", json=body, headers=AUTH, params=params)
        assert answer.status_code == status, answer.text
    doc = tiny_document().model_dump_json()
    assert client.put(f"{API}/state", content=doc, headers=AUTH).status_code == 200
    stale = client.patch(f"{API}/state", json=body, headers=AUTH, params={"session": 1})
    assert stale.status_code == 409
    assert "session 1 is not the live session (2)" in stale.json()["detail"]
    assert client.get("/readyz").json()["version"] == version + 1  # only the PUT
    assert _decisions(client) == []
    ok = client.patch(f"{API}/state", json=body, headers=AUTH, params={"session": 2})
    assert ok.status_code == 200 and ok.json()["session"] == 2


def test_the_dashboard_opened_after_the_run_shows_its_decisions(client: SyncASGI) -> None:
    assert _bind(client, 1.0, "p1", "g1", scheduler="fgd").status_code == 200
    assert _bind(client, 2.0, "p2", "n1", scheduler="bestfit", fallback=True).status_code == 200
    first = _frame(client, "")  # opened after the bindings were made
    shown = [(d["pod"], d["node"], d["scheduler"], d["fallback"]) for d in first["decisions"]]
    assert shown == [("p2", "n1", "bestfit", True), ("p1", "g1", "fgd", False)]
    assert first["session"] == {"id": 1, "source": "put", "timebase": "simulated", "live": True}
    doc = tiny_document().model_dump_json()
    assert (
        client.put(
            f"{API}/state", content=doc, headers=AUTH, params={"source": "run b"}
        ).status_code
        == 200
    )
    live = _frame(client, "")
    assert live["decisions"] == [] and live["session"]["id"] == 2
    past = _frame(client, "?session=1")  # the picker: the older session's last state
    assert past["session"]["live"] is False
    assert [d["pod"] for d in past["decisions"]] == ["p2", "p1"]
    assert past["phases"]["Running"] == 2 and live["phases"]["Running"] == 0
    assert client.get("/ui/events?session=9").status_code == 404
    assert client.get("/ui/events?session=zero").status_code == 422


def _frame(client: SyncASGI, query: str) -> dict[str, Any]:
    """The first frame of ``/ui/events`` (the stream is cut after it)."""
    from twinsched.twin.api.routes import ui

    feed = client.app.state.dashboard
    service = client.app.state.service
    session = int(query.split("=")[1]) if query else None
    picture = feed.current(service, session)
    assert set(picture) >= {"decisions", "session", "nodes", "health"}
    assert len(picture["decisions"]) <= ui.DECISIONS_SHOWN
    return json.loads(json.dumps(picture))
