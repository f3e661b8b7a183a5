"""The headline figures (``GET /api/v1/summary``, the top of ``/ui``) counted again from the
twin's raw views, and the ``/ui/events`` stream: deltas only when the state changes, nothing
while idle, a reconnecting page sent only what it lacks, staleness from state changes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.twin.browser import serve_in_thread, sse_events, stuck_document
from tests.twin.conftest import AUTH, TOKEN, SyncASGI, make_client
from twinsched.model.carbon import synthetic_carbon
from twinsched.model.schema import parse_document
from twinsched.twin.api.app import create_app
from twinsched.twin.api.routes import ui
from twinsched.twin.api.routes.ui_delta import apply, diff
from twinsched.twin.core.settings import TwinSettings


def test_summary_equals_a_count_from_the_raw_views(tmp_path: Path) -> None:
    doc = stuck_document(nodes=40, pods=300)
    doc["timestamp"] = 3600.0 * 26 + 5  # hour 2 of the twin's day
    settings = TwinSettings(token=TOKEN, db=f"sqlite:///{tmp_path / 'twin.db'}")
    client = make_client(settings, parse_document(doc))
    try:
        summary = client.get("/api/v1/summary").json()
        nodes = client.get("/api/v1/nodes").json()
        pods = client.get("/api/v1/pods").json()
    finally:
        client.close()
    assert summary == expected_summary(nodes, pods, hour=2, pools=4)


def expected_summary(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], hour: int,
                     pools: int) -> dict[str, Any]:  # fmt: skip
    """The figures counted pod by pod and node by node, in plain Python."""
    running = [p for p in pods if p["phase"] == "Running"]
    intensity = synthetic_carbon(pools, 0, 24).g_per_kwh[:, hour]
    order = list(dict.fromkeys(n["nodepool"] for n in nodes))
    rows: dict[str, dict[str, Any]] = {}
    for node in nodes:
        hw, mine = node["hardware"], [p for p in running if p["node"] == node["id"]]
        cpu = sum(p["requests"]["cpu_milli"] for p in mine)
        mem = sum(p["requests"]["memory_mib"] for p in mine)
        gpu = sum(p["requests"]["gpu_milli"] * len(p["gpus"]) for p in mine)
        g = hw["gpu_count"]
        use = (cpu / hw["cpu_milli"] + gpu / (g * 1000)) / 2 if g else cpu / hw["cpu_milli"]
        idle, peak = 100.0 + 30.0 * g, 300.0 + 250.0 * g  # the cluster model's defaults
        watts = node["metrics"].get("power_w", idle + (peak - idle) * use)
        watts = watts if node["status"] == "Ready" else 0.0
        carbon = watts / 1000 * float(intensity[order.index(node["nodepool"])])
        figures = [cpu, hw["cpu_milli"], mem, hw["memory_mib"], gpu, g * 1000, watts, carbon,
                   "power_w" in node["metrics"], node["status"] == "Ready"]  # fmt: skip
        for key in (node["nodepool"], "all"):
            row = rows.setdefault(key, {"n": 0, "sums": [0.0] * len(figures)})
            row["n"] += 1
            row["sums"] = [a + b for a, b in zip(row["sums"], figures, strict=True)]

    def tier(name: str) -> dict[str, Any]:
        s = rows[name]["sums"]

        def share(a: float, c: float) -> dict[str, float]:
            return {"allocated": round(a, 3), "capacity": round(c, 3),
                    "pct": round(100 * a / c, 2) if c else 0.0}  # fmt: skip

        return {"id": name, "nodes": rows[name]["n"], "up": int(s[9]),
                "cpu": share(s[0], s[1]), "memory": share(s[2], s[3]), "gpu": share(s[4], s[5]),
                "power_w": round(s[6], 3), "power_reported": int(s[8]),
                "carbon_g_per_h": round(s[7], 3)}  # fmt: skip

    stuck = {"stuck-gpu": "InsufficientGPU", "stuck-label": "NodeLabelsMismatch",
             "stuck-model": "GpuModelMismatch", "stuck-rejected": "RejectedEarlier"}  # fmt: skip
    listed = sorted((p for p in pods if p["id"] in stuck),
                    key=lambda p: (-p["priority"], p["timestamps"]["arrival_s"]))  # fmt: skip
    return {
        "time": pytest.approx(3600.0 * 26 + 5),
        "hour": hour,
        "tiers": [tier(name) for name in order],
        "total": tier("all"),
        "pending": sum(p["phase"] == "Pending" for p in pods),
        "unschedulable": {
            "total": 4,
            "reasons": dict.fromkeys(sorted(set(stuck.values())), 1),
            "pods": [{"id": p["id"], "job": p["job"], "phase": p["phase"],
                      "reason": stuck[p["id"]], "cpu_milli": p["requests"]["cpu_milli"],
                      "memory_mib": p["requests"]["memory_mib"],
                      "gpu_count": p["requests"]["gpu_count"],
                      "gpu_milli": p["requests"]["gpu_milli"]} for p in listed],
        },
    }  # fmt: skip


def test_delta_applied_gives_the_new_frame() -> None:
    old = {"version": 3, "time": 1.0, "queue": {"total": 2}, "nodes": {
        "id": ["a", "b", "c"], "cpu": [0.0, 0.5, 0.1], "gpus": [[], [0, 250], []]}}  # fmt: skip
    new = {"version": 5, "time": 2.0, "queue": {"total": 2}, "nodes": {
        "id": ["a", "b", "c"], "cpu": [0.0, 0.75, 0.1], "gpus": [[], [0, 500], []]}}  # fmt: skip
    delta = diff(old, new)
    assert delta == {"base": 3, "version": 5, "set": {"time": 2.0},
                     "nodes": {"cpu": [[1], [0.75]], "gpus": [[1], [[0, 500]]]}}  # fmt: skip
    assert apply(old, delta) == new
    rows = [{"id": f"p{i}", "reason": "InsufficientGPU"} for i in range(5)]
    before = {"version": 1, "queue": {"total": 5, "pods": rows}, "session": None}
    after = {"version": 2, "queue": {"total": 5, "pods": [*rows[1:], {"id": "p9", "x": 1}]},
             "session": {"id": 2}}  # fmt: skip
    shifted = diff(before, after)
    assert shifted["set"] == {"queue": {"$d": {"pods": {"$l": [1, 2, 3, 4, {"id": "p9", "x": 1}]}}},
                              "session": {"id": 2}}  # fmt: skip
    assert apply(before, shifted) == after
    grown = {**new, "nodes": {"id": ["a"], "cpu": [1.0], "gpus": [[]]}}  # other nodes: whole
    assert diff(old, grown)["set"]["nodes"]["$d"] == grown["nodes"]
    assert apply(old, diff(old, grown)) == grown
    with pytest.raises(ValueError, match="delta from version 5, frame at 3"):
        apply(old, diff(new, grown))


class Stream:
    """``/ui/events`` read in a thread: every event with the time it came and its size."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.events: list[tuple[float, str, dict[str, Any], str]] = []
        self.bytes: list[tuple[float, int]] = []
        self._http = httpx.Client(timeout=30)
        self._cm = self._http.stream("GET", url, headers=headers or {})
        self._answer = self._cm.__enter__()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _lines(self) -> Iterator[str]:
        for line in self._answer.iter_lines():
            self.bytes.append((time.monotonic(), len(line.encode()) + 1))
            yield line

    def _read(self) -> None:
        try:
            for kind, data, ident in sse_events(self._lines()):
                self.events.append((time.monotonic(), kind, data, ident))
        except httpx.HTTPError:
            pass  # closed by the test

    def wait(self, kind: str, count: int = 1, timeout: float = 8.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [data for _, k, data, _ in self.events if k == kind]
            if len(found) >= count:
                return found
            time.sleep(0.02)
        raise AssertionError(f"no {count} {kind} events in {timeout} s: {self.kinds()}")

    def kinds(self) -> list[str]:
        return [k for _, k, _, _ in self.events]

    def bytes_since(self, t: float) -> int:
        return sum(n for at, n in list(self.bytes) if at >= t)

    def close(self) -> None:
        self._http.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    folder = tmp_path_factory.mktemp("ui-stream")
    app = create_app(TwinSettings(token=TOKEN, db=f"sqlite:///{folder / 'twin.db'}"))
    with serve_in_thread(app) as url:
        document = stuck_document(200, 2000)  # a large state: its first PUT may take seconds
        answer = httpx.put(f"{url}/api/v1/state", json=document, headers=AUTH, timeout=60)
        assert answer.status_code == 200, answer.text
        yield url, app


def _bind(url: str, pod: str, node: str, clock: float) -> int:
    body = {"time": clock, "deltas": [{"op": "pod", "pod": pod, "phase": "Running", "node": node}]}
    answer = httpx.patch(f"{url}/api/v1/state", json=body, headers=AUTH)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["version"])


