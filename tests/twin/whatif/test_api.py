"""``POST /api/v1/whatif`` and ``GET /api/v1/whatif/{job}`` on the twin's FastAPI app:
202 and a job to poll, its progress, the cache per state version, and bad input (4xx)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.twin.conftest import AUTH, TOKEN, SyncASGI
from twinsched.model.document import TwinDocument
from twinsched.twin.api.app import create_app
from twinsched.twin.core.service import TwinService
from twinsched.twin.core.settings import TwinSettings
from twinsched.twin.whatif import jobs as whatif_jobs

URL = "/api/v1/whatif"
BODY = {"schedulers": ["bestfit", "fgd"], "horizon_s": 3600, "seeds": [0, 1]}


@pytest.fixture
def twin(tmp_path: Path, noon: TwinDocument) -> Iterator[SyncASGI]:
    settings = TwinSettings(token=TOKEN, db=f"sqlite:///{tmp_path / 'twin.db'}")
    client = SyncASGI(create_app(settings, service=TwinService(noon)))
    yield client
    client.close()


def finished(twin: SyncASGI, job: dict[str, Any], limit_s: float = 120.0) -> dict[str, Any]:
    """Poll the job until it is done or failed; every answer is a 200."""
    deadline = time.monotonic() + limit_s
    while job["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, job
        time.sleep(0.02)
        answer = twin.get(f"{URL}/{job['job']}")
        assert answer.status_code == 200, answer.text
        job = answer.json()
    return job


def test_a_job_to_poll_then_the_comparison(twin: SyncASGI) -> None:
    answer = twin.post(URL, json=BODY)
    assert answer.status_code == 202, answer.text
    job = answer.json()
    assert answer.headers["Location"] == f"{URL}/{job['job']}"
    assert job["progress"] == {"done": 0, "total": 4} or job["status"] != "queued"
    done = finished(twin, job)
    assert done["status"] == "done" and done["progress"] == {"done": 4, "total": 4}
    result = done["result"]
    assert result["version"] == 0 and result["fork"]["twin_time"] == 43200.0
    assert result["workload"]["source"] == "recent" and result["workload"]["arrivals_per_h"] > 0
    assert [s["scheduler"] for s in result["schedulers"]] == ["bestfit", "fgd"]
    for row in result["schedulers"]:
        assert set(row["figures"]) >= {"gpu_alloc_pct", "queue_wait_s", "completed",
                                       "energy_kwh", "carbon_kg"}  # fmt: skip
        for figure in row["figures"].values():
            assert set(figure) == {"mean", "std", "min", "max"}
            assert figure["min"] <= figure["mean"] <= figure["max"]


def test_progress_is_reported_while_the_runs_go(twin: SyncASGI) -> None:
    body = {"schedulers": ["bestfit"], "horizon_s": 86400, "seeds": [0, 1, 2, 3]}
    job = twin.post(URL, json=body).json()
    seen = set()
    while job["status"] not in ("done", "failed"):
        seen.add(job["progress"]["done"])
        time.sleep(0.01)
        job = twin.get(f"{URL}/{job['job']}").json()
    assert job["status"] == "done"
    assert seen & {1, 2, 3}, f"no progress between 0 and 4 was seen: {seen}"


def test_the_same_request_at_the_same_version_is_answered_from_the_cache(twin: SyncASGI) -> None:
    first = finished(twin, twin.post(URL, json=BODY).json())
    again = twin.post(URL, json=BODY)
    assert again.status_code == 200
    assert again.json()["job"] == first["job"] and again.json()["result"] == first["result"]
    other = twin.post(URL, json={**BODY, "seeds": [0, 2]})
    assert other.status_code == 202 and other.json()["job"] != first["job"]
    node = twin.get("/api/v1/nodes").json()[0]["id"]
    patch = {"time": 43300.0, "deltas": [{"op": "node", "node": node, "status": "NotReady"}]}
    assert twin.patch("/api/v1/state", json=patch, headers=AUTH).status_code == 200
    moved = twin.post(URL, json=BODY)
    assert moved.status_code == 202 and moved.json()["version"] == 1
    result = finished(twin, moved.json())["result"]
    assert result["fork"]["nodes_down"] == 1 and result["version"] == 1


def test_a_scenario_gives_the_horizon_its_workload(twin: SyncASGI) -> None:
    body = {**BODY, "scenario": "synthetic-continuum"}
    result = finished(twin, twin.post(URL, json=body).json())["result"]
    assert result["workload"] == {"source": "scenario", "scenario": "synthetic-continuum"}
    arrivals = [row["figures"]["arrivals"] for row in result["schedulers"]]
    assert all(a["std"] == 0 and a["mean"] > 0 for a in arrivals)  # the same for every seed


@pytest.mark.parametrize(
    ("change", "status", "detail"),
    [
        ({"schedulers": ["nope"]}, 422, "schedulers[0]: unknown scheduler 'nope'; known: "),
        ({"horizon_s": 10}, 422, "horizon_s: must be 60 s (1m) to 86400 s (24h), got 10"),
        ({"horizon_s": 90000}, 422, "horizon_s: must be 60 s (1m) to 86400 s (24h)"),
        ({"seeds": [-1]}, 422, "seeds[0]: must be in 0..4294967295"),
        ({"seeds": list(range(21))}, 422, "seeds"),
        ({"schedulers": []}, 422, "schedulers"),
        ({"timeout_s": 0}, 422, "timeout_s"),
        ({"session": 9}, 404, "session: unknown session 9"),
        ({"session": 0}, 422, "session"),
        ({"scenario": "synthetic-continuum:x"}, 404, "scenario: unknown synthetic-continuum"),
    ],
)
def test_bad_input_is_a_4xx_naming_the_field(
    twin: SyncASGI, change: dict[str, Any], status: int, detail: str
) -> None:
    answer = twin.post(URL, json={**BODY, **change})
    assert answer.status_code == status, answer.text
    assert detail in answer.json()["detail"]


def test_an_unknown_stored_scenario_is_a_404(
    twin: SyncASGI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWINSCHED_DB", f"sqlite:///{tmp_path / 'store.db'}")
    answer = twin.post(URL, json={**BODY, "scenario": "nope"})
    assert answer.status_code == 404, answer.text
    assert "'nope' is neither a trace (" in answer.json()["detail"]


def test_unknown_jobs(twin: SyncASGI) -> None:
    assert twin.get(f"{URL}/{'0' * 32}").status_code == 404
    assert twin.get(f"{URL}/not-a-job").status_code == 422


def test_the_work_is_bounded(twin: SyncASGI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("twinsched.twin.whatif.compare.MAX_NODE_RUNS", 100)
    answer = twin.post(URL, json=BODY)
    assert answer.status_code == 422
    assert "4 runs x 88 nodes = 352 node-runs, at most 100" in answer.json()["detail"]


def test_a_job_past_its_time_limit_fails_with_the_reason(twin: SyncASGI) -> None:
    body = {**BODY, "horizon_s": 86400, "seeds": list(range(8)), "timeout_s": 0.2}
    job = finished(twin, twin.post(URL, json=body).json())
    assert job["status"] == "failed" and "time limit" in job["error"]
    assert job["progress"]["done"] < 16


def test_too_many_requests_under_way(twin: SyncASGI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(whatif_jobs, "MAX_QUEUED", 1)
    long = {**BODY, "horizon_s": 86400, "seeds": list(range(8)), "timeout_s": 1}
    first = twin.post(URL, json=long)
    assert first.status_code == 202
    busy = twin.post(URL, json={**long, "seeds": [9]})
    assert busy.status_code == 429 and "under way" in busy.json()["detail"]
    finished(twin, first.json())
    assert twin.post(URL, json={**long, "seeds": [9]}).status_code == 202


def test_a_session_of_the_twin(twin: SyncASGI, noon: TwinDocument) -> None:
    """The sessions' lookup (``app.state.whatif_sessions``) gives a session's reader."""
    other = TwinService(noon)
    twin.app.state.whatif_sessions = lambda number: (7, other.read) if number == 2 else None
    result = finished(twin, twin.post(URL, json={**BODY, "session": 2}).json())
    assert result["status"] == "done" and result["version"] == 7
    assert result["request"]["session"] == 2
    assert twin.post(URL, json={**BODY, "session": 3}).status_code == 404


def test_a_past_session_is_forked_from_its_last_state(tmp_path: Path, noon: TwinDocument) -> None:
    """Two PUTs, two sessions: a what-if of the first forks its last state, of the second
    (live) the current one; a session the twin does not know is a 404."""
    settings = TwinSettings(token=TOKEN, db=f"sqlite:///{tmp_path / 'twin.db'}")
    twin = SyncASGI(create_app(settings))
    try:
        morning = noon.model_copy(update={"timestamp": 40000.0}, deep=True)
        for doc in (morning, noon):
            body = doc.model_dump_json()
            assert twin.put("/api/v1/state", content=body, headers=AUTH).status_code == 200
        sessions = twin.get("/api/v1/sessions").json()
        first, live = sessions["sessions"][0]["id"], sessions["live"]
        assert first != live
        old = finished(twin, twin.post(URL, json={**BODY, "session": first}).json())["result"]
        new = finished(twin, twin.post(URL, json={**BODY, "session": live}).json())["result"]
        assert old["fork"]["twin_time"] == 40000.0 and new["fork"]["twin_time"] == 43200.0
        unknown = twin.post(URL, json={**BODY, "session": live + 5})
        assert unknown.status_code == 404 and "unknown session" in unknown.json()["detail"]
    finally:
        twin.close()


def test_the_routes_are_in_the_openapi(twin: SyncASGI) -> None:
    paths = twin.get("/openapi.json").json()["paths"]
    assert "post" in paths[URL] and "get" in paths[URL + "/{job}"]
