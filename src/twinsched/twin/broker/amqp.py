"""A RabbitMQ connection (AMQP 0-9-1, aio-pika) on its own event-loop thread: ``amqp://``.

The same ends as the NATS backend (:class:`~twinsched.twin.broker.loop.Transport`), on
RabbitMQ's terms. The stream is a durable topic exchange and one durable classic queue of
that name bound to ``<prefix>.#`` (the subjects are the routing keys). Messages are
persistent, and ``publish`` returns only once the broker confirmed the message (publisher
confirms; a ``Basic.Nack`` or an unroutable message raises, and the publisher retries). The
queue holds at most ``max_msgs`` ready messages with ``x-overflow=reject-publish``: a twin
that falls behind fills it, the broker nacks further publishes, the publishers retry and
block (the bound is the buffer, as JetStream's ``discard=new``).

Order: the queue has a single active consumer (``x-single-active-consumer``), so one twin
takes the messages in queue order, which is publish order per publisher; a message its
channel never acked (a killed twin) goes back to its place in the queue, ahead of later ones.
A message nacked to wait for an earlier one (:func:`~twinsched.twin.broker.messages.order`)
is requeued after its delay. AMQP counts no deliveries on classic queues: :class:`Deliveries`
counts them per message id in this process (the broker's ``redelivered`` flag makes a first
sight count as a second delivery). At most ``4 * batch`` messages are unacked (the prefetch).

Dead letters: a message the twin rejects (it can never apply) goes, once, to the queue's
dead-letter exchange ``<stream>.dead`` (fanout) and its queue ``<stream>.dead`` (bounded:
the oldest go first), where it can be read with its ``x-death`` header.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

from twinsched.extras import needs
from twinsched.twin.broker import WHY_AMQP
from twinsched.twin.broker.loop import BrokerError, LoopThread
from twinsched.twin.broker.messages import MSG_ID, Delivery
from twinsched.twin.broker.tls import client_context
from twinsched.twin.broker.url import BrokerConfigError

with needs("broker", WHY_AMQP):
    import aio_pika
    import aio_pika.exceptions

log = logging.getLogger(__name__)


DEAD_MAX_MSGS = 100_000


def dead_letters(stream: str) -> str:
    """The name of a stream's dead-letter exchange and queue."""
    return f"{stream}.dead"


def queue_arguments(max_msgs: int, stream: str | None = None) -> dict[str, Any]:
    """The queue's bound, its single consumer and (for ``stream``) its dead-letter exchange."""
    bounds: dict[str, Any] = {
        "x-max-length": max_msgs,
        "x-overflow": "reject-publish",
        "x-single-active-consumer": True,
    }
    return bounds if stream is None else {**bounds, "x-dead-letter-exchange": dead_letters(stream)}


@dataclass
class Deliveries:
    """How many times each message id was delivered to this process."""

    counts: dict[str, int] = field(default_factory=dict)

    def seen(self, key: str, redelivered: bool) -> int:
        count = self.counts.get(key, int(redelivered)) + 1
        self.counts[key] = count
        return count

    def done(self, key: str) -> None:
        self.counts.pop(key, None)


class AmqpDelivery:
    """An AMQP message as a :class:`Delivery`; ack, nack and reject on a channel gone (the
    connection dropped) are logged: the broker delivers the message again."""

    def __init__(self, msg: Any, counts: Deliveries, later: set[asyncio.Task[None]]) -> None:
        self.msg, self._counts, self._later = msg, counts, later
        raw = msg.headers or {}
        # Bytes that are not UTF-8 become U+FFFD: a bad header is the message's problem
        # (refused when its id is read), not an error in the channel's callback.
        self.headers = {
            k: v.decode(errors="replace") if isinstance(v, bytes) else v for k, v in raw.items()
        }
        self.data: bytes = msg.body
        self._key = str(self.headers.get(MSG_ID) or f"tag:{msg.delivery_tag}")
        self.deliveries = counts.seen(self._key, bool(msg.redelivered))

    async def _settle(self, what: str, **kw: Any) -> None:
        try:
            await getattr(self.msg, what)(**kw)
        except Exception as exc:  # the channel closed: the broker delivers it again
            log.warning("twin: cannot %s %s: %s", what, self._key, exc)

    async def ack(self) -> None:
        self._counts.done(self._key)
        await self._settle("ack")

    async def nak(self, delay: float) -> None:
        async def requeue() -> None:
            await asyncio.sleep(delay)
            await self._settle("nack", requeue=True)

        task = asyncio.get_running_loop().create_task(requeue())
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def term(self) -> None:
        self._counts.done(self._key)
        await self._settle("reject", requeue=False)


