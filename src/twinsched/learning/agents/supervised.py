"""Agents run as a service: failed firings counted, actuations bounded by the actuator's limits.

:class:`ActuationLimits` is what an actuator may be asked (an agent file's ``actuator``
section declares it, with the defaults of :mod:`~twinsched.learning.agents.ranges`). The
choice, documented in docs/learning.md ("Actuation limits"):

* replicas outside ``0..max_replicas``: **refused** (logged, counted), nothing applied;
* an actuation sooner than ``min_interval_s`` after the last one applied: **refused**
  (logged, counted); a later firing acts if the rule still wants it;
* a change of more than ``max_step`` replicas from the current count (the reading's
  ``instances``, else the last count applied, else 0): **clamped** to ``max_step`` in its
  direction (logged, counted; the reason says so), so a scale from 1 to 50 takes 5 steps.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace

from twinsched.errors import TwinschedError
from twinsched.learning.agents.agent import Action, Agent, Firing, Reading
from twinsched.learning.agents.excerpt import clip
from twinsched.learning.agents.ranges import MAX_INTERVAL_S, MAX_STEP, MIN_INTERVAL_S, MOST

log = logging.getLogger(__name__)
# What a firing can meet in service (the twin down or refusing, a forecaster that cannot fit,
# the Kubernetes API): one line in the log. Anything else is a bug: logged with its traceback.
EXPECTED = (TwinschedError, OSError, ValueError, ArithmeticError, LookupError, ImportError)


@dataclass(frozen=True)
class ActuationLimits:
    """The most replicas, the most change per actuation and the least time between two."""

    max_replicas: int = MOST
    max_step: int = MAX_STEP
    min_interval_s: float = MIN_INTERVAL_S

    def __post_init__(self) -> None:
        if min(self.max_replicas, self.max_step) < 1:
            raise ValueError(f"limits need max_replicas and max_step >= 1: {self}")
        if not 0 <= self.min_interval_s <= MAX_INTERVAL_S:
            raise ValueError(f"min_interval_s is 0..{MAX_INTERVAL_S:g}: {self}")


@dataclass
class AgentStats:
    """What an agent did since it started (the service's ``/metrics`` read it)."""

    firings: int = 0
    actions: int = 0
    errors: int = 0
    refused: int = 0
    clamped: int = 0
    last_replicas: float = math.nan
    last_firing: float = math.nan
    last_action: float = math.nan
    last_error: str = ""


@dataclass
class SupervisedAgent(Agent):
    """An agent whose failed firings are counted and logged instead of ending the run, and
    whose actions pass its :class:`ActuationLimits` before they reach the actuator."""

    stats: AgentStats = field(default_factory=AgentStats)
    limits: ActuationLimits = field(default_factory=ActuationLimits)

    def fire(self, now: float) -> Firing:
        self.stats.firings += 1
        self.stats.last_firing = now
        try:
            reading = self.sensor.read(now)
            action = self.bound(self.rule.decide(reading, now), reading, now)
            if action is not None:
                self.actuator.apply(action, now)
        except Exception as exc:  # the twin down, a forecaster that cannot fit: try next time
            self.stats.errors += 1
            self.stats.last_error = clip(f"{type(exc).__name__}: {exc}", 500)
            if isinstance(exc, EXPECTED):
                log.error("agent %s: firing at %.3f failed: %s", self.name, now,
                          self.stats.last_error)  # fmt: skip
            else:
                log.exception("agent %s: firing at %.3f failed", self.name, now)
            return Firing(self.name, now, {}, None)
        if action is not None:
            self.stats.actions += 1
            self.stats.last_replicas = float(action.replicas)
            self.stats.last_action = now
            log.info("agent %s: %d replicas (%s)", self.name, action.replicas, action.reason)
        return Firing(self.name, now, reading, action)

    def bound(self, action: Action | None, reading: Reading, now: float) -> Action | None:
        """``action`` within the limits: None when refused, a smaller step when clamped."""
        if action is None:
            return None
        limits = self.limits
        if not 0 <= action.replicas <= limits.max_replicas:
            self._refuse(f"{action.replicas} replicas is outside 0..{limits.max_replicas} "
                         "(actuator.max_replicas)")  # fmt: skip
            return None
        since = now - self.stats.last_action
        if since < limits.min_interval_s:  # NaN before the first action: never refused
            self._refuse(f"{since:.3g} s after the last actuation, under "
                         f"actuator.min_interval_s {limits.min_interval_s:g}")  # fmt: skip
            return None
        current = self._current(reading)
        if abs(action.replicas - current) <= limits.max_step:
            return action
        step = limits.max_step if action.replicas > current else -limits.max_step
        self.stats.clamped += 1
        log.warning("agent %s: %d replicas asked, %d from %d by actuator.max_step %d", self.name,
                    action.replicas, current + step, current, limits.max_step)  # fmt: skip
        reason = f"{action.reason}; clamped from {action.replicas} by max_step {limits.max_step}"
        return replace(action, replicas=current + step, reason=reason)

    def _current(self, reading: Reading) -> int:
        """The replicas now: the reading's ``instances``, else the last applied, else 0."""
        for value in (reading.get("instances", math.nan), self.stats.last_replicas):
            if math.isfinite(value):
                return int(value)
        return 0

    def _refuse(self, why: str) -> None:
        self.stats.refused += 1
        log.warning("agent %s: actuation refused: %s", self.name, why)
