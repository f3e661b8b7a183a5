"""``twinsched twin snapshot``: a real twin's state into the store, and replayed from there.

The must-show: a twin process mirroring a simulated cluster through kube-state-metrics
series (``twin serve --mirror``, answered by a real HTTP server with the families the VTE
exports mid-replay, node failures included) is snapshotted, and ``run --scenario`` of the
snapshot replays what the twin held. One more twin process serves the other tests, each
writing its own state first: fed by ``run --twin``, the snapshot is the run's scenario
array for array and replays to the same results; on an epoch clock with pods in every
phase, a node down and one cordoned, it keeps the clock, the provenance and the window.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from tests.twin.conftest import TOKEN
from tests.twin.process import TwinProcess, free_port, running_twin
from tests.twin.test_ksm_chain import expected, twin_view
from tests.twin.test_ksm_mirror import exposition, http_server, wait_for
from tests.twin.test_prometheus_chain import prometheus
from twinsched.cli import app
from twinsched.model.columns import same_scenario
from twinsched.model.document import TwinDocument
from twinsched.model.faults import FaultSpec
from twinsched.model.schema import parse_document
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.scheduling.observers import BaseObserver
from twinsched.sim import run_replay
from twinsched.sim.ksm import ksm_families
from twinsched.store import (
    import_scenario,
    list_runs,
    list_scenarios,
    load_scenario,
    scenario_info,
)
from twinsched.traces.registry import TRACES
from twinsched.twin.client import TwinClient, TwinClientError
from twinsched.twin.snapshot import SnapshotSpec, _explain, client_for

runner = CliRunner()


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinProcess]:
    with running_twin(tmp_path_factory.mktemp("twin"), TOKEN) as process:
        yield process


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store with the scenario ``s1`` (150 pods over an hour); the default store is another
    file, so a command that forgets ``--db`` does not find it."""
    monkeypatch.setenv("TWINSCHED_DB", str(tmp_path / "default.db"))
    monkeypatch.setenv("TWINSCHED_TWIN_TOKEN", TOKEN)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    options = {"pods": "150", "hours": "1", "seed": "1"}
    import_scenario("synthetic", "continuum", "s1", db=url, options=options)
    return url


