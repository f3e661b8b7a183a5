"""RabbitMQ's own terms (the server of the tests, 127.0.0.1:5672): a durable queue of
persistent messages, each confirmed before it counts, and a message the twin committed but
never acked (a crash between the two) delivered again and dropped. ``test_broker.py`` runs
the shared scenarios (order, kills, backpressure) on RabbitMQ as on NATS.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import aio_pika
import aio_pika.exceptions
import pytest

from tests.twin.broker_load import NODES, batch, stored, wait
from tests.twin.broker_streams import delete_stream, fresh_stream
from tests.twin.test_broker import service  # noqa: F401  (a fixture)
from twinsched.store.history import MessageId
from twinsched.twin.broker.amqp import AmqpDelivery, queue_arguments
from twinsched.twin.broker.consumer import BrokerConsumer
from twinsched.twin.broker.loop import STREAM_MAX_MSGS
from twinsched.twin.broker.messages import message_id
from twinsched.twin.broker.publisher import BrokerPublisher
from twinsched.twin.broker.transport import connect
from twinsched.twin.broker.url import parse_broker_url
from twinsched.twin.core.deltas import StatePatch
from twinsched.twin.core.service import TwinService


@pytest.fixture
def stream() -> Iterator[str]:
    url = fresh_stream("amqp")
    yield url
    delete_stream(url)


def _declare(url: str, durable: bool) -> None:
    """Declare the queue of ``url`` again with the twin's arguments and ``durable``."""
    broker = parse_broker_url(url)

    async def declare() -> None:
        connection = await aio_pika.connect(
            host=broker.host, port=broker.port, login=broker.user, password=broker.password
        )
        async with connection:
            channel = await connection.channel()
            arguments = queue_arguments(STREAM_MAX_MSGS, broker.stream)
            await channel.declare_queue(broker.stream, durable=durable, arguments=arguments)

    asyncio.run(declare())


def test_every_confirmed_batch_is_applied_once_from_a_durable_queue(
    stream: str,
    service: TwinService,  # noqa: F811
) -> None:
    confirmed: list[MessageId] = []
    with BrokerPublisher(stream, "p", max_in_flight=8, on_ack=confirmed.append) as publisher:
        for k in range(1, 41):
            publisher.publish_samples(batch(k))
    assert len(confirmed) == publisher.acked == 120  # each confirmed by the broker
    _declare(stream, durable=True)  # the same queue: durable, bounded, one consumer
    with pytest.raises(aio_pika.exceptions.ChannelPreconditionFailed):
        _declare(stream, durable=False)
    consumer = BrokerConsumer(service, stream)
    consumer.start()
    try:
        wait(lambda: consumer.stats.applied == 120, 20, "the 120 messages")
    finally:
        consumer.stop()
    assert (consumer.stats.duplicates, consumer.stats.rejected, consumer.stats.gaps) == (0, 0, 0)
    assert service.history is not None
    values = stored(str(service.history.engine.url))
    assert all(values[n] == [float(k) for k in range(1, 41)] for n in NODES)


def test_a_message_committed_but_not_acked_comes_back_and_is_dropped(
    stream: str,
    service: TwinService,  # noqa: F811
) -> None:
    with BrokerPublisher(stream, "p") as publisher:
        publisher.publish_samples(batch(1))
        publisher.publish_samples(batch(2))
    crashed = connect(parse_broker_url(stream))
    try:
        sub = crashed.call(crashed.subscribe("crashed", 16, 5.0), 10)
        fetched = []
        while len(fetched) < 6:
            fetched += crashed.call(sub.fetch(16, 5.0), 10)
        for delivery in fetched:
            assert isinstance(delivery, AmqpDelivery)
            assert delivery.msg.delivery_mode == aio_pika.DeliveryMode.PERSISTENT
        for delivery in fetched[:3]:  # batch 1 of each node: committed, never acked
            mid = message_id(delivery.headers)
            assert mid.seq == 1
            service.apply(StatePatch.model_validate_json(delivery.data), delivery.data, mid)
    finally:
        crashed.close()  # the crash: the broker takes the six back, in order
    consumer = BrokerConsumer(service, stream)
    assert consumer.stats.last == {f"p/{n}": 1 for n in NODES}  # from the history
    consumer.start()
    try:
        wait(lambda: consumer.stats.last == {f"p/{n}": 2 for n in NODES}, 20, "batch 2")
    finally:
        consumer.stop()
    stats = consumer.stats
    assert (stats.applied, stats.duplicates, stats.redelivered) == (3, 3, 6)
    assert service.history is not None
    values = stored(str(service.history.engine.url))
    assert all(values[n] == [1.0, 2.0] for n in NODES)
