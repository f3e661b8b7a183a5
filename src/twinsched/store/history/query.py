"""Window aggregation over stored samples, and compaction (retention, downsampling), in SQL.

Buckets are aligned on multiples of ``step`` from time 0: a sample at ``t`` falls in bucket
``floor(t / step) * step``. ``mean`` and ``max`` are SQL aggregates; ``last`` takes the
newest sample of each bucket with a window function (``row_number``), on both databases.
Every read and every compaction is of one session (``sessions.py``): a session's series only,
and its own time, so timelines of two runs, or of a run and a live feed, never mix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from twinsched.store.db import StoreError
from twinsched.store.history.sessions import WALL_FROM, Session, read_sessions
from twinsched.store.history.tables import changes, samples, series, snapshots

Aggregation = Literal["mean", "max", "last"]


@dataclass
class Series:
    """One node's points, as two parallel columns."""

    node: str
    times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Window:
    """What to read: one metric of one session, optionally one node, a time range, an
    optional step."""

    metric: str
    node: str | None = None
    start: float | None = None
    end: float | None = None
    step: float | None = None
    agg: Aggregation = "mean"
    limit: int = 100_000
    session: int = 1


def _bucket(dialect: str, step: float) -> Any:
    """``floor(time / step) * step``; SQLite's CAST truncates, which is floor for time >= 0."""
    ratio = samples.c.time / step
    index = sa.func.floor(ratio) if dialect == "postgresql" else sa.cast(ratio, sa.BigInteger)
    return (index * step).label("bucket")


def _filters(window: Window) -> list[Any]:
    out: list[Any] = [series.c.metric == window.metric, series.c.session == window.session]
    if window.node is not None:
        out.append(series.c.node == window.node)
    if window.start is not None:
        out.append(samples.c.time >= window.start)
    if window.end is not None:
        out.append(samples.c.time <= window.end)
    return out


_JOINED = samples.join(series, samples.c.series == series.c.id)


def select_window(window: Window, dialect: str) -> Any:
    """The SELECT of ``(node, time, value)`` rows for ``window``, ordered by node and time."""
    where = _filters(window)
    node = series.c.node
    if window.step is None:
        query = sa.select(node, samples.c.time, samples.c.value).select_from(_JOINED)
        return query.where(*where).order_by(node, samples.c.time).limit(window.limit)
    bucket = _bucket(dialect, window.step)
    if window.agg == "last":
        rank = sa.func.row_number().over(
            partition_by=(samples.c.series, bucket), order_by=samples.c.time.desc()
        )
        inner = sa.select(node, bucket, samples.c.value, rank.label("rank")).select_from(_JOINED)
        ranked = inner.where(*where).subquery()
        query = sa.select(ranked.c.node, ranked.c.bucket, ranked.c.value).where(ranked.c.rank == 1)
        return query.order_by(ranked.c.node, ranked.c.bucket).limit(window.limit)
    value = sa.func.avg if window.agg == "mean" else sa.func.max
    query = sa.select(node, bucket, value(samples.c.value).label("value")).select_from(_JOINED)
    query = query.where(*where).group_by(node, bucket).order_by(node, bucket)
    return query.limit(window.limit)


def read_window(engine: Engine, window: Window) -> tuple[list[Series], bool]:
    """The series of ``window`` and whether ``limit`` cut them short."""
    with engine.connect() as conn:
        rows = conn.execute(select_window(window, engine.dialect.name)).all()
    series: dict[str, Series] = {}
    for node, time, value in rows:
        entry = series.get(node)
        if entry is None:
            entry = series[node] = Series(node)
        entry.times.append(float(time))
        entry.values.append(float(value))
    return list(series.values()), len(rows) >= window.limit


@dataclass(frozen=True)
class CompactResult:
    """What one compaction removed and wrote, in total and per session; ``refused`` says
    which sessions were left untouched, and why."""

    now: float | None  # the newest compacted session's time (its newest sample)
    dropped_samples: int = 0
    downsampled_samples: int = 0
    written_buckets: int = 0
    dropped_changes: int = 0
    sessions: dict[int, dict[str, float]] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)


