"""``run --twin`` decides as in process over HTTP and over the broker (NATS): the decision
fingerprints (``tests/regression/fingerprint.py``) of a small fill-up and a small replay are
the same three ways, written in batches, and the twin ends holding the run's bindings.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from tests.regression.fingerprint import fingerprint
from tests.twin.broker_streams import delete_stream, fresh_stream
from tests.twin.process import TwinProcess, running_twin
from twinsched.model.run import RunResult
from twinsched.sim import run_fillup, run_replay
from twinsched.traces import registry as traces
from twinsched.twin.broker.publisher import BrokerPublisher
from twinsched.twin.broker.sinks import BrokerTwinClient
from twinsched.twin.client import TwinClient
from twinsched.twin.loop import TwinLoop

TOKEN = "loop-transports-token-0123456789ab"


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TwinProcess, str]]:
    stream = fresh_stream("nats")
    try:
        with running_twin(tmp_path_factory.mktemp("twin"), TOKEN, "--broker", stream) as twin:
            yield twin, stream
    finally:
        delete_stream(stream)


def fill_up(observers: list[Any]) -> RunResult:
    scenario = traces.load("synthetic-continuum", "3")
    return run_fillup(scenario, "fgd", 1, target_pct=60, observers=observers)


def replay(observers: list[Any]) -> RunResult:
    full = traces.load("synthetic-continuum", "5")
    first = np.argsort(full.pods.arrival_s, kind="stable")[:150]
    scenario = replace(full, pods=full.pods.take(np.sort(first)))
    return run_replay(scenario, "bestfit", 0, sample_every_s=600.0, observers=observers)


@pytest.mark.parametrize("run", [fill_up, replay], ids=["fillup", "replay"])
def test_fingerprints_in_process_over_http_and_over_nats(
    twin: tuple[TwinProcess, str], run: Callable[[list[Any]], RunResult]
) -> None:
    process, stream = twin
    local = fingerprint(lambda: run([]))
    with TwinClient(process.url, TOKEN) as client:
        http_loop = TwinLoop(client, batch=64)
        over_http = fingerprint(lambda: run([http_loop]))
        http_pods = client.pods(phase="Running")
    broker = BrokerTwinClient(process.url, BrokerPublisher(stream), TOKEN)
    with broker:
        nats_loop = TwinLoop(broker, batch=64)
        over_nats = fingerprint(lambda: run([nats_loop]))
        nats_pods = broker.pods(phase="Running")
    assert over_http == local and over_nats == local
    for loop in (http_loop, nats_loop):
        assert loop.disagreements == {} and loop.pulls == 0
        assert 1 < loop.publisher.pushes < loop.publisher.deltas  # batched
    assert sorted(p["id"] for p in http_pods) == sorted(p["id"] for p in nats_pods)
    assert {(p["id"], p["node"]) for p in http_pods} == {(p["id"], p["node"]) for p in nats_pods}
