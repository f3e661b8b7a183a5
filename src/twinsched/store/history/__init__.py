"""The twin's history in SQL: samples, the change log, snapshots; queries and compaction.

Plain data in and out (patch bodies as bytes, samples as columns): the store knows nothing of
the twin's types, the twin (``twin.core.service``) calls it. Tables: migration
``v0002_twin_history``.
"""

from twinsched.store.history.lease import LeaseHeldError, LeaseLostError
from twinsched.store.history.query import CompactResult, Series, Window, compact, read_window
from twinsched.store.history.store import (
    DuplicateMessageError,
    HistoryStore,
    MessageId,
    Replay,
    SampleBatch,
)

__all__ = [
    "CompactResult",
    "DuplicateMessageError",
    "HistoryStore",
    "LeaseHeldError",
    "LeaseLostError",
    "MessageId",
    "Replay",
    "SampleBatch",
    "Series",
    "Window",
    "compact",
    "read_window",
]