def cli(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def summary(folder: Path) -> dict[str, Any]:
    (run,) = json.loads((folder / "results.json").read_text())["runs"]
    out: dict[str, Any] = run["summary"]
    return out


def replay(scenario: str, store: str, out: Path, *extra: str) -> dict[str, Any]:
    cli("run", "--scenario", scenario, "--db", store, "--mode", "replay", "--schedulers", "fgd",
        "--no-record", "--out", str(out), *extra)  # fmt: skip
    return summary(out)


def pods_of(doc: TwinDocument) -> list[Any]:
    return [p for job in doc.jobs for p in job.pods]


def nodes_of(doc: TwinDocument) -> list[Any]:
    return [n for pool in doc.nodepools for n in pool.nodes]


class MidReplay(BaseObserver):
    """At the first sample at or after ``at`` (simulated seconds): the kube-state-metrics
    exposition the VTE would serve then, and the simulator's view."""

    def __init__(self, at: float) -> None:
        self.at = at
        self.exposed = b""
        self.view: Any = None

    def on_sample(self, state: ClusterState, now: float, metrics: Any) -> None:
        if now >= self.at and not self.exposed:
            series = [
                (family.name, {k: v for k, v in labels.items() if v}, value)
                for family in ksm_families(state)
                for labels, value in family.samples()
            ]
            self.exposed, self.view = exposition(series), expected(state)


def test_a_snapshot_of_a_mirrored_session_replays_what_the_twin_held(
    store: str, tmp_path: Path
) -> None:
    full = TRACES["synthetic-continuum"][0]("3", None, 0)
    cut = replace(full, pods=full.pods.take(np.arange(150)))
    mid = MidReplay(at=2 * 3600.0)
    faults = FaultSpec(rate_per_day=4.0, mttr_s=6 * 3600.0)
    run_replay(cut, registry.create("fgd"), 0, observers=[mid], faults=faults)
    pods, down = mid.view
    phases = {phase for phase, _ in pods.values()}
    assert {"Running", "Succeeded"} <= phases and down  # a session worth mirroring
    with (
        http_server(lambda *_: (200, mid.exposed)) as exporter,
        prometheus(tmp_path, int(exporter.rsplit(":", 1)[1])) as prom,
        running_twin(tmp_path, TOKEN, "--mirror", prom, "--mirror-interval", "0.5") as twin,
    ):
        wait_for(lambda: twin_view(httpx.get(f"{twin.url}/api/v1/state").json()) == mid.view,
                 "the twin mirrors the simulator's cluster", within=60)  # fmt: skip
        output = cli("twin", "snapshot", twin.url, "--scenario", "mirrored", "--db", store)
        with TwinClient(twin.url) as client:
            held = client.get_state()
    assert twin_view(held.model_dump()) == mid.view  # unchanged while the snapshot was taken
    assert f"stored mirrored v1: {len(nodes_of(held))} nodes, {len(pods_of(held))} pods" in output
    snap = load_scenario("mirrored", store)
    meta = snap.meta["snapshot"]
    assert list(snap.nodes.names) == [n.id for n in nodes_of(held)]
    assert snap.nodes.cpu_milli.tolist() == [n.hardware.cpu_milli for n in nodes_of(held)]
    assert snap.nodes.memory_mib.tolist() == [n.hardware.memory_mib for n in nodes_of(held)]
    assert list(snap.pods.names) == [p.id for p in pods_of(held)]
    assert snap.pods.cpu_milli.tolist() == [p.requests.cpu_milli for p in pods_of(held)]
    assert snap.pods.gpu_milli.tolist() == [p.requests.gpu_milli for p in pods_of(held)]
    assert (snap.pods.arrival_s + meta["time_zero_s"]).tolist() == [
        p.timestamps.arrival_s for p in pods_of(held)
    ]
    assert meta["running"] == {p: n for p, (phase, n) in pods.items() if phase == "Running"}
    assert set(meta["down"]) == down
    result = replay("mirrored", store, tmp_path / "replay")
    assert result["pods"] == len(pods) and result["started"] == len(pods)


def test_a_snapshot_of_a_twin_fed_by_a_run_replays_what_it_held(
    twin: TwinProcess, store: str, tmp_path: Path
) -> None:
    through = replay("s1", store, tmp_path / "through", "--twin", twin.url)
    with TwinClient(twin.url) as client:
        held = client.get_state()
        cpu = client.history("cpu_util", start=max(0.0, held.timestamp - 86400),
                             end=held.timestamp, step=60)  # fmt: skip
    output = cli("twin", "snapshot", twin.url, "--scenario", "snap", "--db", store,
                 "--window", "1d")  # fmt: skip
    assert f"stored snap v1: {len(nodes_of(held))} nodes, {len(pods_of(held))} pods" in output
    snap = load_scenario("snap", store)
    zero = snap.meta["snapshot"]["time_zero_s"]
    assert list(snap.nodes.names) == [n.id for n in nodes_of(held)]
    assert snap.nodes.cpu_milli.tolist() == [n.hardware.cpu_milli for n in nodes_of(held)]
    assert snap.nodes.gpu_count.tolist() == [n.hardware.gpu_count for n in nodes_of(held)]
    assert list(snap.pods.names) == [p.id for p in pods_of(held)]
    assert snap.pods.gpu_milli.tolist() == [p.requests.gpu_milli for p in pods_of(held)]
    assert (snap.pods.arrival_s + zero).tolist() == [p.timestamps.arrival_s for p in pods_of(held)]
    # the twin held the run's scenario, so the snapshot is it, array for array ...
    assert same_scenario(load_scenario("s1", store), snap) == []
    # ... and replays as it does
    again = replay("snap", store, tmp_path / "again")
    original = replay("s1", store, tmp_path / "original")
    assert again == original and again["pods"] == len(pods_of(held)) == through["pods"]
    window = snap.meta["metrics"]
    stored = {s["node"]: s for s in window["series"] if s["metric"] == "cpu_util"}
    assert stored and len(stored) == len(cpu["series"])
    for s in cpu["series"]:
        assert [t - zero for t in s["times"]] == stored[s["node"]]["times"]
        assert s["values"] == stored[s["node"]]["values"]
    assert scenario_info("snap", store).source == "twin-snapshot"
    # train and sweep read it too
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(
        "[clone]\nepochs = 0\nprior = { fgd_score = 100 }\n"
        "[gates]\nseeds = [0]\nwidths = [2]\nmin_variants = 1\ndepth = 1\n"
    )
    trained = cli("train", "--recipe", str(recipe), "--scenario", "snap", "--db", store,
                  "--workers", "1", "--out", str(tmp_path / "train"),
                  "--models-dir", str(tmp_path / "models"))  # fmt: skip
    assert '"snap"' in (tmp_path / "train" / "spec.json").read_text(), trained
    spec = tmp_path / "sweep.toml"
    spec.write_text('name = "snap"\ntraces = ["store/snap"]\nschedulers = ["fgd"]\n'
                    'mode = "replay"\n')  # fmt: skip
    assert "1 cells run and stored" in cli("sweep", "run", str(spec), "--db", store)
    (run,) = list_runs(store)
    assert run.spec["variant"] == "snap" and run.result is not None
    assert run.result.summary["pods"] == again["pods"]


def epoch_document(t0: float) -> TwinDocument:
    """A cluster as a mirror shows it: epoch times, pods in three phases, a node down (n2)
    and one cordoned (g1)."""
    hw = {"cpu_milli": 8000, "memory_mib": 16384}
    ask = {"cpu_milli": 500, "memory_mib": 512}
    return parse_document({
        "timestamp": t0,
        "nodepools": [
            {"id": "edge", "labels": {"tier": "edge"},
             "nodes": [{"id": "n1", "hardware": hw},
                       {"id": "n2", "hardware": hw, "status": "NotReady"}]},
            {"id": "cloud", "nodes": [{"id": "g1", "unschedulable": True,
                                       "hardware": {**hw, "gpu_count": 2, "gpu_model": "A100"}}]},
        ],
        "networks": [{"source": "edge", "target": "cloud", "latency_ms": 20,
                      "bandwidth_mbps": 1000}],
        "jobs": [{"id": "web", "pods": [
            {"id": "p1", "requests": ask, "phase": "Running", "node": "n1",
             "timestamps": {"arrival_s": t0 - 600, "start_s": t0 - 590}},
            {"id": "p2", "requests": {**ask, "gpu_count": 1, "gpu_milli": 1000}, "phase": "Pending",
             "timestamps": {"arrival_s": t0 - 100}},
            {"id": "p3", "requests": ask, "phase": "Succeeded",
             "timestamps": {"arrival_s": t0 - 5000, "duration_s": 300}},
        ]}],
    })  # fmt: skip


def test_a_mirrored_state_keeps_its_clock_provenance_and_window(
    twin: TwinProcess, store: str, tmp_path: Path
) -> None:
    t0 = float(int(time.time()) - 7200)
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(epoch_document(t0))
        client.patch(t0 + 60, [
            {"op": "metrics", "node": "n1", "time": t0 + 30, "values": {"cpu_util": 0.5}},
            {"op": "metrics", "node": "n2", "values": {"cpu_util": 0.25, "up": 0.0}},
        ])  # fmt: skip
        held = client.get_state()
    output = cli("twin", "snapshot", twin.url, "--scenario", "mirror", "--db", store,
                 "--step", "0", "--every", "1s", "--count", "2")  # fmt: skip
    lines = output.splitlines()
    assert "stored mirror v1: 3 nodes, 3 pods (Pending 1, Running 1, Succeeded 1)" in lines[0]
    assert "unchanged; nothing stored" in lines[1] and lines[2] == "done: 1 stored, mirror v1..v1"
    snap = load_scenario("mirror", store)
    meta = snap.meta["snapshot"]
    zero = meta["time_zero_s"]
    assert zero == min(t0 - 5000, held.timestamp - 3600) == t0 - 5000
    assert (snap.pods.arrival_s + zero).tolist() == [t0 - 600, t0 - 100, t0 - 5000]
    assert meta["phases"] == {"Pending": 1, "Running": 1, "Succeeded": 1}
    assert meta["running"] == {"p1": "n1"} and meta["down"] == ["n2"]
    assert meta["cordoned"] == ["g1"] and meta["twin_time_s"] == held.timestamp == t0 + 60
    series = {(s["node"], s["metric"]): s for s in snap.meta["metrics"]["series"]}
    assert set(series) == {("n1", "cpu_util"), ("n2", "cpu_util"), ("n2", "up")}
    assert series["n1", "cpu_util"]["times"] == [t0 + 30 - zero]
    assert series["n2", "cpu_util"] == {"node": "n2", "metric": "cpu_util",
                                        "times": [t0 + 60 - zero], "values": [0.25]}  # fmt: skip
    assert snap.meta["metrics"]["agg"] == "raw"
    assert replay("mirror", store, tmp_path / "replay")["pods"] == 3


def _as_from_a_terminal() -> None:
    """In the child before exec: SIGINT and SIGTERM at their defaults and not blocked, as for a
    command started from a shell (a test worker's ignored or blocked signals are inherited:
    one full run saw a snapshot loop go on through SIGINT)."""
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _start(store: str, url: str, *extra: str) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "twinsched.cli", "twin", "snapshot", url, "--scenario", "live",
            "--db", store, *extra]  # fmt: skip
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ}, preexec_fn=_as_from_a_terminal)  # fmt: skip


