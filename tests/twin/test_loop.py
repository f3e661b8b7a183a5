"""The loop over HTTP: decisions made on state pulled from a real twin equal the in-process run."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.twin.process import TwinProcess, running_twin
from twinsched.cli import app
from twinsched.model.state import ClusterState
from twinsched.scheduling.framework import RunContext
from twinsched.scheduling.observers import BaseObserver
from twinsched.sim import run_fillup, run_replay
from twinsched.traces import registry as traces
from twinsched.twin.client import TwinClient
from twinsched.twin.loop import TwinLoop
from twinsched.twin.publisher import unique_pod_names

TOKEN = "loop-test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinProcess]:
    with running_twin(tmp_path_factory.mktemp("twin"), TOKEN) as process:
        yield process


@pytest.mark.parametrize("scheduler", ["fgd", "leastallocated+labels"])
def test_fillup_over_http_equals_in_process(twin: TwinProcess, scheduler: str) -> None:
    scenario = traces.load("synthetic-continuum", "3")
    local = run_fillup(scenario, scheduler, 1, target_pct=20)
    with TwinClient(twin.url, TOKEN) as client:
        loop = TwinLoop(client, verify=True)  # read back before every decision
        remote = run_fillup(scenario, scheduler, 1, target_pct=20, observers=[loop])
        pods = client.pods()
    assert remote.curve == local.curve
    assert remote.summary == local.summary
    assert loop.pulls >= local.summary["pods"]  # every decision compared the twin's view
    assert loop.disagreements == {}  # ... and it was the run's
    running = sum(1 for p in pods if p["phase"] == "Running")  # the twin saw the final state
    assert running == local.summary["pods"] - local.summary["unscheduled"]


def test_replay_over_http_equals_in_process(twin: TwinProcess) -> None:
    full = traces.load("synthetic-continuum", "5")
    first = np.argsort(full.pods.arrival_s, kind="stable")[:120]
    scenario = replace(full, pods=full.pods.take(np.sort(first)))
    local = run_replay(scenario, "bestfit", 0)
    with TwinClient(twin.url, TOKEN) as client:
        loop = TwinLoop(client, verify=True)
        remote = run_replay(scenario, "bestfit", 0, observers=[loop])
    assert remote.curve == local.curve and remote.summary == local.summary
    assert loop.disagreements == {} and loop.pulls > 0


def test_run_command_takes_a_twin_url(
    twin: TwinProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWINSCHED_TWIN_TOKEN", TOKEN)
    args = ["run", "--trace", "synthetic-continuum", "--variant", "3", "--schedulers", "fgd",
            "--target", "30", "--seeds", "1", "--no-record"]  # fmt: skip
    via_twin = CliRunner().invoke(app, [*args, "--twin", twin.url, "--out", str(tmp_path / "a")])
    assert via_twin.exit_code == 0, via_twin.output
    local = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert local.exit_code == 0, local.output
    a = (tmp_path / "a" / "curves" / "fgd_seed1.csv").read_text()
    assert a == (tmp_path / "b" / "curves" / "fgd_seed1.csv").read_text()


class Interference(BaseObserver):
    """Records where each pod was bound, in decision order; with a client, right after the
    ``at``-th decision another writer marks ``node`` NotReady in the twin and says the first
    pod bound there finished."""

    def __init__(self, client: TwinClient | None = None, at: int = 0, node: str = "") -> None:
        self.client, self.at, self.node = client, at, node
        self.bound: list[tuple[int, int]] = []
        self.state: ClusterState | None = None

    def on_start(self, state: ClusterState, ctx: RunContext) -> None:
        self.state = state

    def on_decision(self, pod: int, scheduler: str, fallback: bool) -> None:
        assert self.state is not None
        self.bound.append((pod, int(self.state.pod_node[pod])))
        if self.client is None or len(self.bound) != self.at:
            return
        first = self.bound[0][0]
        names, node = unique_pod_names(self.state.pods.names), self.state.pod_node[first]
        now = self.client.get_state().timestamp
        self.client.patch(now, [
            {"op": "node", "node": self.node, "status": "NotReady"},
            {"op": "pod", "pod": names[first], "phase": "Succeeded",
             "node": self.state.nodes.names[node], "gpus": []},
        ])  # fmt: skip


def test_the_twins_node_status_reaches_the_run_and_pod_differences_are_counted(
    twin: TwinProcess,
) -> None:
    scenario = traces.load("synthetic-continuum", "3")
    at = 20
    local = Interference()
    run_fillup(scenario, "fgd", 1, target_pct=40, observers=[local])
    later = [node for _, node in local.bound[at + 1 :]]
    busiest = max(set(later), key=later.count)  # in process, later pods go there
    name = scenario.nodes.names[busiest]
    with TwinClient(twin.url, TOKEN) as client, TwinClient(twin.url, TOKEN) as other:
        writer = Interference(other, at, name)
        loop = TwinLoop(client, batch=1)  # a write before every decision
        run_fillup(scenario, "fgd", 1, target_pct=40, observers=[writer, loop])
    # the mask of decision at + 1 was computed before its observers were fed: from at + 2 on
    assert busiest not in [node for _, node in writer.bound[at + 1 :]]
    assert writer.state is not None and not writer.state.up[busiest]
    stats = loop.stats()
    assert stats["twin_foreign_writes"] == 1  # read back only then, and only the changes
    assert loop.follows == 1 and loop.pulls == 0
    assert loop.disagreements == {"pod_differs": 1}  # counted, not applied
    assert stats["disagreements"]["recent"][0]["detail"].startswith("twin SUCCEEDED")
