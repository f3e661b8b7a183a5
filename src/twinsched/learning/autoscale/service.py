"""The simulated service: capacity per instance, latency model, SLO and scaling penalty."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from twinsched.learning.autoscale.latency import LatencyModel, TableLatency, max_utilisation


@dataclass(frozen=True)
class ServiceConfig:
    """One service: its instances, latency, SLO and what a scaling event costs.

    A slot violates the SLO when its p95 latency is above ``slo_p95_ms * (1 + tolerance)``.
    A scaling event from n to n' instances moves ``|n' - n| / max(n, n')`` of the streams;
    their requests in that slot pay ``move_penalty_ms`` on top (reconnection, state
    transfer). New instances serve from the slot they are requested in.
    """

    capacity: float = 40.0
    latency: LatencyModel = field(default_factory=TableLatency)
    slo_p95_ms: float = 150.0
    tolerance: float = 0.1
    move_penalty_ms: float = 500.0
    min_instances: int = 1
    max_instances: int = 1000

    @property
    def slo_limit_ms(self) -> float:
        return self.slo_p95_ms * (1.0 + self.tolerance)

    @property
    def safe_load(self) -> float:
        """Requests/min one instance serves with its p95 within the SLO (no tolerance)."""
        return self.capacity * max_utilisation(self.latency, self.slo_p95_ms)

    def instances_for(self, load: float, safe_load: float | None = None) -> int:
        """The fewest instances that keep ``load`` within the SLO, within the bounds."""
        per_instance = safe_load if safe_load is not None else self.safe_load
        wanted = math.ceil(load / per_instance - 1e-9) if load > 0 else self.min_instances
        return min(max(wanted, self.min_instances), self.max_instances)
