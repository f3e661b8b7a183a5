"""Ingestion through NATS JetStream (the server of the tests): once, in order, nothing lost.

The kill tests run real processes: ``twin serve --broker`` killed with SIGKILL while a
publisher sends (and separately a publisher killed while it sends); afterwards every message
the broker had acknowledged is in the twin's history exactly once. ``bench/broker.py`` runs
five kills of each; the suite runs two.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from typer.testing import CliRunner

from tests.twin.conftest import TOKEN, tiny_document
from tests.twin.nats_stream import delete_stream, fresh_stream
from tests.twin.process import TwinProcess
from twinsched.store.db import dispose
from twinsched.store.history import HistoryStore, MessageId, Window, read_window
from twinsched.twin.broker.connection import BrokerError, Connection
from twinsched.twin.broker.consumer import BrokerConsumer
from twinsched.twin.broker.messages import headers_of
from twinsched.twin.broker.publisher import BrokerPublisher
from twinsched.twin.broker.url import parse_broker_url
from twinsched.twin.client import TwinClient
from twinsched.twin.core.service import TwinService

NODES = ("n1", "n2", "g1")
KILLS = 1  # each way; bench/broker.py kills five times
RATE = 100  # batches per second: 300 messages


@pytest.fixture
def stream() -> Iterator[str]:
    url = fresh_stream()
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


def _samples(k: int) -> dict[str, object]:
    """Batch k: metric ``k`` = k on every node, at time k."""
    deltas = [{"op": "metrics", "node": n, "values": {"k": float(k)}} for n in NODES]
    return {"time": float(k), "deltas": deltas}


def _stored(db: str) -> dict[str, list[float]]:
    """The stored values of metric ``k`` per node, in time order."""
    store = HistoryStore(db)
    series, cut = read_window(store.engine, Window("k", limit=10_000_000))
    assert not cut
    return {s.node: s.values for s in series}


def _wait(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _raw_publish(url: str, messages: list[tuple[MessageId, str, dict[str, object]]]) -> None:
    """Publish with a chosen id and Nats-Msg-Id suffix (to get past the broker's dedup)."""
    broker = parse_broker_url(url)

    async def send() -> None:
        nc = await nats.connect(broker.server)
        js = nc.jetstream()
        for mid, suffix, body in messages:
            headers = headers_of(mid) | {"Nats-Msg-Id": f"{mid.source}#{mid.seq}{suffix}"}
            await js.publish(
                "twinsched.x".replace("twinsched", broker.prefix),
                json.dumps(body).encode(),
                headers=headers,
            )
        await nc.close()

    asyncio.run(send())


def test_out_of_order_and_redelivered_messages_apply_once_in_order(
    stream: str, service: TwinService
) -> None:
    BrokerPublisher(stream).close()  # creates the stream
    m1, m2, m3 = (MessageId("p/n1", k) for k in (1, 2, 3))
    bad = MessageId("p/n1", 4)
    unknown_node = {"time": 4.0, "deltas": [{"op": "metrics", "node": "zz", "values": {"k": 4.0}}]}
    _raw_publish(stream, [
        (m2, "", _samples(2)),       # arrives before the one it follows
        (m1, "", _samples(1)),
        (m1, "-again", _samples(1)),  # a second delivery the broker did not catch
        (bad, "", unknown_node),      # can never apply: rejected, the stream goes on
        (m3, "", _samples(3)),
    ])  # fmt: skip
    consumer = BrokerConsumer(service, stream, retry_delay_s=0.05)
    consumer.start()
    try:
        _wait(lambda: consumer.stats.last.get("p/n1") == 4, 20, "the stream to be applied")
    finally:
        consumer.stop()
    stats = consumer.stats
    assert (stats.applied, stats.duplicates, stats.rejected, stats.gaps) == (3, 1, 1, 0)
    assert stats.redelivered_later >= 1
    assert service.history is not None
    assert _stored(str(service.history.engine.url))["n1"] == [1.0, 2.0, 3.0]
    node = service.read(lambda doc: doc.nodepools[0].nodes[0].metrics["k"])
    assert node == 3.0
    # A restarted consumer knows what was applied: the history's unique key.
    again = BrokerConsumer(service, stream)
    assert again.stats.last == {"p/n1": 3}


def _publish_forever(url: str, stop: threading.Event, acked: list[MessageId]) -> BrokerPublisher:
    """Batches at about ``RATE`` per second until ``stop`` (a load the twin keeps up with)."""
    publisher = BrokerPublisher(url, "load", max_in_flight=64, on_ack=acked.append)

    def loop() -> None:
        k = 0
        while not stop.wait(1 / RATE):
            k += 1
            publisher.publish_samples(_samples(k))

    threading.Thread(target=loop, daemon=True).start()
    return publisher


def _status(twin: TwinProcess) -> dict[str, object]:
    with TwinClient(twin.url, TOKEN) as client:
        return client._send("GET", "/broker").json()  # type: ignore[no-any-return]


def test_kill_the_twin_under_load_loses_and_repeats_nothing(tmp_path: Path, stream: str) -> None:
    db = f"sqlite:///{tmp_path / 'twin.db'}"
    log = tmp_path / "twin.log"
    twin = TwinProcess(db, TOKEN, log, "--broker", stream)
    twin.wait_ready()
    with TwinClient(twin.url, TOKEN) as client:
        client.put_state(tiny_document())
    stop, acked = threading.Event(), []
    publisher = _publish_forever(stream, stop, acked)
    try:
        for _ in range(KILLS):
            applied = int(_status(twin)["applied"])  # type: ignore[call-overload]
            _wait(lambda: int(_status(twin)["applied"]) > applied + 100, 30, "progress")  # type: ignore[call-overload]  # noqa: B023
            twin.kill()  # mid-batch: fetched messages are neither committed nor acked
            twin = TwinProcess(db, TOKEN, log, "--broker", stream)
            twin.wait_ready()
        stop.set()
        publisher.close()  # every message published is acknowledged, or this raises
        sent = {f"load/{n}": publisher._seq[f"load/{n}"] for n in NODES}
        _wait(lambda: _status(twin)["sources"] == sent, 60, "the backlog")
        status = _status(twin)
    finally:
        stop.set()
        twin.stop()
    assert len(acked) == publisher.published == 3 * max(sent.values())
    stored = _stored(db)
    for node in NODES:  # each acknowledged sample once, in order
        assert stored[node] == [float(k) for k in range(1, sent[f"load/{node}"] + 1)]
    assert status["rejected"] == status["gaps"] == 0


LOAD = "from tests.twin.broker_load import main; main()"


def _acked_until_killed(url: str, metric: str, count: int) -> list[MessageId]:
    """Start a publisher process, SIGKILL it once the broker acknowledged ``count``
    messages; what it had printed by then."""
    acked = []
    with subprocess.Popen(
        [sys.executable, "-c", LOAD, url, metric, str(RATE)], stdout=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            source, _, seq = line.strip().rpartition(" ")
            acked.append(MessageId(source, int(seq)))
            if len(acked) >= count:
                break
        process.kill()  # SIGKILL: messages in flight are lost to it
        process.wait(10)
        for line in process.stdout.read().splitlines():  # printed before the kill
            source, _, seq = line.strip().rpartition(" ")
            if seq.isdigit():
                acked.append(MessageId(source, int(seq)))
    return acked


def test_kill_the_publisher_under_load_loses_and_repeats_nothing(
    stream: str, service: TwinService
) -> None:
    BrokerPublisher(stream).close()  # the stream exists before the first publisher dies
    consumer = BrokerConsumer(service, stream)
    consumer.start()
    try:
        runs = [_acked_until_killed(stream, f"k{run}", 100) for run in range(KILLS)]
        last: dict[str, int] = {}
        for message in (m for run in runs for m in run):
            last[message.source] = max(message.seq, last.get(message.source, 0))
        done = lambda: all(consumer.stats.last.get(s, 0) >= q for s, q in last.items())  # noqa: E731
        _wait(done, 30, "every acknowledged message")
    finally:
        consumer.stop()
    assert service.history is not None
    store = service.history
    for run, acked in enumerate(runs):
        series, _ = read_window(store.engine, Window(f"k{run}"))
        stored = {s.node: s.values for s in series}
        for node in NODES:
            values = stored[node]
            assert len(values) == len(set(values))  # none twice
            mine = {float(m.seq) for m in acked if m.source.endswith(f"/{node}")}
            assert mine <= set(values)  # every acknowledged one
            assert len(mine) >= 30
    assert consumer.stats.rejected == 0


def test_a_full_stream_blocks_the_publisher_until_the_twin_drains_it(
    stream: str, service: TwinService
) -> None:
    Connection(parse_broker_url(stream), max_msgs=6).close()  # the broker buffers 6 messages
    acked: list[MessageId] = []
    publisher = BrokerPublisher(stream, "slow", max_in_flight=2, on_ack=acked.append)
    sender = threading.Thread(
        target=lambda: [publisher.publish_samples(_samples(k)) for k in range(1, 9)]
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
        _wait(lambda: consumer.stats.applied == 24, 20, "the twin to drain the stream")
    finally:
        consumer.stop()
    assert len(acked) == 24 and publisher.blocked_s > 0.5
    assert service.history is not None
    stored = _stored(str(service.history.engine.url))
    assert all(stored[n] == [float(k) for k in range(1, 9)] for n in NODES)


def test_a_publish_the_broker_never_takes_raises(stream: str) -> None:
    Connection(parse_broker_url(stream), max_msgs=1).close()
    publisher = BrokerPublisher(stream, "stuck", max_in_flight=1, retry_for_s=0.5)
    publisher.publish_deltas(b"{}")
    publisher.publish_deltas(b"{}")  # the stream is full: retried, then given up
    with pytest.raises(BrokerError, match=r"stuck#2 not acknowledged by the broker"):
        publisher.flush()
    with pytest.raises(BrokerError, match="stuck#2"):
        publisher.close()


def test_bad_broker_urls_are_refused_before_anything_starts(history_url: str) -> None:
    from twinsched.cli import app

    runner = CliRunner(env={"COLUMNS": "300"})
    serve = ["twin", "serve", "--db", history_url, "--token", TOKEN, "--broker"]
    result = runner.invoke(app, [*serve, "http://127.0.0.1:4222"])
    assert result.exit_code == 2
    assert "scheme 'http'" in result.output
    result = runner.invoke(app, [*serve, "nats://127.0.0.1:1/S"])
    assert result.exit_code != 0
    assert "cannot reach the broker at nats://127.0.0.1:1/S" in result.output
    result = runner.invoke(app, ["twin", "collect", "--broker", "nats://h:70000", "--once"])
    assert result.exit_code == 2 and "port" in result.output
    result = runner.invoke(app, ["run", "--broker", "nats://127.0.0.1", "--no-record"])
    assert result.exit_code == 2 and "--broker needs --twin" in result.output
