"""The twin's history in SQL: samples, the change log, snapshots; queries and compaction.

Plain data in and out (patch bodies as bytes, samples as columns): the store knows nothing of
the twin's types, the twin (``twin.core.service``) calls it. Tables: migrations
``v0002_twin_history`` and ``v0007_twin_sessions`` (sessions, decisions); applications,
their revisions and pod events in ``apps.py`` (``v0009_apps``); tokens and the audit log in
``access.py`` (``v0010_twin_access``).
"""

from twinsched.model.access import AuditEntry, StoredToken
from twinsched.store.history import apps  # noqa: F401  (its tables join the metadata)
from twinsched.store.history.access import AuditLog, TokenNotFoundError, TokenStore
from twinsched.store.history.lease import LeaseHeldError, LeaseLostError
from twinsched.store.history.query import CompactResult, Series, Window, compact, read_window
from twinsched.store.history.sessions import (
    WALL_FROM,
    Decision,
    Session,
    read_decisions,
    read_sessions,
    timebase_of,
)
from twinsched.store.history.store import (
    DuplicateMessageError,
    HistoryStore,
    MessageId,
    Opening,
    Replay,
    SampleBatch,
)

__all__ = [
    "WALL_FROM",
    "AuditEntry",
    "AuditLog",
    "CompactResult",
    "Decision",
    "DuplicateMessageError",
    "HistoryStore",
    "LeaseHeldError",
    "LeaseLostError",
    "MessageId",
    "Opening",
    "Replay",
    "SampleBatch",
    "Series",
    "Session",
    "StoredToken",
    "TokenNotFoundError",
    "TokenStore",
    "Window",
    "compact",
    "read_decisions",
    "read_sessions",
    "read_window",
    "timebase_of",
]
