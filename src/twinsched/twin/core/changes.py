"""The twin's recent changes, by version: what a follower applies instead of whole states.

Every accepted ``PATCH /state`` batch (over HTTP or the broker) is one version; its
scheduling deltas (``pod``, ``pod_add``, ``node``; node metrics change no scheduling state
and are left out) are kept in a ring, :class:`ChangeLog`, bounded by ``max_deltas`` in all.
``GET /changes?since=V`` answers the versions after ``V`` with the twin's version now, so a
follower (the controller over the twin, the twin loop) applies only those. A ``since`` the
ring no longer covers (older than its oldest change, from before a ``PUT``, or ahead of the
twin: a twin restarted without its history) raises :class:`ChangesGone` (410): the follower
reads ``GET /state`` once and follows changes from its version on.

Each change names the broker stream that carried it (``source``; None over HTTP), so a
publisher that writes through the broker tells its own changes from others'.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import orjson

from twinsched.errors import TwinschedError
from twinsched.store.history.store import MessageId
from twinsched.twin.core.deltas import Delta, MetricsDelta

MAX_DELTAS = 200_000  # deltas kept in all (a pod_add holds a whole pod: ~1 KiB)


class ChangesGone(TwinschedError):
    """The changes after ``since`` are no longer (or not yet) known: read the whole state."""

    def __init__(self, since: int, oldest: int, version: int) -> None:
        self.since, self.oldest, self.version = since, oldest, version
        super().__init__(
            f"since: changes after version {since} are not kept (this twin keeps those after "
            f"{oldest}, up to {version}); read GET /state and follow from its version"
        )


@dataclass(slots=True)
class Change:
    """One accepted batch's scheduling deltas, at its version and time."""

    version: int
    time: float
    deltas: tuple[Delta, ...]
    source: str | None = None
    _json: bytes = field(default=b"", repr=False)

    def json(self) -> bytes:
        """The change as JSON (made once, on the first read)."""
        if not self._json:
            deltas = b",".join(d.model_dump_json(exclude_none=True).encode() for d in self.deltas)
            head = orjson.dumps({"version": self.version, "time": self.time,
                                 "source": self.source})  # fmt: skip
            self._json = head[:-1] + b',"deltas":[' + deltas + b"]}"
        return self._json


def source_of(message: MessageId | Sequence[MessageId] | None) -> str | None:
    """The broker stream a batch came in (its first message's), None for HTTP."""
    if message is None:
        return None
    if isinstance(message, MessageId):
        return message.source
    return message[0].source if message else None


class ChangeLog:
    """The recent changes of one twin; thread-safe. ``version`` follows the twin's."""

    def __init__(self, version: int = 0, max_deltas: int = MAX_DELTAS) -> None:
        self.max_deltas = max_deltas
        self._lock = threading.Lock()
        self._ring: deque[Change] = deque()
        self._size = 0
        self.version = self.oldest = version  # every change after ``oldest`` is kept
        self.time = 0.0

    def record(
        self,
        version: int,
        time: float,
        deltas: Sequence[Delta],
        message: MessageId | Sequence[MessageId] | None = None,
    ) -> None:
        """Batch ``version`` was applied (at ``time``): keep its scheduling deltas."""
        kept = tuple(d for d in deltas if not isinstance(d, MetricsDelta))
        with self._lock:
            if kept:
                self._ring.append(Change(version, time, kept, source_of(message)))
                self._size += len(kept)
                while self._size > self.max_deltas and len(self._ring) > 1:
                    gone = self._ring.popleft()
                    self._size -= len(gone.deltas)
                    self.oldest = gone.version
            self.version, self.time = version, time

    def reset(self, version: int, time: float = 0.0) -> None:
        """The whole state was replaced at ``version``: no change before it can be followed."""
        with self._lock:
            self._ring.clear()
            self._size = 0
            self.version = self.oldest = version
            self.time = time

    def since(self, since: int) -> tuple[int, float, list[Change]]:
        """The twin's version and time, and the changes after version ``since``, oldest first."""
        with self._lock:
            if since < self.oldest or since > self.version:
                raise ChangesGone(since, self.oldest, self.version)
            out: list[Change] = []
            for change in reversed(self._ring):
                if change.version <= since:
                    break
                out.append(change)
            return self.version, self.time, out[::-1]

    def answer(self, since: int, limit: int, exclude: str | None = None) -> bytes:
        """``GET /changes`` as JSON: at most ``limit`` changes after ``since`` (``version``
        is then the last one's, so the follower asks again from there), leaving out those
        of the broker stream ``exclude`` (a publisher asking for others' changes)."""
        version, time, changes = self.since(since)
        if exclude is not None:
            changes = [c for c in changes if c.source != exclude]
        if len(changes) > limit:
            changes = changes[:limit]
            version, time = changes[-1].version, changes[-1].time
        body = b",".join(c.json() for c in changes)
        head = orjson.dumps({"version": version, "time": time, "more": version < self.version})
        return head[:-1] + b',"changes":[' + body + b"]}"

    def stats(self) -> dict[str, int]:
        """What the ring holds now: changes, deltas, the oldest version it follows from."""
        with self._lock:
            return {"changes": len(self._ring), "deltas": self._size, "oldest": self.oldest}
