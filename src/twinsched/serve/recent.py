"""The scheduler service's last decisions, kept so that each can be explained on request
(``GET /explain``): per decision only the pod, its slot and how far the state's event log
had got; the log itself is bounded (the oldest half is dropped past :data:`LOG_LIMIT`
events) and so is the list (:data:`KEPT`). Nothing is computed or copied while deciding:
an explanation rewinds a copy of the state to the decision (``scheduling/explain/rewind``).
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from twinsched.model.events import Event
from twinsched.model.state import ClusterState
from twinsched.scheduling.explain.rewind import rewind

KEPT = 64  # decisions listed
LOG_LIMIT = 20_000  # events kept; a decision older than what is kept cannot be explained


class Made(NamedTuple):
    """One decision: the pod's slot, its place in the event log, the table's generation (a
    rebuild starts a new one: older decisions saw a state that is gone). A named tuple: made
    once per decision, cheaper than a dataclass."""

    slot: int
    position: int
    generation: int


class RecentDecisions:
    """The last :data:`KEPT` decisions and the event log since the oldest one."""

    def __init__(self, kept: int = KEPT, limit: int = LOG_LIMIT) -> None:
        self.made: deque[Made] = deque(maxlen=kept)
        self.limit = limit
        self.generation = 0
        self.offset = 0  # events dropped from the front of the log
        self._log: list[Event] = []
        self._shared = False  # someone else reads the log too (a what-if copy): never trimmed
        self._state: ClusterState | None = None

    def follow(self, state: ClusterState) -> None:
        """A new table and state (a rebuild): its log from now on."""
        self._state = state
        self.generation += 1
        self.offset = 0
        self._shared = state.events is not None
        self._log = state.log_events()

    def add(self, state: ClusterState, index: int) -> None:
        """A decision about to be made for slot ``index`` on ``state`` as it is now (a state
        other than the last one is a rebuilt table's: followed from now on)."""
        if state is not self._state:
            self.follow(state)
        log = self._log
        if len(log) > self.limit and not self._shared:
            drop = len(log) // 2
            del log[:drop]
            self.offset += drop
        self.made.append(Made(index, self.offset + len(log), self.generation))

    def find(self, index: int) -> Made | None:
        """The latest decision about slot ``index`` of the present table."""
        now = self.generation
        return next(
            (m for m in reversed(self.made) if (m.slot, m.generation) == (index, now)), None
        )

    def listed(self) -> list[Made]:
        """The decisions on the present table, latest first."""
        return [m for m in reversed(self.made) if m.generation == self.generation]

    def state_before(self, made: Made, state: ClusterState) -> ClusterState | str:
        """A copy of ``state`` as ``made`` saw it, or why that state is gone."""
        if made.generation != self.generation or state is not self._state:
            return "the service rebuilt its node table since (nodes changed): that state is gone"
        if made.position < self.offset:
            return f"more than {self.limit} events since: that state is no longer kept"
        return rewind(state, self._log[made.position - self.offset :])
