"""Throwaway streams on the brokers of the tests: NATS (127.0.0.1:4222), RabbitMQ (5672).

``fresh_stream(scheme)`` gives a broker URL with a stream name of its own (a JetStream stream,
or a RabbitMQ exchange and queue); ``delete_stream(url)`` removes it (and its messages)
afterwards. ``$TWINSCHED_TEST_NATS`` and ``$TWINSCHED_TEST_AMQP`` point elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid

import aio_pika
import nats

from twinsched.twin.broker.url import parse_broker_url

SERVERS = {
    "nats": os.environ.get("TWINSCHED_TEST_NATS", "nats://127.0.0.1:4222"),
    "amqp": os.environ.get("TWINSCHED_TEST_AMQP", "amqp://guest:guest@127.0.0.1:5672"),
}
NATS = SERVERS["nats"]


def fresh_stream(scheme: str = "nats") -> str:
    """A broker URL whose stream no test has used."""
    return f"{SERVERS[scheme]}/T{uuid.uuid4().hex[:12]}"


def delete_stream(url: str) -> None:
    """Delete the stream of ``url`` (nothing when it does not exist)."""
    broker = parse_broker_url(url)

    async def delete_nats() -> None:
        nc = await nats.connect(broker.server)
        with contextlib.suppress(Exception):
            await nc.jetstream().delete_stream(broker.stream)
        await nc.close()

    async def delete_amqp() -> None:
        connection = await aio_pika.connect(
            host=broker.host, port=broker.port, login=broker.user, password=broker.password
        )
        async with connection:
            channel = await connection.channel()
            for name in (broker.stream, f"{broker.stream}.dead"):
                await channel.queue_delete(name)
                await channel.exchange_delete(name)

    asyncio.run(delete_amqp() if broker.scheme == "amqp" else delete_nats())
