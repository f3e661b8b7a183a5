"""The twin's history in SQL: samples, the change log, snapshots; queries and compaction."""

from twinsched.twin.history.query import CompactResult, Series, Window, compact, read_window
from twinsched.twin.history.store import HistoryStore, Replay, SampleBatch

__all__ = [
    "CompactResult",
    "HistoryStore",
    "Replay",
    "SampleBatch",
    "Series",
    "Window",
    "compact",
    "read_window",
]
