"""Retrain a deployed reranker from a twin session's history (DAgger on what the twin saw).

A twin session (``store/history``) keeps the document it opened with (its first snapshot),
every write after it by version (``twin_changes``: the ``PATCH`` bodies; ``twin_snapshots``:
the whole documents of a ``PUT`` it went on with) and the bindings written to it
(``twin_decisions``: pod, node, GPUs, numbered from 1; the newest ``decisions_kept``). The
whole history is replayed in order (:mod:`~twinsched.training.distil.twin_replay`): pods
added, finishing or released, nodes failing and returning, and at each binding the teacher
(a :class:`~twinsched.training.distil.margins.Recording`) sees the state as the twin held
it, its candidate rows and rollout values are kept, and the stored binding is applied.

Refused, naming the session (and the decision where there is one): a session unknown, with
no decisions, without its opening document, compacted (its older changes dropped), with a
gap in its versions, with a change stored only in part or one the replayed state cannot
take, or whose kept decisions are not the bindings its change log makes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from twinsched.errors import TwinschedError
from twinsched.model.document import TwinDocument
from twinsched.store.history.sessions import Decision, read_decisions, read_sessions
from twinsched.store.history.tables import changes, decisions, snapshots
from twinsched.training.distil.margins import Margins, Recording, margins_of
from twinsched.training.distil.twin_replay import Replayed, Step, Watch, replay_history

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

    from twinsched.model.mirror import Mirror
    from twinsched.scheduling.cache import EligibleMemo
    from twinsched.scheduling.framework import PodView

TWIN_DB_ENV = "TWINSCHED_TWIN_DB"  # the twin's history database (twin/core/settings.py)
ACCEPTED = (
    "it takes twin sessions that opened with a document (a PUT /api/v1/state) and kept "
    "their whole change log (no compaction)"
)


@dataclass(frozen=True)
class TwinSession:
    """What a replay needs of one twin session: its opening document, every later write in
    version order, and the decisions the twin kept (to check the replay against)."""

    id: int
    source: str
    document: TwinDocument
    steps: tuple[Step, ...]
    decisions: tuple[Decision, ...]  # the kept ones, in seq order

    def record(self) -> dict[str, Any]:
        """The session as the model card lists it (the sessions a model learned from)."""
        made = self.decisions[-1].seq if self.decisions else 0
        return {"id": self.id, "source": self.source, "decisions": made,
                "changes": len(self.steps)}  # fmt: skip


def twin_db(db: str | Path | None) -> str | Path | None:
    """The history database: ``db``, else ``$TWINSCHED_TWIN_DB``, else (None) the store's,
    as the twin resolves its own (``TwinSettings.database_url``)."""
    import os

    return db or os.environ.get(TWIN_DB_ENV) or None


def load_sessions(db: str | Path | None, ids: Sequence[int]) -> list[TwinSession]:
    """The twin sessions ``ids`` (each once, in order), all checked before any work."""
    return [load_session(db, s) for s in dict.fromkeys(ids)]


def load_session(db: str | Path | None, session: int) -> TwinSession:
    """Session ``session`` of the twin history at ``db``: its first snapshot, every write
    after it and the decisions it kept, in order; one that cannot be replayed fails naming
    why."""
    from twinsched.store.db import engine_for, resolve_url

    url = resolve_url(twin_db(db))
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
        raise _refused(session, f"cannot be read: there is no twin history at {url}")
    engine = engine_for(url)
    known = {s.id: s for s in read_sessions(engine)}
    if session not in known:
        have = ", ".join(str(s) for s in sorted(known)) or "none"
        raise _refused(session, f"is not in the twin's history (sessions: {have})")
    with engine.connect() as conn:
        count = conn.execute(_count(session)).scalar() or 0
        kept = _rows(conn, snapshots, session)
        written = _rows(conn, changes, session, changes.c.body)
    if count == 0:
        raise _refused(session, "has no decisions")
    if not kept or (written and int(written[0][0]) < int(kept[0][0])):
        raise _refused(session, "has lost its first snapshot (the document it opened with)")
    opened = int(kept[0][0])
    if opened > known[session].version:
        raise _refused(
            session,
            f"holds its history from version {opened} on, not from its opening "
            f"(version {known[session].version}): older changes were compacted away",
        )
    stored = sorted(read_decisions(engine, session, count), key=lambda d: d.seq)
    steps = _steps(engine, opened, kept, written)
    _check_whole(session, opened, steps, stored)
    with engine.connect() as conn:
        document = TwinDocument.model_validate_json(bytes(_document(conn, opened)))
    return TwinSession(session, known[session].source, document, steps, tuple(stored))


def _rows(
    conn: Connection, table: sa.Table, session: int, *more: sa.Column[Any]
) -> list[tuple[Any, ...]]:
    """The session's rows of ``table`` (versions, and ``more``), by version."""
    query = sa.select(table.c.version, *more).where(table.c.session == session)
    return [tuple(row) for row in conn.execute(query.order_by(table.c.version)).all()]


