"""Sessions: every feed of the twin writes under a session with its own timebase.

Two runs fed into one twin keep separate histories ("last" comes from the right run), and a
twin fed by a simulated run and then by a live collector (Unix time) keeps the simulated
history through `twin compact` (it used to delete it all without a word).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from tests.twin.conftest import AUTH, TOKEN, SyncASGI, make_client, tiny_document
from twinsched.cli.twin import app as twin_cli
from twinsched.store.db import dispose
from twinsched.twin.core.settings import TwinSettings


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest) -> Iterator[str]:
    url = str(request.getfixturevalue("history_url" if request.param == "sqlite" else "pg_url"))
    yield url
    dispose(url)


def _put(twin: SyncASGI, at: float = 0.0, source: str | None = None) -> int:
    doc = tiny_document()
    doc.timestamp = at
    params = {"source": source} if source else {}
    answer = twin.put("/api/v1/state", content=doc.model_dump_json(), headers=AUTH, params=params)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["version"])


def _samples(twin: SyncASGI, times: list[float], value: float, node: str = "n1") -> None:
    for t in times:
        body = {"time": t, "deltas": [{"op": "metrics", "node": node, "values": {"u": value}}]}
        answer = twin.patch("/api/v1/state", json=body, headers=AUTH)
        assert answer.status_code == 200, answer.text


def _history(twin: SyncASGI, **params: object) -> dict[str, object]:
    answer = twin.get("/api/v1/history", params={"metric": "u", **params})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_two_runs_into_one_twin_keep_separate_histories(db: str) -> None:
    twin = make_client(TwinSettings(token=TOKEN, db=db))
    _put(twin, source="run first")
    _samples(twin, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], 1.0)  # the first run, longer
    _put(twin, source="run second")
    _samples(twin, [0.0, 1.0, 2.0], 2.0)  # the second run, from time 0 again
    sessions = twin.get("/api/v1/sessions").json()["sessions"]
    assert [s["source"] for s in sessions] == ["run first", "run second"]
    first, second = (s["id"] for s in sessions)
    assert [s["live"] for s in sessions] == [False, True]
    assert {s["timebase"] for s in sessions} == {"simulated"}
    live = _history(twin, node="n1")  # default: the live session, the second run
    assert live["session"] == second
    assert live["series"] == [{"node": "n1", "times": [0.0, 1.0, 2.0], "values": [2.0] * 3}]
    last = _history(twin, node="n1", step=10.0, agg="last")
    assert last["series"] == [{"node": "n1", "times": [0.0], "values": [2.0]}]  # not run 1's
    older = _history(twin, node="n1", session=first, step=10.0, agg="last")
    assert older["series"] == [{"node": "n1", "times": [0.0], "values": [1.0]}]
    raw = _history(twin, node="n1", session=first)["series"]
    assert raw == [{"node": "n1", "times": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], "values": [1.0] * 6}]
    twin.close()


def test_compact_keeps_a_simulated_session_when_a_live_feed_follows(db: str) -> None:
    twin = make_client(TwinSettings(token=TOKEN, db=db))
    _put(twin, source="run replay")
    simulated = [60.0 * k for k in range(200)]  # a simulated day's first 3.3 hours
    _samples(twin, simulated, 0.5)
    now = time.time()
    _samples(twin, [now - 10.0, now - 5.0, now], 0.9)  # a collector on Unix time follows
    sessions = twin.get("/api/v1/sessions").json()["sessions"]
    assert [s["timebase"] for s in sessions] == ["simulated", "wall"]
    twin.close()
    result = CliRunner().invoke(
        twin_cli, ["compact", "--db", db, "--retention", "604800", "--downsample-after", "86400"]
    )
    assert result.exit_code == 0, result.output
    twin = make_client(TwinSettings(token=TOKEN, db=db))
    kept = _history(twin, node="n1", session=sessions[0]["id"])["series"]
    assert kept == [{"node": "n1", "times": simulated, "values": [0.5] * len(simulated)}]
    live = _history(twin, node="n1")["series"]
    assert live[0]["values"] == [0.9, 0.9, 0.9]
    twin.close()
