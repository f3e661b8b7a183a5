"""End to end, real processes: VTE exporter (kube-state-metrics format) -> Debian's Prometheus
-> ``twin serve --mirror`` (a subprocess, killed -9 midway and restarted).

The VTE replays a cut of ``synthetic-continuum`` with node failures on the wall clock; every
scrape records the simulator's pods (phase, node) and down nodes, and exposes its number
(``twinsched_test_scrape``), so Prometheus says which scrapes it took in and when. One
scrape of lag allowed, checked two ways:

* every state read from the twin while the replay runs equals the simulator's at the last
  scrape taken in before the read began, or at the one before it, or at a later one
  already taken in;
* at the time of every scrape, the twin's state (``GET /state?at=``) equals the
  simulator's at the previous scrape or the one before it.

The state acknowledged before the kill is there after the restart, and the restarted mirror
adds no pod twice (the twin's change log holds one ``pod_add`` per pod), replaces no
document and goes on in the mirror's one session. Needs the ``prometheus`` binary (fails,
never skips, without it).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from bisect import bisect_right
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from tests.twin.conftest import TOKEN
from tests.twin.process import TwinProcess
from tests.twin.test_prometheus_chain import prometheus
from twinsched.metrics.exposition import Family
from twinsched.model.cluster import Scenario
from twinsched.model.events import Phase
from twinsched.model.faults import FaultSpec
from twinsched.model.state import ClusterState
from twinsched.scheduling import registry
from twinsched.sim import run_replay
from twinsched.sim.exporter import LiveState, MetricsExporter, PacedClock
from twinsched.traces.registry import TRACES

PODS = 400
SPEED = 3000.0  # simulated seconds per wall second: the cut's 86,400 s in about 29 s
KILL_AFTER_S = 8.0  # the twin is killed then; its restart takes 3 to 15 s (machine load)
MIRROR_INTERVAL = "0.5"  # seconds; Prometheus scrapes every second
SCRAPE = "twinsched_test_scrape"
PHASE = {Phase.PENDING: "Pending", Phase.RUNNING: "Running", Phase.SUCCEEDED: "Succeeded",
         Phase.UNSCHEDULABLE: "Succeeded"}  # fmt: skip
View = tuple[dict[str, tuple[str, str | None]], frozenset[str]]
Read = tuple[float, float, View]  # wall time before the GET, after it, the twin's view


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
    """A live state that records the simulator's view at every scrape and numbers it."""

    def __init__(self) -> None:
        super().__init__(format="kube-state-metrics")
        self.lock = threading.RLock()  # type: ignore[assignment]  # families() re-enters it
        self.scrapes: list[View] = []

    def families(self) -> list[Any]:
        with self.lock:
            out = super().families()
            if self.state is not None:
                self.scrapes.append(expected(self.state))
                number = np.asarray([len(self.scrapes) - 1], dtype=np.float64)
                out.append(Family(SCRAPE, "The scrape's number.", (), ((),), number))
            return out


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


Taken = tuple[float, float, int]  # a scrape's time, when Prometheus had it all, its number


def taken_in(prom: str) -> list[Taken]:
    """Every scrape Prometheus took in, in time order: its time (when it began), the time
    it was taken in (plus ``scrape_duration_seconds``: the VTE answers slowly on a loaded
    machine) and its number."""

    def series(query: str) -> dict[float, float]:
        answer = httpx.get(f"{prom}/api/v1/query", params={"query": query}, timeout=10)
        (found,) = answer.json()["data"]["result"]
        return {float(t): float(v) for t, v in found["values"]}

    numbers = series(f"{SCRAPE}[10m]")
    durations = series('scrape_duration_seconds{job="vte"}[10m]')
    return [(t, t + durations[t], int(n)) for t, n in sorted(numbers.items())]


def read_until(twin: TwinProcess, stop: threading.Event, until: float, reads: list[Read]) -> None:
    while not stop.is_set() and time.monotonic() < until:
        before = time.time()
        doc = httpx.get(f"{twin.url}/api/v1/state", timeout=10).json()
        if doc["jobs"]:
            reads.append((before, time.time(), twin_view(doc)))
        time.sleep(0.25)


def polls(twin: TwinProcess) -> float:
    """The mirror's polls that worked (a failed one, Prometheus slow on a loaded machine,
    leaves the twin at what it restored)."""
    text = httpx.get(f"{twin.url}/metrics", timeout=10).text

    def counter(name: str) -> float:
        line = next(x for x in text.splitlines() if x.startswith(f"twinsched_twin_{name}_total"))
        return float(line.rsplit(" ", 1)[1])

    return counter("mirror_polls") - counter("mirror_failed_polls")


def check_reads(reads: list[Read], scrapes: list[View], taken: list[Taken]) -> None:
    """Each read equals the scrape Prometheus had last when the read began, the one before
    it (one scrape of lag), or a later one Prometheus had by the read's end."""
    had = [t for _, t, _ in taken]
    for before, after, view in reads:
        last = bisect_right(had, before) - 1
        allowed = [n for _, _, n in taken[max(last - 1, 0) : bisect_right(had, after)]]
        same = [t for t in taken if scrapes[t[2]] == view]
        assert any(scrapes[n] == view for n in allowed), (before, allowed, same[-2:])


