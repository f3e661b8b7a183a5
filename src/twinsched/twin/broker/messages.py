"""Message ids, subjects and the ordering rule of broker ingestion (pure functions).

Every message carries its publisher stream (``Twinsched-Source``: the publisher's name and,
for node samples, the node) and its sequence number in that stream (``Twinsched-Seq``, from
1). ``Nats-Msg-Id`` is both, so JetStream drops a publish retried within its duplicate window;
the twin keeps the highest number applied per stream and a unique key over ``(source, seq)``
(``twin_messages``), so a message delivered again after a crash is dropped too.

Ids are checked before anything is written (:func:`message_id`): a source of 1 to
``MAX_SOURCE_LENGTH`` printable characters, a sequence number of decimal digits in
``[1, MAX_SEQ]`` (a signed 64-bit column). Numbers move forward within ``SEQ_WINDOW`` of the
last applied (:func:`order`): one further ahead is refused, never applied nor kept as the
stream's high-water mark, so a forged number cannot make the twin drop the stream's later
messages as duplicates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from twinsched.errors import TwinschedError
from twinsched.model.ids import ID_PATTERN
from twinsched.store.history.store import MessageId

MSG_ID = "Nats-Msg-Id"
SOURCE = "Twinsched-Source"
SEQ = "Twinsched-Seq"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_PRINTABLE = re.compile(ID_PATTERN)
_DIGITS = re.compile(r"[0-9]{1,19}")
MAX_SEQ = 2**63 - 1  # twin_messages.seq is a signed 64-bit integer
MAX_SOURCE_LENGTH = 512  # a publisher name and a node id (253), indexable in SQL
SEQ_WINDOW = 4096  # how far ahead of the last applied number a message may be
EXCERPT = 80  # characters of a bad header quoted in an error

Verdict = Literal["apply", "duplicate", "wait", "ahead", "stale"]


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


def excerpt(value: object, most: int = EXCERPT) -> str:
    """``repr(value)`` cut to ``most`` characters (bad headers are quoted, not echoed)."""
    text = repr(value)
    return text if len(text) <= most else f"{text[: most - 3]}..."


def message_id(headers: Mapping[str, Any] | None) -> MessageId:
    """The id carried by a message's headers, or :class:`MessageError` naming the header,
    the rule and a bounded excerpt of the value."""
    source = (headers or {}).get(SOURCE)
    raw = (headers or {}).get(SEQ)
    if not source:
        raise MessageError(f"message without a {SOURCE} header")
    if not isinstance(source, str) or len(source) > MAX_SOURCE_LENGTH:
        size = len(source) if isinstance(source, str) else type(source).__name__
        raise MessageError(
            f"{SOURCE} {excerpt(source)} ({size}): must be text of 1 to {MAX_SOURCE_LENGTH} "
            "characters"
        )
    if not _PRINTABLE.fullmatch(source):
        raise MessageError(
            f"{SOURCE} {excerpt(source)}: no control, format or separator characters"
        )
    text = str(raw).strip() if isinstance(raw, str | int) else ""
    if not _DIGITS.fullmatch(text) or not 1 <= int(text) <= MAX_SEQ:
        raise MessageError(
            f"message of {excerpt(source)}: {SEQ} {excerpt(raw)} must be an integer in "
            f"[1, {MAX_SEQ}] (2^63 - 1)"
        )
    return MessageId(source, int(text))


def order(
    last: int | None, seq: int, deliveries: int, patience: int, window: int = SEQ_WINDOW
) -> Verdict:
    """What to do with message ``seq`` of a stream whose last applied number is ``last``.

    At or below ``last``: a duplicate (a redelivery), unless more than ``window`` below it,
    which no redelivery can be (``stale``: the publisher restarted its numbering under the
    same name). The next number (``last + 1``, or 1 for a new stream): apply. Up to
    ``window`` beyond it, an earlier message is missing (still to be redelivered after a
    crash, or being retried by its publisher): wait (redeliver later), unless it has already
    been delivered ``patience`` times, when the missing ones are given up on and it is
    applied (the caller counts the gap). Further beyond (``ahead``): refused, as no publisher
    has that many messages in flight; the stream's mark stays. A stream the twin has not
    seen starts at its first message after the same wait (a twin on a new history joining
    running publishers).
    """
    expected = (last or 0) + 1
    if seq < expected:
        return "duplicate" if last is None or seq >= last - window else "stale"
    if seq == expected:
        return "apply"
    if last is not None and seq > last + window:
        return "ahead"
    return "apply" if deliveries >= patience else "wait"


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
    rejected: int = 0  # dead letters: messages that can never apply, terminated once
    redelivered_later: int = 0  # sent back: an earlier message of their stream was missing
    gaps: int = 0  # messages applied after giving up on missing earlier ones
    retried: int = 0  # writes that failed (database down) and were left for redelivery
    fetch_errors: int = 0  # fetches that failed (broker unreachable); the consumer retries
    last: dict[str, int] = field(default_factory=dict)
    dead_letters: dict[str, int] = field(default_factory=dict)  # reason -> count
