"""A VTE run publishes its node metrics through the broker (NATS, RabbitMQ); the twin ends
with the run's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.twin.broker_load import stored, wait
from tests.twin.broker_streams import delete_stream, fresh_stream
from twinsched.model.convert import scenario_to_document
from twinsched.sim import run_fillup
from twinsched.sim.clock import SimClock
from twinsched.sim.exporter import LiveState
from twinsched.store.db import dispose
from twinsched.store.history import HistoryStore
from twinsched.traces import registry as traces
from twinsched.twin.broker.consumer import BrokerConsumer
from twinsched.twin.broker.publisher import BrokerPublisher
from twinsched.twin.broker.vte import BrokerSamples, node_samples
from twinsched.twin.core.service import TwinService


@pytest.fixture(params=["nats", "amqp"])
def stream(request: pytest.FixtureRequest) -> Iterator[str]:
    url = fresh_stream(request.param)
    yield url
    delete_stream(url)


def test_the_twin_holds_the_vte_runs_node_metrics(stream: str, history_url: str) -> None:
    scenario = traces.load("synthetic-continuum", "3")
    store = HistoryStore(history_url)
    store.take_lease()
    twin = TwinService.restore(store)
    twin.replace(scenario_to_document(scenario))
    clock, live = SimClock(), LiveState()
    with BrokerPublisher(stream) as publisher:
        samples = BrokerSamples(publisher, clock, every_s=150.0)
        run_fillup(scenario, "fgd", 1, target_pct=40, clock=clock, observers=[live, samples])
    consumer = BrokerConsumer(twin, stream)
    consumer.start()
    try:
        wait(lambda: consumer.stats.applied == publisher.published, 30, "the samples")
    finally:
        consumer.stop()
        store.close()
    assert live.state is not None
    final = {d["node"]: d["values"] for d in node_samples(live.state, 0.0)["deltas"]}
    nodes = {n.id: n.metrics for p in twin.document().nodepools for n in p.nodes}
    assert nodes == final  # the twin ends with the run's values, node by node
    assert any(0 < v["cpu_util"] <= 1 for v in final.values())
    assert all(("gpu_util" in v) == (n.hardware.gpu_count > 0) for p in twin.document().nodepools
               for n in p.nodes for v in [final[n.id]])  # fmt: skip
    cpu = stored(history_url, "cpu_util")
    assert samples.batches > 2 and all(len(cpu[n]) == samples.batches for n in final)
    dispose(history_url)
