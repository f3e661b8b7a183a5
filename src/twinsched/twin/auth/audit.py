"""Where a service's audit entries go: the history database's append-only log, or memory.

The twin writes its log to its history database (``store/history/access.py``); a twin built
without a history (tests, an embedded twin) keeps the newest entries in memory instead.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Protocol

from twinsched.model.access import AuditEntry

MEMORY_KEPT = 10_000


class AuditSink(Protocol):
    """Append-only: entries are added and read, never changed."""

    def append(self, entry: AuditEntry) -> None: ...

    def read(self, after: int = 0, limit: int = 100) -> list[AuditEntry]: ...


class MemoryAudit:
    """The newest :data:`MEMORY_KEPT` entries, numbered from 1."""

    def __init__(self) -> None:
        self._entries: deque[AuditEntry] = deque(maxlen=MEMORY_KEPT)
        self._next = 1
        self._lock = threading.Lock()

    def append(self, entry: AuditEntry) -> None:
        with self._lock:
            self._entries.append(AuditEntry(**{**entry.__dict__, "id": self._next}))
            self._next += 1

    def read(self, after: int = 0, limit: int = 100) -> list[AuditEntry]:
        with self._lock:
            return [e for e in self._entries if (e.id or 0) > after][:limit]
