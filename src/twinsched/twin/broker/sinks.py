"""Broker ends for the existing feeders: the collectors' sink and the run loop's client.

:class:`BrokerSink` takes the collectors' batches (node metrics) and publishes one message
per node. :class:`BrokerTwinClient` is a :class:`TwinClient` whose ``patch`` goes through
the broker, then waits until the twin reports the message applied (``GET /broker``), so a
run's loop (``run --twin URL --broker URL``) decides on the state it sent, as over HTTP.
Reads and the whole-state ``PUT`` stay on HTTP.
"""

from __future__ import annotations

import time
from typing import Any

from twinsched.store.history.store import MessageId
from twinsched.twin.broker.publisher import BrokerPublisher
from twinsched.twin.client import TwinClient, TwinClientError
from twinsched.twin.core.deltas import PatchResult


class BrokerSink:
    """A collector sink: each batch of node metrics becomes one message per node."""

    def __init__(self, publisher: BrokerPublisher) -> None:
        self.publisher = publisher

    def __call__(self, body: dict[str, Any]) -> None:
        self.publisher.publish_samples(body)

    def close(self) -> None:
        """Wait for the broker's acknowledgements, then close."""
        self.publisher.close()


class BrokerTwinClient(TwinClient):
    """A twin client whose deltas travel through ``publisher``; ``wait_s`` bounds the wait
    for the twin to apply each batch."""

    def __init__(
        self, base_url: str, publisher: BrokerPublisher, token: str | None = None, **kw: Any
    ) -> None:
        super().__init__(base_url, token, **kw)
        self.publisher = publisher
        self.wait_s = 60.0
        self.last: MessageId | None = None  # the last batch published by publish_patch

    def patch_json(self, body: bytes) -> PatchResult:
        """Publish the batch (``patch`` lands here too), then wait until it is applied."""
        message = self.publisher.publish_deltas(body)
        self.publisher.flush()
        status = self.wait_applied(message.source, message.seq)
        version = int(status.get("version", 0))
        return PatchResult(applied=0, samples=0, version=version, time=float(status["time"]))

    def publish_patch(self, body: bytes) -> None:
        """Publish a batch and go on (the twin loop's fast path: the broker orders the
        batches of this publisher's stream); :meth:`settle` waits for the last one."""
        self.last = self.publisher.publish_deltas(body)

    def settle(self) -> None:
        """Wait until the broker took every batch published and the twin applied the last."""
        self.publisher.flush()
        if self.last is not None:
            self.wait_applied(self.last.source, self.last.seq)

    def wait_applied(self, source: str, seq: int) -> dict[str, Any]:
        """Poll ``GET /broker`` until message ``seq`` of ``source`` is applied."""
        deadline = time.monotonic() + self.wait_s
        pause = 0.001
        while True:
            status: dict[str, Any] = self._send("GET", "/broker", params={"source": source}).json()
            if not status.get("enabled"):
                raise TwinClientError(409, "the twin consumes no broker (twin serve --broker)")
            if int(status.get("sources", {}).get(source, 0)) >= seq:
                return status
            if time.monotonic() > deadline:
                raise TwinClientError(0, f"message {source}#{seq} not applied in {self.wait_s} s")
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def close(self) -> None:
        try:
            self.publisher.close()
        finally:
            super().close()
