"""Message ids, subjects and the ordering rule of broker ingestion (pure functions).

Every message carries its publisher stream (``Twinsched-Source``: the publisher's name and,
for node samples, the node) and its sequence number in that stream (``Twinsched-Seq``, from
1). ``Nats-Msg-Id`` is both, so JetStream drops a publish retried within its duplicate window;
the twin keeps the highest number applied per stream and a unique key over ``(source, seq)``
(``twin_messages``), so a message delivered again after a crash is dropped too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from twinsched.errors import TwinschedError
from twinsched.store.history.store import MessageId

MSG_ID = "Nats-Msg-Id"
SOURCE = "Twinsched-Source"
SEQ = "Twinsched-Seq"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")

Verdict = Literal["apply", "duplicate", "wait"]


class Delivery(Protocol):
    """One delivery of a message to the twin, whatever the broker (NATS, AMQP)."""

    @property
    def headers(self) -> Mapping[str, Any] | None: ...

    @property
    def data(self) -> bytes: ...

    @property
    def deliveries(self) -> int:
        """1 for the first delivery of this message, more for redeliveries."""
        ...

    async def ack(self) -> None:
        """Done with: the broker forgets the message."""

    async def nak(self, delay: float) -> None:
        """Deliver it again in ``delay`` s (or later)."""

    async def term(self) -> None:
        """Never deliver it again (it can never apply)."""


class MessageError(TwinschedError):
    """A broker message without a valid id (its headers name no source or sequence)."""


def subject_token(name: str) -> str:
    """``name`` as one subject token: characters other than letters, digits, ``_``, ``-``
    (dots, spaces, wildcards) become ``%XX`` (UTF-8 bytes), so distinct names stay distinct."""
    return _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), name) or "%"


def samples_subject(prefix: str, node: str) -> str:
    """The subject of one node's samples."""
    return f"{prefix}.samples.{subject_token(node)}"


def deltas_subject(prefix: str, source: str) -> str:
    """The subject of one publisher's cluster deltas (pods, node status)."""
    return f"{prefix}.deltas.{subject_token(source)}"


def headers_of(message: MessageId) -> dict[str, str]:
    """The headers that identify ``message``."""
    return {
        MSG_ID: f"{message.source}#{message.seq}",
        SOURCE: message.source,
        SEQ: str(message.seq),
    }


def message_id(headers: Mapping[str, Any] | None) -> MessageId:
    """The id carried by a message's headers, or :class:`MessageError`."""
    source = (headers or {}).get(SOURCE)
    raw = (headers or {}).get(SEQ)
    if not source:
        raise MessageError(f"message without a {SOURCE} header")
    try:
        seq = int(str(raw))
    except ValueError:
        raise MessageError(f"message of {source}: {SEQ} {raw!r} is not an integer") from None
    if seq < 1:
        raise MessageError(f"message of {source}: {SEQ} {seq} must be >= 1")
    return MessageId(str(source), seq)


def order(last: int | None, seq: int, deliveries: int, patience: int) -> Verdict:
    """What to do with message ``seq`` of a stream whose last applied number is ``last``.

    At or below ``last``: a duplicate. The next number (``last + 1``, or 1 for a new
    stream): apply. Beyond it, an earlier message is missing (still to be redelivered after
    a crash, or being retried by its publisher): wait (redeliver later), unless it has
    already been delivered ``patience`` times, when the missing ones are given up on and it
    is applied (the caller counts the gap).
    """
    expected = (last or 0) + 1
    if seq < expected:
        return "duplicate"
    if seq == expected or deliveries >= patience:
        return "apply"
    return "wait"


def split_by_node(body: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """A ``PATCH /state`` batch of ``metrics`` deltas as one batch per node, in order.

    Each node's batch keeps the batch time; deltas without a time get it (so the samples
    keep their times however the batches are applied). Other deltas are refused: cluster
    changes go in order on one stream (:func:`deltas_subject`)."""
    at = body["time"]
    out: dict[str, list[dict[str, Any]]] = {}
    for i, delta in enumerate(body.get("deltas", [])):
        if delta.get("op") != "metrics":
            raise MessageError(f"deltas[{i}]: only metrics deltas go per node, got {delta!r}")
        timed = dict(delta) if delta.get("time") is not None else {**delta, "time": at}
        out.setdefault(str(delta["node"]), []).append(timed)
    return [(node, {"time": at, "deltas": deltas}) for node, deltas in out.items()]


@dataclass
class ConsumerStats:
    """Counters of the consumer, and the highest number applied per stream."""

    received: int = 0  # messages fetched, each delivery counted
    redelivered: int = 0  # of those, deliveries after the first (crash, nak, ack timeout)
    applied: int = 0
    duplicates: int = 0
    rejected: int = 0
    redelivered_later: int = 0  # sent back: an earlier message of their stream was missing
    gaps: int = 0  # messages applied after giving up on missing earlier ones
    retried: int = 0  # writes that failed (database down) and were left for redelivery
    fetch_errors: int = 0  # fetches that failed (broker unreachable); the consumer retries
    last: dict[str, int] = field(default_factory=dict)
