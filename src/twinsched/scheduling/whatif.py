"""What-if placements on a copy of the run's state, never on the live one.

A :class:`WhatIf` holds a second :class:`ClusterState` over the same nodes and pods and keeps
it in step by replaying the live state's event log (``ClusterState.events``). A scheduler
that tries placements before it answers (the ILP's sequential hint) binds and unbinds on
the copy: the live state, its caches and its observers only ever see real decisions.
Caches kept on the copy (a hint heuristic's scores) stay exact: they follow the copy's own
change log.
"""

from __future__ import annotations

from twinsched.model.state import ClusterState


class WhatIf:
    """A copy of ``live`` brought up to date on demand with :meth:`sync`."""

    def __init__(self, live: ClusterState) -> None:
        self.live = live
        self.state = ClusterState(live.nodes, live.pods)
        self.state.latency_ms = live.latency_ms  # links are read-only: share them
        self._seen = 0
        self.sync()

    def sync(self) -> ClusterState:
        """Apply the live events the copy has not seen; return the copy."""
        events = self.live.events
        for event in events[self._seen :]:
            self.state.apply(event)
        self._seen = len(events)
        return self.state
