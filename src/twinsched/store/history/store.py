"""Writes and reads of the twin's history: one transaction per acknowledged change.

A patch's samples and its body go in one transaction (``executemany`` on SQLite, binary
``COPY`` on PostgreSQL), committed before the service answers, so a restarted twin has every
acknowledged change. On SQLite the twin's connections use ``synchronous=NORMAL`` (WAL): a
killed process loses nothing committed; a power cut may lose the last commits. One twin
writes to a database at a time (it numbers the ``(node, metric)`` series itself): a serving
twin takes the database's writer lease (:mod:`twinsched.store.history.lease`) with
:meth:`HistoryStore.take_lease`, and every write first checks that it still holds it.

State at version ``v`` = the latest snapshot at or before ``v`` plus the
logged patches after it, replayed in order, all of ``v``'s session (``sessions.py``): a
session opens with a snapshot (or on an empty twin), and its rows carry its number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from twinsched.store.db import StoreError, engine_for
from twinsched.store.history.lease import WriterLease, acquire
from twinsched.store.history.sessions import Decision, Session, insert_decisions, insert_session
from twinsched.store.history.tables import (
    SAMPLE_COLUMNS,
    changes,
    messages,
    samples,
    series,
    snapshots,
)

_SQLITE_INSERT = "INSERT INTO twin_samples (series, time, value) VALUES (?, ?, ?)"
# WAL without fsync per commit, and checkpoints every 64 MiB rather than 4 MiB: 2x ingestion
_SQLITE_PRAGMAS = ("PRAGMA synchronous=NORMAL", "PRAGMA wal_autocheckpoint=16384")


class DuplicateMessageError(StoreError):
    """A broker message with this ``(source, seq)`` was already applied: nothing was written."""


@dataclass(frozen=True)
class MessageId:
    """A broker message's id: its publisher stream and its sequence number there."""

    source: str
    seq: int


@dataclass
class SampleBatch:
    """Samples as four parallel columns (cheaper than one object per sample)."""

    time: list[float] = field(default_factory=list)
    node: list[str] = field(default_factory=list)
    metric: list[str] = field(default_factory=list)
    value: list[float] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.time)

    def add(self, time: float, node: str, values: dict[str, float]) -> None:
        """One sample per ``metric -> value`` of ``node`` at ``time``."""
        n = len(values)
        self.time.extend([time] * n)
        self.node.extend([node] * n)
        self.metric.extend(values)
        self.value.extend(values.values())


@dataclass(frozen=True)
class Opening:
    """What a write opens with: a new session, and the document it starts from (written as
    the snapshot at ``version``) when it carries the state over from the session before."""

    session: Session
    document: bytes | None = None
    version: int = 0
    time: float = 0.0


@dataclass(frozen=True)
class Replay:
    """What rebuilds one version: a snapshot (or none) and the patch bodies after it."""

    version: int
    snapshot: bytes | None
    snapshot_version: int
    patches: list[tuple[int, bytes]]


