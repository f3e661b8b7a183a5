"""The twin's history tables (SQLAlchemy Core), created by migration ``v0002_twin_history``.

``twin_series`` numbers each ``(node, metric)`` pair; ``twin_samples`` holds one row per
sample as ``(series, time, value)`` (no key, small integer index: bulk COPY and executemany
stay fast), indexed by ``(series, time)`` for window queries. ``twin_changes`` is the log of
accepted ``PATCH /state`` bodies by state version; ``twin_snapshots`` holds whole documents
(every ``PUT`` and, periodically, the state after a patch), so any version can be rebuilt as
the latest snapshot at or before it plus the changes after that snapshot. ``twin_messages``
holds the id of every broker message applied (its source and sequence number, the primary
key, and the version it made): a message delivered again is refused by the key
(migration ``v0006_twin_messages``).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
)

from twinsched.store.schema import NAMING

F64 = Float(53)
metadata = MetaData(naming_convention=NAMING)

series = Table(
    "twin_series",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("node", Text, nullable=False),
    Column("metric", Text, nullable=False),
    Column("session", Integer, nullable=False, server_default="1"),
    UniqueConstraint("session", "node", "metric", name="uq_twin_series_session_node_metric"),
    Index("ix_twin_series_metric", "metric"),
)

samples = Table(
    "twin_samples",
    metadata,
    Column("series", Integer, nullable=False),
    Column("time", F64, nullable=False),
    Column("value", F64, nullable=False),
    Index("ix_twin_samples_series_time", "series", "time"),
)


def _by_version(name: str, blob: str) -> Table:
    """A table of blobs keyed by state version, with the state time indexed."""
    return Table(
        name,
        metadata,
        Column("version", BigInteger, primary_key=True, autoincrement=False),
        Column("time", F64, nullable=False),
        Column(blob, LargeBinary, nullable=False),
        Column("session", Integer, nullable=False, server_default="1"),
        Index(f"ix_{name}_time", "time"),
        Index(f"ix_{name}_session_time", "session", "time"),
    )


changes = _by_version("twin_changes", "body")

messages = Table(
    "twin_messages",
    metadata,
    Column("source", Text, primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("version", BigInteger, nullable=False),
)
snapshots = _by_version("twin_snapshots", "document")

sessions = Table(
    "twin_sessions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("source", Text, nullable=False),
    Column("timebase", Text, nullable=False),
    Column("start", F64, nullable=False),
    Column("opened_at", F64, nullable=False),
    Column("version", BigInteger, nullable=False),
)

decisions = Table(
    "twin_decisions",
    metadata,
    Column("session", Integer, primary_key=True, autoincrement=False),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("version", BigInteger, nullable=False),
    Column("time", F64, nullable=False),
    Column("pod", Text, nullable=False),
    Column("node", Text, nullable=False),
    Column("gpus", Text, nullable=False),
    Column("scheduler", Text, nullable=True),
    Column("fallback", Boolean, nullable=False),
    Column("model_version", Text, nullable=True),
)

SAMPLE_COLUMNS = ("series", "time", "value")