class AmqpSubscription:
    """The twin's consumer on the queue: deliveries wait in a local queue (at most the
    prefetch) until :meth:`fetch` takes them."""

    def __init__(self) -> None:
        self.waiting: asyncio.Queue[Delivery] = asyncio.Queue()
        self.counts = Deliveries()
        self.later: set[asyncio.Task[None]] = set()

    async def on_message(self, msg: Any) -> None:
        self.waiting.put_nowait(AmqpDelivery(msg, self.counts, self.later))

    async def fetch(self, n: int, timeout: float) -> list[Delivery]:
        try:
            out = [await asyncio.wait_for(self.waiting.get(), timeout)]
        except TimeoutError:
            return []
        while len(out) < n and not self.waiting.empty():
            out.append(self.waiting.get_nowait())
        return out


def _short(text: str | None) -> str | None:
    """``text`` as an AMQP short string (at most 255 bytes), or None: the id then travels
    in the headers only (a long source: a publisher name and a 253-character node)."""
    return text if text is not None and len(text.encode()) <= 255 else None


class AmqpConnection(LoopThread):
    """One connection to ``url``'s RabbitMQ with a confirming channel; close it after use."""

    name = "amqp"

    async def _connect(self, timeout: float) -> None:
        try:
            self.connection = await asyncio.wait_for(
                aio_pika.connect_robust(
                    host=self.url.host,
                    port=self.url.port,
                    login=self.url.user or "guest",
                    password=self.url.password or "guest",
                    virtualhost="/",
                    timeout=timeout,
                    ssl=self.url.tls,
                    ssl_context=client_context() if self.url.tls else None,
                    reconnect_interval=0.5,  # once connected, ride out broker restarts
                ),
                timeout,
            )
        except BrokerConfigError:
            raise
        except Exception as exc:
            hint = "is RabbitMQ running there (and are the user and password right)?"
            if self.url.tls:
                hint = "amqps:// needs a RabbitMQ TLS listener (5671; docs/security.md)"
            raise BrokerError(
                f"cannot reach the broker at {self.url}: {type(exc).__name__}: {exc}; {hint}"
            ) from None
        self.channel = await self.connection.channel(publisher_confirms=True, on_return_raises=True)

    async def _ensure_stream(self, max_msgs: int) -> None:
        name = self.url.stream
        try:
            self.exchange = await self.channel.declare_exchange(
                name, aio_pika.ExchangeType.TOPIC, durable=True
            )
        except aio_pika.exceptions.ChannelPreconditionFailed as exc:
            raise BrokerError(
                f"exchange {name} exists and is not a durable topic exchange ({exc}): "
                "another application uses that name"
            ) from None
        await self._ensure_queue(name, queue_arguments(max_msgs, name))
        queue = await self.channel.declare_queue(name, passive=True)
        await queue.bind(self.exchange, f"{self.url.prefix}.#")
        dead = dead_letters(name)
        exchange = await self.channel.declare_exchange(
            dead, aio_pika.ExchangeType.FANOUT, durable=True
        )
        bounded = {"x-max-length": DEAD_MAX_MSGS, "x-overflow": "drop-head"}
        await self._ensure_queue(dead, bounded)
        await (await self.channel.declare_queue(dead, passive=True)).bind(exchange)

    async def _ensure_queue(self, name: str, arguments: dict[str, Any]) -> None:
        """Declare a durable queue unless it exists: an existing queue keeps its settings
        (as an existing JetStream stream)."""
        probe = await self.connection.channel()
        try:
            await probe.declare_queue(name, passive=True)
        except aio_pika.exceptions.ChannelNotFoundEntity:
            await self.channel.declare_queue(name, durable=True, arguments=arguments)
        finally:
            with contextlib.suppress(Exception):
                await probe.close()

    async def publish(
        self, subject: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> None:
        """Publish a persistent message; returns once the broker confirmed it (raises when
        it refused it, could not route it, or did not answer)."""
        message = aio_pika.Message(
            body,
            headers=dict(headers),
            message_id=_short(headers.get(MSG_ID)),
            content_type="application/json",
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        )
        await self.exchange.publish(message, routing_key=subject, timeout=timeout)

    async def subscribe(self, durable: str, batch: int, ack_wait_s: float) -> AmqpSubscription:
        """Consume the queue with manual acks and a prefetch of ``4 * batch``."""
        sub = AmqpSubscription()
        try:
            channel = await self.connection.channel()
            await channel.set_qos(prefetch_count=batch * 4)
            queue = await channel.declare_queue(self.url.stream, passive=True)
            await queue.consume(sub.on_message, no_ack=False, consumer_tag=durable)
        except Exception as exc:
            raise BrokerError(f"cannot consume from {self.url}: {exc}") from None
        return sub

    async def _close_client(self) -> None:
        await self.connection.close()
