"""One controller per session: a lease the twin grants to one holder at a time.

A controller over the twin (``twinsched scheduler run --twin URL``) takes the lease of its
session before it binds anything and renews it well within ``ttl_s``; another holder is
refused (409, naming the holder and how long it still holds it) until the lease is released
or expires, so a controller killed with ``kill -9`` is replaced after at most ``ttl_s``. As
the twin's writer lease (``store/history/lease.py``) names its holder, so does this one.
Leases live in the twin's memory: a twin restarted grants them afresh (the controller takes
its lease again when it reconnects).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from twinsched.errors import TwinschedError

MIN_TTL_S, MAX_TTL_S = 1.0, 300.0


class LeaseHeld(TwinschedError):
    """Another holder has the session's lease; the message names it."""


@dataclass(frozen=True, slots=True)
class Lease:
    """Who holds a session's lease, since when and until when (the twin's monotonic clock)."""

    session: str
    holder: str
    since: float
    until: float


class Leases:
    """The controller leases of one twin, by session; thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._held: dict[str, Lease] = {}

    def take(self, session: str, holder: str, ttl_s: float) -> Lease:
        """Take or renew ``session``'s lease for ``holder``; :class:`LeaseHeld` if another
        holder has it."""
        now = self.clock()
        with self._lock:
            lease = self._held.get(session)
            if lease is not None and lease.holder != holder and lease.until > now:
                raise LeaseHeld(
                    f"session {session!r}: the controller lease is held by {lease.holder!r} "
                    f"for {lease.until - now:.1f} s more (it renews it while it runs)"
                )
            since = lease.since if lease is not None and lease.holder == holder else now
            self._held[session] = Lease(session, holder, since, now + ttl_s)
            return self._held[session]

    def release(self, session: str, holder: str) -> bool:
        """Give ``session``'s lease back if ``holder`` has it; whether it had."""
        with self._lock:
            lease = self._held.get(session)
            if lease is None or lease.holder != holder:
                return False
            del self._held[session]
            return True

    def held(self) -> list[Lease]:
        """The leases held now."""
        now = self.clock()
        with self._lock:
            return [lease for lease in self._held.values() if lease.until > now]
