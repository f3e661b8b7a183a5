"""What the broker backends share: an event loop on a thread of its own, the error, the ends.

The publishers and the twin's consumer are synchronous; each backend's connection
(:mod:`~twinsched.twin.broker.connection` for NATS JetStream,
:mod:`~twinsched.twin.broker.amqp` for RabbitMQ) subclasses :class:`LoopThread`, runs its
client there and offers the same three coroutines (:class:`Transport`): ``publish`` returns
once the broker has taken the message (JetStream's ack, AMQP's publisher confirm),
``subscribe`` gives the twin's :class:`Subscription`, whose ``fetch`` hands out
:class:`~twinsched.twin.broker.messages.Delivery` values. :func:`connect` picks the backend
by the URL's scheme and imports only its client.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

from twinsched.errors import TwinschedError
from twinsched.twin.broker.messages import Delivery
from twinsched.twin.broker.url import BrokerUrl

T = TypeVar("T")
STREAM_MAX_MSGS = 1_000_000


class BrokerError(TwinschedError):
    """The broker cannot be reached, or refused or lost a message; the message names it."""


class Subscription(Protocol):
    """The twin's end of the stream: up to ``n`` deliveries, [] after ``timeout`` s."""

    async def fetch(self, n: int, timeout: float) -> list[Delivery]: ...


class Transport(Protocol):
    """A connection of either backend (what the publisher and the consumer use)."""

    url: BrokerUrl

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]: ...

    def call(self, coro: Coroutine[Any, Any, T], timeout: float) -> T: ...

    async def publish(
        self, subject: str, body: bytes, headers: dict[str, str], timeout: float
    ) -> None: ...

    async def subscribe(self, durable: str, batch: int, ack_wait_s: float) -> Subscription: ...

    def close(self) -> None: ...


class LoopThread:
    """An event loop running on a daemon thread. A subclass connects in :meth:`_connect`,
    makes its stream or queue (bounded by ``max_msgs``) in :meth:`_ensure_stream` and closes
    its client in :meth:`_close_client`, all on the loop."""

    name = "broker"

    def __init__(
        self, url: BrokerUrl, *, connect_timeout: float = 3.0, max_msgs: int = STREAM_MAX_MSGS
    ) -> None:
        self.url = url
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name=self.name)
        self._thread.start()
        try:
            self.call(self._connect(connect_timeout), connect_timeout * 3 + 5)
            self.call(self._ensure_stream(max_msgs), 30)
        except BaseException:
            self._stop_loop()
            raise

    async def _connect(self, timeout: float) -> None:
        raise NotImplementedError

    async def _ensure_stream(self, max_msgs: int) -> None:
        raise NotImplementedError

    async def _close_client(self) -> None:
        raise NotImplementedError

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` on the connection's loop."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the loop and wait for its result."""
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise BrokerError(f"the broker at {self.url} did not answer in {timeout:g} s") from None

    def close(self) -> None:
        """Close the connection and stop the loop (idempotent). Messages fetched and not
        acked are redelivered by the broker; publishers flush before closing."""
        if self.loop.is_running():
            with contextlib.suppress(Exception):  # closing anyway
                self.call(self._shutdown(), 15)
        self._stop_loop()

    async def _shutdown(self) -> None:
        with contextlib.suppress(Exception):
            await self._close_client()
        current = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _stop_loop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
        if not self.loop.is_running() and not self.loop.is_closed():
            self.loop.close()
