"""Placement rules: where a service's replicas run (node labels, a tier, a nodepool).

An agent file's ``rule.placement`` goes with each action its rule takes (:class:`Placed`
wraps the rule), and ``kind = "placement"`` is a rule of its own (:class:`PlacementRule`):
it reads the service's nodes in the twin and acts when a serving node is off the placement
(or the serving count is not the rule's ``replicas``), asking for the same count there.
The actuator carries the placement out: the twin's sets Ready exactly the service nodes that
match it (``twin.py``), the Kubernetes one replaces the Deployment's pod ``nodeSelector``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from twinsched.learning.agents.agent import Action, Reading, Rule
from twinsched.learning.agents.twin import TwinService, matches

if TYPE_CHECKING:
    from twinsched.twin.client import TwinClient


@dataclass(frozen=True)
class Placement:
    """Nodes with every label of ``node_selector`` (a tier is its ``tier`` label), of
    ``nodepool`` when one is named."""

    node_selector: Mapping[str, str]
    nodepool: str | None = None

    def on(self, action: Action) -> Action:
        """``action`` carrying this placement, its reason saying so."""
        reason = f"{action.reason}; {self.describe()}" if action.reason else self.describe()
        selector = dict(self.node_selector)
        return replace(action, node_selector=selector, nodepool=self.nodepool, reason=reason)

    def describe(self) -> str:
        """E.g. ``placed on {'tier': 'edge'} in nodepool 'svc'``."""
        pool = "" if self.nodepool is None else f" in nodepool '{self.nodepool}'"
        return f"placed on {dict(self.node_selector)}{pool}"


@dataclass
class Placed:
    """A rule whose every action carries ``placement``."""

    rule: Rule
    placement: Placement

    def decide(self, reading: Reading, now: float) -> Action | None:
        action = self.rule.decide(reading, now)
        return None if action is None else self.placement.on(action)


@dataclass
class PlacementRule:
    """Keeps the service on ``placement``: no action while every Ready node of the service
    matches it and (when ``replicas`` is set) that many serve; otherwise an action for
    ``replicas``, or for the count serving now, on the placement."""

    api: TwinClient
    service: TwinService
    placement: Placement
    replicas: int | None = None

    def decide(self, reading: Reading, now: float) -> Action | None:
        ready = [n for n in self.service.members(self.api) if n.get("status") == "Ready"]
        where = self.placement
        off = [n for n in ready if not matches(n, where.node_selector, where.nodepool)]
        wanted = len(ready) if self.replicas is None else self.replicas
        if not off and wanted == len(ready):
            return None
        why = f"{len(off)} serving node(s) off the placement" if off else f"{len(ready)} serving"
        return where.on(Action(wanted, reason=why))