class HistoryStore:
    """The history of one twin in an SQL database (SQLite file or PostgreSQL URL)."""

    def __init__(self, db: str | Path | None = None) -> None:
        self.engine: Engine = engine_for(db)
        self.dialect = self.engine.dialect.name
        self._series: dict[tuple[int, str, str], int] | None = None  # (session, node, metric)
        self.decisions_kept = 1000  # per session, at least (see sessions.insert_decisions)
        self.lease: WriterLease | None = None

    # -- the writer lease ------------------------------------------------------------------------
    def take_lease(self) -> None:
        """Become the database's one writer; :class:`LeaseHeldError` names the current one."""
        if self.lease is None:
            self.lease = acquire(self.engine)

    def close(self) -> None:
        """Give the writer lease up (pooled connections stay with the engine)."""
        if self.lease is not None:
            self.lease.release()
            self.lease = None

    def check_writable(self) -> None:
        """Raise when a write would fail now: database unreachable, or lease lost."""
        self.ping()
        if self.lease is not None:
            self.lease.check(fresh=True)

    # -- writes ----------------------------------------------------------------------------------
    def record_patch(
        self,
        version: int,
        time: float,
        body: bytes,
        batch: SampleBatch,
        message: MessageId | Sequence[MessageId] | None = None,
        *,
        session: int = 1,
        opening: Opening | None = None,
        decided: Sequence[Decision] = (),
    ) -> None:
        """Store a patch body, its samples and decisions in one transaction (committed on
        return), in ``session``; ``opening``: the session it opens first.

        With ``message`` (the ids of the broker messages it carries) their rows go in the
        same transaction: an id already stored raises :class:`DuplicateMessageError` and
        writes nothing."""
        self._guard()
        known = self._known_series()
        new: dict[tuple[int, str, str], int] = {}
        ids = [
            known.get((session, n, m)) or new.setdefault((session, n, m), len(known) + len(new) + 1)
            for n, m in zip(batch.node, batch.metric, strict=True)
        ]
        with self.engine.connect() as conn:
            if self.dialect == "sqlite":
                for pragma in _SQLITE_PRAGMAS:
                    conn.exec_driver_sql(pragma)
            if message is not None:
                _insert_message(conn, message, version)
            if opening is not None:
                _open(conn, opening)
            row = {"version": version, "time": time, "body": body, "session": session}
            conn.execute(changes.insert(), row)
            if new:
                rows = [{"id": i, "session": s, "node": n, "metric": m}
                        for (s, n, m), i in new.items()]  # fmt: skip
                conn.execute(series.insert(), rows)
            if decided:
                insert_decisions(conn, list(decided), self.decisions_kept)
            if ids:
                self._insert_samples(conn, ids, batch)
            conn.commit()
        known.update(new)  # only once committed

    def record_snapshot(
        self, version: int, time: float, document: bytes, session: int = 1,
        opened: Session | None = None,
    ) -> None:  # fmt: skip
        """Store a whole document as the state at ``version`` of ``session`` (committed on
        return), opening that session first when ``opened`` is given."""
        self._guard()
        with self.engine.begin() as conn:
            if opened is not None:
                insert_session(conn, opened)
            row = {"version": version, "time": time, "document": document, "session": session}
            conn.execute(snapshots.insert(), row)

    def _guard(self) -> None:
        if self.lease is not None:
            self.lease.check()

    def _known_series(self) -> dict[tuple[int, str, str], int]:
        if self._series is None:
            columns = (series.c.session, series.c.node, series.c.metric, series.c.id)
            with self.engine.connect() as conn:
                rows = conn.execute(sa.select(*columns)).all()
            self._series = {(int(s), n, m): int(i) for s, n, m, i in rows}
        return self._series

    def _insert_samples(self, conn: Connection, ids: list[int], batch: SampleBatch) -> None:
        raw = conn.connection.driver_connection
        assert raw is not None
        if self.dialect == "postgresql":
            from twinsched.store.pgcopy import copy_in, wire_types

            columns = {"series": ids, "time": batch.time, "value": batch.value}
            with raw.cursor() as cursor:
                copy_in(cursor, "twin_samples", columns, wire_types(samples, SAMPLE_COLUMNS))
        else:
            raw.executemany(_SQLITE_INSERT, zip(ids, batch.time, batch.value, strict=True))

    # -- reads -----------------------------------------------------------------------------------
    def latest_version(self, session: int | None = None) -> int:
        """The newest version stored, of ``session`` if given (0 when there is none)."""
        with self.engine.connect() as conn:
            return _latest(conn, session)

    def version_at(self, time: float, session: int) -> int | None:
        """The newest version of ``session`` whose time is at or before ``time`` (None: none)."""
        with self.engine.connect() as conn:
            found = [
                conn.execute(
                    sa.select(sa.func.max(t.c.version)).where(
                        t.c.session == session, t.c.time <= time
                    )
                ).scalar()
                for t in (changes, snapshots)
            ]
        known = [int(v) for v in found if v is not None]
        return max(known) if known else None

    def replay(self, version: int | None = None, session: int | None = None) -> Replay:
        """The snapshot and patches of ``session`` that rebuild ``version`` (default: the
        newest of the session; without a session, of the newest version's)."""
        with self.engine.connect() as conn:
            if session is None:
                session = _session_of(conn, _latest(conn))
            target = _latest(conn, session) if version is None else version
            row = conn.execute(
                sa.select(snapshots.c.version, snapshots.c.document)
                .where(snapshots.c.version <= target, snapshots.c.session == session)
                .order_by(snapshots.c.version.desc())
                .limit(1)
            ).first()
            base, document = (int(row[0]), bytes(row[1])) if row else (0, None)
            patches = conn.execute(
                sa.select(changes.c.version, changes.c.body)
                .where(changes.c.version > base, changes.c.version <= target)
                .where(changes.c.session == session)
                .order_by(changes.c.version)
            ).all()
        return Replay(target, document, base, [(int(v), bytes(b)) for v, b in patches])

    def applied_messages(self) -> dict[str, int]:
        """The highest sequence number applied per message source (broker consumers resume)."""
        query = sa.select(messages.c.source, sa.func.max(messages.c.seq)).group_by(
            messages.c.source
        )
        with self.engine.connect() as conn:
            return {str(source): int(seq) for source, seq in conn.execute(query).all()}

    def ping(self) -> None:
        """Raise when the database cannot be reached."""
        with self.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))


def _insert_message(
    conn: Connection, message: MessageId | Sequence[MessageId], version: int
) -> None:
    ids = [message] if isinstance(message, MessageId) else list(message)
    rows = [{"source": m.source, "seq": m.seq, "version": version} for m in ids]
    try:  # first in the transaction: a duplicate fails before anything else is written
        conn.execute(messages.insert(), rows)
    except sa.exc.IntegrityError:
        first = f"{ids[0].source}#{ids[0].seq}"
        which = first if len(ids) == 1 else f"one of {len(ids)} messages from {first}"
        raise DuplicateMessageError(f"message {which} was already applied") from None


def _latest(conn: Connection, session: int | None = None) -> int:
    versions: Sequence[int | None] = [
        conn.execute(
            sa.select(sa.func.max(t.c.version)).where(
                sa.true() if session is None else t.c.session == session
            )
        ).scalar()
        for t in (changes, snapshots)
    ]
    return max((int(v) for v in versions if v is not None), default=0)


def _session_of(conn: Connection, version: int) -> int:
    """The session of ``version`` (1 when nothing is stored)."""
    for table in (changes, snapshots):
        found = conn.execute(sa.select(table.c.session).where(table.c.version == version))
        session = found.scalar()
        if session is not None:
            return int(session)
    return 1


def _open(conn: Connection, opening: Opening) -> None:
    """Insert a new session, and the state it starts from when it carries one over."""
    insert_session(conn, opening.session)
    if opening.document is not None:
        row = {"version": opening.version, "time": opening.time, "document": opening.document,
               "session": opening.session.id}  # fmt: skip
        conn.execute(snapshots.insert(), row)
