"""Pods seen only in ``filter`` and ``prioritize`` calls: kept for a while, then forgotten.

Anyone can call ``filter`` (kube-scheduler sends no token), so a pod it names must not
become durable state: it is held (pending) so that its ``prioritize`` and ``bind`` calls
find it, never journalled, and forgotten once ``ttl_s`` seconds passed since its last call
or once more than ``limit`` such pods are held (the least recently seen first). A ``bind``
or a ``POST /pods`` makes it durable. kube-scheduler runs a pod's filter, prioritize and
bind within milliseconds, and retries a pod it could not place within five minutes, which
re-adds it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

POD_TTL_S = 600.0  # seconds since a tentative pod's last filter or prioritize call
MAX_TENTATIVE = 4096  # tentative pods held at most


class Tentative:
    """Keys of tentative pods, least recently seen first."""

    def __init__(
        self,
        ttl_s: float = POD_TTL_S,
        limit: int = MAX_TENTATIVE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s, self.limit, self.clock = ttl_s, limit, clock
        self._seen: OrderedDict[str, float] = OrderedDict()

    def __contains__(self, key: str) -> bool:
        return key in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    def keys(self) -> list[str]:
        """The keys, least recently seen first."""
        return list(self._seen)

    def touch(self, key: str) -> None:
        """``key`` was seen now (added if new)."""
        self._seen[key] = self.clock()
        self._seen.move_to_end(key)

    def settle(self, key: str) -> bool:
        """``key`` is durable now (or gone); whether it was tentative."""
        return self._seen.pop(key, None) is not None

    def expired(self) -> list[str]:
        """The keys to forget now (too old, or beyond the limit), removed from here."""
        out = []
        seen, horizon = self._seen, self.clock() - self.ttl_s
        while seen:
            key, at = next(iter(seen.items()))
            if at >= horizon and len(seen) <= self.limit:
                break
            seen.popitem(last=False)
            out.append(key)
        return out

    def clear(self) -> list[str]:
        """Every key, removed from here."""
        out = list(self._seen)
        self._seen.clear()
        return out
