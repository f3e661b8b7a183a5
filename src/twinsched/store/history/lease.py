"""One writer per history database: the twin that holds the lease is the only one that writes.

PostgreSQL: a session advisory lock (``pg_try_advisory_lock``) on a dedicated connection held
for the twin's life, keyed by the store's schema (two schemas of one database are two
histories). The holder is described by that connection itself: its ``application_name``
(``twinsched twin pid=... host=...``), its client address and ``backend_start`` (the time the
lease was taken), read from ``pg_stat_activity``; nothing can go stale, since the server
drops the lock and the row with the session (``kill -9`` included).

SQLite: an exclusive ``flock`` on ``<database>.lock``, held on an open descriptor; the file
holds the holder's host, pid and start time as JSON. The kernel releases the lock when the
process dies, so a lock file left by a dead process never blocks: only a live holder does.

A lease can be lost (the PostgreSQL session ends, the lock file is deleted); :meth:`check`
says so, and the history refuses writes from then on (the twin's ``/readyz`` answers 503).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

from twinsched.store.db import StoreError

CHECK_EVERY_S = 1.0  # the write path re-checks a PostgreSQL lease at most this often


class LeaseHeldError(StoreError):
    """Another twin holds the history database; the message names it (host, pid, since)."""


class LeaseLostError(StoreError):
    """This twin no longer holds the history database: it must not write."""


class WriterLease(Protocol):
    """What a held lease offers: a check that it is still held, and its release."""

    def check(self, fresh: bool = False) -> None:
        """Raise :class:`LeaseLostError` when the lease is no longer held; ``fresh`` asks the
        server now rather than trusting a check of the last second."""

    def release(self) -> None:
        """Give the lease up (idempotent)."""


def acquire(engine: Engine) -> WriterLease:
    """The writer lease of ``engine``'s history, or :class:`LeaseHeldError` naming the holder.

    An in-memory SQLite database belongs to one process: it needs no lease.
    """
    if engine.dialect.name == "postgresql":
        return _PgLease.take(engine)
    database = engine.url.database
    if not database or database == ":memory:":
        return _NoLease()
    return _FileLease.take(Path(database))


def _holder_text(host: str, pid: int, since: str) -> str:
    return f"host {host}, pid {pid}, started at {since}"


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _NoLease:
    def check(self, fresh: bool = False) -> None:
        return None

    def release(self) -> None:
        return None


# -- SQLite: a lock file -------------------------------------------------------------------------
class _FileLease:
    """``flock`` on ``<db>.lock``; the descriptor stays open while the lease is held."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    @classmethod
    def take(cls, database: Path) -> _FileLease:
        import fcntl

        path = database.with_name(database.name + ".lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise LeaseHeldError(
                f"history database {database} is in use by another twin ({holder}); "
                f"stop it first, or give this twin its own --db (lock file {path})"
            ) from None
        info = {"host": socket.gethostname(), "pid": os.getpid(), "started_at": _now_iso()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        return cls(path, fd)

    def check(self, fresh: bool = False) -> None:
        if self.fd < 0:
            raise LeaseLostError("the writer lease was released")
        try:
            same = os.stat(self.path).st_ino == os.fstat(self.fd).st_ino
        except OSError:
            same = False
        if not same:  # deleted or replaced: another twin could lock the new file
            raise LeaseLostError(f"lock file {self.path} was removed or replaced")

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = -1


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return _holder_text(str(info["host"]), int(info["pid"]), str(info["started_at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown: the lock file is being written"


# -- PostgreSQL: a session advisory lock ---------------------------------------------------------
_HOLDER = sa.text(
    "SELECT a.application_name, a.client_addr, a.backend_start FROM pg_locks l "
    "JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
    "AND l.classid = CAST(:hi AS oid) AND l.objid = CAST(:lo AS oid) "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


def lock_key(schema: str) -> int:
    """The advisory lock key of the history in ``schema`` (a signed 64-bit integer)."""
    digest = hashlib.blake2b(f"twinsched-twin-writer:{schema}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class _PgLease:
    """``pg_try_advisory_lock`` held by one dedicated connection (no pool)."""

    def __init__(self, engine: Engine, conn: Connection, key: int) -> None:
        self.engine, self.conn, self.key = engine, conn, key
        self._mutex = threading.Lock()
        self._checked = time.monotonic()
        self._lost: str | None = None

    @classmethod
    def take(cls, store: Engine) -> _PgLease:
        name = f"twinsched twin pid={os.getpid()} host={socket.gethostname()}"[:63]
        engine = sa.create_engine(
            store.url, poolclass=NullPool, connect_args={"application_name": name}
        )
        conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            schema = str(conn.execute(sa.text("SELECT current_schema()")).scalar())
            key = lock_key(schema)
            taken = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar()
            if not taken:
                holder = _pg_holder(conn, key)
                raise LeaseHeldError(
                    f"history database (PostgreSQL schema {schema!r}) is in use by another "
                    f"twin ({holder}); stop it first, or give this twin its own --db"
                )
        except BaseException:
            conn.close()
            engine.dispose()
            raise
        return cls(engine, conn, key)

    def check(self, fresh: bool = False) -> None:
        with self._mutex:
            due = fresh or time.monotonic() - self._checked >= CHECK_EVERY_S
            if self._lost is None and due:
                self._probe()
            if self._lost is not None:
                raise LeaseLostError(self._lost)

    def _probe(self) -> None:
        try:
            self.conn.execute(sa.text("SELECT 1"))
        except sa.exc.SQLAlchemyError as exc:
            self._lost = f"the writer lease's PostgreSQL session ended ({exc.__class__.__name__})"
        self._checked = time.monotonic()

    def release(self) -> None:
        with self._mutex:
            if self._lost is None:
                self._lost = "the writer lease was released"
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                # Unlocked before the session ends: the server ends a closed session a moment
                # later, and a twin started at once on the same history would find it held.
                self.conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": self.key})
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                self.conn.close()  # ending the session releases the advisory lock anyway
            self.engine.dispose()


def _pg_holder(conn: Connection, key: int) -> str:
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    params = {"hi": unsigned >> 32, "lo": unsigned & 0xFFFF_FFFF}
    row: Any = conn.execute(_HOLDER, params).first()
    if row is None:
        return "holder unknown: it is just letting go"
    name, address, started = row
    where = f"{name or 'unnamed session'}, from {address or 'a local socket'}"
    since = started.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if started else "unknown"
    return f"{where}, started at {since}"
