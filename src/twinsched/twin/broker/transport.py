"""The backend of a broker URL: NATS JetStream or RabbitMQ, each imported only when used.

Both backends build on :class:`~twinsched.twin.broker.loop.LoopThread`, so the choice sits
above them (a factory in the loop's module would import its own subclasses).
"""

from __future__ import annotations

from twinsched.twin.broker.loop import STREAM_MAX_MSGS, Transport
from twinsched.twin.broker.url import BrokerUrl


def connect(url: BrokerUrl, *, max_msgs: int = STREAM_MAX_MSGS) -> Transport:
    """A connection to ``url`` (its stream or queue made if missing, bounded by ``max_msgs``)."""
    if url.backend == "amqp":
        from twinsched.twin.broker.amqp import AmqpConnection

        return AmqpConnection(url, max_msgs=max_msgs)
    from twinsched.twin.broker.connection import Connection

    return Connection(url, max_msgs=max_msgs)
