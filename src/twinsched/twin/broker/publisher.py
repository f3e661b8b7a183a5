"""Publish batches to the twin through the broker: bounded in flight, retried, never dropped.

:meth:`BrokerPublisher.publish` numbers the message in its stream, sends it and returns at
once unless ``max_in_flight`` messages are still waiting for the broker's acknowledgement:
then it blocks (backpressure). A publish the broker refuses (its stream is full: the twin is
behind) or does not answer is retried with the same id: JetStream keeps it once (its
``Nats-Msg-Id``); RabbitMQ may keep a retried message twice, and the twin drops the second
(the id is unique in its history). After ``retry_for_s`` the next :meth:`publish` or
:meth:`flush` raises :class:`BrokerError`: nothing is dropped without the caller knowing.
``on_ack`` is called with each message id the broker acknowledged (from the connection's
thread).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Self

from twinsched.store.history.store import MessageId
from twinsched.twin.broker.loop import BrokerError
from twinsched.twin.broker.messages import (
    deltas_subject,
    headers_of,
    samples_subject,
    split_by_node,
)
from twinsched.twin.broker.transport import connect
from twinsched.twin.broker.url import BrokerUrl, parse_broker_url


def default_source() -> str:
    """A publisher name unique to this process: host, pid and a random suffix."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class BrokerPublisher:
    """Sends ``PATCH /state`` batches to the broker at ``url`` as publisher ``source``."""

    def __init__(
        self,
        url: str | BrokerUrl,
        source: str | None = None,
        *,
        max_in_flight: int = 256,
        ack_timeout: float = 5.0,
        retry_for_s: float = 60.0,
        on_ack: Callable[[MessageId], None] | None = None,
    ) -> None:
        if max_in_flight < 1:
            raise BrokerError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self.url = parse_broker_url(url) if isinstance(url, str) else url
        self.source = source or default_source()
        self.on_ack = on_ack
        self.ack_timeout, self.retry_for_s = ack_timeout, retry_for_s
        self.published = self.acked = self.retries = 0
        self.blocked_s = 0.0  # time publish() waited for a free slot
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self._max = max_in_flight
        self._seq: dict[str, int] = {}
        self._failure: BrokerError | None = None
        self._conn = connect(self.url)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- publishing ------------------------------------------------------------------------------
    def publish(self, subject: str, stream: str, body: bytes) -> MessageId:
        """Send ``body`` as the next message of ``stream`` (a source) on ``subject``."""
        self._raise_failure()
        started = time.perf_counter()
        while not self._slots.acquire(timeout=1.0):
            self._raise_failure()
        self.blocked_s += time.perf_counter() - started
        seq = self._seq[stream] = self._seq.get(stream, 0) + 1
        message = MessageId(stream, seq)
        self._conn.submit(self._send(subject, message, body))
        self.published += 1
        return message

    def publish_samples(self, body: Mapping[str, Any]) -> list[MessageId]:
        """A batch of ``metrics`` deltas, one message per node on the node's subject."""
        return [
            self.publish(
                samples_subject(self.url.prefix, node),
                f"{self.source}/{node}",
                json.dumps(patch).encode(),
            )
            for node, patch in split_by_node(body)
        ]

    def publish_deltas(self, body: bytes) -> MessageId:
        """A batch of any deltas (pods, node status, metrics) on this publisher's one stream,
        applied in publish order."""
        return self.publish(deltas_subject(self.url.prefix, self.source), self.source, body)

    async def _send(self, subject: str, message: MessageId, body: bytes) -> None:
        deadline = time.monotonic() + self.retry_for_s
        pause = 0.05
        try:
            while True:
                try:
                    await self._conn.publish(subject, body, headers_of(message), self.ack_timeout)
                    break
                except Exception as exc:  # refused (stream full), timed out, disconnected
                    if time.monotonic() >= deadline:
                        self._failure = BrokerError(
                            f"message {message.source}#{message.seq} not acknowledged by the "
                            f"broker at {self.url} after {self.retry_for_s:g} s: "
                            f"{type(exc).__name__}: {exc}"
                        )
                        return
                    self.retries += 1
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, 1.0)
            self.acked += 1
            if self.on_ack is not None:
                self.on_ack(message)
        finally:
            self._slots.release()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every message sent is acknowledged; raise if one could not be."""
        limit = self.retry_for_s + self.ack_timeout + 5 if timeout is None else timeout
        deadline = time.monotonic() + limit
        taken = 0
        try:
            while taken < self._max:
                left = deadline - time.monotonic()
                if left <= 0 or not self._slots.acquire(timeout=left):
                    raise BrokerError(f"{self._max - taken} messages not acknowledged in time")
                taken += 1
        finally:
            for _ in range(taken):
                self._slots.release()
        self._raise_failure()

    def close(self) -> None:
        """Flush, then close the connection."""
        try:
            self.flush()
        finally:
            self._conn.close()