def compact(
    engine: Engine,
    *,
    retention_s: float | None,
    downsample_after_s: float | None,
    step: float,
    session: int | None = None,
) -> CompactResult:
    """Drop history older than ``retention_s`` and average samples older than
    ``downsample_after_s`` into ``step`` buckets, each session (or only ``session``) on its
    own time, in one transaction per session.

    Time is the session's (its newest sample's), not the wall clock. With downsampling,
    both cut-offs are aligned on ``step``, so a bucket is downsampled once, whole, and kept
    or dropped whole; rerunning changes nothing. A session whose samples are on both
    timebases (history from before sessions) is refused, named in ``refused``. Durations
    must be finite and > 0, and ``session`` known (:class:`StoreError` otherwise, before
    anything is touched).
    """
    for name, value in (("retention_s", retention_s), ("downsample_after_s", downsample_after_s)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise StoreError(f"{name}: must be a finite number of seconds > 0, got {value}")
    if not (math.isfinite(step) and step > 0):
        raise StoreError(f"step: must be a finite number of seconds > 0, got {step}")
    known = read_sessions(engine)
    chosen = [s for s in known if session is None or s.id == session]
    if session is not None and not chosen:
        names = ", ".join(str(s.id) for s in known) or "none"
        raise StoreError(f"session: unknown session {session} (sessions: {names})")
    done: dict[int, tuple[float, list[int]]] = {}
    refused: list[str] = []
    for one in chosen:
        with engine.begin() as conn:
            outcome = _compact_session(conn, one, retention_s, downsample_after_s, step)
        if isinstance(outcome, str):
            refused.append(outcome)
        elif outcome is not None:
            done[one.id] = outcome
    return _result(done, refused)


COUNTS = ("dropped_samples", "downsampled_samples", "written_buckets", "dropped_changes")


def _result(done: dict[int, tuple[float, list[int]]], refused: list[str]) -> CompactResult:
    """The totals over the sessions compacted (``now``: the newest one's time)."""
    totals = [sum(counts[k] for _, counts in done.values()) for k in range(len(COUNTS))]
    per = {
        number: {"now": now, **dict(zip(COUNTS, counts, strict=True))}
        for number, (now, counts) in done.items()
    }
    now = done[max(done)][0] if done else None
    dropped, merged, written, changes_dropped = totals
    return CompactResult(now, dropped, merged, written, changes_dropped, per, refused)


def _compact_session(
    conn: Connection,
    session: Session,
    retention_s: float | None,
    downsample_after_s: float | None,
    step: float,
) -> str | tuple[float, list[int]] | None:
    """Compact one session; its time and counts, why it was refused, or None (no samples)."""
    mine = sa.select(series.c.id).where(series.c.session == session.id).scalar_subquery()
    ours = samples.c.series.in_(mine)
    low, now = conn.execute(
        sa.select(sa.func.min(samples.c.time), sa.func.max(samples.c.time)).where(ours)
    ).one()
    if now is None:
        return None
    if session.timebase == "mixed" or (low < WALL_FROM) != (now < WALL_FROM):
        return (
            f"session {session.id} ({session.source}): its samples, from {low:g} to {now:g} s, "
            f"mix simulated time and Unix time (the first is before {WALL_FROM:g}, the last "
            "after): not compacted, a cut-off would delete one timeline for the other"
        )
    dropped = dropped_changes = 0
    if retention_s is not None:
        cutoff = float(now) - retention_s
        if downsample_after_s is not None:  # keep whole buckets: a mean is dated at its start
            cutoff = cutoff // step * step
        dropped = conn.execute(samples.delete().where(ours, samples.c.time < cutoff)).rowcount
        dropped_changes = _drop_old_changes(conn, cutoff, session.id)
    merged = written = 0
    if downsample_after_s is not None:
        cutoff = (float(now) - downsample_after_s) // step * step
        merged, written = _downsample(conn, sa.and_(ours, samples.c.time < cutoff), step)
    return float(now), [dropped, merged, written, dropped_changes]


def _downsample(conn: Connection, old: Any, step: float) -> tuple[int, int]:
    bucket = _bucket(conn.dialect.name, step)
    grouped = (
        sa.select(bucket, samples.c.series, sa.func.avg(samples.c.value))
        .where(old)
        .group_by(samples.c.series, bucket)
        .having(sa.func.count() > 1)
    )
    rows = conn.execute(grouped).all()
    if not rows:
        return 0, 0
    merged_groups = sa.select(samples.c.series, bucket).where(old)
    merged_groups = merged_groups.group_by(samples.c.series, bucket)
    merged_groups = merged_groups.having(sa.func.count() > 1)
    key = sa.tuple_(samples.c.series, _bucket(conn.dialect.name, step))
    merged = conn.execute(samples.delete().where(old, key.in_(merged_groups))).rowcount
    values = [{"series": s, "time": float(b), "value": float(v)} for b, s, v in rows]
    conn.execute(samples.insert(), values)
    return merged, len(rows)


def _drop_old_changes(conn: Connection, cutoff: float, session: int) -> int:
    """Drop the session's snapshots and patches that only rebuild states older than
    ``cutoff``."""
    keep = conn.execute(
        sa.select(sa.func.max(snapshots.c.version)).where(
            snapshots.c.time <= cutoff, snapshots.c.session == session
        )
    ).scalar()
    if keep is None:
        return 0
    conn.execute(
        snapshots.delete().where(snapshots.c.version < keep, snapshots.c.session == session)
    )
    old = sa.and_(changes.c.version <= keep, changes.c.session == session)
    return int(conn.execute(changes.delete().where(old)).rowcount)
