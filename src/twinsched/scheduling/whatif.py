"""What-if placements on a copy of the run's state, never on the live one.

A :class:`WhatIf` holds a copy of the live :class:`ClusterState` and keeps it in step by
replaying the live state's event log (``ClusterState.log_events``) from the copy on. A scheduler
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
        self.state = live.copy()
        self._log = live.log_events()
        self._seen = len(self._log)

    def sync(self) -> ClusterState:
        """Apply the live events the copy has not seen; return the copy."""
        log = self._log
        for event in log[self._seen :]:
            self.state.apply(event)
        self._seen = len(log)
        return self.state
