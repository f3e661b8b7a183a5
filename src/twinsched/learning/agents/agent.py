"""Agents: a sensor reads, a rule decides, an actuator acts, whenever a trigger fires.

The runner puts each agent's next firing on the project's event engine, so the same agents
run on a :class:`~twinsched.sim.clock.SimClock` (as fast as possible) or on a
:class:`~twinsched.sim.clock.WallClock` (in real time), unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from twinsched.learning.agents.triggers import Trigger
from twinsched.sim.clock import Clock, SimClock
from twinsched.sim.engine import Engine, Kind

Reading = Mapping[str, float]


@dataclass(frozen=True)
class Action:
    """What an actuator should do: set the replicas, optionally place them on nodes by label
    (``node_selector``) and nodepool. An action with either replaces the placement in force;
    one with neither keeps it."""

    replicas: int
    node_selector: Mapping[str, str] | None = None
    reason: str = ""
    nodepool: str | None = None

    @property
    def places(self) -> bool:
        """Whether the action brings a placement."""
        return self.node_selector is not None or self.nodepool is not None


class Sensor(Protocol):
    def read(self, now: float) -> Reading: ...


class Rule(Protocol):
    def decide(self, reading: Reading, now: float) -> Action | None: ...


class Actuator(Protocol):
    def apply(self, action: Action, now: float) -> None: ...


@dataclass(frozen=True)
class Firing:
    """One run of one agent: when, what it read, what it decided (None: nothing to do)."""

    agent: str
    time: float
    reading: Reading
    action: Action | None


@dataclass
class Agent:
    name: str
    trigger: Trigger
    sensor: Sensor
    rule: Rule
    actuator: Actuator

    def fire(self, now: float) -> Firing:
        reading = self.sensor.read(now)
        action = self.rule.decide(reading, now)
        if action is not None:
            self.actuator.apply(action, now)
        return Firing(self.name, now, reading, action)


@dataclass
class AgentRunner:
    """Runs agents on a clock until a time; returns (and keeps) the log of firings.

    ``keep_log=False`` keeps none and returns none (a service that runs for months)."""

    agents: list[Agent]
    clock: Clock = field(default_factory=SimClock)
    log: list[Firing] = field(default_factory=list)
    keep_log: bool = True

    def run(self, until: float) -> list[Firing]:
        engine = Engine(self.clock)
        start = self.clock.now()
        for index, agent in enumerate(self.agents):
            first = agent.trigger.next_after(start - 1e-6)
            if first is not None:  # a firing due a microsecond ago runs now: time never goes back
                engine.at(max(first, start), Kind.SAMPLE, index)
        fired: list[Firing] = []

        def handle(kind: Kind, index: int) -> None:
            agent = self.agents[index]
            now = self.clock.now()
            firing = agent.fire(now)
            if self.keep_log:
                fired.append(firing)
            following = agent.trigger.next_after(now)
            if following is not None:
                engine.at(following, Kind.SAMPLE, index)

        engine.run(handle, until=until)
        self.log += fired
        return fired
