"""End to end, real processes: VTE exporter (kube-state-metrics format) -> Debian's Prometheus
-> ``twin serve --mirror`` (a subprocess, killed -9 midway and restarted).

The VTE replays a cut of ``synthetic-continuum`` with node failures on the wall clock; every
scrape records the simulator's pods (phase, node) and down nodes. Every twin state read
while the replay runs must equal the simulator's at one of the scrapes just before its
time (one scrape of lag allowed), and the state the twin acknowledged before the kill is
there after the restart. Needs the ``prometheus`` binary (fails, never skips, without it).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from tests.twin.conftest import TOKEN
from tests.twin.process import TwinProcess
from tests.twin.test_prometheus_chain import prometheus
from twinsched.model.cluster import Scenario
from twinsched.model.events import Phase
from twinsched.model.faults import FaultSpec
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.sim import run_replay
from twinsched.sim.exporter import LiveState, MetricsExporter, PacedClock
from twinsched.traces.registry import TRACES

PODS = 400
SPEED = 4000.0  # simulated seconds per wall second: the cut's 86,400 s in about 25 s
PHASE = {Phase.PENDING: "Pending", Phase.RUNNING: "Running", Phase.SUCCEEDED: "Succeeded",
         Phase.UNSCHEDULABLE: "Succeeded"}  # fmt: skip
View = tuple[dict[str, tuple[str, str | None]], frozenset[str]]


def expected(state: ClusterState) -> View:
    """The simulator's pods (twin phase, node while running) and down nodes."""
    names = state.nodes.names
    pods = {}
    for i in np.flatnonzero(state.phase != Phase.NOT_ARRIVED).tolist():
        phase = Phase(int(state.phase[i]))
        node = names[state.pod_node[i]] if phase == Phase.RUNNING else None
        pods[state.pods.names[i]] = (PHASE[phase], node)
    down = frozenset(n for n, up in zip(names, state.up.tolist(), strict=True) if not up)
    return pods, down


def twin_view(doc: dict[str, Any]) -> View:
    pods = {p["id"]: (p["phase"], p["node"]) for j in doc["jobs"] for p in j["pods"]}
    down = frozenset(n["id"] for p in doc["nodepools"] for n in p["nodes"]
                     if n["status"] == "NotReady")  # fmt: skip
    return pods, down


class RecordingLive(LiveState):
    """A live state that records, at every scrape, the simulator's view and the wall time."""

    def __init__(self) -> None:
        super().__init__(format="kube-state-metrics")
        self.lock = threading.RLock()  # type: ignore[assignment]  # families() re-enters it
        self.scrapes: list[tuple[float, View]] = []

    def families(self) -> list[Any]:
        with self.lock:
            if self.state is not None:
                self.scrapes.append((time.time(), expected(self.state)))
            return super().families()


def scenario() -> Scenario:
    full = TRACES["synthetic-continuum"][0]("3", None, 0)
    pods = full.pods.take(np.arange(PODS))
    return Scenario(full.name, full.nodes, pods, full.links, full.labels, full.meta)


def replay(live: RecordingLive, sc: Scenario, done: threading.Event) -> None:
    faults = FaultSpec(rate_per_day=3.0, mttr_s=3600.0)
    try:
        with live.running():
            clock = PacedClock(live, speed=SPEED)
            run_replay(sc, registry.create("fgd"), 0, clock=clock, observers=[live], faults=faults)
    finally:
        done.set()


LAG_S = 10.0  # a scrape that times out on the loaded 2-core machine leaves an older sample


def matches(view: View, at: float, scrapes: list[tuple[float, View]], after: int) -> int:
    """The index of the latest scrape, from ``after`` on and at most ``LAG_S`` before ``at``,
    whose view is ``view`` (-1: none), so the twin never goes back in the simulator's time."""
    for k in range(len(scrapes) - 1, after - 1, -1):
        t, v = scrapes[k]
        if at - LAG_S <= t <= at + 0.5 and v == view:
            return k
    return -1


def check_until(twin: TwinProcess, live: RecordingLive, stop: threading.Event,
                seen: dict[float, View], until: float) -> None:  # fmt: skip
    """Read the twin's state until ``stop`` or ``until``; every new state must match."""
    last = 0
    while not stop.is_set() and time.monotonic() < until:
        doc = httpx.get(f"{twin.url}/api/v1/state", timeout=10).json()
        at = doc["timestamp"]
        if at not in seen and doc["jobs"]:
            view = twin_view(doc)
            found = matches(view, at, list(live.scrapes), last)
            assert found >= 0, f"twin at {at} matches no scrape since the last matched"
            seen[at], last = view, found
        time.sleep(0.3)


def test_the_twin_mirrors_the_vte_through_prometheus(tmp_path: Path) -> None:
    sc = scenario()
    live = RecordingLive()
    done = threading.Event()
    db = f"sqlite:///{tmp_path / 'twin.db'}"
    with MetricsExporter(live) as exporter, prometheus(tmp_path, exporter.port) as prom:
        extra = ("--mirror", prom, "--mirror-interval", "1")
        twin = TwinProcess(db, TOKEN, tmp_path / "twin.log", *extra)
        twin.wait_ready()
        runner = threading.Thread(target=replay, args=(live, sc, done), daemon=True)
        runner.start()
        seen: dict[float, View] = {}
        check_until(twin, live, done, seen, time.monotonic() + 12)
        acknowledged = httpx.get(f"{twin.url}/api/v1/state", timeout=10).json()
        twin.kill()
        twin = TwinProcess(db, TOKEN, tmp_path / "twin.log", *extra)
        try:
            twin.wait_ready()
            at = acknowledged["timestamp"]
            past = httpx.get(f"{twin.url}/api/v1/state", params={"at": at}, timeout=10).json()
            assert twin_view(past) == twin_view(acknowledged)  # nothing acknowledged lost
            check_until(twin, live, done, seen, time.monotonic() + 60)
            assert done.is_set(), "the replay did not end"
            assert live.state is not None
            want, deadline = expected(live.state), time.monotonic() + 15
            final = ({}, frozenset())  # the last scrape, then the mirror's lag and interval
            while final != want and time.monotonic() < deadline:
                time.sleep(0.5)
                final = twin_view(httpx.get(f"{twin.url}/api/v1/state", timeout=10).json())
            metrics = httpx.get(f"{twin.url}/metrics", timeout=10).text
        finally:
            twin.stop()
    assert final == want
    assert len(final[0]) == PODS
    downs = {n for _, (_, down) in seen.items() for n in down}
    assert len(seen) >= 8 and downs, (len(seen), downs)  # many intervals, failures seen
    # No series was refused. A poll that found no kube_node_info at all (the VTE's target
    # between scrapes, or gone once the replay ended) is a monitoring gap the mirror
    # rightly skips (counted as no_series), never a node or pod refused.
    refused = [line for line in metrics.splitlines()
               if line.startswith("twinsched_twin_mirror_rejected_total{")]  # fmt: skip
    assert all('reason="no_series"' in line for line in refused), refused
