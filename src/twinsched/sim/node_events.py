"""Node failures and link faults in a replay: their schedule on the engine and each event's effect.

A collaborator of :class:`twinsched.sim.replay.ReplayRun` for the ``Kind.NODE`` events. A
node's events carry ``2 * node + up``; link ``k``'s come after the nodes' as
``2 * (nodes + k) + up``, so one event kind orders both by time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from twinsched.model.cluster import F64, Scenario
from twinsched.model.events import NodeDown, NodeUp
from twinsched.model.state import ClusterState
from twinsched.sim.engine import Engine, Kind
from twinsched.sim.faults import Disruptions, fault_schedule
from twinsched.sim.links import LinkFaults, link_schedule, link_spans

if TYPE_CHECKING:
    from twinsched.model.faults import FaultSpec


@dataclass
class NodeOutcome:
    """What one node or link event did: pods back in the queue, whether room was freed
    (so failed pod classes are worth a retry), and the node that came back, if any."""

    requeue: list[int] = field(default_factory=list)
    freed: bool = False
    recovered: int | None = None


class NodeEvents:
    """The node and link faults of one run, their evictions and the figures they leave."""

    def __init__(self, faults: FaultSpec, scenario: Scenario, seed: int, state: ClusterState):
        self.disrupt = Disruptions()
        self.links: LinkFaults | None = None
        self._nodes = scenario.nodes.n
        pods = scenario.pods
        horizon = float(np.max(pods.arrival_s)) if pods.n else 0.0
        # the nodes' schedule first: it checks the names the faults use
        self._node_faults = fault_schedule(faults, scenario.nodes, horizon, seed)
        if faults.links_enabled:
            self.links = LinkFaults(link_spans(faults, scenario.nodes, horizon, seed), state)

    def schedule(self, engine: Engine) -> None:
        """Every node's failures and recoveries, then every link fault's start and end."""
        for t, node, up in self._node_faults:
            engine.at(t, Kind.NODE, 2 * node + up)
        if self.links is not None:
            for t, k, up in link_schedule(self.links.spans):
                engine.at(t, Kind.NODE, 2 * (self._nodes + k) + up)

    def apply(self, state: ClusterState, payload: int, now: float, start_t: F64) -> NodeOutcome:
        """A node goes down or up, or a link fault starts or ends."""
        node, up = divmod(payload, 2)
        if node >= self._nodes:  # latencies changed, and evicted pods freed room
            assert self.links is not None
            k = node - self._nodes
            evicted = self.links.change(state, k, bool(up), now, start_t, self.disrupt)
            return NodeOutcome(evicted, freed=True)
        if up:
            state.apply(NodeUp(node))
            return NodeOutcome(freed=True, recovered=node)  # its resources are back
        state.apply(NodeDown(node))
        return NodeOutcome(self.disrupt.evict(state, node, now, start_t))

    def summary(self, pending_at_end: int) -> dict[str, object]:
        """Disruption figures, and the links' when the run had link faults."""
        out = self.disrupt.summary(pending_at_end)
        return out | (self.links.summary() if self.links is not None else {})