def _line_with(process: subprocess.Popen[str], words: str, timeout: float = 60.0) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        seen.append(line.rstrip("\n"))
        if words in line:
            return seen
    raise AssertionError(f"no line with {words!r}: {seen}")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_every_repeats_with_new_versions_and_stops_cleanly(
    twin: TwinProcess, store: str, stop: signal.Signals
) -> None:
    t0 = float(int(time.time()) - 7200)
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(epoch_document(t0))
        process = _start(store, twin.url, "--every", "1s")
        try:
            _line_with(process, "stored live v1")
            client.patch(t0 + 5, [{"op": "node", "node": "n2", "status": "Ready"}])
            _line_with(process, "stored live v2")
            process.send_signal(stop)
            rest, _ = process.communicate(timeout=30)
        finally:
            process.kill()  # a test that failed leaves no process behind (no-op once ended)
            process.wait()
    assert process.returncode == 0, rest
    last = rest.strip().splitlines()[-1]
    assert last.startswith("stopped after") and last.endswith("stored, live v1..v2"), rest
    info = scenario_info("live", store)
    assert info.version == 2 and info.meta["snapshot"]["down"] == []
    assert load_scenario("live", store).nodes.n == 3


def test_a_scenario_from_elsewhere_is_not_overwritten(twin: TwinProcess, store: str) -> None:
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(epoch_document(float(int(time.time()))))
    before = scenario_info("s1", store)
    result = runner.invoke(app, ["twin", "snapshot", twin.url, "--scenario", "s1", "--db", store])
    assert result.exit_code == 2 and "stored already from synthetic" in result.output
    assert scenario_info("s1", store) == before
    output = cli("twin", "snapshot", twin.url, "--scenario", "s1", "--db", store, "--replace")
    assert "stored s1 v2: 3 nodes, 3 pods" in output


