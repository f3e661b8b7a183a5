"""The twin's side: a durable consumer (JetStream or AMQP) that applies each message once, in order.

For each message: its id (:func:`~twinsched.twin.broker.messages.message_id`) is checked
against the highest number applied in its stream (:func:`~twinsched.twin.broker.messages.order`):
a duplicate is acked and dropped; a message that arrives before an earlier one of its stream
(redelivered after a crash) is sent back for later; the next one is applied through
:meth:`TwinService.apply` with its id, which writes the id in the same transaction as the
patch (a unique key: a redelivery that slips past the check is refused there), and acked
only once that transaction is committed. The stream is a work queue (acked messages leave
it), and the durable consumer is created anew when the twin starts, so what a killed twin
had fetched but not acked comes first, in order (RabbitMQ: the queue takes back what a closed
channel never acked, at its place, and has one active consumer; see
:mod:`~twinsched.twin.broker.amqp`). A twin killed between the commit and the ack gets
the message again, and drops it.

A message that can never apply is a dead letter: a bad id (source, sequence number out of
range, see :func:`~twinsched.twin.broker.messages.message_id`), a number out of the window,
a body that is not a valid batch, a delta that cannot apply, or a write that keeps failing
while the database answers. It is terminated once (JetStream ``term``; RabbitMQ ``reject``
without requeue, into the queue's dead-letter exchange), counted by reason and logged in one
bounded line; it never holds back the valid messages fetched with it (a run that fails is
applied message by message). A write that fails while the database does not answer (or the
writer lease is lost) is transient: the message is sent back and tried again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any

from pydantic import ValidationError

from twinsched.store.history.store import DuplicateMessageError, MessageId
from twinsched.twin.broker.loop import Subscription, Transport
from twinsched.twin.broker.messages import (
    SEQ_WINDOW,
    ConsumerStats,
    Delivery,
    MessageError,
    excerpt,
    message_id,
    order,
)
from twinsched.twin.broker.transport import connect
from twinsched.twin.broker.url import BrokerUrl, parse_broker_url
from twinsched.twin.core.deltas import Delta, MetricsDelta, StatePatch
from twinsched.twin.core.service import DeltaError, TimeOrderError, TwinService

log = logging.getLogger(__name__)
DURABLE = "twinsched-twin"
STRIKES = 3  # failed writes, the database answering, before a message is a dead letter


class BrokerConsumer:
    """Feeds ``service`` from the stream at ``url``; :meth:`start` it, :meth:`stop` it."""

    def __init__(
        self,
        service: TwinService,
        url: str | BrokerUrl,
        *,
        durable: str = DURABLE,
        batch: int = 256,
        ack_wait_s: float = 5.0,
        retry_delay_s: float = 0.25,
        window: int = SEQ_WINDOW,
    ) -> None:
        self.service = service
        self.url = parse_broker_url(url) if isinstance(url, str) else url
        self.durable, self.batch = durable, batch
        self.ack_wait_s, self.retry_delay_s, self.window = ack_wait_s, retry_delay_s, window
        # Wait for a missing message for twice its redelivery time before giving up on it.
        self.patience = int((2 * ack_wait_s + 1) / retry_delay_s) + 1
        history = service.history
        self.stats = ConsumerStats(last=history.applied_messages() if history else {})
        self._strikes: dict[MessageId, int] = {}
        self._stopping = threading.Event()
        self._conn: Transport | None = None
        self._task: Any = None

    def start(self) -> None:
        """Connect, bind the durable consumer and start consuming (in the background)."""
        self._conn = connect(self.url)
        try:
            subscribe = self._conn.subscribe(self.durable, self.batch, self.ack_wait_s)
            sub = self._conn.call(subscribe, 30)
        except BaseException:
            self._conn.close()
            raise
        self._task = self._conn.submit(self._consume(sub))

    async def _consume(self, sub: Subscription) -> None:
        while not self._stopping.is_set():
            try:
                messages = await sub.fetch(self.batch, 0.5)
            except Exception:  # disconnected: the client reconnects; try again
                self.stats.fetch_errors += 1
                log.exception("twin: broker fetch failed")
                await asyncio.sleep(0.5)
                continue
            if messages:
                await self.handle_batch(messages)

    async def handle_batch(self, messages: list[Delivery]) -> None:
        """Apply a fetched batch: runs of node samples that are each the next of their
        stream go in one transaction (one commit, then one ack each); the rest one by one."""
        group: list[tuple[Delivery, MessageId, StatePatch]] = []
        for msg in messages:
            self.stats.received += 1
            self.stats.redelivered += int(msg.deliveries > 1)
            ready = self._next_samples(msg, group)
            if ready is None:
                await self._apply_group(group)
                group = []
                await self.handle(msg)
            else:
                group.append((msg, *ready))
        await self._apply_group(group)

    def _next_samples(
        self, msg: Delivery, group: list[tuple[Delivery, MessageId, StatePatch]]
    ) -> tuple[MessageId, StatePatch] | None:
        """The id and batch of ``msg`` if it is node samples next in its stream after the
        group's, else None (then :meth:`handle` decides)."""
        try:
            mid = message_id(msg.headers)
            patch = StatePatch.model_validate_json(msg.data)
        except (MessageError, ValidationError):
            return None
        before = [m.seq for _, m, _ in group if m.source == mid.source]
        last = max(before) if before else self.stats.last.get(mid.source, 0)
        if mid.seq != last + 1 or not all(isinstance(d, MetricsDelta) for d in patch.deltas):
            return None
        return mid, patch

    async def _apply_group(self, group: list[tuple[Delivery, MessageId, StatePatch]]) -> None:
        if not group:
            return
        deltas: list[Delta] = []
        for _, _, patch in group:  # samples keep their times; the batch takes the newest
            for d in patch.deltas:
                assert isinstance(d, MetricsDelta)
                deltas.append(
                    d if d.time is not None else d.model_copy(update={"time": patch.time})
                )
        at = max(self.service.time, *(patch.time for _, _, patch in group))
        merged = StatePatch.model_construct(time=at, deltas=deltas)
        try:
            self.service.apply(merged, None, [mid for _, mid, _ in group])
        except (
            Exception
        ) as exc:  # one by one (each gets its own answer), unless the database is down
            if not isinstance(exc, DuplicateMessageError | DeltaError) and self._down(exc):
                self.stats.retried += len(group)
                for msg, _, _ in group:
                    await msg.nak(delay=1.0)
            else:
                for msg, _, _ in group:
                    await self.handle(msg)
            return
        self.stats.applied += len(group)
        for msg, mid, _ in group:
            self.stats.last[mid.source] = max(mid.seq, self.stats.last.get(mid.source, 0))
            await msg.ack()  # only now: the write is committed

    async def handle(self, msg: Delivery) -> None:
        """Apply one message, then ack it (or send it back, or dead-letter it)."""
        try:
            mid = message_id(msg.headers)
        except MessageError as exc:
            return await self._reject(msg, None, "id", str(exc))
        last = self.stats.last.get(mid.source)
        verdict = order(last, mid.seq, msg.deliveries, self.patience, self.window)
        if verdict == "duplicate":
            self.stats.duplicates += 1
            await msg.ack()
            return
        if verdict == "wait":
            self.stats.redelivered_later += 1
            await msg.nak(delay=self.retry_delay_s)
            return
        if verdict in ("ahead", "stale"):
            where = "ahead of" if verdict == "ahead" else "below"
            why = (
                f"more than {self.window} {where} the last applied #{last}: out of the "
                "window (a publisher that restarts its numbering takes a new source name)"
            )
            return await self._reject(msg, mid, "window", why, keep_mark=True)
        if mid.seq > (last or 0) + 1:
            self.stats.gaps += 1
            log.error("twin: gave up waiting for %s before #%d", excerpt(mid.source), mid.seq)
        await self._write(msg, mid)

    async def _write(self, msg: Delivery, mid: MessageId) -> None:
        """Apply ``msg`` and ack it; dead-letter it when it can never apply; send it back
        when the database is down."""
        try:
            self._apply(msg.data, mid)
        except DuplicateMessageError:
            self.stats.duplicates += 1
        except ValidationError as exc:
            return await self._reject(msg, mid, "body", _first_error(exc))
        except DeltaError as exc:
            return await self._reject(msg, mid, "delta", str(exc))
        except Exception as exc:
            if self._down(exc) or self._strike(mid) < STRIKES:
                self.stats.retried += 1
                await msg.nak(delay=1.0)
                return
            why = f"{STRIKES} writes failed: {type(exc).__name__}: {exc}"
            return await self._reject(msg, mid, "write", why)
        else:
            self.stats.applied += 1
        self._strikes.pop(mid, None)
        self.stats.last[mid.source] = max(mid.seq, self.stats.last.get(mid.source, 0))
        await msg.ack()  # only now: the write is committed

    def _down(self, exc: Exception) -> bool:
        """Whether a failed write is the database's fault (unreachable, the lease lost):
        then the message is sent back. Logged in one line either way."""
        history = self.service.history
        try:
            if history is not None:
                history.check_writable()
        except Exception as down:
            log.warning("twin: history write failed, left for redelivery: %s", _line(down))
            return True
        log.warning("twin: a write failed with the database up: %s", _line(exc))
        return False

    def _strike(self, mid: MessageId) -> int:
        """One more failed write of ``mid`` with the database up; how many so far."""
        if len(self._strikes) > 10_000:  # bounded: only messages in flight have strikes
            self._strikes.clear()
        self._strikes[mid] = self._strikes.get(mid, 0) + 1
        return self._strikes[mid]

    def _apply(self, body: bytes, mid: MessageId) -> None:
        patch = StatePatch.model_validate_json(body)
        try:
            self.service.apply(patch, body, mid)
        except TimeOrderError:
            # Node samples of different streams interleave: their batch times may go back.
            # They keep their own times (delta.time); the state's time does not go back.
            if not all(isinstance(d, MetricsDelta) and d.time is not None for d in patch.deltas):
                raise
            later = patch.model_copy(update={"time": self.service.time})
            self.service.apply(later, None, mid)

    async def _reject(
        self, msg: Delivery, mid: MessageId | None, reason: str, why: str, keep_mark: bool = False
    ) -> None:
        """Dead-letter a message that can never apply (terminated: never delivered again);
        its stream goes on after it, unless it was out of the window (``keep_mark``)."""
        self.stats.rejected += 1
        self.stats.dead_letters[reason] = self.stats.dead_letters.get(reason, 0) + 1
        what = "without an id" if mid is None else f"{excerpt(mid.source)}#{mid.seq}"
        log.error("twin: dead letter %s (%s): %s", what, reason, _line(why))
        if mid is not None:
            self._strikes.pop(mid, None)
            if not keep_mark:
                self.stats.last[mid.source] = max(mid.seq, self.stats.last.get(mid.source, 0))
        await msg.term()

    def stop(self) -> None:
        """Stop consuming (the message in hand is finished) and close the connection."""
        self._stopping.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                self._task.result(5)
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _line(what: object, most: int = 300) -> str:
    """One bounded log line: the first line of ``what``, cut to ``most`` characters."""
    text = str(what).splitlines()[0] if str(what) else type(what).__name__
    return text if len(text) <= most else f"{text[: most - 3]}..."


def _first_error(exc: ValidationError) -> str:
    """The first problem of a body that is not a batch: its path and message."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "body"
    return f"{exc.error_count()} problems; {where}: {first['msg']}"
