"""Hostile messages on the real brokers (NATS JetStream and RabbitMQ) into a twin on SQLite
and on PostgreSQL: a forged or out-of-range sequence number never stops the stream's later
valid messages, and a poison message is one dead letter (terminated once, counted, one log
line), never redelivered in a loop, never holding back the valid messages fetched with it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import aio_pika
import pytest

from tests.store.conftest import pg_url, sqlite_url  # noqa: F401  (fixtures)
from tests.twin.broker_fuzz import fuzz_broker
from tests.twin.broker_load import batch, stored, wait
from tests.twin.broker_streams import delete_stream, fresh_stream
from tests.twin.conftest import tiny_document
from tests.twin.test_broker import _raw_publish
from twinsched.store.db import dispose
from twinsched.store.history import HistoryStore, MessageId
from twinsched.twin.broker.amqp import dead_letters
from twinsched.twin.broker.consumer import BrokerConsumer
from twinsched.twin.broker.publisher import BrokerPublisher
from twinsched.twin.broker.url import parse_broker_url
from twinsched.twin.core.service import TwinService

# How long a dead letter must stay dead: twice the longest delay after which the consumer
# has a message sent again (a ``nak`` of 1 s), as the fuzz's quiet (tests/twin/broker_fuzz.py)
QUIET_S = 2.0


# Each broker once and each store once (the brokers' code meets the stores' only through
# HistoryStore, which tests/store and tests/twin/test_broker.py run on both)
PAIRS = [("nats", "sqlite"), ("amqp", "postgresql")]


@pytest.fixture(params=PAIRS, ids=["-".join(pair) for pair in PAIRS])
def pair(request: pytest.FixtureRequest) -> tuple[str, str]:
    kind, backend = request.param
    return kind, backend


@pytest.fixture
def stream(pair: tuple[str, str]) -> Iterator[str]:
    url = fresh_stream(pair[0])
    yield url
    delete_stream(url)


@pytest.fixture
def service(pair: tuple[str, str], request: pytest.FixtureRequest) -> Iterator[TwinService]:
    db = request.getfixturevalue("sqlite_url" if pair[1] == "sqlite" else "pg_url")
    store = HistoryStore(db)
    store.take_lease()
    twin = TwinService.restore(store)
    twin.replace(tiny_document())
    yield twin
    store.close()
    dispose(db)


def _consume_until(service: TwinService, url: str, done: str, applied: int) -> BrokerConsumer:
    """A consumer run until it has applied ``applied`` messages, then ``QUIET_S`` more (to
    see nothing come back); stopped on return."""
    consumer = BrokerConsumer(service, url)
    consumer.start()
    try:
        wait(lambda: consumer.stats.applied >= applied, 20, done)
        received = consumer.stats.received
        time.sleep(QUIET_S)
        assert consumer.stats.received == received, "a message came back"
    finally:
        consumer.stop()
    return consumer


def test_a_forged_sequence_number_never_stops_the_later_messages(
    stream: str,
    service: TwinService,
) -> None:
    BrokerPublisher(stream).close()  # creates the stream
    source = "f/n1"
    forged = [(MessageId(source, seq), "", batch(99)) for seq in (10**9, 2**63, 2**64)]
    valid = [(MessageId(source, k), "", batch(k)) for k in range(1, 14)]
    _raw_publish(stream, valid[:3] + forged + valid[3:])
    consumer = _consume_until(service, stream, "the 13 valid messages", 13)
    stats = consumer.stats
    assert (stats.applied, stats.rejected, stats.gaps) == (13, 3, 0)
    assert stats.dead_letters == {"window": 1, "id": 2}
    assert stats.last[source] == 13
    assert service.history is not None
    assert service.history.applied_messages() == {source: 13}  # the forged number not kept
    assert stored(str(service.history.engine.url))["n1"] == [float(k) for k in range(1, 14)]


def test_poison_messages_are_one_dead_letter_and_never_block_the_valid_ones(
    stream: str,
    service: TwinService,
    caplog: pytest.LogCaptureFixture,
) -> None:
    BrokerPublisher(stream).close()
    poison = [
        (MessageId("v/n1", 2**63), "", batch(99)),  # past the 64-bit column
        (MessageId("nul\x00source", 1), "", batch(99)),  # PostgreSQL text holds no NUL
        (MessageId("s" * 3000, 1), "", batch(99)),  # past an index row
        (MessageId("bidi\u202e", 1), "", batch(99)),
        (MessageId("w/n1", 1), "", {"time": "soon"}),  # not a batch
    ]
    valid = [(MessageId("v/n1", k), "", batch(k)) for k in range(1, 41)]
    messages = valid[:20] + poison + valid[20:]  # all in the consumer's first fetch
    _raw_publish(stream, messages)
    caplog.set_level(logging.WARNING, logger="twinsched.twin.broker")
    started = time.monotonic()
    consumer = _consume_until(service, stream, "the 40 valid messages", 40)
    assert time.monotonic() - started < 10 + QUIET_S  # promptly, not after a redelivery loop
    stats = consumer.stats
    assert (stats.applied, stats.rejected, stats.retried) == (40, 5, 0)
    assert stats.received == len(messages)  # each delivered once: nothing looped
    assert stats.dead_letters == {"id": 4, "body": 1}
    lines = [r for r in caplog.records if r.name.startswith("twinsched.twin.broker")]
    assert len(lines) == 5 and all(r.exc_info is None for r in lines)  # one line each
    assert all(len(r.getMessage()) < 500 for r in lines)  # bounded: the 3,000 not echoed
    assert service.history is not None
    assert stored(str(service.history.engine.url))["n1"] == [float(k) for k in range(1, 41)]
    if stream.startswith("amqp"):
        assert _dead_lettered(stream) == 5  # RabbitMQ kept each once, in its dead letters


def _dead_lettered(url: str) -> int:
    """How many messages the dead-letter queue of ``url``'s stream holds."""
    broker = parse_broker_url(url)

    async def count() -> int:
        connection = await aio_pika.connect(
            host=broker.host, port=broker.port, login=broker.user, password=broker.password
        )
        async with connection:
            channel = await connection.channel()
            queue = await channel.declare_queue(dead_letters(broker.stream), passive=True)
            return int(queue.declaration_result.message_count or 0)

    return asyncio.run(count())


