"""The twin's sessions: which one is live, when a write opens a new one, the decisions kept.

The twin's current state is the **live** session's: the newest one. Every write lands in it,
or opens a new one first:

* a ``PUT`` (``TwinService.replace``) opens a new session (a run starts a new timeline),
  unless it asks to ``resume`` and the live session has the same source and timebase (the
  mirror replacing its document when a node appears);
* a ``PATCH`` (``TwinService.apply``) on an empty twin opens one; so does a batch on Unix
  time (a live collector) after a simulated timeline: the new session starts from the state
  as it is (carried over as its first snapshot), and the simulated history stays whole in
  its own session, with its own time;
* a write naming a session (``session=``) that is not the live one is refused: 404 for an
  unknown one, 409 for an older one; nothing is stored.

Decisions are the bindings a batch makes (a pod becomes Running on a node, or moves), kept
per session with who made them; the live session's newest ``kept`` are also held here.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from twinsched.errors import TwinschedError
from twinsched.store.history.sessions import Decision, Session, timebase_of
from twinsched.store.history.store import Opening
from twinsched.twin.core.staging import Bound

MAX_KEPT = 100_000  # decisions kept per session, at most


class SessionError(TwinschedError):
    """A write or read names a session it cannot use; ``status``: 404 unknown, 409 not live."""

    def __init__(self, status: int, problem: str) -> None:
        self.status, self.problem = status, problem
        super().__init__(f"session: {problem}")


@dataclass(frozen=True)
class Plan:
    """Where a write goes: its session, what it opens, the version the write will have."""

    session: int
    opening: Opening | None
    version: int


class SessionBook:
    """The sessions known, the live one, and its newest decisions (not thread-safe: the
    service calls it under its lock)."""

    def __init__(self, kept: int = 1000, known: Sequence[Session] = ()) -> None:
        if not 1 <= kept <= MAX_KEPT:
            raise TwinschedError(f"decisions kept: must be 1 to {MAX_KEPT}, got {kept}")
        self.kept = kept
        self.known = {s.id: s for s in known}
        self.live: Session | None = max(known, key=lambda s: s.id) if known else None
        self.recent: deque[Decision] = deque(maxlen=kept)  # the live session's, oldest first

    def get(self, session: int | None) -> Session:
        """The session numbered ``session`` (None: the live one); :class:`SessionError`."""
        if session is None and self.live is not None:
            return self.live
        found = self.known.get(session) if session is not None else None
        if found is None:
            names = ", ".join(str(k) for k in sorted(self.known)) or "none yet"
            raise SessionError(404, f"unknown session {session} (sessions: {names})")
        return found

    def check_live(self, session: int | None) -> None:
        """Refuse a write that names a session other than the live one."""
        if session is None:
            return
        found = self.get(session)
        if self.live is None or found.id != self.live.id:
            live = self.live.id if self.live is not None else None
            raise SessionError(409, f"session {session} is not the live session ({live}): "
                               "it ended when a newer feed started one")  # fmt: skip

    def for_patch(
        self, at: float, version: int, source: str, carry: Callable[[], bytes]
    ) -> Plan:  # fmt: skip
        """The plan of a batch at time ``at``, the state being at ``version``."""
        live = self.live
        if live is not None and live.timebase == timebase_of(at):
            return Plan(live.id, None, version + 1)
        opened = self._new(source, at, version + 1)
        if live is None:
            return Plan(opened.id, Opening(opened), version + 1)
        # another timebase: the new session starts from the state carried over (its snapshot)
        opening = Opening(opened, carry(), version + 1, at)
        return Plan(opened.id, opening, version + 2)

    def for_replace(self, at: float, version: int, source: str, resume: bool) -> Plan:
        """The plan of a whole document at time ``at`` (a ``PUT``)."""
        live = self.live
        if resume and live is not None and (live.source, live.timebase) == (
            source, timebase_of(at)
        ):  # fmt: skip
            return Plan(live.id, None, version + 1)
        opened = self._new(source, at, version + 1)
        return Plan(opened.id, Opening(opened), version + 1)

    def _new(self, source: str, at: float, version: int) -> Session:
        number = max(self.known, default=0) + 1
        return Session(number, source, timebase_of(at), at, time.time(), version)

    def decided(self, plan: Plan, at: float, bound: Sequence[Bound]) -> list[Decision]:
        """The decisions of a batch's bindings, numbered in the plan's session."""
        if not bound:
            return []
        last = self.recent[-1].seq if self.recent and plan.opening is None else 0
        return [
            Decision(plan.session, last + k, plan.version, at, b.pod, b.node, b.gpus,
                     b.scheduler, b.fallback, b.model_version)
            for k, b in enumerate(bound, start=1)
        ]  # fmt: skip

    def commit(self, plan: Plan, decided: Sequence[Decision]) -> None:
        """The write went through: its session is the live one, its decisions the newest."""
        if plan.opening is not None:
            opened = plan.opening.session
            self.known[opened.id], self.live = opened, opened
            self.recent.clear()
        self.recent.extend(decided)

    def newest(self, limit: int) -> list[Decision]:
        """The live session's newest ``limit`` decisions, newest first."""
        out = list(self.recent)[-limit:]
        out.reverse()
        return out
