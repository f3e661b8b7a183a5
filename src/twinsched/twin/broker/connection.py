"""A NATS connection on its own event-loop thread, for the synchronous callers of this code.

:class:`Connection` connects (a clear :class:`BrokerError` naming the URL when it cannot),
makes sure the JetStream stream exists, and runs coroutines on its loop with :meth:`call`
(wait for the result) or :meth:`submit` (a future). The stream is a work queue bounded by
``max_msgs`` with ``discard=new``: a twin that falls behind fills it, and then the broker
refuses publishes, which the publishers retry (they block): the bound is the buffer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from twinsched.errors import TwinschedError
from twinsched.extras import needs
from twinsched.twin.broker import WHY
from twinsched.twin.broker.url import BrokerUrl

with needs("broker", WHY):
    import nats
    from nats.js import api
    from nats.js.errors import NotFoundError

T = TypeVar("T")
DUPLICATE_WINDOW_S = 120.0
STREAM_MAX_MSGS = 1_000_000


log = logging.getLogger(__name__)


async def _log_error(exc: Exception) -> None:
    log.warning("broker connection: %s: %s", type(exc).__name__, exc)


class BrokerError(TwinschedError):
    """The broker cannot be reached, or refused or lost a message; the message names it."""


class Connection:
    """One connection to ``url``'s server with its JetStream context; close it after use."""

    def __init__(
        self, url: BrokerUrl, *, connect_timeout: float = 3.0, max_msgs: int = STREAM_MAX_MSGS
    ) -> None:
        self.url = url
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="nats")
        self._thread.start()
        try:
            self.nc = self.call(self._connect(connect_timeout), connect_timeout * 3 + 5)
            self.js = self.nc.jetstream()
            self.call(self._ensure_stream(max_msgs), 30)
        except BaseException:
            self._stop_loop()
            raise

    async def _connect(self, timeout: float) -> Any:
        # The client retries an unreachable server forever: probe it once first.
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(self.url.host, self.url.port), timeout
            )
            writer.close()
            await writer.wait_closed()
            return await nats.connect(
                self.url.server,
                connect_timeout=timeout,
                max_reconnect_attempts=-1,  # once connected, ride out broker restarts
                reconnect_time_wait=0.5,
                error_cb=_log_error,
            )
        except Exception as exc:
            raise BrokerError(
                f"cannot reach the broker at {self.url}: {type(exc).__name__}: {exc}; "
                "is NATS (with JetStream: nats-server -js) running there?"
            ) from None

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
            await self.nc.close()
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
