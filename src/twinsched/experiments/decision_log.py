"""Where each pod of a run went, in the order the run decided: the rows a run stores with
``twinsched run --record --decisions``.

A stored run's decisions are what a deployed model saw and chose; ``twinsched distil
--from-runs`` replays them (``training/distil/from_runs.py``) to label those very states with
the teacher. The log reads the state's event log like every observer, so it changes nothing
the run decides.
"""

from __future__ import annotations

from collections.abc import Sequence

from twinsched.model.events import Bind, Event, Reject
from twinsched.model.state import ClusterState
from twinsched.scheduling.observers import BaseObserver

# (pod name, node name or None when the pod was not placed, the reason it was not placed)
DecisionRow = tuple[str, str | None, str]


class DecisionLog(BaseObserver):
    """Every binding and rejection of one run, in order, by pod and node name."""

    def __init__(self) -> None:
        self.rows: list[DecisionRow] = []

    def on_events(self, state: ClusterState, events: Sequence[Event]) -> None:
        pods, nodes = state.pods.names, state.nodes.names
        for e in events:
            if isinstance(e, Bind):
                self.rows.append((pods[e.pod], nodes[e.node], ""))
            elif isinstance(e, Reject):
                self.rows.append((pods[e.pod], None, e.reason))
