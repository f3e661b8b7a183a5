"""Sessions: every feed of the twin writes under a session with its own timebase.

Two runs fed into one twin keep separate histories ("last" comes from the right run), and a
twin fed by a simulated run and then by a live collector (Unix time) keeps the simulated
history through `twin compact` (it used to delete it all without a word).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from tests.twin.conftest import AUTH, TOKEN, SyncASGI, make_client, tiny_document
from twinsched.cli.twin import app as twin_cli
from twinsched.store.db import dispose
from twinsched.store.migrate import upgrade
from twinsched.twin.core.settings import TwinSettings


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest) -> Iterator[str]:
    url = str(request.getfixturevalue("history_url" if request.param == "sqlite" else "pg_url"))
    yield url
    dispose(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_db(request: pytest.FixtureRequest) -> Iterator[str]:
    """A database where nothing was migrated yet."""
    name = "history_url" if request.param == "sqlite" else "pg_empty_url"
    url = str(request.getfixturevalue(name))
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
    states = {
        (session, at): twin.get("/api/v1/state", params={"session": session, "at": at}).json()
        for session, at in ((first, 5.0), (first, 3.0), (second, 9.0))
    }
    assert {k: v["timestamp"] for k, v in states.items()} == {
        (first, 5.0): 5.0,
        (first, 3.0): 3.0,
        (second, 9.0): 2.0,
    }  # each session's own timeline: at 3 s, the first run's state, not the second's
    last_of_first = twin.get("/api/v1/state", params={"session": first}).json()
    assert last_of_first["timestamp"] == 5.0
    assert twin.get("/api/v1/state").json()["timestamp"] == 2.0  # the live session's
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


def test_history_from_before_sessions_is_one_session_and_a_mixed_one_is_not_compacted(
    empty_db: str,
) -> None:
    """A database written before sessions (revision 0006) holding a simulated run and then
    a live feed: migrated, it is session 1, `mixed`; compaction refuses it, names it, and
    leaves every sample; the next write opens a session of its own."""
    engine = sa.create_engine(empty_db.replace("postgresql://", "postgresql+psycopg://"))
    upgrade(engine, "0006")
    now = time.time()
    with engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM twin_samples"))
        conn.execute(sa.text("DELETE FROM twin_series"))
        conn.execute(sa.text("INSERT INTO twin_series (id, node, metric) VALUES (1, 'n1', 'u')"))
        rows = [{"t": float(t), "v": 0.5} for t in range(0, 3000, 60)] + [{"t": now, "v": 0.9}]
        conn.execute(sa.text("INSERT INTO twin_samples VALUES (1, :t, :v)"), rows)
        body = tiny_document().model_dump_json().encode()
        conn.execute(
            sa.text("INSERT INTO twin_snapshots (version, time, document) VALUES (1, 0, :d)"),
            {"d": body},
        )
    upgrade(engine)
    engine.dispose()
    result = CliRunner().invoke(twin_cli, ["compact", "--db", empty_db, "--retention", "3600"])
    assert result.exit_code == 1, result.output
    assert "refused: session 1 (before-sessions)" in result.output
    assert "mix simulated time and Unix time" in result.output
    twin = make_client(TwinSettings(token=TOKEN, db=empty_db))
    (legacy,) = twin.get("/api/v1/sessions").json()["sessions"]
    assert (legacy["id"], legacy["source"], legacy["timebase"]) == (1, "before-sessions", "mixed")
    assert len(_history(twin, node="n1")["series"][0]["times"]) == 51  # nothing deleted
    _samples(twin, [now + 1.0], 1.0)  # a new write: a session of its own, on Unix time
    sessions = twin.get("/api/v1/sessions").json()["sessions"]
    assert [(s["id"], s["timebase"], s["live"]) for s in sessions] == [
        (1, "mixed", False),
        (2, "wall", True),
    ]
    twin.close()


def test_export_reads_one_session(history_url: str, tmp_path: Path) -> None:
    twin = make_client(TwinSettings(token=TOKEN, db=history_url))
    _put(twin, source="run first")
    _samples(twin, [0.0, 1.0, 2.0], 1.0)
    _put(twin, source="run second")
    _samples(twin, [0.0, 1.0], 2.0)
    twin.close()
    for args, values in (([], {2.0}), (["--session", "1"], {1.0}), (["--session", "2"], {2.0})):
        out = tmp_path / f"x{len(args)}{values}.csv"
        result = CliRunner().invoke(
            twin_cli, ["export", "--db", history_url, "--metrics", "u", "--out", str(out), *args]
        )
        assert result.exit_code == 0, result.output
        rows = out.read_text().splitlines()[1:]
        assert {float(r.split(",")[-1]) for r in rows} == values
        assert len(rows) == (3 if values == {1.0} else 2)
    args = ["export", "--db", history_url, "--metrics", "u", "--out", str(tmp_path / "y.csv")]
    result = CliRunner().invoke(twin_cli, [*args, "--session", "7"])
    assert result.exit_code != 0
    assert "unknown session 7 (sessions: 1, 2)" in result.output


def _put_session(twin: SyncASGI, body: str, params: dict[str, str]) -> int:
    answer = twin.put("/api/v1/state", content=body, headers=AUTH, params=params)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["session"])


def test_a_put_with_resume_goes_on_in_the_live_session_of_its_source(db: str) -> None:
    twin = make_client(TwinSettings(token=TOKEN, db=db))
    _put(twin, source="ops")
    _samples(twin, [1.0, 2.0], 1.0)
    doc = tiny_document()
    doc.timestamp = 3.0
    body = doc.model_dump_json()
    first = _put_session(twin, body, {"source": "ops", "resume": "true"})  # same timeline
    assert _put_session(twin, body, {"source": "ops", "resume": "true"}) == first
    assert _put_session(twin, body, {"source": "other", "resume": "true"}) == first + 1
    assert _put_session(twin, body, {"source": "other"}) == first + 2  # always a new one
    assert len(twin.get("/api/v1/sessions").json()["sessions"]) == first + 2
    refused = twin.put("/api/v1/state", params={"resume": "maybe"}, headers=AUTH, content=body)
    assert refused.status_code == 422
    twin.close()
