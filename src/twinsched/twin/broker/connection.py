"""A NATS JetStream connection on its own event-loop thread (the ``nats://`` backend).

:class:`Connection` connects (a clear :class:`BrokerError` naming the URL when it cannot),
makes sure the JetStream stream exists, publishes (returning once JetStream acknowledged)
and subscribes the twin's durable pull consumer. The stream is a work queue bounded by
``max_msgs`` with ``discard=new``: a twin that falls behind fills it, and then the broker
refuses publishes, which the publishers retry (they block): the bound is the buffer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from twinsched.extras import needs
from twinsched.twin.broker import WHY
from twinsched.twin.broker.loop import BrokerError, LoopThread
from twinsched.twin.broker.messages import Delivery
from twinsched.twin.broker.tls import client_context
from twinsched.twin.broker.url import BrokerConfigError

with needs("broker", WHY):
    import nats
    import nats.errors
    from nats.js import api
    from nats.js.errors import NotFoundError

__all__ = ["BrokerError", "Connection"]
DUPLICATE_WINDOW_S = 120.0

log = logging.getLogger(__name__)


class _NoTls(Exception):
    """A ``tls://`` server that does not offer TLS: refused before anything is sent."""


async def _server_info(reader: asyncio.StreamReader, timeout: float) -> dict[str, Any]:
    """The server's first ``INFO {...}`` line, as a dict (empty when it is not one)."""
    import json

    line = await asyncio.wait_for(reader.readline(), timeout)
    head, _, body = line.decode("utf-8", "replace").partition(" ")
    try:
        info = json.loads(body) if head == "INFO" else {}
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


async def _log_error(exc: Exception) -> None:
    log.warning("broker connection: %s: %s", type(exc).__name__, exc)


@dataclass(frozen=True)
class NatsDelivery:
    """A JetStream message as a :class:`Delivery`."""

    msg: Any

    @property
    def headers(self) -> Any:
        return self.msg.headers

    @property
    def data(self) -> bytes:
        return bytes(self.msg.data)

    @property
    def deliveries(self) -> int:
        return int(self.msg.metadata.num_delivered)

    async def ack(self) -> None:
        await self.msg.ack()

    async def nak(self, delay: float) -> None:
        await self.msg.nak(delay=delay)

    async def term(self) -> None:
        await self.msg.term()


@dataclass(frozen=True)
class NatsSubscription:
    """A durable pull consumer's fetches."""

    sub: Any

    async def fetch(self, n: int, timeout: float) -> list[Delivery]:
        try:
            return [NatsDelivery(m) for m in await self.sub.fetch(n, timeout=timeout)]
        except (TimeoutError, nats.errors.TimeoutError):
            return []


class Connection(LoopThread):
    """One connection to ``url``'s server with its JetStream context; close it after use."""

    name = "nats"

    async def _connect(self, timeout: float) -> None:
        # The client retries an unreachable server forever: probe it once first.
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self.url.host, self.url.port), timeout
            )
            info = await _server_info(reader, timeout) if self.url.tls else {}
            writer.close()
            await writer.wait_closed()
            if self.url.tls and not info.get("tls_required"):
                raise _NoTls("the server does not require TLS (no tls_required in its INFO)")
            self.nc = await nats.connect(
                self.url.server,
                tls=client_context() if self.url.tls else None,
                tls_hostname=self.url.host if self.url.tls else None,
                connect_timeout=timeout,
                max_reconnect_attempts=-1,  # once connected, ride out broker restarts
                reconnect_time_wait=0.5,
                error_cb=_log_error,
            )
        except BrokerConfigError:
            raise
        except Exception as exc:
            hint = "is NATS (with JetStream: nats-server -js) running there?"
            if self.url.tls:
                hint = "tls:// needs a NATS server with a tls block (docs/security.md)"
            raise BrokerError(
                f"cannot reach the broker at {self.url}: {type(exc).__name__}: {exc}; {hint}"
            ) from None
        self.js = self.nc.jetstream()

    async def _ensure_stream(self, max_msgs: int) -> None:
        subjects = [f"{self.url.prefix}.>"]
        try:
            info = await self.js.stream_info(self.url.stream)
        except NotFoundError:
            config = api.StreamConfig(
                name=self.url.stream,
                subjects=subjects,
                retention=api.RetentionPolicy.WORK_QUEUE,
                storage=api.StorageType.FILE,
                discard=api.DiscardPolicy.NEW,
                max_msgs=max_msgs,
                duplicate_window=DUPLICATE_WINDOW_S,
            )
            try:
                await self.js.add_stream(config)
            except Exception as exc:
                raise BrokerError(f"cannot create stream {self.url.stream}: {exc}") from None
            return
        except Exception as exc:
            raise BrokerError(
                f"the broker at {self.url} has no JetStream ({type(exc).__name__}: {exc}); "
                "start nats-server with -js"
            ) from None
        if list(info.config.subjects or []) != subjects:
            raise BrokerError(
                f"stream {self.url.stream} exists with subjects {info.config.subjects}, "
                f"expected {subjects}: another application uses that name"
            )

    async def publish(
        self, subject: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> None:
        """Publish; returns once JetStream stored it (raises if refused or not answered)."""
        await self.js.publish(subject, body, timeout=timeout, headers=headers)

    async def subscribe(self, durable: str, batch: int, ack_wait_s: float) -> NatsSubscription:
        """Bind the twin's durable pull consumer (made anew: see the consumer's module)."""
        config = api.ConsumerConfig(
            ack_policy=api.AckPolicy.EXPLICIT,
            ack_wait=ack_wait_s,
            max_ack_pending=batch * 4,
            max_deliver=-1,
        )
        try:
            # One twin consumes (the history's writer lease): what a predecessor fetched and
            # never acked is redelivered now, in stream order, rather than after ack_wait.
            with contextlib.suppress(NotFoundError):
                await self.js.delete_consumer(self.url.stream, durable)
            sub = await self.js.pull_subscribe(
                f"{self.url.prefix}.>", durable=durable, stream=self.url.stream, config=config
            )
        except Exception as exc:
            raise BrokerError(f"cannot consume from {self.url}: {exc}") from None
        return NatsSubscription(sub)

    async def _close_client(self) -> None:
        await self.nc.close()
