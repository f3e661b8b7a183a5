"""One writer per history database, with real twin processes on SQLite and on PostgreSQL.

The second twin on a database refuses to start and names the first (host, pid, start); a
twin killed with SIGKILL leaves nothing that blocks the next one (a lock file of a dead pid
on SQLite, nothing at all on PostgreSQL); a twin that loses its lease says it is not ready
and refuses writes.
"""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.store.conftest import PG_BASE
from tests.twin.conftest import AUTH, TOKEN, tiny_document
from tests.twin.process import TwinProcess

PATCH = {"time": 1.0, "deltas": [{"op": "metrics", "node": "n1", "values": {"u": 1.0}}]}


def _refused(db: str, log: Path) -> str:
    """Start a twin that must refuse: its exit status is 2 and its output says why (with the
    console's line wrapping undone: a long temporary path wraps the message anywhere)."""
    second = TwinProcess(db, TOKEN, log)
    try:
        assert second.process.wait(30) == 2
    finally:
        second.stop()
    return " ".join(log.read_text().split())


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A twin database URL on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'twin.db'}"
    return str(request.getfixturevalue("pg_url"))


def test_a_second_twin_on_one_database_is_refused_naming_the_first(db: str, tmp_path: Path) -> None:
    first = TwinProcess(db, TOKEN, tmp_path / "first.log")
    try:
        first.wait_ready()
        said = _refused(db, tmp_path / "second.log")
        assert "in use by another twin" in said
        assert f"pid {first.process.pid}" in said or f"pid={first.process.pid}" in said
        assert socket.gethostname()[:10] in said and "started at" in said
        assert "Traceback" not in said
        first.kill()  # SIGKILL: no shutdown code runs, the lease must still be free
        if db.startswith("sqlite"):
            assert (tmp_path / "twin.db.lock").exists()  # left behind by a dead pid
        third = TwinProcess(db, TOKEN, tmp_path / "third.log")
        try:
            third.wait_ready()
            answer = httpx.put(
                f"{third.url}/api/v1/state", content=tiny_document().model_dump_json(),
                headers=AUTH,
            )  # fmt: skip
            assert answer.status_code == 200, answer.text
        finally:
            third.stop()
    finally:
        first.stop()


def _lose_lease(db: str, twin: TwinProcess) -> None:
    if db.startswith("sqlite"):
        Path(db.removeprefix("sqlite:///") + ".lock").unlink()
        return
    with psycopg.connect(PG_BASE, autocommit=True) as conn:
        name = f"twinsched twin pid={twin.process.pid} %"
        query = (
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE %s"
        )
        assert conn.execute(query, (name,)).fetchall() == [(True,)]


def test_a_twin_that_lost_its_lease_is_not_ready_and_writes_nothing(
    db: str, tmp_path: Path
) -> None:
    twin = TwinProcess(db, TOKEN, tmp_path / "twin.log")
    try:
        twin.wait_ready()
        with httpx.Client(base_url=f"{twin.url}/api/v1", headers=AUTH) as client:
            assert (
                client.put("/state", content=tiny_document().model_dump_json()).status_code == 200
            )
            assert client.get("/readyz").status_code == 200
            assert "twinsched_twin_ready 1.0" in client.get("/metrics").text
            _lose_lease(db, twin)
            ready = client.get("/readyz")
            assert ready.status_code == 503
            assert "twinsched_twin_ready 0.0" in client.get("/metrics").text  # alerts read it
            assert ready.headers["content-type"] == "application/json"
            assert "not writable" in ready.json()["detail"]
            write = client.patch("/state", json=PATCH)
            assert write.status_code == 503, write.text
            assert "not writable" in write.json()["detail"]
            assert client.get("/state").json()["timestamp"] == 0.0  # nothing applied
    finally:
        twin.stop()


def test_a_released_lease_is_free_when_release_returns(db: str) -> None:
    """Released, the lease is free before ``release`` returns, so a twin restarted in the same
    process takes it at once. On PostgreSQL another session asks for the lock right after
    each release (the server ends a session a moment after its connection closes; without an
    explicit unlock about one release in five was still held here)."""
    import sqlalchemy as sa

    from twinsched.store.history.lease import acquire, lock_key

    engine = sa.create_engine(db)
    try:
        if not db.startswith("postgresql"):
            for _ in range(40):
                acquire(engine).release()
            return
        lock, unlock = (
            sa.text(f"SELECT {f}(:k)") for f in ("pg_try_advisory_lock", "pg_advisory_unlock")
        )
        with engine.connect() as other:
            key = lock_key(str(other.execute(sa.text("SELECT current_schema()")).scalar()))
            for attempt in range(40):
                acquire(engine).release()
                assert other.execute(lock, {"k": key}).scalar(), f"held at release {attempt}"
                other.execute(unlock, {"k": key})
    finally:
        engine.dispose()