def test_idle_stream_sends_nothing_and_a_change_sends_a_small_delta(
    served: tuple[str, Any],
) -> None:
    url, app = served
    stream = Stream(f"{url}/ui/events")
    try:
        first = stream.wait("frame")[0]
        stream.wait("status")
        full = stream.bytes_since(0)
        quiet = time.monotonic()
        time.sleep(1.5)  # idle (no change, health steady, the beat is 15 s)
        assert stream.bytes_since(quiet) == 0, stream.kinds()
        version = _bind(url, "pod-01999", "node-0001", 5000.0)
        delta = stream.wait("delta")[0]
        assert (delta["base"], delta["version"]) == (first["version"], version)
        assert set(delta["nodes"]) <= {"cpu", "mem", "gpu", "gpus"}
        assert all(len(at) == 1 for at, _ in delta["nodes"].values())  # one node changed
        sent = stream.bytes_since(quiet)
        assert sent < full * 0.1, (sent, full, delta)
        expected = {k: v for k, v in app.state.dashboard.picture(app.state.service).items()}
        assert apply(first, delta) == expected
    finally:
        stream.close()
    assert stream.kinds().count("frame") == 1


def test_reconnect_gets_only_what_it_lacks(served: tuple[str, Any]) -> None:
    url, _ = served
    version = httpx.get(f"{url}/healthz").json()["version"]
    same = Stream(f"{url}/ui/events", {"Last-Event-ID": f"live:{version}"})
    older = Stream(f"{url}/ui/events", {"Last-Event-ID": f"live:{version}"})
    unknown = Stream(f"{url}/ui/events", {"Last-Event-ID": "session-7:x"})
    try:
        same.wait("status")
        unknown.wait("frame")
        older.wait("status")
        newer = _bind(url, "pod-01996", "node-0002", 6000.0)
        assert older.wait("delta")[0]["version"] == newer
        assert "frame" not in same.kinds() + older.kinds()
    finally:
        for stream in (same, older, unknown):
            stream.close()
    again = Stream(f"{url}/ui/events", {"Last-Event-ID": f"live:{version}"})  # a kept one
    try:
        caught_up = again.wait("delta")[0]
        assert (caught_up["base"], caught_up["version"]) == (version, newer)
        assert "frame" not in again.kinds()
    finally:
        again.close()


