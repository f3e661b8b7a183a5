"""Sessions of the twin's history and the decisions kept per session: plain data and reads.

A session is one feed's timeline: a run's publisher, a mirror, a ``PUT``. Its timebase is
``simulated`` (a run's time, from 0) or ``wall`` (Unix seconds); a time at or after
``WALL_FROM`` (2001-09-09) is wall-clock time. History written before sessions existed is
session 1, ``before-sessions``, ``mixed`` when it holds both (migration ``v0007``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from twinsched.store.history.tables import decisions, sessions

WALL_FROM = 1e9  # seconds: a time at or after it is Unix time (2001-09-09), before: simulated
Timebase = Literal["simulated", "wall", "mixed"]


def timebase_of(time: float) -> Timebase:
    """``wall`` for Unix time (at or after ``WALL_FROM``), else ``simulated``."""
    return "wall" if time >= WALL_FROM else "simulated"


@dataclass(frozen=True)
class Session:
    """One timeline of the twin: its number, who feeds it, its timebase, its start (state
    time), when it was opened (Unix time) and the first version it holds."""

    id: int
    source: str
    timebase: str
    start: float
    opened_at: float
    version: int


@dataclass(frozen=True)
class Decision:
    """A binding written to the twin: pod on node (GPUs), with who made it."""

    session: int
    seq: int  # its number in the session, from 1
    version: int
    time: float
    pod: str
    node: str
    gpus: tuple[int, ...]
    scheduler: str | None
    fallback: bool
    model_version: str | None

    def row(self) -> dict[str, Any]:
        """The ``twin_decisions`` row."""
        data = asdict(self)
        data["gpus"] = json.dumps(list(self.gpus))
        return data

    def view(self) -> dict[str, Any]:
        """JSON-ready, as ``GET /decisions`` and the dashboard show it."""
        data = asdict(self)
        data["gpus"] = list(self.gpus)
        return data


def read_sessions(engine: Engine) -> list[Session]:
    """Every session, oldest first."""
    with engine.connect() as conn:
        rows = conn.execute(sa.select(sessions).order_by(sessions.c.id)).all()
    return [Session(int(r.id), r.source, r.timebase, float(r.start), float(r.opened_at),
                    int(r.version)) for r in rows]  # fmt: skip


def insert_session(conn: Connection, session: Session) -> None:
    conn.execute(sessions.insert(), asdict(session))


def read_decisions(engine: Engine, session: int, limit: int) -> list[Decision]:
    """The newest ``limit`` decisions of ``session``, newest first."""
    query = (
        sa.select(decisions)
        .where(decisions.c.session == session)
        .order_by(decisions.c.seq.desc())
        .limit(limit)
    )
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return [
        Decision(int(r.session), int(r.seq), int(r.version), float(r.time), r.pod, r.node,
                 tuple(json.loads(r.gpus)), r.scheduler, bool(r.fallback), r.model_version)
        for r in rows
    ]  # fmt: skip


def insert_decisions(conn: Connection, rows: list[Decision], kept: int) -> None:
    """Store ``rows`` (one session's, in order) and drop that session's decisions older than
    its newest ``kept``, every ``kept // 8`` decisions (so at most ``kept * 9 / 8`` stay)."""
    conn.execute(decisions.insert(), [d.row() for d in rows])
    every = max(1, kept // 8)
    first, last = rows[0].seq, rows[-1].seq
    if last // every != (first - 1) // every and last > kept:
        old = sa.and_(decisions.c.session == rows[0].session, decisions.c.seq <= last - kept)
        conn.execute(decisions.delete().where(old))
