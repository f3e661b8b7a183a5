"""Live metrics into the twin (issue 20): a replay with faults over HTTP, through a real twin
process of its own (its history holds this run only), leaves every node's metrics in the
twin's history at every sample, and the twin's ``/nodes`` shows each failed node down exactly
while it is down."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np
import pytest

from tests.twin.process import TwinProcess, running_twin
from twinsched.model.events import Event, NodeDown, NodeUp
from twinsched.model.faults import FaultSpec, NodeFault
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import RunContext
from twinsched.scheduling.observers import BaseObserver
from twinsched.sim import run_replay
from twinsched.traces import registry as traces
from twinsched.twin.client import TwinClient
from twinsched.twin.loop import TwinLoop

TOKEN = "live-metrics-token-0123456789abcdef"
EVERY = 900.0
DOWN = {"edge-000": (1000.0, 4000.0), "hpc-015": (5000.0, 6500.0)}  # node: (down, up) s
METRICS = (
    "cpu_util", "memory_util", "gpu_util", "gpu_allocated", "pods_running", "up", "power_w"
)  # fmt: skip


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinProcess]:
    with running_twin(tmp_path_factory.mktemp("twin"), TOKEN) as process:
        yield process


class NodesWatch(BaseObserver):
    """After the publisher, at every node going down or up: what the twin's /nodes says."""

    def __init__(self, client: TwinClient) -> None:
        self.client = client
        self.seen: list[tuple[float, dict[str, str], dict[str, str]]] = []
        self._ctx: RunContext | None = None

    def on_start(self, state: ClusterState, ctx: RunContext) -> None:
        self._ctx = ctx

    def on_events(self, state: ClusterState, events: Sequence[Event]) -> None:
        if not any(isinstance(e, NodeDown | NodeUp) for e in events):
            return
        assert self._ctx is not None and self._ctx.clock is not None
        twin = {n["id"]: n["status"] for n in self.client.nodes()}
        ours = {
            name: "Ready" if up else "NotReady"
            for name, up in zip(state.nodes.names, state.up.tolist(), strict=True)
        }
        self.seen.append((self._ctx.clock(), twin, ours))


def test_a_replay_with_faults_fills_the_twins_history_and_node_conditions(
    twin: TwinProcess,
) -> None:
    full = traces.load("synthetic-continuum", "5")
    first = np.argsort(full.pods.arrival_s, kind="stable")[:120]
    scenario = replace(full, pods=full.pods.take(np.sort(first)))
    faults = FaultSpec(
        faults=tuple(NodeFault(node=n, down_s=a, for_s=b - a) for n, (a, b) in DOWN.items())
    )
    local = run_replay(scenario, "bestfit", 0, sample_every_s=EVERY, faults=faults)
    with TwinClient(twin.url, TOKEN) as client:
        loop = TwinLoop(client)
        watch = NodesWatch(client)
        remote = run_replay(
            scenario, "bestfit", 0, sample_every_s=EVERY, faults=faults,
            observers=[loop, watch],
        )  # fmt: skip
        history = {m: client.history(m)["series"] for m in METRICS}
        at = {t: client.get_state(at=t) for t in (2000.0, 4500.0, 6000.0)}
    assert remote.summary == local.summary and remote.summary["node_failures"] == 2
    assert loop.disagreements == {} and loop.pulls == 0  # the twin held what the run sent

    # /nodes during the run: each failure and recovery, at its time, as the run has it
    assert [round(t) for t, _, _ in watch.seen] == [1000, 4000, 5000, 6500]
    for _, twin_nodes, ours in watch.seen:
        assert twin_nodes == ours
    assert watch.seen[0][1]["edge-000"] == "NotReady" and watch.seen[1][1]["edge-000"] == "Ready"

    # the history: every node, every metric, at every sample time, the same values as the run
    times = [s["time_s"] for s in local.samples]
    assert len(times) == 12 and loop.publisher.samples == len(times)
    nodes = scenario.nodes
    gpu_nodes = [n for n, c in zip(nodes.names, nodes.gpu_count.tolist(), strict=True) if c]
    for metric, series in history.items():
        want = gpu_nodes if metric == "gpu_util" else nodes.names  # GPU-less nodes: none
        assert sorted(s["node"] for s in series) == sorted(want), metric
        for s in series:
            assert s["times"] == times, (metric, s["node"])
    up = {s["node"]: s["values"] for s in history["up"]}
    for node, (down, back) in DOWN.items():
        assert up[node] == [0.0 if down <= t < back else 1.0 for t in times]
    assert all(v == [1.0] * len(times) for n, v in up.items() if n not in DOWN)
    total_w = np.sum([s["values"] for s in history["power_w"]], axis=0)
    np.testing.assert_allclose(total_w, [s["power_w"] for s in local.samples], atol=0.1)
    for s in history["cpu_util"]:
        assert all(0.0 <= v <= 1.0 for v in s["values"])

    # the twin's state at past times shows the node conditions of those times
    def status(t: float, node: str) -> str:
        return next(n.status for p in at[t].nodepools for n in p.nodes if n.id == node)

    assert (status(2000.0, "edge-000"), status(4500.0, "edge-000")) == ("NotReady", "Ready")
    assert (status(4500.0, "hpc-015"), status(6000.0, "hpc-015")) == ("Ready", "NotReady")
