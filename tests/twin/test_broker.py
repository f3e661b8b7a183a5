"""Ingestion through the brokers of the tests, NATS JetStream and RabbitMQ (each test that
takes ``stream`` runs on both): once, in order, nothing lost.

The kill tests run real processes: ``twin serve --broker`` killed with SIGKILL while a
publisher sends (and separately a publisher killed while it sends); afterwards every message
the broker had acknowledged is in the twin's history exactly once. ``bench/broker.py`` runs
five kills of each; the suite runs one.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from fastapi import FastAPI
from typer.testing import CliRunner

from tests.twin.broker_load import NODES, batch, kill_the_publisher, kill_the_twin, stored, wait
from tests.twin.broker_streams import delete_stream, fresh_stream
from tests.twin.conftest import TOKEN, tiny_document
from tests.twin.process import free_port
from twinsched.cli import app
from twinsched.sim import run_fillup
from twinsched.store.db import dispose
from twinsched.store.history import HistoryStore, MessageId
from twinsched.traces import registry as traces
from twinsched.twin.api.app import close_app, create_app
from twinsched.twin.broker.consumer import BrokerConsumer
from twinsched.twin.broker.loop import BrokerError
from twinsched.twin.broker.messages import headers_of
from twinsched.twin.broker.publisher import BrokerPublisher
from twinsched.twin.broker.transport import connect
from twinsched.twin.broker.url import parse_broker_url
from twinsched.twin.client import TwinClient
from twinsched.twin.core.service import TwinService
from twinsched.twin.core.settings import TwinSettings

KILLS = 1  # each way; bench/broker.py kills five times
RATE = 30  # batches per second: 90 messages


@pytest.fixture(params=["nats", "amqp"])
def stream(request: pytest.FixtureRequest) -> Iterator[str]:
    url = fresh_stream(request.param)
    yield url
    delete_stream(url)


@pytest.fixture
def service(history_url: str) -> Iterator[TwinService]:
    store = HistoryStore(history_url)
    store.take_lease()
    twin = TwinService.restore(store)
    twin.replace(tiny_document())
    yield twin
    store.close()
    dispose(history_url)


def _raw_publish(url: str, messages: list[tuple[MessageId, str, dict[str, object]]]) -> None:
    """Publish with a chosen id and Nats-Msg-Id suffix (to get past JetStream's dedup)."""
    conn = connect(parse_broker_url(url))
    try:
        for mid, suffix, body in messages:
            headers = headers_of(mid) | {"Nats-Msg-Id": f"{mid.source}#{mid.seq}{suffix}"}
            subject = f"{conn.url.prefix}.x"
            conn.call(conn.publish(subject, json.dumps(body).encode(), headers, 5), 10)
    finally:
        conn.close()


def test_out_of_order_and_redelivered_messages_apply_once_in_order(
    stream: str, service: TwinService
) -> None:
    BrokerPublisher(stream).close()  # creates the stream
    m1, m2, m3 = (MessageId("p/n1", k) for k in (1, 2, 3))
    bad = MessageId("p/n1", 4)
    unknown_node = {"time": 4.0, "deltas": [{"op": "metrics", "node": "zz", "values": {"k": 4.0}}]}
    _raw_publish(stream, [
        (m2, "", batch(2)),       # arrives before the one it follows
        (m1, "", batch(1)),
        (m1, "-again", batch(1)),  # a second delivery the broker did not catch
        (bad, "", unknown_node),      # can never apply: rejected, the stream goes on
        (m3, "", batch(3)),
    ])  # fmt: skip
    consumer = BrokerConsumer(service, stream, retry_delay_s=0.05)
    consumer.start()
    try:
        wait(lambda: consumer.stats.last.get("p/n1") == 4, 20, "the stream to be applied")
    finally:
        consumer.stop()
    stats = consumer.stats
    assert (stats.applied, stats.duplicates, stats.rejected, stats.gaps) == (3, 1, 1, 0)
    assert stats.redelivered_later >= 1
    assert service.history is not None
    assert stored(str(service.history.engine.url))["n1"] == [1.0, 2.0, 3.0]
    node = service.read(lambda doc: doc.nodepools[0].nodes[0].metrics["k"])
    assert node == 3.0
    # A restarted consumer knows what was applied: the history's unique key.
    again = BrokerConsumer(service, stream)
    assert again.stats.last == {"p/n1": 3}


def test_kill_the_twin_under_load_loses_and_repeats_nothing(tmp_path: Path, stream: str) -> None:
    outcome = kill_the_twin(tmp_path, stream, KILLS, RATE)  # checks the history
    assert outcome.acked > RATE  # the twin applied more than RATE before it was killed


def test_kill_the_publisher_under_load_loses_and_repeats_nothing(
    stream: str, service: TwinService
) -> None:
    outcome = kill_the_publisher(service, stream, KILLS, RATE)
    assert outcome.acked >= 100


def test_a_full_stream_blocks_the_publisher_until_the_twin_drains_it(
    stream: str, service: TwinService
) -> None:
    connect(parse_broker_url(stream), max_msgs=6).close()  # the broker buffers 6 messages
    acked: list[MessageId] = []
    publisher = BrokerPublisher(stream, "slow", max_in_flight=2, on_ack=acked.append)
    sender = threading.Thread(
        target=lambda: [publisher.publish_samples(batch(k)) for k in range(1, 9)]
    )
    sender.start()
    time.sleep(1.0)  # no twin yet: the stream fills, the publisher blocks
    assert sender.is_alive()
    assert len(acked) == 6 and publisher.retries > 0
    consumer = BrokerConsumer(service, stream)
    consumer.start()
    try:
        sender.join(30)
        publisher.close()
        wait(lambda: consumer.stats.applied == 24, 20, "the twin to drain the stream")
    finally:
        consumer.stop()
    assert len(acked) == 24 and publisher.blocked_s > 0.5
    assert service.history is not None
    values = stored(str(service.history.engine.url))
    assert all(values[n] == [float(k) for k in range(1, 9)] for n in NODES)


def test_a_publish_the_broker_never_takes_raises(stream: str) -> None:
    connect(parse_broker_url(stream), max_msgs=1).close()
    publisher = BrokerPublisher(stream, "stuck", max_in_flight=1, retry_for_s=0.5)
    publisher.publish_deltas(b"{}")
    publisher.publish_deltas(b"{}")  # the stream is full: retried, then given up
    with pytest.raises(BrokerError, match=r"stuck#2 not acknowledged by the broker"):
        publisher.flush()
    with pytest.raises(BrokerError, match="stuck#2"):
        publisher.close()


def test_bad_broker_urls_are_refused_before_anything_starts(history_url: str) -> None:
    runner = CliRunner(env={"COLUMNS": "300"})
    serve = ["twin", "serve", "--db", history_url, "--token", TOKEN, "--broker"]
    result = runner.invoke(app, [*serve, "http://127.0.0.1:4222"])
    assert result.exit_code == 2
    assert "scheme 'http'" in result.output
    result = runner.invoke(app, [*serve, "nats://127.0.0.1:1/S"])
    assert result.exit_code != 0
    assert "cannot reach the broker at nats://127.0.0.1:1/S" in result.output
    result = runner.invoke(app, [*serve, "amqp://127.0.0.1:1/S"])
    assert result.exit_code != 0
    assert "cannot reach the broker at amqp://127.0.0.1:1/S" in result.output
    result = runner.invoke(app, [*serve, "amqp://guest:wrong@127.0.0.1:5672/S"])
    assert result.exit_code != 0  # the password is refused, and not printed
    assert "cannot reach the broker at amqp://guest@127.0.0.1:5672/S" in result.output
    assert "wrong" not in result.output
    result = runner.invoke(app, ["twin", "collect", "--broker", "nats://h:70000", "--once"])
    assert result.exit_code == 2 and "port" in result.output
    result = runner.invoke(app, ["run", "--broker", "nats://127.0.0.1", "--no-record"])
    assert result.exit_code == 2 and "--broker needs --twin" in result.output


def test_a_bad_message_in_a_run_of_samples_is_rejected_alone(
    stream: str, service: TwinService
) -> None:
    BrokerPublisher(stream).close()
    unknown = {"time": 2.0, "deltas": [{"op": "metrics", "node": "zz", "values": {"k": 2.0}}]}
    bodies = [batch(1), unknown, batch(3), batch(4)]
    _raw_publish(stream, [(MessageId("q", k), "", b) for k, b in enumerate(bodies, 1)])
    consumer = BrokerConsumer(service, stream)
    consumer.start()  # one fetch: the four are tried as one transaction first
    try:
        wait(lambda: consumer.stats.last.get("q") == 4, 20, "the run")
    finally:
        consumer.stop()
    assert (consumer.stats.applied, consumer.stats.rejected) == (3, 1)
    assert service.history is not None
    assert stored(str(service.history.engine.url))["n1"] == [1.0, 3.0, 4.0]


@contextmanager
def _served(application: FastAPI) -> Iterator[str]:
    server = uvicorn.Server(
        uvicorn.Config(application, port=free_port(), log_level="warning", ws="none")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait(lambda: server.started or not thread.is_alive(), 10, "the twin to start")
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def twin_consuming(db: str, stream: str) -> Iterator[str]:
    """The twin app with its broker consumer, under uvicorn in a thread (as ``twin serve
    --broker``, without a process start); its base URL."""
    twin = create_app(TwinSettings(token=TOKEN, db=db))
    consumer = BrokerConsumer(twin.state.service, stream)
    consumer.start()
    twin.state.broker = consumer
    try:
        with _served(twin) as url:
            yield url
    finally:
        consumer.stop()
        close_app(twin)


def test_a_run_through_the_broker_decides_as_in_process(
    tmp_path: Path, stream: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TWINSCHED_TWIN_TOKEN", TOKEN)
    args = ["run", "--trace", "synthetic-continuum", "--variant", "3", "--schedulers", "fgd",
            "--target", "10", "--seeds", "1", "--no-record"]  # fmt: skip
    with twin_consuming(f"sqlite:///{tmp_path / 't.db'}", stream) as twin:
        remote = CliRunner().invoke(
            app, [*args, "--twin", twin, "--broker", stream, "--out", str(tmp_path / "a")]
        )
        assert remote.exit_code == 0, remote.output
        assert not [k for k in os.environ if "BROKER" in k]  # the link carries it, not the env
        with TwinClient(twin, TOKEN) as client:
            applied = client._send("GET", "/broker").json()["applied"]
            running = len(client.pods(phase="Running"))
    local = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert local.exit_code == 0, local.output
    curve = (tmp_path / "a" / "curves" / "fgd_seed1.csv").read_text()
    assert curve == (tmp_path / "b" / "curves" / "fgd_seed1.csv").read_text()
    assert applied >= 1  # the deltas did go through the broker (batched: 500 a message)
    expected = run_fillup(traces.load("synthetic-continuum", "3"), "fgd", 1, target_pct=10)
    assert running == expected.summary["running"] > 0  # the twin holds the run's bindings
