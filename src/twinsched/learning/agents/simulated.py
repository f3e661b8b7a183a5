"""Agents on the autoscaling simulator: a replayed service, its sensor and its actuator."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from twinsched.learning.agents.agent import Action, Reading
from twinsched.learning.autoscale.service import ServiceConfig
from twinsched.learning.autoscale.simulator import Observation, Policy, SlotSampler, p95
from twinsched.learning.series import FloatArray, LoadSeries

MINUTE = 60.0


@dataclass
class SimulatedService:
    """Replays one load value per minute from ``start`` (epoch seconds) as time advances."""

    loads: FloatArray
    start: float
    service: ServiceConfig = field(default_factory=ServiceConfig)
    seed: int = 0
    instances: int = 1

    def __post_init__(self) -> None:
        self._sampler = SlotSampler(self.service, self.seed)
        self._slot = 0
        self._pending_move = 0.0
        # slot, load, instances, p95, whether the slot began with a scaling event
        self.history: list[tuple[int, float, int, float, bool]] = []

    def advance_to(self, now: float) -> None:
        """Serve every whole minute that ended by ``now``."""
        while self._slot < len(self.loads) and self.start + (self._slot + 1) * MINUTE <= now:
            load = float(self.loads[self._slot])
            lat = self._sampler.slot(load, self.instances, self._pending_move)
            event = self._pending_move > 0
            self.history.append((self._slot, load, self.instances, p95(lat), event))
            self._pending_move = 0.0
            self._slot += 1

    def set_instances(self, instances: int) -> None:
        instances = min(max(instances, self.service.min_instances), self.service.max_instances)
        if self.instances and instances != self.instances:  # 0: not started, nothing moves
            self._pending_move = abs(instances - self.instances) / max(instances, self.instances)
        self.instances = instances


@dataclass
class ServiceSensor:
    """Load and p95 of the last minute served, and the current instances."""

    target: SimulatedService

    def read(self, now: float) -> Reading:
        self.target.advance_to(now)
        if not self.target.history:
            return {"load": math.nan, "p95_ms": math.nan, "instances": self.target.instances}
        _, load, _, last_p95, event = self.target.history[-1]
        return {
            "load": load,
            "p95_ms": last_p95,
            "instances": float(self.target.instances),
            "event": float(event),
        }


@dataclass
class SimulatorActuator:
    """Sets the simulated service's instances."""

    target: SimulatedService
    applied: list[tuple[float, int]] = field(default_factory=list)

    def apply(self, action: Action, now: float) -> None:
        self.target.set_instances(action.replicas)
        self.applied.append((now, action.replicas))


@dataclass
class TargetTrackingRule:
    """Replicas so that each instance serves at most ``per_instance`` requests/min; no action
    when the count would not change or the load is unknown."""

    per_instance: float
    min_replicas: int = 1

    def decide(self, reading: Reading, now: float) -> Action | None:
        load = reading.get("load", math.nan)
        if not np.isfinite(load):
            return None
        wanted = max(self.min_replicas, math.ceil(load / self.per_instance - 1e-9))
        if wanted == int(reading.get("instances", 0)):
            return None
        return Action(wanted, reason=f"load {load:g}/min")


class PolicyRule:
    """A registered autoscaling policy as an agent's rule: fire it once a minute, at the
    start of each slot, and it decides exactly as in :func:`simulate`."""

    def __init__(
        self, policy: Policy, train: LoadSeries, evaluation: LoadSeries, service: ServiceConfig
    ) -> None:
        policy.prepare(train, evaluation, service)
        self.policy = policy
        self._loads = list(np.asarray(train.values, dtype=np.float64))
        self._offset = len(train)
        self._t = 0

    def decide(self, reading: Reading, now: float) -> Action | None:
        instances = int(reading.get("instances", 0))
        if self._t > 0:
            self._loads.append(float(reading["load"]))
        obs = Observation(
            self._t,
            np.asarray(self._loads),
            self._offset,
            instances,
            float(reading.get("p95_ms", math.nan)),
            bool(reading.get("event", 0.0)),
        )
        self._t += 1
        wanted = self.policy.decide(obs)
        return Action(wanted, reason=self.policy.name) if wanted != instances else None