def test_staleness_counts_from_the_last_state_change_not_the_beat(
    served: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = served
    monkeypatch.setattr(ui, "BEAT_S", 0.3)
    changed = _bind(url, "pod-01997", "node-0003", 7000.0)
    time.sleep(ui.POLL_S * 3)  # the watcher notes the change
    stream = Stream(f"{url}/ui/events")
    try:
        beats = stream.wait("status", count=4)
    finally:
        stream.close()
    assert {b["changed_at"] for b in beats} == {beats[0]["changed_at"]}, beats
    assert beats[-1]["now"] - beats[0]["now"] >= 0.6
    assert beats[-1]["now"] - beats[-1]["changed_at"] >= 0.6  # ageing while the beats come
    assert beats[-1]["version"] == changed


def test_past_session_stream_is_one_frame(tmp_path: Path) -> None:
    settings = TwinSettings(token=TOKEN, db=f"sqlite:///{tmp_path / 'twin.db'}")
    client: SyncASGI = make_client(settings, parse_document(stuck_document(12, 20)))
    try:
        client.put("/api/v1/state", json=stuck_document(8, 10, pools=2), headers=AUTH)
        past = client.app.state.dashboard.current(client.app.state.service, 1)
        assert past["session"] == {"id": 1, "source": "put", "timebase": past["session"]
                                   ["timebase"], "live": False}  # fmt: skip
        assert len(past["nodes"]["id"]) == 12 and past["summary"]["total"]["nodes"] == 12
    finally:
        client.close()
