"""Two replays fed into one real twin process through their publishers (``run --twin``):
each is a session of its own, and each session's history is exactly its run's samples, so
"last" comes from the right run and the charts never saw-tooth between two runs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from tests.twin.process import TwinProcess, running_twin
from twinsched.model.cluster import Scenario
from twinsched.model.state import ClusterState
from twinsched.scheduling.observers import BaseObserver, NodeMetrics
from twinsched.sim import run_replay
from twinsched.traces import registry as traces
from twinsched.twin.client import TwinClient
from twinsched.twin.loop import TwinLoop

TOKEN = "sessions-runs-token-0123456789abcdef"
EVERY = 900.0
NODE = "edge-000"


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinProcess]:
    with running_twin(tmp_path_factory.mktemp("twin"), TOKEN) as process:
        yield process


class Samples(BaseObserver):
    """The run's own samples of one node's ``pods_running``."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.values: list[float] = []

    def on_sample(self, state: ClusterState, now: float, metrics: NodeMetrics) -> None:
        self.times.append(now)
        self.values.append(float(metrics["pods_running"][state.nodes.names.index(NODE)]))


def _cut(pods: int) -> Scenario:
    full = traces.load("synthetic-continuum", "5")
    first = np.argsort(full.pods.arrival_s, kind="stable")[:pods]
    return replace(full, pods=full.pods.take(np.sort(first)))


def test_two_runs_into_one_twin_are_two_sessions_with_their_own_history(
    twin: TwinProcess,
) -> None:
    runs = []
    with TwinClient(twin.url, TOKEN) as client:
        for scheduler, pods in (("bestfit", 120), ("firstfit", 60)):
            seen = Samples()
            run_replay(_cut(pods), scheduler, 0, sample_every_s=EVERY,
                       observers=[TwinLoop(client), seen])  # fmt: skip
            runs.append(seen)
        sessions = client.sessions()
        first, second = (s["id"] for s in sessions["sessions"][-2:])
        assert sessions["live"] == second
        assert [s["timebase"] for s in sessions["sessions"][-2:]] == ["simulated"] * 2
        assert all(s["source"].startswith("run ") for s in sessions["sessions"][-2:])
        shown = {
            number: client.history("pods_running", node=NODE, session=number)["series"][0]
            for number in (first, second)
        }
        end = max(runs[0].times[-1], runs[1].times[-1]) + EVERY
        lasts = {n: client.history("pods_running", node=NODE, session=n, step=end, agg="last")
                 for n in (first, second)}  # fmt: skip
        last = {n: answer["series"][0]["values"] for n, answer in lasts.items()}
        live = client.history("pods_running", node=NODE, step=end, agg="last")["series"]
    assert runs[0].times != runs[1].times  # two runs of different lengths, both from time 0
    for number, run in zip((first, second), runs, strict=True):
        assert (shown[number]["times"], shown[number]["values"]) == (run.times, run.values)
        assert last[number] == [run.values[-1]]
    assert live[0]["values"] == [runs[1].values[-1]]  # "last" is the live run's
