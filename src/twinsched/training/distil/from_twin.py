"""Retrain a deployed reranker from a twin session's history (DAgger on what the twin saw).

A twin session (``store/history``) keeps the document it opened with (its first snapshot)
and the bindings written to it (``twin_decisions``: pod, node, GPUs, numbered from 1). The
replay builds the opening document's state (pods it shows bound start bound, pods it shows
pending start arrived), then, for each decision in order: the pod arrives, the teacher (a
:class:`~twinsched.training.distil.margins.Recording`) sees the state and its candidate rows
and rollout values are kept, and the *stored* binding is applied with its stored GPUs.

Only the bindings drive the state: what else the session's patches did (pods finishing or
released, nodes going down) is not replayed, so a binding the replayed state cannot take
(its resources are still held there) is refused, naming the session, the decision and the
pod, as is a pod bound twice. A session the twin kept only the newest decisions of (the
twin setting ``decisions_kept``) is refused: its opening state would miss the bindings
dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from twinsched.errors import TwinschedError
from twinsched.model.document import TwinDocument
from twinsched.model.events import Arrive, Bind, Phase
from twinsched.store.history.sessions import Decision, read_decisions, read_sessions
from twinsched.store.history.tables import changes, decisions, snapshots
from twinsched.training.distil.margins import Margins, Recording, margins_of

TWIN_DB_ENV = "TWINSCHED_TWIN_DB"  # the twin's history database (twin/core/settings.py)
ACCEPTED = (
    "it takes twin sessions that opened with a document (a PUT /api/v1/state) and kept "
    "all their decisions from the first (the twin setting decisions_kept)"
)


@dataclass(frozen=True)
class TwinSession:
    """What a replay needs of one twin session: its opening document and its decisions."""

    id: int
    source: str
    document: TwinDocument
    decisions: tuple[Decision, ...]  # in seq order, from 1

    def record(self) -> dict[str, Any]:
        """The session as the model card lists it (the sessions a model learned from)."""
        return {"id": self.id, "source": self.source, "decisions": len(self.decisions)}


def twin_db(db: str | Path | None) -> str | Path | None:
    """The history database: ``db``, else ``$TWINSCHED_TWIN_DB``, else (None) the store's,
    as the twin resolves its own (``TwinSettings.database_url``)."""
    import os

    return db or os.environ.get(TWIN_DB_ENV) or None


def load_sessions(db: str | Path | None, ids: Sequence[int]) -> list[TwinSession]:
    """The twin sessions ``ids`` (each once, in order), all checked before any work."""
    return [load_session(db, s) for s in dict.fromkeys(ids)]


def load_session(db: str | Path | None, session: int) -> TwinSession:
    """Session ``session`` of the twin history at ``db``: its first snapshot and all its
    decisions in order; a session that cannot be replayed fails naming why."""
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
        first = conn.execute(
            sa.select(snapshots.c.version, snapshots.c.document)
            .where(snapshots.c.session == session)
            .order_by(snapshots.c.version)
            .limit(1)
        ).first()
        first_change = conn.execute(
            sa.select(sa.func.min(changes.c.version)).where(changes.c.session == session)
        ).scalar()
    if count == 0:
        raise _refused(session, "has no decisions")
    kept = sorted(read_decisions(engine, session, count), key=lambda d: d.seq)
    seqs = [d.seq for d in kept]
    if seqs != list(range(1, len(kept) + 1)):
        raise _refused(
            session,
            f"holds decisions {seqs[0]}..{seqs[-1]} ({len(kept)} of them), not all from 1: the "
            f"twin kept only its newest {len(kept)} decisions; run the twin with "
            f"decisions_kept >= {seqs[-1]}",
        )
    if first is None or (first_change is not None and int(first_change) < int(first[0])):
        raise _refused(session, "has lost its first snapshot (the document it opened with)")
    document = TwinDocument.model_validate_json(bytes(first[1]))
    return TwinSession(session, known[session].source, document, tuple(kept))


def _count(session: int) -> sa.Select[Any]:
    return sa.select(sa.func.count()).select_from(decisions).where(decisions.c.session == session)


def _refused(session: int, why: str) -> TwinschedError:
    return TwinschedError(f"twin session {session} {why}; {ACCEPTED}")


TwinJob = tuple[str, TwinSession]  # teacher, session


def replay_session_job(job: TwinJob) -> Margins:
    """One twin session replayed, the teacher's margins recorded at its states."""
    from twinsched.model.mirror import Mirror, bind_problem
    from twinsched.scheduling import registry
    from twinsched.scheduling.cache import EligibleMemo
    from twinsched.scheduling.framework import RunContext, pod_views

    teacher, session = job
    mirror = Mirror.from_document(session.document, f"twin-session-{session.id}")
    if mirror.disagreements.total():
        first = mirror.disagreements.recent[0]
        raise TwinschedError(
            f"twin session {session.id}: its opening document does not read as a state "
            f"({first.kind} {first.subject}: {first.detail})"
        )
    assert mirror.scenario is not None
    state, scenario = mirror.state, mirror.scenario
    recording = Recording(registry.create(teacher))
    recording.reset(state, RunContext.create(scenario, 0, scenario.pods))
    memo, views = EligibleMemo(), pod_views(state.pods)
    for d in session.decisions:
        i, n = mirror.pod_index.get(d.pod), mirror.node_index.get(d.node)
        phase = Phase(int(state.phase[i])) if i is not None else None
        if i is None or n is None or phase not in (Phase.NOT_ARRIVED, Phase.PENDING):
            why = (
                "the pod is not in the opening document" if i is None
                else "the node is not in the opening document" if n is None
                else f"the pod is {phase.name if phase else '?'} in the replay"
            )  # fmt: skip
            raise _misfit(session.id, d, why)
        if phase == Phase.NOT_ARRIVED:
            state.apply(Arrive(i))
        recording.place(state, views[i], memo.get(state, views[i]))  # the teacher's values
        problem = bind_problem(state, i, n, d.gpus)
        if problem:
            raise _misfit(session.id, d, problem)
        state.apply(Bind(i, n, d.gpus))
    alloc = 100.0 * state.allocated_gpu_milli / max(scenario.nodes.total_gpu_milli, 1)
    return margins_of(recording.parts, alloc, f"twin session {session.id}")


def _misfit(session: int, d: Decision, why: str) -> TwinschedError:
    return TwinschedError(
        f"twin session {session}, seq {d.seq}: pod {d.pod} on node {d.node} does not fit "
        f"the replayed state: {why}"
    )