def test_a_restarted_publisher_is_a_new_stream_and_a_reused_name_is_refused_visibly(
    stream: str,
    service: TwinService,
) -> None:
    for _ in range(2):  # a publisher, then its restart: each process its own stream
        with BrokerPublisher(stream) as publisher:
            for k in range(1, 4):
                publisher.publish_samples(batch(k))
    first = [(MessageId("fixed", k), "", batch(k)) for k in range(1, 21)]
    again = [(MessageId("fixed", k), "-restarted", batch(k)) for k in (1, 2)]
    _raw_publish(stream, first + again)  # numbering restarted under one name
    consumer = BrokerConsumer(service, stream, window=8)
    consumer.start()
    try:
        wait(lambda: consumer.stats.rejected == 2, 20, "the restarted numbering")
    finally:
        consumer.stop()
    assert consumer.stats.applied == 2 * 9 + 20  # 3 batches of 3 nodes, twice; then 20
    assert consumer.stats.dead_letters == {"window": 2}
    assert len(consumer.stats.last) == 2 * 3 + 1


def test_fuzzed_hostile_messages_are_dead_letters_and_the_valid_stream_goes_on(
    stream: str,
    service: TwinService,
) -> None:
    BrokerPublisher(stream).close()
    row = fuzz_broker(service, stream, examples=40, seed=31)
    assert (row.tried, row.clear, row.accepted) == (40, 40, 40)
    assert (row.tracebacks, row.wrongly, row.lost, row.hangs) == (0, 0, 0, 0)