def test_a_twin_without_nodes_stores_nothing(twin: TwinProcess, store: str) -> None:
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(parse_document({"timestamp": 5.0}))
    args = ["twin", "snapshot", twin.url, "--scenario", "empty", "--db", store]
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and "holds no node yet; nothing stored" in result.output
    result = runner.invoke(app, [*args, "--every", "1s", "--count", "2"])
    assert result.exit_code == 0 and result.output.count("holds no node yet") == 2
    assert "done: no version stored" in result.output
    assert [i.name for i in list_scenarios(store)] == ["s1"]


def test_bad_starts_are_one_line_and_store_nothing(store: str) -> None:
    before = list_scenarios(store)
    url = f"http://127.0.0.1:{free_port()}"
    cases = {
        ("--every", "0s"): "outside the accepted range 1s..7d",
        ("--every", "soon"): "a duration looks like 90, 30s, 10m, 1h30m or 2d",
        ("--count", "2"): "--count needs --every",
        ("--session", "0"): "outside the accepted range 1..9223372036854775807",
        ("--session", "live"): "is not an integer",
        ("--window", "400d"): "outside the accepted range 0..365d",
        (): "cannot be reached",
        ("--every", "1s", "--count", "3"): "cannot be reached",
    }
    for extra, words in cases.items():
        args = ["twin", "snapshot", url, "--scenario", "x", "--db", store, *extra]
        result = runner.invoke(app, args)
        said = " ".join(re.sub("[│╭╮╰╯─]", " ", result.output).split())  # out of rich's box
        assert result.exit_code == 2 and words in said, (extra, said)
        assert "Traceback" not in result.output
    assert list_scenarios(store) == before


def test_the_session_rides_on_every_request_and_a_refusal_is_explained() -> None:
    spec = SnapshotSpec("http://twin:8181", "snap", session=7)
    client = client_for(spec)
    try:
        request = client._http.build_request("GET", "/history", params={"metric": "cpu_util"})
    finally:
        client.close()
    assert request.url.params["session"] == "7"
    assert request.url.params["metric"] == "cpu_util"
    for status, detail in ((404, "unknown session 7 (sessions: 1, 2)"),
                           (422, "query.session: must be an integer")):  # fmt: skip
        text = _explain(spec, TwinClientError(status, detail))
        assert f"refused session 7 ({status}: {detail})" in text and "without --session" in text
    other = _explain(spec, TwinClientError(422, "query.metric: must match the id pattern"))
    assert other.endswith("answered 422: query.metric: must match the id pattern")
    plain = SnapshotSpec("http://twin:8181", "snap")
    assert "answered 404" in _explain(plain, TwinClientError(404, "no state yet"))