def check_history(twin: TwinProcess, scrapes: list[View], taken: list[Taken],
                  skip: tuple[float, float], kill: float) -> Counter[bool]:  # fmt: skip
    """At each scrape's time (out of ``skip``, the twin down), the twin showed the previous
    scrape or the one before; the scrapes checked before the ``kill`` (True) and after."""
    checked: Counter[bool] = Counter()
    for k in range(2, len(taken)):
        at = taken[k][0]
        if skip[0] <= at <= skip[1]:
            continue
        answer = httpx.get(f"{twin.url}/api/v1/state", params={"at": at}, timeout=10).json()
        view = twin_view(answer)
        assert view in (scrapes[taken[k - 1][2]], scrapes[taken[k - 2][2]]), at
        checked[at < kill] += 1
    return checked


def changes(db: Path) -> tuple[list[str], int]:
    """The pod ids of every ``pod_add`` the twin recorded, and its stored documents."""
    with sqlite3.connect(db) as conn:
        bodies = [row[0] for row in conn.execute("select body from twin_changes")]
        documents = conn.execute("select count(*) from twin_snapshots").fetchone()[0]
    added = [d["pod"]["id"] for body in bodies for d in json.loads(body)["deltas"]
             if d["op"] == "pod_add"]  # fmt: skip
    return added, documents


def test_the_twin_mirrors_the_vte_through_prometheus(tmp_path: Path) -> None:
    sc, live, done = scenario(), RecordingLive(), threading.Event()
    db = tmp_path / "twin.db"
    extra = ("--mirror-interval", MIRROR_INTERVAL)
    reads: list[Read] = []
    with MetricsExporter(live) as exporter, prometheus(tmp_path, exporter.port) as prom:
        twin = TwinProcess(f"sqlite:///{db}", TOKEN, tmp_path / "twin.log", "--mirror", prom,
                           *extra)  # fmt: skip
        twin.wait_ready()
        runner = threading.Thread(target=replay, args=(live, sc, done), daemon=True)
        runner.start()
        read_until(twin, done, time.monotonic() + KILL_AFTER_S, reads)
        enough = time.monotonic() + 30  # a loaded machine scrapes late: wait for 8 scrapes
        while len(taken_in(prom)) < 8 and time.monotonic() < enough:
            read_until(twin, done, time.monotonic() + 1.0, reads)
        acknowledged = httpx.get(f"{twin.url}/api/v1/state", timeout=10).json()
        killed = time.time()
        twin.kill()
        twin = TwinProcess(f"sqlite:///{db}", TOKEN, tmp_path / "twin.log", "--mirror", prom,
                           *extra)  # fmt: skip
        try:
            twin.wait_ready()
            at = acknowledged["timestamp"]
            past = httpx.get(f"{twin.url}/api/v1/state", params={"at": at}, timeout=10).json()
            assert twin_view(past) == twin_view(acknowledged)  # nothing acknowledged lost
            while polls(twin) < 1:
                time.sleep(0.05)
            resumed = time.time()
            read_until(twin, done, time.monotonic() + 60, reads)
            assert done.is_set(), "the replay did not end"
            assert live.state is not None
            want, deadline = expected(live.state), time.monotonic() + 10
            final = twin_view(httpx.get(f"{twin.url}/api/v1/state", timeout=10).json())
            while final != want and time.monotonic() < deadline:
                time.sleep(0.25)
                final = twin_view(httpx.get(f"{twin.url}/api/v1/state", timeout=10).json())
            taken = taken_in(prom)
            checked = check_history(twin, live.scrapes, taken, (killed, resumed + 1.0), killed)
            metrics = httpx.get(f"{twin.url}/metrics", timeout=10).text
            sessions = httpx.get(f"{twin.url}/api/v1/sessions", timeout=10).json()["sessions"]
        finally:
            twin.stop()
    assert final == want and len(final[0]) == PODS
    check_reads([r for r in reads if not killed <= r[0] <= resumed], live.scrapes, taken)
    downs = {n for _, _, (_, down) in reads for n in down}
    sides = Counter(r[0] < killed for r in reads)
    assert min(sides[True], sides[False], checked[True], checked[False]) >= 4, (sides, checked)
    assert downs  # node failures mirrored
    added, documents = changes(db)
    assert sorted(added) == sorted(final[0]) and documents == 1  # no pod twice, no new PUT
    assert [x["source"] for x in sessions] == [f"mirror {prom}"]  # one session, restart or not
    refused = [line for line in metrics.splitlines()
               if line.startswith("twinsched_twin_mirror_rejected_total{")]  # fmt: skip
    # No series refused, no poll failed. A poll that found no kube_node_info at all (a
    # scrape of the VTE that timed out on the loaded machine: Prometheus marks its series
    # stale) is a monitoring gap the mirror skips, counted as no_series.
    assert all('reason="no_series"' in line for line in refused), refused