def _document(conn: Connection, version: int) -> bytes:
    found = conn.execute(sa.select(snapshots.c.document).where(snapshots.c.version == version))
    return bytes(found.scalar_one())


def _steps(
    engine: Engine, opened: int, kept: list[tuple[Any, ...]], written: list[tuple[Any, ...]]
) -> tuple[Step, ...]:
    """The writes after the opening: every patch, and the snapshots no patch made (a
    ``PUT`` the session went on with; the others only speed up the twin's restores)."""
    patched = {int(row[0]) for row in written}
    steps = [Step(int(row[0]), bytes(row[1])) for row in written if int(row[0]) > opened]
    whole = [int(row[0]) for row in kept if int(row[0]) > opened and int(row[0]) not in patched]
    if whole:
        with engine.connect() as conn:
            steps += [Step(v, _document(conn, v), whole=True) for v in whole]
    return tuple(sorted(steps, key=lambda s: s.version))


def _check_whole(
    session: int, opened: int, steps: Sequence[Step], stored: Sequence[Decision]
) -> None:
    """Refuse a session whose versions have a gap: a write the history no longer holds."""
    expected = opened + 1
    for step in steps:
        if step.version != expected:
            after = [d.seq for d in stored if d.version > expected]
            seq = f"decision seq {after[0]}" if after else "its last decision kept"
            raise _refused(
                session,
                f"misses versions {expected}..{step.version - 1} of its change log (before "
                f"{seq}): the changes there cannot be replayed",
            )
        expected += 1


def _count(session: int) -> sa.Select[Any]:
    return sa.select(sa.func.count()).select_from(decisions).where(decisions.c.session == session)


def _refused(session: int, why: str) -> TwinschedError:
    return TwinschedError(f"twin session {session} {why}; {ACCEPTED}")


TwinJob = tuple[str, TwinSession]  # teacher, session


class _Teacher:
    """The teacher watching a replay: its candidate rows and values recorded at each
    decision, on whichever state the replay holds then."""

    def __init__(self, teacher: str) -> None:
        from twinsched.scheduling import registry

        self.recording = Recording(registry.create(teacher))
        self.memo: EligibleMemo | None = None
        self.views: list[PodView] = []

    def start(self, mirror: Mirror) -> None:
        from twinsched.scheduling.cache import EligibleMemo
        from twinsched.scheduling.framework import RunContext, pod_views

        assert mirror.scenario is not None
        scenario, kept = mirror.scenario, self.recording.parts
        self.recording.reset(mirror.state, RunContext.create(scenario, 0, scenario.pods))
        self.recording.parts = kept  # what it recorded on the states before
        self.memo, self.views = EligibleMemo(), pod_views(mirror.state.pods)

    def binding(self, mirror: Mirror, pod: int) -> None:
        assert self.memo is not None
        view = self.views[pod]
        self.recording.place(mirror.state, view, self.memo.get(mirror.state, view))


def replay_session_job(job: TwinJob) -> Margins:
    """One twin session replayed, the teacher's margins recorded at its decisions."""
    teacher, session = job
    watch = _Teacher(teacher)
    replayed = replay_session(session, watch)
    state = replayed.mirror.state
    alloc = 100.0 * state.allocated_gpu_milli / max(int(state.nodes.total_gpu_milli), 1)
    return margins_of(watch.recording.parts, alloc, f"twin session {session.id}")


def replay_session(session: TwinSession, watch: Watch | None = None) -> Replayed:
    """The session's history replayed (``twin_replay``), checked against the decisions the
    twin kept: each must be the binding the change log makes at its number."""
    from twinsched.twin.collectors.ksm import MIRROR_SOURCE

    made_up = session.source.startswith(f"{MIRROR_SOURCE} ")  # a live mirror's GPU indices
    replayed = replay_history(
        session.id, session.document, session.steps, watch, gpus_known=not made_up
    )
    made = {b.seq: b for b in replayed.bindings}
    for d in session.decisions:
        b = made.get(d.seq)
        if b is None or (b.version, b.pod, b.node, b.gpus) != (d.version, d.pod, d.node, d.gpus):
            got = f"pod {b.pod} on node {b.node} {list(b.gpus)}" if b else "no decision"
            raise TwinschedError(
                f"twin session {session.id}, seq {d.seq}: the twin kept pod {d.pod} on node "
                f"{d.node} {list(d.gpus)} (version {d.version}), its change log makes {got}"
            )
    return replayed
